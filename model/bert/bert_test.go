package bert_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
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

// TestEmbedMatchesLlamaCpp: the embedding of random inputs, mean, CLS
// and last pooling, has a cosine similarity of at least 0.9999 to
// llama.cpp's on the same random file (f32, f16 and q8_0 weights), and
// unit length.
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
			for _, p := range []struct {
				name string
				pool model.Pooling
			}{{"mean", model.PoolMean}, {"cls", model.PoolCLS}, {"last", model.PoolLast}} {
				for _, n := range []int{1, 7, 33} {
					ids := modeltest.RandomTokens(rng, n, c.VocabSize)
					want, err := cpp.Embedding(p.name, ids)
					require.NoError(t, err)
					got, err := m.Embed(context.Background(), ids, p.pool)
					require.NoError(t, err)
					require.Len(t, got, c.EmbeddingLength)
					sim := cosine(got, want)
					t.Logf("%s, %d tokens: cosine similarity %.9f", p.name, n, sim)
					assert.GreaterOrEqual(t, sim, 0.9999, "%s pooling of %d tokens", p.name, n)
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
