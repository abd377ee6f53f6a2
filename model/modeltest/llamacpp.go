package modeltest

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/go-ggml/ggml/model"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// LlamaCppThreads and LlamaCppContext are the threads and the context
// cells of the llama.cpp StartLlamaCpp runs: a prompt and what is
// generated after it must fit in LlamaCppContext tokens.
const (
	LlamaCppThreads = 2
	LlamaCppContext = 512
)

// LlamaCpp is llama.cpp running one model file, the reference each
// architecture's tests hold go-ggml to: the prebuilt CPU libraries of the
// npm package node-llama-cpp 3.22.1, driven from C by
// model/testdata/llamacpp_run.c (CPU only, flash attention as llama.cpp
// decides, an f16 KV cache), which build/llamacpp.sh (make llamacpp)
// installs and compiles into GOGGML_LLAMACPP, by default
// ~/.cache/go-ggml/llamacpp. Each call clears llama.cpp's cache and starts
// at position 0. A LlamaCpp is used by one goroutine at a time.
type LlamaCpp struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	in    *bufio.Writer
	out   *bufio.Reader
	once  sync.Once

	// VocabSize is the model's number of tokens, as llama.cpp counts them.
	VocabSize int
	// EmbeddingLength is the length of the embeddings llama.cpp outputs
	// (llama_model_n_embd_out).
	EmbeddingLength int
}

// LlamaCppDir returns where build/llamacpp.sh installs llama.cpp:
// GOGGML_LLAMACPP, else ~/.cache/go-ggml/llamacpp.
func LlamaCppDir() string {
	if d := os.Getenv("GOGGML_LLAMACPP"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "go-ggml", "llamacpp")
}

// StartLlamaCpp starts llama.cpp on the GGUF file at path, with
// LlamaCppThreads threads and a context of LlamaCppContext cells, and
// stops it when tb's test ends (tb.Cleanup). Where llama.cpp's driver is
// not built it skips the test, or fails it when GOGGML_REQUIRE_LLAMACPP=1;
// where llama.cpp cannot load the file it fails the test. Under the race
// detector (Race) it skips the test.
func StartLlamaCpp(tb testing.TB, path string) *LlamaCpp {
	tb.Helper()
	return StartLlamaCppCache(tb, path, model.CacheF16)
}

// StartLlamaCppCache is StartLlamaCpp with a KV cache of type ct (f16 or
// f32) instead of llama.cpp's default f16.
func StartLlamaCppCache(tb testing.TB, path string, ct model.CacheType) *LlamaCpp {
	tb.Helper()
	if ct != model.CacheF16 && ct != model.CacheF32 {
		tb.Fatalf("StartLlamaCppCache: a %v cache: the driver takes f16 or f32", ct)
	}
	if Race {
		// The comparisons are numbers, not concurrency: they run in the
		// plain run of the tests, and under the race detector (5 to 10
		// times slower) they would double CI's time for nothing.
		tb.Skip("llama.cpp's comparisons run without -race")
	}
	dir := LlamaCppDir()
	bin := filepath.Join(dir, "bin", "llamacpp_run")
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("llama.cpp's driver llamacpp_run is not installed in %s (make llamacpp installs it; GOGGML_LLAMACPP names another place)", dir)
		if os.Getenv("GOGGML_REQUIRE_LLAMACPP") == "1" {
			tb.Fatal(msg + ", and GOGGML_REQUIRE_LLAMACPP=1 requires it")
		}
		tb.Skip(msg)
	}
	lib := filepath.Join(dir, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
	cmd := exec.Command(bin, lib, path, strconv.Itoa(LlamaCppThreads), strconv.Itoa(LlamaCppContext), ct.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("llamacpp_run: %v", err)
	}
	l := &LlamaCpp{cmd: cmd, stdin: stdin, in: bufio.NewWriter(stdin), out: bufio.NewReaderSize(stdout, 1<<20)}
	tb.Cleanup(l.close)
	line, err := l.line()
	if err != nil {
		tb.Fatalf("llamacpp_run did not start on %s: %v", path, err)
	}
	var desc string
	if _, err := fmt.Sscanf(line, "ready %d %d", &l.VocabSize, &l.EmbeddingLength); err != nil {
		tb.Fatalf("llamacpp_run did not start on %s: %q", path, line)
	}
	if f := strings.SplitN(line, " ", 4); len(f) == 4 {
		desc = f[3]
	}
	tb.Logf("llama.cpp: %s", desc)
	return l
}

// close asks the driver to quit and waits for it (killing it after 10 s).
func (l *LlamaCpp) close() {
	l.once.Do(func() {
		fmt.Fprintln(l.in, "quit")
		l.in.Flush()
		l.stdin.Close()
		done := make(chan struct{})
		go func() { l.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			l.cmd.Process.Kill()
			<-done
		}
	})
}

// line reads one line of the driver's answer, without its newline.
func (l *LlamaCpp) line() (string, error) {
	s, err := l.out.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("llamacpp_run: exited (%q read)", s)
		}
		return "", fmt.Errorf("llamacpp_run: %w", err)
	}
	return strings.TrimSuffix(s, "\n"), nil
}

// call sends the command cmd followed by ids and returns the first line
// of the answer after its "ok", or the driver's "err" as an error.
func (l *LlamaCpp) call(cmd string, ids []int32) (string, error) {
	l.in.WriteString(cmd)
	for _, id := range ids {
		l.in.WriteByte(' ')
		l.in.WriteString(strconv.Itoa(int(id)))
	}
	l.in.WriteByte('\n')
	if err := l.in.Flush(); err != nil {
		return "", fmt.Errorf("llamacpp_run: %s: %w", cmd, err)
	}
	s, err := l.line()
	if err != nil {
		return "", err
	}
	if msg, ok := strings.CutPrefix(s, "err "); ok {
		return "", fmt.Errorf("llamacpp_run: %s: %s", cmd, msg)
	}
	if s == "ok" {
		return "", nil
	}
	rest, ok := strings.CutPrefix(s, "ok ")
	if !ok {
		return "", fmt.Errorf("llamacpp_run: %s: unexpected answer %.80q", cmd, s)
	}
	return rest, nil
}

// Generate clears llama.cpp's cache, decodes prompt in one batch and
// chooses n tokens greedily: each the first largest logit after the
// last, decoded one at a time. gaps[i] is how far token i's logit was
// above the second largest, how near step i came to a tie (see
// CheckGreedy).
func (l *LlamaCpp) Generate(prompt []int32, n int) (tokens []int32, gaps []float64, err error) {
	rest, err := l.call("gen "+strconv.Itoa(n), prompt)
	if err != nil {
		return nil, nil, err
	}
	if tokens, err = parseNumbers(rest, n, func(s string) (int32, error) {
		v, err := strconv.ParseInt(s, 10, 32)
		return int32(v), err
	}); err != nil {
		return nil, nil, fmt.Errorf("llamacpp_run: gen: %w", err)
	}
	s, err := l.line()
	if err != nil {
		return nil, nil, err
	}
	g, ok := strings.CutPrefix(s, "gaps ")
	if !ok {
		return nil, nil, fmt.Errorf("llamacpp_run: gen: want a line of gaps, got %.80q", s)
	}
	if gaps, err = parseNumbers(g, n, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		return nil, nil, fmt.Errorf("llamacpp_run: gen: %w", err)
	}
	return tokens, gaps, nil
}

// Logits clears llama.cpp's cache, decodes ids in one batch and returns
// the logits of every token: VocabSize values for each of ids.
func (l *LlamaCpp) Logits(ids []int32) ([][]float32, error) {
	if _, err := l.call("logits", ids); err != nil {
		return nil, err
	}
	out := make([][]float32, len(ids))
	for i := range out {
		s, err := l.line()
		if err != nil {
			return nil, err
		}
		if out[i], err = parseFloats(s, l.VocabSize); err != nil {
			return nil, fmt.Errorf("llamacpp_run: logits of token %d: %w", i, err)
		}
	}
	return out, nil
}

// Embedding decodes ids in a context of llama.cpp's with embeddings on and
// the pooling named ("mean", "cls", "last" or "none") and returns the
// pooled embedding of the sequence, EmbeddingLength values; with "none",
// every token's embedding, one after the other (len(ids)·EmbeddingLength
// values).
func (l *LlamaCpp) Embedding(pooling string, ids []int32) ([]float32, error) {
	switch pooling {
	case "mean", "cls", "last", "none":
	default:
		return nil, fmt.Errorf("llamacpp_run: pooling %q: want mean, cls, last or none", pooling)
	}
	rest, err := l.call("embd "+pooling, ids)
	if err != nil {
		return nil, err
	}
	n := l.EmbeddingLength
	if pooling == "none" {
		n *= len(ids)
	}
	e, err := parseFloats(rest, n)
	if err != nil {
		return nil, fmt.Errorf("llamacpp_run: embd %s: %w", pooling, err)
	}
	return e, nil
}

// parseFloats parses n blank-separated float32 values.
func parseFloats(s string, n int) ([]float32, error) {
	return parseNumbers(s, n, func(s string) (float32, error) {
		v, err := strconv.ParseFloat(s, 32)
		return float32(v), err
	})
}

// parseNumbers parses the n blank-separated numbers of s with parse.
func parseNumbers[T any](s string, n int, parse func(string) (T, error)) ([]T, error) {
	f := strings.Fields(s)
	if len(f) != n {
		return nil, fmt.Errorf("%d values, want %d", len(f), n)
	}
	out := make([]T, n)
	for i, w := range f {
		v, err := parse(w)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// CheckGreedy compares greedy tokens, got (go-ggml's) with want
// (llama.cpp's, from Generate, with its gaps). They pass when equal, or
// when they agree up to their first difference and llama.cpp's gap at
// that step is below minGap: a near-tie between the two largest logits,
// which a rounding difference may flip, and after which the sequences
// are free to part (logged). Otherwise the test fails with both
// sequences and where they part.
func CheckGreedy(tb testing.TB, got, want []int32, gaps []float64, minGap float64) {
	tb.Helper()
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	if i == len(got) && i == len(want) {
		return
	}
	if i < len(got) && i < len(want) && i < len(gaps) && gaps[i] < minGap {
		tb.Logf("greedy tokens part at step %d (go-ggml %d, llama.cpp %d) where llama.cpp's top two logits are %.3g apart, below %g: a near-tie\n go-ggml:   %v\n llama.cpp: %v",
			i, got[i], want[i], gaps[i], minGap, got, want)
		return
	}
	if i == len(got) || i == len(want) {
		tb.Errorf("greedy tokens: go-ggml has %d, llama.cpp %d (equal up to there)\n go-ggml:   %v\n llama.cpp: %v", len(got), len(want), got, want)
		return
	}
	gap := "no gap given"
	if i < len(gaps) {
		gap = fmt.Sprintf("llama.cpp's top two logits there are %.3g apart, not below %g", gaps[i], minGap)
	}
	tb.Errorf("greedy tokens part at step %d: go-ggml %d, llama.cpp %d (%s)\n go-ggml:   %v\n llama.cpp: %v", i, got[i], want[i], gap, got, want)
}
