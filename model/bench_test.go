package model_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"

	. "github.com/go-ggml/ggml/model"
	_ "github.com/go-ggml/ggml/model/llama"
	. "github.com/go-ggml/ggml/model/modeltest"
	"github.com/go-ggml/ggml/model/sample"
)

// The benchmark model: GOGGML_BENCH_LLAMA names a preset (default "small",
// ~125M weights, which a shared 2-core machine writes in seconds; "1b" is
// the size, ~1.24G weights, 0.7 GB in q4_0), GOGGML_BENCH_LLAMA_TYPE
// the weight type (default q4_0), GOGGML_BENCH_LLAMA_THREADS the CPU threads
// (default: one per core) and GOGGML_BENCH_LLAMA_GPU_LAYERS the blocks on a
// GPU when there is one (default all).
func benchSettings(tb testing.TB) (preset string, typ ggml.Type, threads, gpuLayers int) {
	preset, typ, threads, gpuLayers = "small", ggml.TypeQ4_0, 0, -1
	if s := os.Getenv("GOGGML_BENCH_LLAMA"); s != "" {
		preset = s
	}
	if _, ok := Presets[preset]; !ok {
		tb.Fatalf("GOGGML_BENCH_LLAMA=%q: want one of %v", preset, PresetNames())
	}
	if s := os.Getenv("GOGGML_BENCH_LLAMA_TYPE"); s != "" {
		typ = -1
		for _, t := range ggml.Types() {
			if t.String() == s {
				typ = t
			}
		}
		if typ < 0 {
			tb.Fatalf("GOGGML_BENCH_LLAMA_TYPE=%q: not a ggml type", s)
		}
	}
	for _, v := range []struct {
		env string
		n   *int
	}{{"GOGGML_BENCH_LLAMA_THREADS", &threads}, {"GOGGML_BENCH_LLAMA_GPU_LAYERS", &gpuLayers}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				tb.Fatalf("%s=%q: %v", v.env, s, err)
			}
			*v.n = n
		}
	}
	return
}

// benchFiles are the generated models, written once per process into a
// directory TestMain removes.
var benchFiles struct {
	sync.Mutex
	dir   string
	paths map[string]string
}

func benchModel(tb testing.TB, preset string, typ ggml.Type) string {
	return benchFile(tb, preset+"-"+typ.String(), RandomModel{Config: Presets[preset], Type: typ, Tied: preset == "1b", Seed: 1})
}

// benchFile writes r once per process under the name key.
func benchFile(tb testing.TB, key string, r RandomModel) string {
	f := &benchFiles
	f.Lock()
	defer f.Unlock()
	if p, ok := f.paths[key]; ok {
		return p
	}
	if f.dir == "" {
		dir, err := os.MkdirTemp("", "llama-bench-")
		if err != nil {
			tb.Fatal(err)
		}
		f.dir, f.paths = dir, map[string]string{}
	}
	path := filepath.Join(f.dir, key+".gguf")
	t0 := time.Now()
	if err := WriteRandom(path, r); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("wrote the %s model in %v", key, time.Since(t0).Round(time.Millisecond))
	f.paths[key] = path
	return path
}

func TestMain(m *testing.M) {
	code := testutil.RunLeakChecked(m) // no handle left alive

	if benchFiles.dir != "" {
		os.RemoveAll(benchFiles.dir)
	}
	os.Exit(code)
}

// BenchmarkLlama measures prompt processing (128 tokens in one batch from
// position 0, the graph reused from iteration to iteration) and generation
// (one token at a time after a 16-token prompt, from position 16: a new
// graph when the attended cells pass 256, and back to 16 after 511) on the
// generated model, in tokens/s, and go-%: the share of the time spent
// outside ggml's compute call — building and allocating graphs, filling
// inputs, sched.Compute's own checks, copying logits out, and, for
// generation, sampling (greedy). Generation covers positions 16 to 511
// only with -benchtime 496x (make bench-llama sets it); a run of a few
// hundred milliseconds stops long before the second graph.
func BenchmarkLlama(b *testing.B) {
	preset, typ, threads, gpuLayers := benchSettings(b)
	path := benchModel(b, preset, typ)
	ctx := context.Background()
	m, err := Load(ctx, path, Options{ContextSize: 512, BatchSize: 512, Threads: threads, GPULayers: gpuLayers, CPUOnly: gpuLayers == 0, CacheType: CacheF16})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	prompt := make([]int32, 128)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(m.Config.VocabSize))
	}
	name := preset + "-" + typ.String()
	if len(m.Backends()) > 1 {
		name += "-" + m.Backends()[0].Name()
	}
	report := func(b *testing.B, tokens int, sampling time.Duration) {
		st := m.Stats()
		b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		out := st.Overhead() + sampling
		b.ReportMetric(100*out.Seconds()/(out+st.Compute).Seconds(), "go-%")
	}

	b.Run(fmt.Sprintf("pp%d-%s/go", len(prompt), name), func(b *testing.B) {
		m.ResetStats()
		for b.Loop() {
			if err := m.Rewind(0); err != nil {
				b.Fatal(err)
			}
			if _, err := m.Eval(ctx, prompt, false); err != nil {
				b.Fatal(err)
			}
		}
		report(b, b.N*len(prompt), 0)
	})

	b.Run(fmt.Sprintf("tg-%s/go", name), func(b *testing.B) {
		const start = 16
		if err := m.Rewind(0); err != nil {
			b.Fatal(err)
		}
		logits, err := m.Eval(ctx, prompt[:start], false)
		if err != nil {
			b.Fatal(err)
		}
		s, _ := sample.New(sample.Params{}) // greedy
		m.ResetStats()
		var sampling time.Duration
		for b.Loop() {
			t0 := time.Now()
			id, err := s.Sample(logits)
			if err != nil {
				b.Fatal(err)
			}
			sampling += time.Since(t0)
			if m.Pos() == m.ContextSize() {
				if err := m.Rewind(start); err != nil {
					b.Fatal(err)
				}
			}
			if logits, err = m.Eval(ctx, []int32{id}, false); err != nil {
				b.Fatal(err)
			}
		}
		report(b, b.N, sampling)
	})
}
