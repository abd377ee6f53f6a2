package modeltest

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/model"
)

// LlamaCppTol is how far go-ggml may be from llama.cpp on the same file:
// Max is the largest absolute difference of a logit, RMS the root mean
// square of the differences over a prompt's logits, Tie the gap between
// llama.cpp's two largest logits below which greedy choices may part
// (CheckGreedy's minGap).
type LlamaCppTol struct{ Max, RMS, Tie float64 }

// LlamaCppTolerance is LlamaCppTol by weight type. Seen over 40 Llama
// models of each type (GGML_TEST_SEED 1 to 5; logits of every token of
// prompts of 16 and 80): largest differences f32 0.0054, f16 0.0066, q8_0
// 0.093, q4_0 0.10 (logits up to about 4); RMS f32 8.4e-4, f16 1.2e-3,
// q8_0 and q4_0 0.021; greedy tokens that parted did so where llama.cpp's
// top two were at most 0.019 apart (f32, f16) and 0.068 (q8_0, q4_0). With
// two tokens of the prompt swapped on go-ggml's side, the largest
// difference was 2.1 or more in every model.
//
// Where the differences come from: both run ggml's CPU kernels, but not
// the same fused attention. Below 64 queries (prompts of fewer tokens,
// and generation) llama.cpp's goes query by query, rounds the query to
// f16 and sums V in f16; go-ggml's own on AVX-512 CPUs
// (ggml.CPUTiledFlashAttn, third_party/ggml/embedded/cpu/fattn.c) keeps
// both in f32. With quantized weights each matrix product rounds its
// input to q8_0, which turns those small differences into steps of a
// quantization level here and there, so they grow from layer to layer.
// With GOGGML_CPU_VARIANT=x86-64-v3 (the provider's kernel, llama.cpp's)
// the tiny model's q8_0 logits of 16 tokens were llama.cpp's bit for bit.
var LlamaCppTolerance = map[ggml.Type]LlamaCppTol{
	ggml.TypeF32:  {Max: 0.05, RMS: 0.01, Tie: 0.05},
	ggml.TypeF16:  {Max: 0.05, RMS: 0.01, Tie: 0.05},
	ggml.TypeQ8_0: {Max: 0.5, RMS: 0.1, Tie: 0.25},
	ggml.TypeQ4_0: {Max: 0.5, RMS: 0.1, Tie: 0.25},
}

// StartPair writes r's model (its Seed drawn from rng) into the test's
// temporary directory and returns it loaded by go-ggml (on the CPU, 2
// threads, its defaults otherwise: those of llama.cpp) and llama.cpp
// running it (StartLlamaCpp: the test skips without it).
func StartPair(t testing.TB, rng *rand.Rand, r RandomModel) (*model.Model, *LlamaCpp) {
	t.Helper()
	r.Seed = rng.Uint64()
	path := filepath.Join(t.TempDir(), "pair.gguf")
	require.NoError(t, WriteRandom(path, r))
	ref := StartLlamaCpp(t, path)
	require.Equal(t, r.VocabSize, ref.VocabSize)
	m, err := model.Load(context.Background(), path, model.Options{Threads: LlamaCppThreads, CPUOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m, ref
}

// argmax returns the first index of v's largest value, as llama.cpp's
// driver chooses.
func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// MatchGreedy generates n tokens greedily after prompt with go-ggml (the
// prompt in one Eval from position 0, then one token at a time) and with
// llama.cpp, and wants the same tokens up to a near-tie (CheckGreedy with
// tl.Tie), where llama.cpp's choice must be a near-tie on go-ggml's side
// too.
func MatchGreedy(t testing.TB, m *model.Model, ref *LlamaCpp, prompt []int32, n int, tl LlamaCppTol) {
	t.Helper()
	want, gaps, err := ref.Generate(prompt, n)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, m.Rewind(0))
	logits, err := m.Eval(ctx, prompt, false)
	require.NoError(t, err)
	var got []int32
	var steps [][]float32 // go-ggml's logits at each step
	for i := range n {
		id := argmax(logits)
		got = append(got, id)
		steps = append(steps, slices.Clone(logits))
		if i+1 < n {
			logits, err = m.Eval(ctx, []int32{id}, false)
			require.NoError(t, err)
		}
	}
	CheckGreedy(t, got, want, gaps, tl.Tie)
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			d := steps[i][got[i]] - steps[i][want[i]]
			assert.Less(t, float64(d), tl.Tie, "step %d: go-ggml's logit of llama.cpp's choice %d is %.3g below its own choice's", i, want[i], d)
			break
		}
	}
}

// MatchLogits compares the logits of every token of prompt, in one batch
// from position 0, from go-ggml and llama.cpp, within tl's Max and RMS,
// and returns the largest difference and the RMS.
func MatchLogits(t testing.TB, m *model.Model, ref *LlamaCpp, prompt []int32, tl LlamaCppTol) (maxDiff, rms float64) {
	t.Helper()
	n, vocab := len(prompt), m.Config.VocabSize
	want, err := ref.Logits(prompt)
	require.NoError(t, err)
	require.NoError(t, m.Rewind(0))
	got, err := m.Eval(context.Background(), prompt, true)
	require.NoError(t, err)
	require.Len(t, got, n*vocab)
	at, sum := 0, 0.0
	for i, w := range want {
		require.Len(t, w, vocab)
		for j, x := range w {
			d := math.Abs(float64(got[i*vocab+j] - x))
			sum += d * d
			if d > maxDiff || math.IsNaN(d) {
				maxDiff, at = d, i*vocab+j
			}
		}
	}
	rms = math.Sqrt(sum / float64(n*vocab))
	t.Logf("%d tokens: largest difference %.3g (token %d, logit %d), RMS %.3g", n, maxDiff, at/vocab, at%vocab, rms)
	assert.LessOrEqual(t, maxDiff, tl.Max, "%d tokens: the largest difference, at token %d, logit %d: go-ggml %g, llama.cpp %g",
		n, at/vocab, at%vocab, got[at], want[at/vocab][at%vocab])
	assert.LessOrEqual(t, rms, tl.RMS, "%d tokens: the RMS of the differences", n)
	return maxDiff, rms
}
