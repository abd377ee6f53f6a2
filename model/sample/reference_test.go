package sample

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/stretchr/testify/require"
)

// llamaCpp is a running testdata/llamacpp_sample.c: llama.cpp's sampler
// chain without its final draw.
type llamaCpp struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	in    *bufio.Writer
	out   *bufio.Reader
}

// startLlamaCpp starts the reference; it skips the test when llama.cpp is
// not installed (fails with GOGGML_REQUIRE_LLAMACPP=1).
func startLlamaCpp(t testing.TB) *llamaCpp {
	t.Helper()
	dir := os.Getenv("GOGGML_LLAMACPP")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "go-ggml", "llamacpp")
	}
	bin := filepath.Join(dir, "bin", "llamacpp_sample")
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("llama.cpp's sampler driver is not installed in %s (bash build/llamacpp.sh installs it; GOGGML_LLAMACPP names another place)", dir)
		if os.Getenv("GOGGML_REQUIRE_LLAMACPP") == "1" {
			t.Fatal(msg + ", and GOGGML_REQUIRE_LLAMACPP=1 requires it")
		}
		t.Skip(msg)
	}
	cmd := exec.Command(bin)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	l := &llamaCpp{cmd: cmd, stdin: stdin, in: bufio.NewWriterSize(stdin, 1<<20), out: bufio.NewReaderSize(stdout, 1<<20)}
	t.Cleanup(l.close)
	line, err := l.out.ReadString('\n')
	require.NoError(t, err, "llamacpp_sample did not start")
	require.Equal(t, "ready\n", line)
	return l
}

func (l *llamaCpp) close() {
	fmt.Fprintln(l.in, "quit")
	l.in.Flush()
	l.stdin.Close()
	l.cmd.Wait()
}

// llamaCand is a candidate that llama.cpp's chain left.
type llamaCand struct {
	logit, p float64
}

// chain runs llama.cpp's chain for p (mapped to llama.cpp's values: top_p
// and penalty_repeat 0 are 1 there) after accepting hist, on logits.
func (l *llamaCpp) chain(t testing.TB, logits []float32, hist []int32, p Params) map[int32]llamaCand {
	t.Helper()
	topP, rep := p.TopP, p.RepeatPenalty
	if topP == 0 {
		topP = 1
	}
	if rep == 0 {
		rep = 1
	}
	f := func(x float32) string { return strconv.FormatFloat(float64(x), 'x', -1, 32) }
	fmt.Fprintf(l.in, "s %d %d %s %s %s %d %s %s %s %d", len(logits), min(p.TopK, math.MaxInt32), f(topP), f(p.MinP), f(p.Temperature),
		p.PenaltyLastN, f(rep), f(p.FrequencyPenalty), f(p.PresencePenalty), len(hist))
	for _, id := range hist {
		fmt.Fprintf(l.in, " %d", id)
	}
	for _, x := range logits {
		l.in.WriteString(" ")
		l.in.WriteString(f(x))
	}
	l.in.WriteString("\n")
	require.NoError(t, l.in.Flush())
	line, err := l.out.ReadString('\n')
	require.NoError(t, err)
	fields := strings.Fields(line)
	require.Equal(t, "ok", fields[0], "llamacpp_sample: %s", line)
	m, err := strconv.Atoi(fields[1])
	require.NoError(t, err)
	require.Len(t, fields, 2+3*m)
	out := map[int32]llamaCand{}
	for i := 0; i < m; i++ {
		id, err := strconv.ParseInt(fields[2+3*i], 10, 32)
		require.NoError(t, err)
		logit, err := strconv.ParseFloat(fields[3+3*i], 64)
		require.NoError(t, err)
		prob, err := strconv.ParseFloat(fields[4+3*i], 64)
		require.NoError(t, err)
		if prob > 0 { // -Inf logits: probability 0, never drawn
			out[int32(id)] = llamaCand{logit, prob}
		}
	}
	return out
}

// TestLlamaCpp compares the candidates that the chain leaves, and their
// probabilities and logits (divided by the temperature), with llama.cpp's
// on random logits, parameters and accepted tokens. Cases where a decision
// is too close to call in float32 (llama.cpp's) are drawn again.
func TestLlamaCpp(t *testing.T) {
	ref := startLlamaCpp(t)
	rng := testutil.NewRNG(t)
	compared, redrawn := 0, 0
	for compared < 400 {
		n := 1 + rng.IntN(2000)
		if rng.IntN(20) == 0 {
			n = 32000 + rng.IntN(100000)
		}
		logits := randLogits(rng, n)
		p := randParams(rng, n)
		var hist []int32
		if p.PenaltyLastN > 0 {
			hist = randHist(rng, n)
		}
		want := refChain(logits, hist, p)
		// float32 sums of up to n probabilities (top-p), float32 logf
		// (min-p), float32 penalties (ties).
		if len(want.p) == 0 || want.margin < 2e-4 || want.tie < 1e-4 {
			redrawn++
			require.Less(t, redrawn, 400, "too many cases too close to call")
			continue
		}
		compared++
		lc := ref.chain(t, logits, hist, p)
		got := survivors(t, newWith(t, p, hist), logits)
		wantP := map[int32]float64{}
		for id, c := range lc {
			wantP[id] = c.p
		}
		requireSameProbs(t, wantP, got, 1e-6, 1e-4, 1e-30, "case %d: n %d, %+v", compared, n, p)
		// The logits after the chain: penalized, divided by the
		// temperature (greedy leaves them undivided).
		tmp := float64(p.Temperature)
		if tmp == 0 {
			tmp = 1
		}
		s := newWith(t, p, hist)
		s.penalize(logits)
		pen := map[int32]float64{}
		for _, c := range s.pen {
			pen[c.id] = c.l
		}
		for id, c := range lc {
			l, ok := pen[id]
			if !ok {
				l = float64(logits[id])
			}
			require.InDelta(t, l/tmp, c.logit, 1e-5*(1+math.Abs(l/tmp)), "case %d: token %d", compared, id)
		}
	}
	t.Logf("%d cases compared with llama.cpp, %d drawn again", compared, redrawn)
}

// randParams returns random settings for a vocabulary of n: each stage on
// or off, sometimes greedy, sometimes llama.cpp's defaults.
func randParams(rng *rand.Rand, n int) Params {
	if rng.IntN(8) == 0 {
		p := Defaults()
		p.Seed = rng.Uint64()
		return p
	}
	var p Params
	switch rng.IntN(4) {
	case 0:
		p.TopK = 1 + rng.IntN(100)
	case 1:
		p.TopK = n + rng.IntN(10)
	case 2:
		p.TopK = 1 + rng.IntN(n)
	}
	if rng.IntN(3) > 0 {
		p.TopP = float32(rng.Float64())
	}
	if rng.IntN(3) > 0 {
		p.MinP = float32(rng.Float64() * 0.5)
	}
	if rng.IntN(6) > 0 {
		p.Temperature = float32(0.1 + 2*rng.Float64())
	}
	if rng.IntN(2) == 0 {
		randPenalties(rng, &p)
	}
	return p
}
