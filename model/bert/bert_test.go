package bert_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/bert"
	_ "github.com/go-ggml/ggml/model/llama"
	"github.com/go-ggml/ggml/model/modeltest"
	"github.com/go-ggml/ggml/tokenizer"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunLeakChecked(m)) }

// config is a small BERT: 2 blocks, 64 wide, 4 heads, a context of 64.
func config() model.Config {
	c := modeltest.Presets["tiny"]
	c.Arch, c.ContextLength, c.RopeCtxOrig, c.NormEps, c.RMSEps = bert.Arch, 64, 64, 1e-12, 0
	c.HeadCountKV = c.HeadCount
	return c
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// poolings are the three poolings, with llama.cpp's names for them.
var poolings = []struct {
	name string
	pool model.Pooling
}{{"mean", model.PoolMean}, {"cls", model.PoolCLS}, {"last", model.PoolLast}}

// TestEmbedMatchesReference: the embedding of random inputs, every
// pooling, is the float64 reference's (modeltest.EncoderReference, with
// the CPU's rounding of activations), for weights of each kind of dot
// product (f32, f16, q8_0, q4_0, and q4_1 whose activations the CPU rounds
// to q8_1).
//
// As for the decoders (modeltest.Tolerance), a rounding of an activation
// (to f16 for GELU's table and f16 weights, to q8_0 for the block types)
// now and then falls the other way in ggml's float32 than in the float64
// reference, and since every token attends to every other, it moves
// every token's state: by up to 3e-3 for q4_0, measured. So the best of
// the twelve inputs must be at float32 precision (1e-6; 5e-8 is usual),
// each within a rounding's reach, and their median nearly at float32
// precision (1e-5, below a rounding's effect: half of them would have to
// have one) where roundings are coarse or few; f16 weights round every
// activation to f16, a step of 2⁻¹¹, and the median input has a rounding
// that falls the other way now and then (2e-5 seen).
func TestEmbedMatchesReference(t *testing.T) {
	rng := testutil.NewRNG(t)
	c := config()
	for _, tc := range []struct {
		typ           ggml.Type
		median, worst float64
	}{{ggml.TypeF32, 1e-5, 3e-4}, {ggml.TypeF16, 1e-3, 1e-3}, {ggml.TypeQ8_0, 1e-5, 1e-2}, {ggml.TypeQ4_0, 1e-5, 1e-2}, {ggml.TypeQ4_1, 1e-5, 1e-2}} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bert.gguf")
			require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: c, Type: tc.typ, Converted: true, Seed: rng.Uint64()}))
			f, err := gguf.Open(path)
			require.NoError(t, err)
			defer f.Close()
			ref, err := modeltest.ReadEncoderReference(f)
			require.NoError(t, err)
			ref.EmulateCPU()
			m := modeltest.LoadModel(t, path, model.Options{CacheType: model.CacheF32})
			var errs []float64
			for _, p := range poolings {
				for _, n := range []int{1, 2, 7, 33} {
					ids := modeltest.RandomTokens(rng, n, c.VocabSize)
					got, err := m.Embed(context.Background(), ids, p.pool)
					require.NoError(t, err)
					worst := 0.0
					for i, v := range ref.Embed(ids, p.pool) {
						worst = max(worst, math.Abs(float64(got[i])-v))
					}
					require.LessOrEqual(t, worst, tc.worst, "%s pooling of %d tokens: largest difference", p.name, n)
					errs = append(errs, worst)
				}
			}
			slices.Sort(errs)
			require.LessOrEqual(t, errs[0], 1e-6, "the best input's largest difference; all: %.3g", errs)
			require.LessOrEqual(t, errs[len(errs)/2], tc.median, "the median input's largest difference; all: %.3g", errs)
			t.Logf("largest difference: best %.3g, median %.3g, worst %.3g", errs[0], errs[len(errs)/2], errs[len(errs)-1])
		})
	}
}

// TestEmbedMatchesLlamaCpp: the embedding of random inputs, mean, CLS
// and last pooling, has a cosine similarity of at least 0.9999 to
// llama.cpp's on the same random file (f32, f16 and q8_0 weights), and
// unit length.
//
// With q8_0 weights both round the activations to q8_0, which magnifies
// the two's small float differences (an f16 attention here, an order of
// sums there) into a value rounded one step up on one side and down on
// the other. Measured over 60 random files, either side's embedding is
// as far from the exact one (EncoderReference without rounding) as the
// other's, a cosine distance of 4e-5 at the median and 8e-5 at most, and
// so is the distance between the two: 1e-4 at most for a single token's
// state (CLS, last), 4e-5 for the mean. So for q8_0 the single-token
// poolings have the bar 3e-4, the mean keeps 1e-4.
func TestEmbedMatchesLlamaCpp(t *testing.T) {
	rng := testutil.NewRNG(t)
	c := config()
	for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0} {
		t.Run(typ.String(), func(t *testing.T) {
			r := modeltest.RandomModel{Config: c, Type: typ, Converted: true, Pooling: 2, Seed: rng.Uint64()}
			path := filepath.Join(t.TempDir(), "bert.gguf")
			require.NoError(t, modeltest.WriteRandom(path, r))
			cpp := modeltest.StartLlamaCpp(t, path)
			m := modeltest.LoadModel(t, path, model.Options{CacheType: model.CacheF16})
			require.Equal(t, c, m.Config)
			for _, p := range poolings {
				bar := 1e-4
				if typ == ggml.TypeQ8_0 && p.pool != model.PoolMean {
					bar = 3e-4
				}
				for _, n := range []int{1, 7, 33} {
					ids := modeltest.RandomTokens(rng, n, c.VocabSize)
					want, err := cpp.Embedding(p.name, ids)
					require.NoError(t, err)
					got, err := m.Embed(context.Background(), ids, p.pool)
					require.NoError(t, err)
					require.Len(t, got, c.EmbeddingLength)
					sim := cosine(got, want)
					t.Logf("%s, %d tokens: cosine similarity %.9f", p.name, n, sim)
					assert.GreaterOrEqual(t, sim, 1-bar, "%s pooling of %d tokens", p.name, n)
					assert.InDelta(t, 1, cosine(got, got)*0+norm(got), 1e-5)
				}
			}
			// The file's pooling (CLS) is the default.
			ids := modeltest.RandomTokens(rng, 5, c.VocabSize)
			def, err := m.Embed(context.Background(), ids, model.PoolDefault)
			require.NoError(t, err)
			cls, err := m.Embed(context.Background(), ids, model.PoolCLS)
			require.NoError(t, err)
			assert.Equal(t, cls, def)
		})
	}
}

func norm(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// TestEmbedRefuses: an encoder embeds, it does not generate; a decoder
// does not embed; an input longer than a batch, a pooling that is not
// one, and no tokens are errors.
func TestEmbedRefuses(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := filepath.Join(t.TempDir(), "bert.gguf")
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: config(), Seed: rng.Uint64()}))
	m := modeltest.LoadModel(t, path, model.Options{BatchSize: 16})
	ctx := context.Background()
	_, err := m.Embed(ctx, make([]int32, 17), model.PoolMean)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = m.Embed(ctx, []int32{1, 2}, model.Pooling(9))
	require.ErrorIs(t, err, ggml.ErrInvalid)
	// BERT's positions are learned embeddings, not a rotation of the keys.
	require.ErrorIs(t, m.SeqShift(0, 0, -1, 1), backend.ErrUnsupported)
	_, err = m.Embed(ctx, nil, model.PoolMean)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	for _, err := range m.Generate(ctx, []int32{1, 2}, model.GenerateOptions{MaxTokens: 1}) {
		require.ErrorIs(t, err, model.ErrModel)
	}

	lp := filepath.Join(t.TempDir(), "llama.gguf")
	require.NoError(t, modeltest.WriteRandom(lp, modeltest.RandomModel{Config: modeltest.Presets["tiny"], Seed: 1}))
	lm := modeltest.LoadModel(t, lp, model.Options{ContextSize: 16})
	_, err = lm.Embed(ctx, []int32{1, 2}, model.PoolMean)
	require.ErrorIs(t, err, model.ErrModel)
}

// TestEmbedText: a BERT file's WordPiece vocabulary encodes text (package
// tokenizer), [CLS] first and [SEP] last, and the text's embedding is its
// tokens'.
func TestEmbedText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bert.gguf")
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: config(), Converted: true, Seed: 4}))
	m := modeltest.LoadModel(t, path, model.Options{})
	tok, err := m.Tokenizer()
	require.NoError(t, err)
	require.NoError(t, tok.CanEncode())
	ids := tok.Encode("kalo mine, the sea", tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	require.Greater(t, len(ids), 2)
	assert.Equal(t, []int32{1, 2}, []int32{ids[0], ids[len(ids)-1]}, "[CLS] ... [SEP]: %v", ids)
	_, err = m.Embed(context.Background(), ids, model.PoolDefault)
	require.NoError(t, err)
}
