package model_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-ggml/ggml/internal/testutil"

	. "github.com/go-ggml/ggml/model"
)

// BenchmarkLlamaCppBatched is BenchmarkLlamaCpp's pairs for many
// sequences at once, as llama.cpp's llama-batched-bench measures them:
// S sequences each decode a prompt of 16 tokens (one batch, not timed),
// then 64 batches of S tokens, one a sequence, its greedy choice after its
// last (Model.Decode; llama_decode on the C side). The figure tg64xS is
// the aggregate: S·64 tokens over the time of the 64 batches, in
// tokens/s. The model is GOGGML_BENCH_LLAMA's (default small) with
// GOGGML_BENCH_LLAMA_TYPE's weights, as for BenchmarkLlamaCpp;
// GOGGML_BENCH_BATCHED_WIDTHS lists the widths (default 1,2,4,8,16,32).
// Both sides hold 32 sequences of 128 cells in an f16 cache: go-ggml one
// cache of 4096 cells the sequences share (Options.Sequences), llama.cpp
// its default of a cache split among them (kv_unified false).
func BenchmarkLlamaCppBatched(b *testing.B) {
	pairs := testutil.BenchPairs(b)
	preset, typName, threads := benchLlamaCppSettings(b)
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	widths := []int{1, 2, 4, 8, 16, 32}
	if s := os.Getenv("GOGGML_BENCH_BATCHED_WIDTHS"); s != "" {
		widths = nil
		for _, f := range strings.Split(s, ",") {
			w, err := strconv.Atoi(f)
			if err != nil || w < 1 || w > 32 {
				b.Fatalf("GOGGML_BENCH_BATCHED_WIDTHS=%q: want widths of 1 to 32", s)
			}
			widths = append(widths, w)
		}
	}
	const prompt, gen, maxSeqs, perSeq = 16, 64, 32, 128
	path := benchModelMix(b, preset, typName)
	srv := startLlamaCpp(b, path, threads, maxSeqs*perSeq, maxSeqs)
	defer srv.close()
	ctx := context.Background()
	m, err := Load(ctx, path, Options{CPUOnly: true, ContextSize: maxSeqs * perSeq, BatchSize: 512, Sequences: maxSeqs,
		Threads: threads, Poll: 50, CacheType: CacheF16})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	name := fmt.Sprintf("%s-%s-t%d", preset, typName, threads)
	if arch := benchArch(); arch != "llama" {
		name = arch + "-" + name
	}
	rng := rand.New(rand.NewPCG(3, 4))
	vocab := m.Config.VocabSize
	// run decodes the prompts of s sequences and then gen batches, and
	// returns the time of the batches.
	run := func(b *testing.B, s int) time.Duration {
		for q := range maxSeqs {
			if err := m.SeqRemove(q, -1, -1); err != nil {
				b.Fatal(err)
			}
		}
		batch := make([]Token, 0, s*prompt)
		for q := range s {
			for i := range prompt {
				batch = append(batch, Token{ID: int32(rng.IntN(vocab)), Seq: q, Logits: i == prompt-1})
			}
		}
		logits, err := m.Decode(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for range gen {
			batch = batch[:0]
			for q := range s {
				batch = append(batch, Token{ID: argmaxOf(logits[q*vocab : (q+1)*vocab]), Seq: q, Logits: true})
			}
			if logits, err = m.Decode(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	fig := func(s int) (string, func(*testing.B), func(*testing.B)) {
		report := func(b *testing.B, total time.Duration) {
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*gen), "ns/op")
			b.ReportMetric(float64(s*gen*b.N)/total.Seconds(), "tokens/s")
		}
		return fmt.Sprintf("tg%dx%d-%s", gen, s, name),
			func(b *testing.B) {
				srv.settle(b)
				var total time.Duration
				for range b.N {
					total += run(b, s)
				}
				report(b, total)
				if err := m.Rest(); err != nil {
					b.Fatal(err)
				}
			},
			func(b *testing.B) {
				var total time.Duration
				for range b.N {
					total += srv.run(b, fmt.Sprintf("par %d %d %d", s, prompt, gen))
				}
				report(b, total)
			}
	}
	// A warm-up of each side at the widest width.
	wn, wg, wc := fig(widths[len(widths)-1])
	b.Run("warmup-"+wn+"/go", wg)
	b.Run("warmup-"+wn+"/c", wc)
	for i := range pairs {
		for _, s := range widths {
			n, g, c := fig(s)
			testutil.RunPair(b, i, n, g, c)
		}
	}
}

// BenchmarkCacheDepth compares a quantized KV cache with f16 where the
// cache is deep, as bench/table pairs of go-ggml against itself: the side
// "go" runs a q8_0 cache (GOGGML_BENCH_CACHE names another: q4_0), the side
// "c" the f16 cache, both generating 64 tokens (greedy, one at a time)
// after GOGGML_BENCH_LLAMA_DEPTH tokens (default 1024) that stay in the
// cache, on GOGGML_BENCH_LLAMA's preset (default small) with
// GOGGML_BENCH_LLAMA_TYPE's weights. The table's Go/C is the quantized
// cache's time over f16's.
func BenchmarkCacheDepth(b *testing.B) {
	pairs := testutil.BenchPairs(b)
	preset, typName, threads := benchLlamaCppSettings(b)
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	depth := 1024
	if s := os.Getenv("GOGGML_BENCH_LLAMA_DEPTH"); s != "" {
		var err error
		if depth, err = strconv.Atoi(s); err != nil || depth < 1 {
			b.Fatalf("GOGGML_BENCH_LLAMA_DEPTH=%q: want a depth", s)
		}
	}
	ctName := "q8_0"
	if s := os.Getenv("GOGGML_BENCH_CACHE"); s != "" {
		ctName = s
	}
	ct, err := ParseCacheType(ctName)
	if err != nil {
		b.Fatal(err)
	}
	const gen = 64
	path := benchModelMix(b, preset, typName)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	load := func(ct CacheType) (*Model, []int32) {
		m, err := Load(ctx, path, Options{CPUOnly: true, ContextSize: (depth + gen + 255) / 256 * 256, Threads: threads, Poll: 50, CacheType: ct})
		if err != nil {
			b.Fatal(err)
		}
		prompt := make([]int32, depth)
		for i := range prompt {
			prompt[i] = int32(rng.IntN(m.Config.VocabSize))
		}
		if _, err := m.Eval(ctx, prompt, false); err != nil {
			b.Fatal(err)
		}
		return m, prompt
	}
	q, _ := load(ct)
	defer q.Close()
	f, _ := load(CacheF16)
	defer f.Close()
	side := func(m *Model) func(*testing.B) {
		return func(b *testing.B) {
			var total time.Duration
			for range b.N {
				if err := m.Rewind(depth); err != nil {
					b.Fatal(err)
				}
				id := int32(1)
				t0 := time.Now()
				for range gen {
					logits, err := m.Eval(ctx, []int32{id}, false)
					if err != nil {
						b.Fatal(err)
					}
					id = argmaxOf(logits)
				}
				total += time.Since(t0)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*gen), "ns/op")
			b.ReportMetric(float64(gen*b.N)/total.Seconds(), "tokens/s")
			if err := m.Rest(); err != nil {
				b.Fatal(err)
			}
		}
	}
	name := fmt.Sprintf("tg%d@d%d-%s-vs-f16-%s-%s-t%d", gen, depth, ctName, preset, typName, threads)
	b.Run("warmup/go", side(q))
	b.Run("warmup/c", side(f))
	for i := range pairs {
		testutil.RunPair(b, i, name, side(q), side(f))
	}
}
