package modeltest

import (
	"context"
	"fmt"
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
// token must be within Best, every token within Worst. Where RouterTie is
// set (a mixture of experts), a token beyond Worst is allowed where the
// reference's router had a near-tie at it or before (Reference.RouterGap
// below RouterTie): a rounding there may pick another expert, which
// moves the output by a whole expert's contribution.
type Tol struct{ Best, Worst, RouterTie float64 }

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
	ggml.TypeF32:  {Best: 1e-4, Worst: 1e-4},
	ggml.TypeF16:  {Best: 3e-3, Worst: 1e-2},
	ggml.TypeQ8_0: {Best: 1e-5, Worst: 0.15},
	ggml.TypeQ4_0: {Best: 1e-5, Worst: 0.15},
}

// MoETolerance is Tolerance for a mixture of experts with weights of type
// typ: a token beyond it is allowed after a router's near-tie, within 1e-3
// for f32 (float32 arithmetic) and 0.05 for the types whose activations
// the CPU rounds (one q8_0 step of an activation moves a router logit by
// up to about 1e-2).
func MoETolerance(typ ggml.Type) Tol {
	tl := Tolerance[typ]
	tl.RouterTie = 0.05
	if typ == ggml.TypeF32 {
		tl.RouterTie = 1e-3
	}
	return tl
}

// RouterTie is the gap between two experts' router logits below which
// llama.cpp's kernels, a float32 rounding away from go-ggml's, may choose
// the other expert (MatchGreedyMoE, MatchLogitsMoE): 0.00063 to 0.0011
// seen where they did.
const RouterTie = 0.005

// CheckAgainstReference runs a prompt (in batches of the model's size,
// every token's logits) and then tokens one at a time, and compares every
// logit with the float64 reference. Where a rounding can fall the other
// way (tl.Best < tl.Worst) it runs two more sequences from position 0, the
// tokens reversed and rotated, so that one rounding in the first token of
// one run cannot hide every token at float32 precision (with two runs, the
// model of every type saw both hit about once in 75).
func CheckAgainstReference(t testing.TB, m *model.Model, ref *Reference, seq []int32, nPrompt int, tl Tol) {
	t.Helper()
	errs := checkRun(t, m, ref, seq, nPrompt, tl)
	if tl.Best < tl.Worst {
		rev := slices.Clone(seq)
		slices.Reverse(rev)
		rot := append(slices.Clone(seq[len(seq)/2:]), seq[:len(seq)/2]...)
		for _, other := range [][]int32{rev, rot} {
			require.NoError(t, m.Rewind(0))
			ref.Reset()
			errs = append(errs, checkRun(t, m, ref, other, nPrompt, tl)...)
		}
	}
	slices.Sort(errs)
	require.LessOrEqual(t, errs[0], tl.Best, "the best token's logit error; all: %.3g", errs)
	t.Logf("logit error of the reference's rms: best %.3g, median %.3g, worst %.3g (tolerances %.3g, %.3g)",
		errs[0], errs[len(errs)/2], errs[len(errs)-1], tl.Best, tl.Worst)
}

// checkRun evaluates seq after what is in the cache and returns each
// token's logit error, failing on one above worst.
func checkRun(t testing.TB, m *model.Model, ref *Reference, seq []int32, nPrompt int, tl Tol) []float64 {
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
		checkWorst(t, e, ref, tl, "prompt token %d", i)
		errs = append(errs, e)
	}
	for i := nPrompt; i < len(seq); i++ {
		logits, err := m.Eval(ctx, seq[i:i+1], false)
		require.NoError(t, err)
		require.Len(t, logits, vocab)
		e := LogitError(logits, ref.Next(seq[i]))
		checkWorst(t, e, ref, tl, "generated token %d", i)
		errs = append(errs, e)
	}
	require.Equal(t, start+len(seq), m.Pos())
	return errs
}

// checkWorst fails the test where a token's logit error e is beyond
// tl.Worst, but after a router's near-tie where tl.RouterTie is set.
func checkWorst(t testing.TB, e float64, ref *Reference, tl Tol, what string, args ...any) {
	t.Helper()
	if e <= tl.Worst {
		return
	}
	if tl.RouterTie > 0 && ref.RouterGap < tl.RouterTie {
		t.Logf("%s: logit error %.3g after a router near-tie (two experts' router logits %.3g apart in the reference)", fmt.Sprintf(what, args...), e, ref.RouterGap)
		return
	}
	require.LessOrEqual(t, e, tl.Worst, fmt.Sprintf(what, args...))
}

// RandomTokens draws n tokens from rng: the test's generator, so that the
// one seed it logs (GOGGML_SEED) replays the model and the tokens alike.
// (A generator of their own, seeded apart, could not be replayed together
// with the model's.)
func RandomTokens(rng *rand.Rand, n, vocab int) []int32 {
	seq := make([]int32, n)
	for i := range seq {
		seq[i] = int32(rng.IntN(vocab))
	}
	return seq
}

// CheckSeqShift holds Model.SeqShift to the float64 reference in sequence
// 0 of m (empty): a prompt, its oldest tokens dropped (SeqRemove) and the
// rest moved down to position 0 (SeqShift by a negative delta), then
// tokens one at a time; then everything moved up by 3 and more tokens. The
// reference does the same to its cache (Remove, Shift): the kept tokens
// keep what they took in from the dropped ones, as in llama.cpp's context
// shift. ref is a fresh reference for m's file, set up as the model
// rounds (EmulateCPU, QuantCache, RoundCacheToHalf).
func CheckSeqShift(t testing.TB, m *model.Model, ref *Reference, rng *rand.Rand, tl Tol) {
	t.Helper()
	ctx := context.Background()
	vocab := m.Config.VocabSize
	one := func(id int32) []float32 {
		got, err := m.Decode(ctx, []model.Token{{ID: id, Seq: 0, Logits: true}})
		require.NoError(t, err)
		return got
	}
	ids := RandomTokens(rng, 20+rng.IntN(8), vocab)
	b := make([]model.Token, len(ids))
	for i, id := range ids {
		b[i] = model.Token{ID: id, Seq: 0}
		ref.Next(id)
	}
	b[len(b)-1].Logits = true
	_, err := m.Decode(ctx, b)
	require.NoError(t, err)
	worst := 0.0
	next := func(what string) {
		for range 5 {
			id := RandomTokens(rng, 1, vocab)[0]
			e := LogitError(one(id), ref.Next(id))
			checkWorst(t, e, ref, tl, "%s", what)
			worst = max(worst, e)
		}
	}
	k := 5 + rng.IntN(8)
	require.NoError(t, m.SeqRemove(0, 0, k))
	require.NoError(t, m.SeqShift(0, k, -1, -k))
	ref.Remove(0, k)
	ref.Shift(k, math.MaxInt32, -k)
	require.Equal(t, len(ids)-k, m.SeqLen(0))
	next(fmt.Sprintf("after a shift by %d", -k))
	require.NoError(t, m.SeqShift(0, -1, -1, 3))
	ref.Shift(0, math.MaxInt32, 3)
	require.Equal(t, len(ids)-k+8, m.SeqLen(0))
	next("after a shift by 3")
	t.Logf("shifted: worst logit error %.3g of the reference's rms (tolerance %.3g)", worst, tl.Worst)
}
