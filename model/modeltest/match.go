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
// models of each type (GOGGML_SEED 1 to 5; logits of every token of
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
// (ggml.CPUTiledFlashAttn, internal/provider/embedded/cpu/fattn.c) keeps
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

// MatchLogitsMoE is MatchLogits for a mixture of experts: from the first
// token whose logits are further from llama.cpp's than tl.Max on, the
// tokens may differ by a router's choice (see MatchGreedyMoE), if the
// float64 reference (ref, over the prompt up to that token) shows a router
// near-tie, a gap below routerTie; the tokens before are held to tl.
func MatchLogitsMoE(t testing.TB, m *model.Model, cpp *LlamaCpp, ref *Reference, prompt []int32, tl LlamaCppTol, routerTie float64) {
	t.Helper()
	n, vocab := len(prompt), m.Config.VocabSize
	want, err := cpp.Logits(prompt)
	require.NoError(t, err)
	require.Len(t, want, n)
	require.NoError(t, m.Rewind(0))
	got, err := m.Eval(context.Background(), prompt, true)
	require.NoError(t, err)
	require.Len(t, got, n*vocab)
	upTo, maxDiff, sum := n, 0.0, 0.0
	for i, w := range want {
		require.Len(t, w, vocab)
		worst := 0.0
		for j, x := range w {
			d := math.Abs(float64(got[i*vocab+j] - x))
			if math.IsNaN(d) {
				d = math.Inf(1)
			}
			worst = max(worst, d)
			sum += d * d
		}
		if worst > tl.Max {
			upTo = i
			break
		}
		maxDiff = max(maxDiff, worst)
	}
	if upTo < n {
		ref.Reset()
		for _, id := range prompt[:upTo+1] {
			ref.Next(id)
		}
		require.Less(t, ref.RouterGap, routerTie, "token %d's logits are more than %g from llama.cpp's, and the reference's router had no near-tie up to it", upTo, tl.Max)
		t.Logf("from token %d on the logits differ by a router's choice: two experts' router logits %.3g apart in the reference", upTo, ref.RouterGap)
		if upTo == 0 {
			return
		}
		sum = 0
		for i := range upTo {
			for j, x := range want[i] {
				d := float64(got[i*vocab+j] - x)
				sum += d * d
			}
		}
	}
	rms := math.Sqrt(sum / float64(upTo*vocab))
	t.Logf("%d tokens of %d: largest difference %.3g, RMS %.3g", upTo, n, maxDiff, rms)
	assert.LessOrEqual(t, rms, tl.RMS, "the RMS of the differences of %d tokens", upTo)
}

// StartPair writes r's model (its Seed drawn from rng) into the test's
// temporary directory and returns it loaded by go-ggml (on the CPU, 2
// threads, its defaults otherwise: those of llama.cpp) and llama.cpp
// running it (StartLlamaCpp: the test skips without it).
func StartPair(t testing.TB, rng *rand.Rand, r RandomModel) (*model.Model, *LlamaCpp) {
	t.Helper()
	m, cpp, _ := StartPairCache(t, rng, r, model.CacheF16)
	return m, cpp
}

// StartPairCache is StartPair with a KV cache of type ct (f16 or f32) on
// both sides; it also returns the file's path.
func StartPairCache(t testing.TB, rng *rand.Rand, r RandomModel, ct model.CacheType) (*model.Model, *LlamaCpp, string) {
	t.Helper()
	r.Seed = rng.Uint64()
	path := filepath.Join(t.TempDir(), "pair.gguf")
	require.NoError(t, WriteRandom(path, r))
	ref := StartLlamaCppCache(t, path, ct)
	require.Equal(t, r.VocabSize, ref.VocabSize)
	m, err := model.Load(context.Background(), path, model.Options{Threads: LlamaCppThreads, CPUOnly: true, CacheType: ct})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m, ref, path
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
	got, want, gaps, steps := greedyPair(t, m, ref, prompt, n)
	CheckGreedy(t, got, want, gaps, tl.Tie)
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			d := steps[i][got[i]] - steps[i][want[i]]
			assert.Less(t, float64(d), tl.Tie, "step %d: go-ggml's logit of llama.cpp's choice %d is %.3g below its own choice's", i, want[i], d)
			break
		}
	}
}

// greedyPair generates n tokens greedily after prompt with go-ggml and
// llama.cpp, and returns both's tokens, llama.cpp's top-two gaps and
// go-ggml's logits at each step.
func greedyPair(t testing.TB, m *model.Model, ref *LlamaCpp, prompt []int32, n int) (got, want []int32, gaps []float64, steps [][]float32) {
	t.Helper()
	want, gaps, err := ref.Generate(prompt, n)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, m.Rewind(0))
	logits, err := m.Eval(ctx, prompt, false)
	require.NoError(t, err)
	for i := range n {
		id := argmax(logits)
		got = append(got, id)
		steps = append(steps, slices.Clone(logits))
		if i+1 < n {
			logits, err = m.Eval(ctx, []int32{id}, false)
			require.NoError(t, err)
		}
	}
	return got, want, gaps, steps
}

// MatchGreedyMoE is MatchGreedy for a mixture of experts, whose router's
// choice is discontinuous: where two experts' router logits are close at
// the edge of the chosen ones, either side's rounding may pick the other
// expert, and the output moves by a whole expert's contribution, at that
// token and, through the cache, after it. Where the two part at a step
// that is no near-tie of the output, the float64 reference (ref, run
// over the prompt and the tokens both generated up to there) must show
// such a router near-tie: a gap below routerTie (Reference.RouterGap).
func MatchGreedyMoE(t testing.TB, m *model.Model, cpp *LlamaCpp, ref *Reference, prompt []int32, n int, tl LlamaCppTol, routerTie float64) {
	t.Helper()
	got, want, gaps, steps := greedyPair(t, m, cpp, prompt, n)
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	if i == len(got) && i == len(want) {
		return
	}
	require.True(t, i < len(got) && i < len(want), "greedy tokens: go-ggml has %d, llama.cpp %d", len(got), len(want))
	if i < len(gaps) && gaps[i] < tl.Tie && float64(steps[i][got[i]]-steps[i][want[i]]) < tl.Tie {
		t.Logf("greedy tokens part at step %d where llama.cpp's top two logits are %.3g apart: a near-tie", i, gaps[i])
		return
	}
	ref.Reset()
	for _, id := range append(slices.Clone(prompt), got[:i]...) {
		ref.Next(id)
	}
	assert.Less(t, ref.RouterGap, routerTie, "greedy tokens part at step %d (go-ggml %d, llama.cpp %d), where llama.cpp's top two logits are %.3g apart, and the reference's router had no near-tie before\n go-ggml:   %v\n llama.cpp: %v",
		i, got[i], want[i], gaps[i], got, want)
	t.Logf("greedy tokens part at step %d after a router near-tie: two experts' router logits %.3g apart in the reference", i, ref.RouterGap)
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
