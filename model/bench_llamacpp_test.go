package model_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"

	. "github.com/go-ggml/ggml/model"
	_ "github.com/go-ggml/ggml/model/gemma" // the architectures of GOGGML_BENCH_LLAMA_ARCH
	_ "github.com/go-ggml/ggml/model/llama"
	. "github.com/go-ggml/ggml/model/modeltest"
	_ "github.com/go-ggml/ggml/model/phi3"
	_ "github.com/go-ggml/ggml/model/qwen2"
	_ "github.com/go-ggml/ggml/model/qwen3"
	"github.com/go-ggml/ggml/model/sample"
)

// BenchmarkLlamaCpp runs go-ggml and llama.cpp on the same generated file,
// as pairs of samples taken one right after the other (the order swapped
// from pair to pair), for bench/table: the side "go" is this package's
// Model, the side "c" llama.cpp: the prebuilt CPU libraries of the npm
// package node-llama-cpp 3.22.1, driven from C as llama-bench drives them
// (testdata/llamacpp_bench.c; build/llamacpp.sh, which make llamacpp runs,
// installs and compiles it into GOGGML_LLAMACPP, by default
// ~/.cache/go-ggml/llamacpp). Both sides load the file with their defaults
// (go-ggml: weights placed as llama.cpp places them, flash attention where
// supported; llama.cpp: the same, its CPU variant picked at run time, a
// thread pool of its own), a context of 512 cells and batches of 512, an
// f16 KV cache, the same thread count. Figures, in tokens/s:
//
//	ppN   N prompt tokens in one batch, from position 0
//	tg64  64 tokens generated one at a time after a 16-token prompt
//	      (greedy), the prompt not timed
//
// Each side times its own work: ns/op is one prompt or one generated
// token, from Go's clock around Model.Eval (and the greedy sampler) on one
// side, from the driver's clock around llama_decode (and its argmax of the
// logits) on the other, so the pipe between the two processes is not
// counted. (node-llama-cpp's own JavaScript path was not used: it runs
// llama.cpp without a thread pool, creating threads for every compute,
// which on this project's 2-vCPU machines made the small model's tokens
// take 3.4 or 14 ms from run to run, inside llama_decode.)
//
// GOGGML_BENCH_LLAMA names the preset (small, 1b), GOGGML_BENCH_LLAMA_TYPE
// the weights (q4_0, q8_0, q4_K_M, or another ggml type),
// GOGGML_BENCH_LLAMA_THREADS the threads (default: one per core) and
// GOGGML_BENCH_PAIRS the pairs (default 1). GOGGML_BENCH_LLAMACPP_NO_AMX=1
// keeps llama.cpp from its AMX kernels (libsWithoutAMX).
// GOGGML_BENCH_LLAMA_SMALL_PAGES=1 keeps go-ggml's copied weights in small
// pages (Options.SmallPages), as llama.cpp keeps its own: the huge pages
// are go-ggml's, and most of its lead in generation.
// GOGGML_BENCH_LLAMA_POLL sets go-ggml's Options.Poll (default 50, as
// llama-bench's threads poll; 0 sleeps at once). GOGGML_BENCH_LLAMA_TIED=1
// writes the model with its output tied to token_embd, as Llama 3.2's
// files are (the figures' names get "-tied"). GOGGML_BENCH_LLAMA_DEPTH=P
// times generation alone at depth P instead (as llama-bench's -d): 64
// tokens after P in the cache, which stay there from one sample to the
// next (the figure "tg64@dP").
func BenchmarkLlamaCpp(b *testing.B) {
	pairs := testutil.BenchPairs(b)
	preset, typName, threads := benchLlamaCppSettings(b)
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	const gen = 64
	depth := 0
	if v := os.Getenv("GOGGML_BENCH_LLAMA_DEPTH"); v != "" {
		var err error
		if depth, err = strconv.Atoi(v); err != nil || depth < 2 {
			b.Fatalf("GOGGML_BENCH_LLAMA_DEPTH=%q: want a depth of 2 tokens or more", v)
		}
	}
	nCtx := max(512, (depth+gen+255)/256*256)
	path := benchModelMix(b, preset, typName)
	srv := startLlamaCpp(b, path, threads, nCtx, 1)
	defer srv.close()

	ctx := context.Background()
	// The go side's threads poll for work as llama.cpp's do (50, as
	// llama-bench sets it; GOGGML_BENCH_LLAMA_POLL to change), and each of
	// its samples ends with Rest, so that their spinning never reaches
	// llama.cpp's samples (settle does the same the other way).
	poll := 50
	if s := os.Getenv("GOGGML_BENCH_LLAMA_POLL"); s != "" {
		var err error
		if poll, err = strconv.Atoi(s); err != nil {
			b.Fatalf("GOGGML_BENCH_LLAMA_POLL=%q: %v", s, err)
		}
	}
	m, err := Load(ctx, path, Options{CPUOnly: true, ContextSize: nCtx, BatchSize: 512, Threads: threads, Poll: poll, CacheType: CacheF16,
		SmallPages: os.Getenv("GOGGML_BENCH_LLAMA_SMALL_PAGES") == "1"})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	b.Logf("go-ggml: weights in %s, flash attention %v", m.WeightBuffers(), m.FlashAttn())
	rng := rand.New(rand.NewPCG(1, 2))
	prompt := make([]int32, max(512, depth))
	for i := range prompt {
		prompt[i] = int32(rng.IntN(m.Config.VocabSize))
	}
	tied := ""
	if benchTied() {
		tied = "-tied"
	}
	name := fmt.Sprintf("%s-%s%s-t%d", preset, typName, tied, threads)
	if arch := benchArch(); arch != "llama" {
		name = arch + "-" + name
	}

	type figure struct {
		name   string
		goSide func(*testing.B)
		cSide  func(*testing.B)
	}
	pp := func(n int) figure {
		return figure{fmt.Sprintf("pp%d-%s", n, name),
			func(b *testing.B) {
				srv.settle(b)
				run := func() {
					if err := m.Rewind(0); err != nil {
						b.Fatal(err)
					}
					if _, err := m.Eval(ctx, prompt[:n], false); err != nil {
						b.Fatal(err)
					}
				}
				// One prompt before the timed ones, as the C side's
				// sample has (testing runs a b.N function once with N 1
				// before the timed N; b.Loop runs only the timed ones,
				// and its timer starts at its first call): the first
				// prompt after the other side's sample wakes the pool
				// and refills the caches.
				run()
				for b.Loop() {
					run()
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
				if err := m.Rest(); err != nil {
					b.Fatal(err)
				}
			},
			func(b *testing.B) {
				var total time.Duration
				for range b.N {
					total += srv.run(b, fmt.Sprintf("pp %d", n))
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
				b.ReportMetric(float64(n*b.N)/total.Seconds(), "tokens/s")
			}}
	}
	// tgFig times gen greedy tokens after the logits that prime returns
	// (not timed) on the go side, and llama.cpp's answer to cmd on the C
	// side.
	tgFig := func(title string, prime func(*testing.B) []float32, cmd string) figure {
		return figure{title,
			func(b *testing.B) {
				srv.settle(b)
				var total time.Duration
				for range b.N {
					logits := prime(b)
					s, _ := sample.New(sample.Params{}) // greedy
					t0 := time.Now()
					for range gen {
						id, err := s.Sample(logits)
						if err != nil {
							b.Fatal(err)
						}
						if logits, err = m.Eval(ctx, []int32{id}, false); err != nil {
							b.Fatal(err)
						}
					}
					total += time.Since(t0)
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*gen), "ns/op")
				b.ReportMetric(float64(gen*b.N)/total.Seconds(), "tokens/s")
				if err := m.Rest(); err != nil {
					b.Fatal(err)
				}
			},
			func(b *testing.B) {
				var total time.Duration
				for range b.N {
					total += srv.run(b, cmd)
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*gen), "ns/op")
				b.ReportMetric(float64(gen*b.N)/total.Seconds(), "tokens/s")
			}}
	}
	// prime rewinds the cache to keep tokens and evaluates the prompt's
	// tokens up to to.
	prime := func(b *testing.B, keep, to int) []float32 {
		if err := m.Rewind(keep); err != nil {
			b.Fatal(err)
		}
		logits, err := m.Eval(ctx, prompt[keep:to], false)
		if err != nil {
			b.Fatal(err)
		}
		return logits
	}
	const start = 16
	tg := tgFig(fmt.Sprintf("tg%d-%s", gen, name), func(b *testing.B) []float32 { return prime(b, 0, start) },
		fmt.Sprintf("tg %d %d", start, gen))
	figs := []figure{pp(64), pp(512), tg}
	warm := []figure{pp(64), tg}
	if depth > 0 {
		// The cache keeps the first depth-1 prompt tokens: the go side
		// fills it once (in batches), the C side at its first tgd.
		filled := false
		tgd := tgFig(fmt.Sprintf("tg%d@d%d-%s", gen, depth, name), func(b *testing.B) []float32 {
			if !filled {
				prime(b, 0, depth-1)
				filled = true
			}
			return prime(b, depth-1, depth)
		}, fmt.Sprintf("tgd %d %d", depth, gen))
		figs, warm = []figure{tgd}, []figure{tgd}
	}

	// One warm-up of each side: the first run after a load pays for
	// reading the mapped file and for first-touch allocations.
	for _, f := range warm {
		b.Run("warmup-"+f.name+"/go", func(b *testing.B) { f.goSide(b) })
		b.Run("warmup-"+f.name+"/c", func(b *testing.B) { f.cSide(b) })
	}
	for i := range pairs {
		for _, f := range figs {
			testutil.RunPair(b, i, f.name, f.goSide, f.cSide)
		}
	}
}

// benchLlamaCppSettings reads the preset, the weight type's name (a ggml
// type or q4_K_M) and the threads from the environment (see
// BenchmarkLlamaCpp).
func benchLlamaCppSettings(tb testing.TB) (preset, typ string, threads int) {
	preset, typ = "small", "q4_0"
	if s := os.Getenv("GOGGML_BENCH_LLAMA"); s != "" {
		preset = s
	}
	if _, ok := Presets[preset]; !ok {
		tb.Fatalf("GOGGML_BENCH_LLAMA=%q: want one of %v", preset, PresetNames())
	}
	if s := os.Getenv("GOGGML_BENCH_LLAMA_TYPE"); s != "" {
		typ = s
	}
	if s := os.Getenv("GOGGML_BENCH_LLAMA_THREADS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			tb.Fatalf("GOGGML_BENCH_LLAMA_THREADS=%q: want a count", s)
		}
		threads = n
	}
	return
}

// benchModelMix writes (once per process) the preset with weights of type
// typ, a ggml type's name or q4_K_M (llama.cpp's mix), as a file converted
// by llama.cpp, whose tokenizer llama.cpp reads.
func benchModelMix(tb testing.TB, preset, typ string) string {
	r := RandomModel{Config: Presets[preset], Seed: 1, Converted: true, Tied: benchTied()}
	r.Arch = benchArch()
	switch r.Arch {
	case "llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3":
	case "qwen3moe", "mixtral":
		// 8 experts, 2 a token, each a quarter of the dense width: the
		// weights a token reads are about the dense model's.
		r.Experts, r.ExpertsUsed, r.ExpertFF = 8, 2, r.FeedForward/4
		if r.Arch == "mixtral" {
			// Mixtral's experts are feed_forward_length wide.
			r.Arch, r.FeedForward, r.ExpertFF = "llama", r.FeedForward/4, 0
		}
	default:
		tb.Fatalf("GOGGML_BENCH_LLAMA_ARCH=%q: want llama, qwen2, qwen3, qwen3moe, mixtral, gemma2, gemma3 or phi3", r.Arch)
	}
	if typ == "q4_K_M" {
		r.Types = MixQ4KM(r.Config.BlockCount, r.Tied)
	} else {
		r.Type = -1
		for _, t := range ggml.Types() {
			if t.String() == typ {
				r.Type = t
			}
		}
		if r.Type < 0 {
			tb.Fatalf("GOGGML_BENCH_LLAMA_TYPE=%q: want q4_K_M or a ggml type", typ)
		}
	}
	name := benchArch() + "-" + preset + "-" + typ + "-converted"
	if r.Tied {
		name += "-tied"
	}
	return benchFile(tb, name, r)
}

// benchArch is GOGGML_BENCH_LLAMA_ARCH, the architecture of the model
// (llama by default; mixtral is llama with experts).
func benchArch() string {
	if s := os.Getenv("GOGGML_BENCH_LLAMA_ARCH"); s != "" {
		return s
	}
	return "llama"
}

// benchTied reports GOGGML_BENCH_LLAMA_TIED=1.
func benchTied() bool { return os.Getenv("GOGGML_BENCH_LLAMA_TIED") == "1" }

// llamaCpp is a running llamacpp_bench.
type llamaCpp struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startLlamaCpp starts llama.cpp on the model at path, with a context of
// nCtx cells for nSeq sequences, skipping the benchmark where
// build/llamacpp.sh has not installed it.
func startLlamaCpp(tb testing.TB, path string, threads, nCtx, nSeq int) *llamaCpp {
	dir := LlamaCppDir()
	bin := filepath.Join(dir, "bin", "llamacpp_bench")
	if _, err := os.Stat(bin); err != nil {
		tb.Skipf("llama.cpp is not installed in %s (make llamacpp installs it; GOGGML_LLAMACPP names another place)", dir)
	}
	lib := filepath.Join(dir, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
	if os.Getenv("GOGGML_BENCH_LLAMACPP_NO_AMX") == "1" {
		lib = libsWithoutAMX(tb, lib)
	}
	cmd := exec.Command(bin, lib, path, strconv.Itoa(threads), strconv.Itoa(nCtx), "512", strconv.Itoa(nSeq))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s := &llamaCpp{cmd: cmd, in: in, out: bufio.NewScanner(stdout)}
	if !s.out.Scan() || !strings.HasPrefix(s.out.Text(), "ready") {
		s.close()
		tb.Fatalf("llamacpp_bench did not start: %q %v", s.out.Text(), s.out.Err())
	}
	tb.Logf("llama.cpp: %s", s.out.Text())
	return s
}

// libsWithoutAMX returns a directory of links to llama.cpp's libraries in
// lib, less its CPU variant for Sapphire Rapids, the one with AMX, so that
// llama.cpp picks its best variant without AMX: the other side for a
// go-ggml without AMX (the system provider here, whose AMX code gcc 12
// breaks: docs/providers.md). GOGGML_BENCH_LLAMACPP_NO_AMX=1 asks for it.
func libsWithoutAMX(tb testing.TB, lib string) string {
	entries, err := os.ReadDir(lib)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "libggml-cpu-sapphirerapids") {
			continue
		}
		if err := os.Symlink(filepath.Join(lib, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// run sends one command and returns the time llama.cpp took.
func (s *llamaCpp) run(tb testing.TB, cmd string) time.Duration {
	if _, err := fmt.Fprintln(s.in, cmd); err != nil {
		tb.Fatal(err)
	}
	if !s.out.Scan() {
		tb.Fatalf("llamacpp_bench: no answer to %q: %v", cmd, s.out.Err())
	}
	ns, ok := strings.CutPrefix(s.out.Text(), "ok ")
	if !ok {
		tb.Fatalf("llamacpp_bench: %q: %s", cmd, s.out.Text())
	}
	v, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		tb.Fatalf("llamacpp_bench: %q: %v", cmd, err)
	}
	return time.Duration(v)
}

// settle waits until llama.cpp's threads have stopped running: after a
// compute, its thread pool spins for work (poll 50, as llama-bench sets
// it) for about 0.4 s on this project's machines, and on two cores that
// took one of them from the go side's next sample (its threads, poll 1,
// spin a few milliseconds). Each go sample therefore starts once the process has
// run less than 1 ms in 50 ms (by /proc's schedstat of all its threads),
// or after 5 s. llama.cpp's own samples keep the spinning between their
// computes, as in llama-bench.
func (s *llamaCpp) settle(tb testing.TB) {
	busy := func() time.Duration {
		var sum time.Duration
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", s.cmd.Process.Pid))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				sum += time.Duration(ns)
			}
		}
		return sum
	}
	deadline := time.Now().Add(5 * time.Second)
	last := busy()
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		now := busy()
		if now-last < time.Millisecond {
			return
		}
		last = now
	}
	tb.Logf("llama.cpp's threads still ran after 5 s")
}

func (s *llamaCpp) close() {
	fmt.Fprintln(s.in, "quit")
	s.in.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}
