package modeltest

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model"
)

// LoadModel loads the model at path for a test, closing it when the test
// ends: one thread, an f32 cache (the reference's precision) and the CPU
// unless opts say otherwise.
func LoadModel(t testing.TB, path string, opts model.Options) *model.Model {
	t.Helper()
	if opts.Threads == 0 {
		opts.Threads = 1
	}
	if opts.CacheType == model.CacheDefault {
		opts.CacheType = model.CacheF32 // the reference's precision
	}
	if opts.GPULayers == 0 && opts.Device == nil {
		opts.CPUOnly = true // the CPU's tolerances; gpu_test.go asks for the GPU
	}
	m, err := model.Load(context.Background(), path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Close()) })
	return m
}

// OpenReference reads the model at path into a Reference, failing the
// test on an error.
func OpenReference(t testing.TB, path string) *Reference {
	t.Helper()
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := ReadReference(f)
	require.NoError(t, err)
	return r
}

// LogitError is the largest difference between got and want relative to
// want's root mean square.
func LogitError(got []float32, want []float64) float64 {
	ss := 0.0
	for _, w := range want {
		ss += w * w
	}
	rms := math.Sqrt(ss / float64(len(want)))
	worst := 0.0
	for i, w := range want {
		worst = math.Max(worst, math.Abs(float64(got[i])-w)/rms)
	}
	return worst
}

// Tol bounds the logit error (LogitError) of a run's tokens: the best
// token must be within Best, every token within Worst.
type Tol struct{ Best, Worst float64 }

// Tolerance per weight type, against a reference that rounds activations
// as the CPU backend does (f16 for f16 weights, q8_0 for the block types).
// What is left is float32 arithmetic, and now and then a rounding that
// falls the other way between the reference and ggml: one q8_0 step in one
// activation moves the logits by up to ~5 %, and once it is in the KV
// cache, those of every later token. So tokens at float32 precision show
// that ggml computes what the reference does, and every token must stay
// within a rounding's reach: for q8_0 it reached 0.1006 (a CI run on
// 2026-11-26, seed 1795677261008372580 with that run's tokens), above the
// 0.1 this table had; 0.15, as for the mixed types.
var Tolerance = map[ggml.Type]Tol{
	ggml.TypeF32:  {1e-4, 1e-4},
	ggml.TypeF16:  {3e-3, 1e-2},
	ggml.TypeQ8_0: {1e-5, 0.15},
	ggml.TypeQ4_0: {1e-5, 0.15},
}

// CheckAgainstReference runs a prompt (in batches of the model's size,
// every token's logits) and then tokens one at a time, and compares every
// logit with the float64 reference. Where a rounding can fall the other
// way (tl.Best < tl.Worst) it runs two more sequences from position 0, the
// tokens reversed and rotated, so that one rounding in the first token of
// one run cannot hide every token at float32 precision (with two runs, the
// model of every type saw both hit about once in 75).
func CheckAgainstReference(t testing.TB, m *model.Model, ref *Reference, seq []int32, nPrompt int, tl Tol) {
	t.Helper()
	errs := checkRun(t, m, ref, seq, nPrompt, tl.Worst)
	if tl.Best < tl.Worst {
		rev := slices.Clone(seq)
		slices.Reverse(rev)
		rot := append(slices.Clone(seq[len(seq)/2:]), seq[:len(seq)/2]...)
		for _, other := range [][]int32{rev, rot} {
			require.NoError(t, m.Rewind(0))
			ref.Reset()
			errs = append(errs, checkRun(t, m, ref, other, nPrompt, tl.Worst)...)
		}
	}
	slices.Sort(errs)
	require.LessOrEqual(t, errs[0], tl.Best, "the best token's logit error; all: %.3g", errs)
	t.Logf("logit error of the reference's rms: best %.3g, median %.3g, worst %.3g (tolerances %.3g, %.3g)",
		errs[0], errs[len(errs)/2], errs[len(errs)-1], tl.Best, tl.Worst)
}

// checkRun evaluates seq after what is in the cache and returns each
// token's logit error, failing on one above worst.
func checkRun(t testing.TB, m *model.Model, ref *Reference, seq []int32, nPrompt int, worst float64) []float64 {
	t.Helper()
	ctx := context.Background()
	vocab := m.Config.VocabSize
	start := m.Pos()
	logits, err := m.Eval(ctx, seq[:nPrompt], true)
	require.NoError(t, err)
	require.Len(t, logits, nPrompt*vocab)
	var errs []float64
	for i := range nPrompt {
		e := LogitError(logits[i*vocab:(i+1)*vocab], ref.Next(seq[i]))
		require.LessOrEqual(t, e, worst, "prompt token %d", i)
		errs = append(errs, e)
	}
	for i := nPrompt; i < len(seq); i++ {
		logits, err := m.Eval(ctx, seq[i:i+1], false)
		require.NoError(t, err)
		require.Len(t, logits, vocab)
		e := LogitError(logits, ref.Next(seq[i]))
		require.LessOrEqual(t, e, worst, "generated token %d", i)
		errs = append(errs, e)
	}
	require.Equal(t, start+len(seq), m.Pos())
	return errs
}

// RandomTokens draws n tokens from rng: the test's generator, so that the
// one seed it logs (GGML_TEST_SEED) replays the model and the tokens alike.
// (A generator of their own, seeded apart, could not be replayed together
// with the model's.)
func RandomTokens(rng *rand.Rand, n, vocab int) []int32 {
	seq := make([]int32, n)
	for i := range seq {
		seq[i] = int32(rng.IntN(vocab))
	}
	return seq
}
