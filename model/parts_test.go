package model_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/tokenizer"

	. "github.com/go-ggml/ggml/model"
	_ "github.com/go-ggml/ggml/model/llama"
	. "github.com/go-ggml/ggml/model/modeltest"
)

func TestReadConfig(t *testing.T) {
	path := tinyFile(t, ggml.TypeQ4_0, false, 1)
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	c, err := ReadConfig(f)
	require.NoError(t, err)
	assert.Equal(t, Presets["tiny"], c)
	assert.Equal(t, 32, c.KVDim())
	m := LoadModel(t, path, Options{ContextSize: 16})
	tok, err := m.Tokenizer()
	require.NoError(t, err, "the synthetic vocabulary makes a tokenizer")
	assert.Equal(t, 256, tok.Len())
	assert.Equal(t, int32(1), tok.BOS())
	assert.Equal(t, int32(2), tok.EOS())
	assert.True(t, tok.IsEOG(2))
}

// TestReadConfigRopeScaling reads RoPE scaling as llama.cpp does: linear
// when the type is absent, the older key rope.scale_linear, and no scaling
// for type none whatever the factor.
func TestReadConfigRopeScaling(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(b *gguf.Builder)
		want   float32
	}{
		{"factor without type", func(b *gguf.Builder) { b.Set("llama.rope.scaling.factor", float32(4)) }, 0.25},
		{"old key", func(b *gguf.Builder) { b.Set("llama.rope.scale_linear", float32(2)) }, 0.5},
		{"none", func(b *gguf.Builder) {
			b.Set("llama.rope.scaling.type", "none")
			b.Set("llama.rope.scaling.factor", float32(4))
		}, 1},
		{"factor 0", func(b *gguf.Builder) { b.Set("llama.rope.scaling.factor", float32(0)) }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := gguf.Open(writeModified(t, c.change))
			require.NoError(t, err)
			defer f.Close()
			cfg, err := ReadConfig(f)
			require.NoError(t, err)
			assert.Equal(t, c.want, cfg.RopeFreqScale)
		})
	}
}

// TestConvertedFile reads the metadata of a file written as llama.cpp's
// converter and quantizer write one, with a Llama 3 style vocabulary.
func TestConvertedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "converted.gguf")
	require.NoError(t, WriteRandom(path, RandomModel{Config: mixConfig, Types: MixQ4KM(mixConfig.BlockCount, false), Converted: true, Vocab: "gpt2", Seed: 3}))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	ft, err := f.Uint32("general.file_type")
	require.NoError(t, err)
	assert.Equal(t, uint32(15), ft) // LLAMA_FTYPE_MOSTLY_Q4_K_M
	for _, key := range []string{"general.quantization_version", "tokenizer.ggml.merges", "tokenizer.ggml.pre", "tokenizer.chat_template", "llama.vocab_size"} {
		_, ok := f.Value(key)
		assert.True(t, ok, key)
	}
	// Q4_K_M's choice in 4 blocks: q6_K for attn_v and ffn_down of blocks
	// 2 and 3 (the last eighth, and every third from the first eighth on)
	// and for the output; q4_K elsewhere.
	for name, want := range map[string]ggml.Type{
		"output.weight": ggml.TypeQ6_K, "token_embd.weight": ggml.TypeQ4_K, "blk.0.attn_v.weight": ggml.TypeQ4_K,
		"blk.2.attn_v.weight": ggml.TypeQ6_K, "blk.3.ffn_down.weight": ggml.TypeQ6_K, "blk.3.ffn_up.weight": ggml.TypeQ4_K,
		"blk.1.ffn_norm.weight": ggml.TypeF32,
	} {
		ti, ok := f.Tensor(name)
		require.True(t, ok, name)
		assert.Equal(t, want, ti.Type, name)
	}
	v, err := tokenizer.FromGGUF(f)
	require.NoError(t, err)
	require.Equal(t, mixConfig.VocabSize, v.Len())
	assert.Equal(t, "<|begin_of_text|>", v.Token(v.BOS()))
	assert.Equal(t, "<|eot_id|>", v.Token(v.EOS()))
	assert.Equal(t, tokenizer.TypeControl, v.Type(v.BOS()))
	assert.Equal(t, tokenizer.TypeNormal, v.Type(' '))
	// The first 256 tokens are the bytes, in order, as GPT-2's runes.
	for b := range 256 {
		p, err := v.Piece(int32(b), true)
		require.NoError(t, err)
		require.Equal(t, string([]byte{byte(b)}), p, "token %d", b)
	}
	assert.Equal(t, "Ġe", v.Token(256))
	p, err := v.Piece(256, true)
	require.NoError(t, err)
	assert.Equal(t, " e", p)

	// Q4_K_M in the tiny preset, whose rows of 64 are no k-quant blocks:
	// llama.cpp's fallbacks.
	mix := MixQ4KM(2, true)
	assert.Equal(t, ggml.TypeQ5_0, mix("blk.0.attn_q.weight", 64))
	assert.Equal(t, ggml.TypeQ8_0, mix("token_embd.weight", 64))
	assert.Equal(t, ggml.TypeQ6_K, mix("token_embd.weight", 256))
}

// writeModified writes the tiny model with a change made to its builder.
func writeModified(t *testing.T, change func(b *gguf.Builder)) string {
	t.Helper()
	b, err := Builder(RandomModel{Config: Presets["tiny"], Type: ggml.TypeF32, Seed: 1})
	require.NoError(t, err)
	change(b)
	path := filepath.Join(t.TempDir(), "bad.gguf")
	require.NoError(t, b.WriteFile(path))
	return path
}

// TestLoadRefuses checks that files that are not Llama models this
// package runs are ErrModel errors that say why, from Load.
func TestLoadRefuses(t *testing.T) {
	zeros := func(n int) gguf.Source { return gguf.FromBytes(make([]byte, n)) }
	for _, c := range []struct {
		name   string
		change func(b *gguf.Builder)
		want   string
	}{
		{"architecture", func(b *gguf.Builder) { b.Set(gguf.KeyArchitecture, "gpt2") }, `general.architecture is "gpt2"`},
		{"key type", func(b *gguf.Builder) { b.Set("llama.embedding_length", "wide") }, "llama.embedding_length is a str"},
		{"heads", func(b *gguf.Builder) { b.Set("llama.attention.head_count_kv", uint32(3)) }, "not a multiple of 3 KV heads"},
		{"rope dims", func(b *gguf.Builder) { b.Set("llama.rope.dimension_count", uint32(17)) }, "llama.rope.dimension_count is 17"},
		{"eps", func(b *gguf.Builder) { b.Set("llama.attention.layer_norm_rms_epsilon", float32(0)) }, "layer_norm_rms_epsilon is 0"},
		{"huge", func(b *gguf.Builder) { b.Set("llama.feed_forward_length", uint64(1)<<40) }, "llama.feed_forward_length is 2147483647"},
		{"rope scaling", func(b *gguf.Builder) { b.Set("llama.rope.scaling.type", "dynamic") }, `"dynamic" is not supported`},
		{"rope attn factor", func(b *gguf.Builder) { b.Set("llama.rope.scaling.attn_factor", float32(0)) }, "attn_factor is 0"},
		{"vocabulary", func(b *gguf.Builder) { b.Set("llama.vocab_size", uint32(300)) }, "llama.vocab_size is 300"},
		{"tokens", func(b *gguf.Builder) {
			b.Set("tokenizer.ggml.tokens", []string{"a", "b", "c"})
			b.Set("tokenizer.ggml.token_type", []int32{1, 1, 1})
			b.Set("tokenizer.ggml.scores", []float32{0, 0, 0})
		}, "3 tokens in tokenizer.ggml.tokens"},
		{"token types", func(b *gguf.Builder) { b.Set("tokenizer.ggml.token_type", []int32{1, 1}) }, "2 token types for 256 tokens"},
		{"scores", func(b *gguf.Builder) { b.Set("tokenizer.ggml.scores", []float32{1}) }, "1 scores for 256 tokens"},
		{"bos", func(b *gguf.Builder) { b.Set("tokenizer.ggml.bos_token_id", uint32(256)) }, "bos_token_id is 256, and the vocabulary has 256 tokens"},
		{"eos type", func(b *gguf.Builder) { b.Set("tokenizer.ggml.eos_token_id", "2") }, "eos_token_id is str, want an integer"},
		{"experts", func(b *gguf.Builder) { b.Set("llama.expert_count", uint32(8)) }, "llama.expert_used_count is 0, want 1 to expert_count (8)"},
		{"rope scaling factor", func(b *gguf.Builder) { b.Set("llama.rope.scaling.factor", float32(-2)) }, "RoPE frequency scale is -0.5"},
		{"value length", func(b *gguf.Builder) { b.Set("llama.attention.value_length", uint32(8)) }, "value_length (8) differs"},
		{"missing block", func(b *gguf.Builder) { b.Set("llama.block_count", uint32(3)) }, "no tensor of block 2 (blk.2.*), and llama.block_count is 3"},
		// A claim of 2^24 blocks in a file of two: refused for what the
		// file holds, before anything sized by the claim (tables of 2^24
		// blocks' tensors took 5 GB at 2^20 and ran out of memory at 2^24).
		{"block count lie", func(b *gguf.Builder) { b.Set("llama.block_count", uint32(1<<24)) }, "no tensor of block 2 (blk.2.*), and llama.block_count is 16777216"},
		{"shape", func(b *gguf.Builder) { b.Set("llama.feed_forward_length", uint32(96)) }, "blk.0.ffn_gate.weight has shape [64 128], want [64 96]"},
		{"experts tensor", func(b *gguf.Builder) {
			require.NoError(t, b.AddTensor("blk.0.ffn_gate_exps.weight", ggml.TypeF32, []int64{64, 128, 2}, zeros(64*128*2*4)))
		}, "tensor blk.0.ffn_gate_exps.weight is not part of the llama model"},
		{"bias shape", func(b *gguf.Builder) {
			require.NoError(t, b.AddTensor("blk.0.attn_k.bias", ggml.TypeF32, []int64{64}, zeros(256)))
		}, "tensor blk.0.attn_k.bias has shape [64], want [32]"},
		{"bias type", func(b *gguf.Builder) {
			require.NoError(t, b.AddTensor("blk.1.ffn_up.bias", ggml.TypeF16, []int64{128}, zeros(256)))
		}, "tensor blk.1.ffn_up.bias is f16, want f32"},
		{"norm type", func(b *gguf.Builder) {
			require.NoError(t, b.AddTensor("rope_freqs.weight", ggml.TypeF16, []int64{8}, zeros(16)))
		}, "rope_freqs.weight is f16, want f32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeModified(t, c.change)
			_, err := Load(context.Background(), path, Options{Threads: 1})
			require.ErrorIs(t, err, ErrModel)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err := Load(context.Background(), filepath.Join(t.TempDir(), "none.gguf"), Options{})
	require.ErrorIs(t, err, os.ErrNotExist)

	// A tokenizer package tokenizer does not implement: the model runs
	// from token IDs, and Tokenizer says why it has none.
	m := LoadModel(t, writeModified(t, func(b *gguf.Builder) { b.Set("tokenizer.ggml.model", "t5") }), Options{ContextSize: 8})
	_, err = m.Tokenizer()
	require.ErrorIs(t, err, tokenizer.ErrUnsupported)
	_, err = m.Eval(context.Background(), []int32{1, 2}, false)
	require.NoError(t, err)
	for _, err := range m.GenerateText(context.Background(), "hi", GenerateOptions{MaxTokens: 1}) {
		require.ErrorIs(t, err, tokenizer.ErrUnsupported)
	}

	// A matrix of a type ggml cannot multiply (q8_K, the CPU's internal
	// format for activations): both errors, before anything is loaded.
	wide := Presets["tiny"]
	wide.EmbeddingLength, wide.HeadDim, wide.RopeDim = 256, 64, 64
	b, err := Builder(RandomModel{Config: wide, Tied: true, Seed: 1})
	require.NoError(t, err)
	row, err := ggml.TypeQ8_K.RowSize(256)
	require.NoError(t, err)
	require.NoError(t, b.AddTensor("output.weight", ggml.TypeQ8_K, []int64{256, 256}, zeros(int(row)*256)))
	path := filepath.Join(t.TempDir(), "q8_K.gguf")
	require.NoError(t, b.WriteFile(path))
	progress := 0
	_, err = Load(context.Background(), path, Options{Threads: 1, Progress: func(uint64, uint64) { progress++ }})
	require.ErrorIs(t, err, ErrModel)
	require.ErrorIs(t, err, ggml.ErrType)
	assert.Contains(t, err.Error(), "tensor output.weight of type q8_K")
	assert.Zero(t, progress)
}

// TestRopeFreqs runs a model with Llama 3.1's frequency factors
// (rope_freqs.weight), copied to each device's state.
func TestRopeFreqs(t *testing.T) {
	rng := testutil.NewRNG(t)
	freqs := make([]float32, Presets["tiny"].RopeDim/2)
	raw := make([]byte, 0, 4*len(freqs))
	for i := range freqs {
		freqs[i] = 1 + 7*rng.Float32()
		raw = appendF32(raw, freqs[i])
	}
	path := writeModified(t, func(b *gguf.Builder) {
		require.NoError(t, b.AddTensor("rope_freqs.weight", ggml.TypeF32, []int64{int64(len(freqs))}, gguf.FromBytes(raw)))
	})
	m := LoadModel(t, path, Options{ContextSize: 32})
	ref := OpenReference(t, path)
	require.Len(t, ref.RopeFreqs(), len(freqs))
	CheckAgainstReference(t, m, ref, RandomTokens(rng, 12, m.Config.VocabSize), 6, Tolerance[ggml.TypeF32])
}

func appendF32(b []byte, v float32) []byte {
	u := math.Float32bits(v)
	return append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
}

func TestWriteRandom(t *testing.T) {
	var a, b bytes.Buffer
	r := RandomModel{Config: Presets["tiny"], Type: ggml.TypeQ4_0, Seed: 7}
	require.NoError(t, WriteRandomTo(&a, r))
	require.NoError(t, WriteRandomTo(&b, r))
	assert.Equal(t, a.Bytes(), b.Bytes(), "the same seed writes the same file")
	r.Seed = 8
	b.Reset()
	require.NoError(t, WriteRandomTo(&b, r))
	assert.NotEqual(t, a.Bytes(), b.Bytes())
	f, err := gguf.Parse(a.Bytes())
	require.NoError(t, err)
	ti, ok := f.Tensor("blk.1.ffn_down.weight")
	require.True(t, ok)
	assert.Equal(t, ggml.TypeQ4_0, ti.Type)
	assert.Equal(t, []int64{128, 64}, ti.Shape)
	ti, _ = f.Tensor("blk.1.ffn_norm.weight")
	assert.Equal(t, ggml.TypeF32, ti.Type)
	_, ok = f.Tensor("output.weight")
	assert.True(t, ok)
	n := int64(0)
	for _, ti := range f.Tensors() {
		n += ti.Elements()
	}
	assert.Equal(t, Params(Presets["tiny"], false), n)

	for _, bad := range []RandomModel{
		{Config: Presets["tiny"], Type: ggml.TypeIQ2_XXS}, // needs an importance matrix
		{Config: Presets["tiny"], Type: ggml.TypeQ4_K},    // rows of 64 are not 256-blocks
		{Config: Config{EmbeddingLength: 64}},
	} {
		err := WriteRandomTo(&b, bad)
		require.ErrorIs(t, err, ErrModel, "%+v", bad)
	}
}

func TestLoadOptions(t *testing.T) {
	path := tinyFile(t, ggml.TypeF32, false, 1)
	cpuDev := DeviceOf(backend.CPUBufferType())
	for _, c := range []struct {
		opts Options
		want error
	}{
		{Options{Device: cpuDev, GPULayers: -1}, ggml.ErrInvalid},
		{Options{CacheType: CacheType(99)}, ggml.ErrType},
		{Options{ContextSize: -1}, ggml.ErrInvalid},
		{Options{ContextSize: MaxDim + 1}, ggml.ErrInvalid},
		{Options{BatchSize: -5}, ggml.ErrInvalid},
	} {
		c.opts.Threads = 1
		_, err := Load(context.Background(), path, c.opts)
		require.ErrorIs(t, err, c.want, "%+v", c.opts)
	}
	m := LoadModel(t, path, Options{})
	assert.Equal(t, Presets["tiny"].ContextLength, m.ContextSize(), "the training context, at most 4096")
	assert.Equal(t, 512, m.BatchSize())
	assert.Len(t, m.Backends(), 1, "no GPU layers without a GPU device asked for")
}

// TestLoadFrom: a model loaded from a path, an open *gguf.File and an
// io.ReaderAt computes the same logits.
func TestLoadFrom(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tinyFile(t, ggml.TypeQ8_0, false, rng.Uint64())
	seq := RandomTokens(rng, 6, Presets["tiny"].VocabSize)
	opts := Options{Threads: 1, ContextSize: 16, CPUOnly: true}
	eval := func(m *Model, err error) []float32 {
		require.NoError(t, err)
		defer m.Close()
		logits, err := m.Eval(context.Background(), seq, true)
		require.NoError(t, err)
		return logits
	}
	want := eval(Load(context.Background(), path, opts))

	f, err := gguf.Open(path)
	require.NoError(t, err)
	got := eval(LoadFile(context.Background(), f, opts))
	require.NoError(t, f.Close())
	assert.Equal(t, want, got, "LoadFile")

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	got = eval(LoadReader(context.Background(), bytes.NewReader(data), int64(len(data)), opts))
	assert.Equal(t, want, got, "LoadReader")

	_, err = LoadFile(context.Background(), nil, opts)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = LoadReader(context.Background(), bytes.NewReader(data[:len(data)/2]), int64(len(data)/2), opts)
	require.Error(t, err, "a truncated file")
}
