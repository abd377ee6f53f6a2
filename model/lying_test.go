package model_test

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
	. "github.com/go-ggml/ggml/model"
	_ "github.com/go-ggml/ggml/model/bert"
	_ "github.com/go-ggml/ggml/model/gemma"
	. "github.com/go-ggml/ggml/model/modeltest"
)

// writeLying writes r's random file with edit applied to its builder.
func writeLying(t *testing.T, r RandomModel, edit func(b *gguf.Builder)) string {
	t.Helper()
	b, err := Builder(r)
	require.NoError(t, err)
	edit(b)
	path := filepath.Join(t.TempDir(), "lying.gguf")
	require.NoError(t, b.WriteFile(path))
	return path
}

// TestLyingFilesRefused: files whose numbers would load and run into NaN
// or into finite, wrong numbers (flash attention's kernel turns NaN scores
// into finite output) are refused at Load with ErrModel, naming what is
// wrong; the honest file of each loads.
func TestLyingFilesRefused(t *testing.T) {
	rng := testutil.NewRNG(t)
	ctx := context.Background()
	opts := Options{Threads: 1, CPUOnly: true, ContextSize: 16}
	load := func(path string) error {
		m, err := Load(ctx, path, opts)
		if err == nil {
			m.Close()
		}
		return err
	}
	none := func(*gguf.Builder) {}

	// Gemma 2's 46-block shape scales queries by the width per head: more
	// heads than width made the scale 1/sqrt(0).
	g := Presets["tiny"]
	g.Arch, g.BlockCount, g.EmbeddingLength, g.HeadCount, g.HeadCountKV, g.HeadDim, g.RopeDim, g.FeedForward =
		"gemma2", 46, 32, 64, 1, 16, 16, 32
	err := load(writeLying(t, RandomModel{Config: g, Tied: true, Seed: rng.Uint64()}, none))
	require.ErrorIs(t, err, ErrModel)
	assert.Contains(t, err.Error(), "query scale")
	g.EmbeddingLength, g.HeadCount = 64, 4
	require.NoError(t, load(writeLying(t, RandomModel{Config: g, Tied: true, Seed: rng.Uint64()}, none)))

	// An architecture of RMS norms with only LayerNorm's epsilon, and
	// BERT (LayerNorms) with only the RMS norms': run with an epsilon of 0.
	err = load(writeLying(t, RandomModel{Config: Presets["tiny"], Seed: rng.Uint64()}, func(b *gguf.Builder) {
		require.NoError(t, b.Set("llama.attention.layer_norm_rms_epsilon", float32(0)))
		require.NoError(t, b.Set("llama.attention.layer_norm_epsilon", float32(1e-5)))
	}))
	require.ErrorIs(t, err, ErrModel)
	assert.Contains(t, err.Error(), "llama.attention.layer_norm_rms_epsilon")
	bc := Presets["tiny"]
	bc.Arch, bc.ContextLength, bc.RopeCtxOrig, bc.NormEps, bc.RMSEps = "bert", 64, 64, 1e-12, 0
	bc.HeadCountKV = bc.HeadCount
	err = load(writeLying(t, RandomModel{Config: bc, Converted: true, Seed: rng.Uint64()}, func(b *gguf.Builder) {
		require.NoError(t, b.Set("bert.attention.layer_norm_epsilon", float32(0)))
		require.NoError(t, b.Set("bert.attention.layer_norm_rms_epsilon", float32(1e-12)))
	}))
	require.ErrorIs(t, err, ErrModel)
	assert.Contains(t, err.Error(), "bert.attention.layer_norm_epsilon")

	// Llama 3.1's RoPE frequency factors of 0, NaN, -1 or +Inf: NaN
	// attention where a positive one is honest.
	c := Presets["tiny"]
	n := c.RopeDim / 2
	for _, bad := range []float32{0, float32(math.NaN()), -1, float32(math.Inf(1))} {
		err := load(writeLying(t, RandomModel{Config: c, Seed: rng.Uint64()}, func(b *gguf.Builder) {
			v := make([]float32, n)
			for i := range v {
				v[i] = 1 + rng.Float32()
			}
			v[rng.IntN(n)] = bad
			require.NoError(t, b.AddTensor("rope_freqs.weight", ggml.TypeF32, []int64{int64(n)}, gguf.FromBytes(f32bytes(v))))
		}))
		require.ErrorIs(t, err, ErrModel, "factor %g", bad)
		assert.Contains(t, err.Error(), "rope_freqs.weight", "factor %g", bad)
	}
	require.NoError(t, load(writeLying(t, RandomModel{Config: c, Seed: rng.Uint64()}, func(b *gguf.Builder) {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1 + rng.Float32()
		}
		require.NoError(t, b.AddTensor("rope_freqs.weight", ggml.TypeF32, []int64{int64(n)}, gguf.FromBytes(f32bytes(v))))
	})))
	require.NoError(t, CheckConst("x", []float32{1, 1e-30, 3e38}))
	require.ErrorIs(t, CheckConst("x", []float32{1, float32(math.Inf(-1))}), ErrModel)
}

// f32bytes is v's little-endian bytes, a tensor's data in a file.
func f32bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}
