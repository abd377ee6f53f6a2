package llama

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
)

// tinyFile writes the tiny preset with weights of type typ and returns its
// path.
func tinyFile(t *testing.T, typ ggml.Type, tied bool, seed uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny-"+typ.String()+".gguf")
	require.NoError(t, WriteRandom(path, RandomModel{Config: Presets["tiny"], Type: typ, Tied: tied, Seed: seed}))
	return path
}

func loadModel(t *testing.T, path string, opts Options) *Model {
	t.Helper()
	if opts.Threads == 0 {
		opts.Threads = 2
	}
	m, err := Load(context.Background(), path, opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, m.Close()) })
	return m
}

func openRef(t *testing.T, path string) *refModel {
	t.Helper()
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := readRef(f)
	require.NoError(t, err)
	return r
}

// logitError is the largest difference between got and want relative to
// want's root mean square.
func logitError(got []float32, want []float64) float64 {
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

// tolerance per weight type, against a reference that rounds activations
// as the CPU backend does (f16 for f16 weights, q8_0 for the block types):
// what is left is float32 arithmetic, and a rounding that falls the other
// way now and then.
var tolerance = map[ggml.Type]float64{
	ggml.TypeF32:  1e-4,
	ggml.TypeF16:  3e-3,
	ggml.TypeQ8_0: 1e-3,
	ggml.TypeQ4_0: 1e-3,
}

// checkAgainstReference runs a prompt (in batches of 3, every token's
// logits) and then tokens one at a time, and compares every logit with the
// float64 reference.
func checkAgainstReference(t *testing.T, m *Model, ref *refModel, seq []int32, nPrompt int, tol float64) {
	t.Helper()
	ctx := context.Background()
	vocab := m.Config.VocabSize
	logits, err := m.Eval(ctx, seq[:nPrompt], true)
	require.NoError(t, err)
	require.Len(t, logits, nPrompt*vocab)
	worst := 0.0
	for i := range nPrompt {
		e := logitError(logits[i*vocab:(i+1)*vocab], ref.next(seq[i]))
		worst = math.Max(worst, e)
		require.LessOrEqual(t, e, tol, "prompt token %d", i)
	}
	for i := nPrompt; i < len(seq); i++ {
		logits, err := m.Eval(ctx, seq[i:i+1], false)
		require.NoError(t, err)
		require.Len(t, logits, vocab)
		e := logitError(logits, ref.next(seq[i]))
		worst = math.Max(worst, e)
		require.LessOrEqual(t, e, tol, "generated token %d", i)
	}
	require.Equal(t, len(seq), m.Pos())
	t.Logf("largest logit error %.3g of the reference's rms (tolerance %.3g)", worst, tol)
}

func randomTokens(t *testing.T, n, vocab int) []int32 {
	rng := testutil.NewRNG(t)
	seq := make([]int32, n)
	for i := range seq {
		seq[i] = int32(rng.IntN(vocab))
	}
	return seq
}

func TestEvalMatchesReferenceCPU(t *testing.T) {
	rng := testutil.NewRNG(t)
	for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0, ggml.TypeQ4_0} {
		t.Run(typ.String(), func(t *testing.T) {
			path := tinyFile(t, typ, false, rng.Uint64())
			m := loadModel(t, path, Options{ContextSize: 64, BatchSize: 3})
			seq := randomTokens(t, 12, m.Config.VocabSize)
			ref := openRef(t, path)
			ref.emulateCPU(typ)
			checkAgainstReference(t, m, ref, seq, 7, tolerance[typ])
		})
	}
}
