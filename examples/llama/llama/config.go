package llama

import (
	"errors"
	"fmt"
	"math"

	"github.com/go-ggml/ggml/gguf"
)

// Arch is the general.architecture of the files this package runs.
const Arch = "llama"

// ErrModel reports a file that is not a Llama model this package can run:
// another architecture, a missing or inconsistent hyperparameter or tensor.
var ErrModel = errors.New("llama: unsupported model")

// Config holds a model's hyperparameters, read from the llama.* keys of its
// GGUF file (llama.cpp's names in the comments).
type Config struct {
	ContextLength   int     // llama.context_length: the training context, n_ctx_train
	EmbeddingLength int     // llama.embedding_length: n_embd
	BlockCount      int     // llama.block_count: n_layer
	FeedForward     int     // llama.feed_forward_length: n_ff
	HeadCount       int     // llama.attention.head_count: n_head
	HeadCountKV     int     // llama.attention.head_count_kv: n_head_kv (n_head if absent)
	HeadDim         int     // llama.attention.key_length (n_embd/n_head if absent); value_length must match
	RopeDim         int     // llama.rope.dimension_count: n_rot (HeadDim if absent)
	RopeFreqBase    float32 // llama.rope.freq_base (10000 if absent)
	RopeFreqScale   float32 // 1/llama.rope.scaling.factor for linear scaling, else 1
	RMSEps          float32 // llama.attention.layer_norm_rms_epsilon
	VocabSize       int     // rows of token_embd (llama.vocab_size must agree when present)
}

// Key names, without the "llama." prefix.
const (
	keyContextLength = "context_length"
	keyEmbedding     = "embedding_length"
	keyBlockCount    = "block_count"
	keyFeedForward   = "feed_forward_length"
	keyHeadCount     = "attention.head_count"
	keyHeadCountKV   = "attention.head_count_kv"
	keyKeyLength     = "attention.key_length"
	keyValueLength   = "attention.value_length"
	keyRopeDim       = "rope.dimension_count"
	keyRopeFreqBase  = "rope.freq_base"
	keyRopeScaling   = "rope.scaling.type"
	keyRopeFactor    = "rope.scaling.factor"
	keyRopeFactorOld = "rope.scale_linear"
	keyExpertCount   = "expert_count"
	keyRMSEps        = "attention.layer_norm_rms_epsilon"
	keyVocabSize     = "vocab_size"
)

// maxDim caps each size read from a file: large enough for any Llama, small
// enough that products of a few of them cannot overflow an int64.
const maxDim = 1 << 24

// ReadConfig reads the hyperparameters of a Llama model from f's metadata
// and checks them against each other and against the tensor token_embd.
// A file of another architecture, or one with missing or inconsistent
// values, gives an ErrModel error.
func ReadConfig(f *gguf.File) (Config, error) {
	arch, err := f.String(gguf.KeyArchitecture)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrModel, err)
	}
	if arch != Arch {
		return Config{}, fmt.Errorf("%w: general.architecture is %q, not %q", ErrModel, arch, Arch)
	}
	r := keyReader{f: f}
	c := Config{
		ContextLength:   r.int(keyContextLength, -1),
		EmbeddingLength: r.int(keyEmbedding, -1),
		BlockCount:      r.int(keyBlockCount, -1),
		FeedForward:     r.int(keyFeedForward, -1),
		HeadCount:       r.int(keyHeadCount, -1),
		RopeFreqBase:    r.float(keyRopeFreqBase, 10000),
		RopeFreqScale:   1,
		RMSEps:          r.float(keyRMSEps, -1),
	}
	c.HeadCountKV = r.int(keyHeadCountKV, c.HeadCount)
	if c.HeadCount > 0 {
		c.HeadDim = r.int(keyKeyLength, c.EmbeddingLength/c.HeadCount)
		if v := r.int(keyValueLength, c.HeadDim); v != c.HeadDim && r.err == nil {
			r.err = fmt.Errorf("llama.%s (%d) differs from the key length (%d)", keyValueLength, v, c.HeadDim)
		}
	}
	c.RopeDim = r.int(keyRopeDim, c.HeadDim)
	// RoPE scaling as llama.cpp reads it: the type is linear when absent,
	// the factor is rope.scaling.factor (or the older rope.scale_linear),
	// 0 or absent meaning none; type none ignores the factor.
	typ, ok := r.str(keyRopeScaling)
	if !ok {
		typ = "linear"
	}
	switch typ {
	case "none":
	case "linear":
		factor := r.float(keyRopeFactor, 0)
		if _, ok := r.f.Value(Arch + "." + keyRopeFactor); !ok {
			factor = r.float(keyRopeFactorOld, 0)
		}
		if factor != 0 {
			c.RopeFreqScale = 1 / factor
		}
	default:
		r.fail("llama.%s %q is not supported (none and linear are)", keyRopeScaling, typ)
	}
	if n := r.int(keyExpertCount, 0); n > 0 && r.err == nil {
		r.fail("llama.%s is %d: mixture-of-experts models (Mixtral) are not supported", keyExpertCount, n)
	}
	if r.err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrModel, r.err)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		return Config{}, fmt.Errorf("%w: no tensor token_embd.weight", ErrModel)
	}
	if len(emb.Shape) != 2 || emb.Shape[1] > maxDim {
		return Config{}, fmt.Errorf("%w: token_embd.weight has shape %v, want [%d, vocabulary]", ErrModel, emb.Shape, c.EmbeddingLength)
	}
	c.VocabSize = int(emb.Shape[1])
	if v := r.int(keyVocabSize, c.VocabSize); r.err == nil && v != c.VocabSize {
		return Config{}, fmt.Errorf("%w: llama.%s is %d but token_embd.weight has %d rows", ErrModel, keyVocabSize, v, c.VocabSize)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate checks that the sizes are positive, not absurdly large, and fit
// together (heads divide the width, KV heads divide heads, the rotated
// dimensions are even and within a head). Errors wrap ErrModel.
func (c Config) Validate() error {
	for _, v := range []struct {
		name string
		n    int
	}{
		{keyContextLength, c.ContextLength}, {keyEmbedding, c.EmbeddingLength},
		{keyBlockCount, c.BlockCount}, {keyFeedForward, c.FeedForward},
		{keyHeadCount, c.HeadCount}, {keyHeadCountKV, c.HeadCountKV},
		{keyKeyLength, c.HeadDim}, {keyVocabSize, c.VocabSize},
	} {
		if v.n <= 0 || v.n > maxDim {
			return fmt.Errorf("%w: llama.%s is %d, want 1 to %d", ErrModel, v.name, v.n, maxDim)
		}
	}
	switch {
	case c.HeadCount%c.HeadCountKV != 0:
		return fmt.Errorf("%w: %d heads are not a multiple of %d KV heads", ErrModel, c.HeadCount, c.HeadCountKV)
	case c.RopeDim <= 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0:
		return fmt.Errorf("%w: llama.%s is %d, want an even number from 2 to the head size %d", ErrModel, keyRopeDim, c.RopeDim, c.HeadDim)
	case !(c.RMSEps > 0) || math.IsInf(float64(c.RMSEps), 0):
		return fmt.Errorf("%w: llama.%s is %g, want > 0", ErrModel, keyRMSEps, c.RMSEps)
	case !(c.RopeFreqBase > 0) || math.IsInf(float64(c.RopeFreqBase), 0):
		return fmt.Errorf("%w: llama.%s is %g, want > 0", ErrModel, keyRopeFreqBase, c.RopeFreqBase)
	case !(c.RopeFreqScale > 0) || math.IsInf(float64(c.RopeFreqScale), 0):
		return fmt.Errorf("%w: the RoPE frequency scale is %g, want > 0", ErrModel, c.RopeFreqScale)
	}
	return nil
}

// QDim is the width of the queries, HeadCount·HeadDim.
func (c Config) QDim() int { return c.HeadCount * c.HeadDim }

// KVDim is the width of the keys and values, HeadCountKV·HeadDim.
func (c Config) KVDim() int { return c.HeadCountKV * c.HeadDim }

// Params returns the number of weights of a model with this configuration
// and a separate output matrix (one vocabulary matrix fewer when tied).
func (c Config) Params(tied bool) int64 {
	e, f, v := int64(c.EmbeddingLength), int64(c.FeedForward), int64(c.VocabSize)
	layer := e + e*int64(c.QDim()) + 2*e*int64(c.KVDim()) + int64(c.QDim())*e + e + 3*e*f
	n := int64(c.BlockCount)*layer + e + v*e
	if !tied {
		n += v * e
	}
	return n
}

// keyReader reads llama.* keys, keeping the first error.
type keyReader struct {
	f   *gguf.File
	err error
}

func (r *keyReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// int reads an integer of any GGUF integer type; def < 0 makes the key
// required.
func (r *keyReader) int(key string, def int) int {
	v, ok := r.f.Value(Arch + "." + key)
	if !ok {
		if def < 0 {
			r.fail("missing key llama.%s", key)
		}
		return def
	}
	var n int64
	switch x := v.Any().(type) {
	case uint8:
		n = int64(x)
	case int8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case int16:
		n = int64(x)
	case uint32:
		n = int64(x)
	case int32:
		n = int64(x)
	case uint64:
		if x > math.MaxInt32 {
			x = math.MaxInt32
		}
		n = int64(x)
	case int64:
		n = x
	default:
		r.fail("llama.%s is a %v, want an integer (per-layer values are not supported)", key, v.Type())
		return 0
	}
	if n < 0 || n > math.MaxInt32 {
		r.fail("llama.%s is %d, out of range", key, n)
		return 0
	}
	return int(n)
}

// float reads an f32 or f64; def < 0 makes the key required.
func (r *keyReader) float(key string, def float32) float32 {
	v, ok := r.f.Value(Arch + "." + key)
	if !ok {
		if def < 0 {
			r.fail("missing key llama.%s", key)
		}
		return def
	}
	switch x := v.Any().(type) {
	case float32:
		return x
	case float64:
		return float32(x)
	}
	r.fail("llama.%s is a %v, want a float", key, v.Type())
	return 0
}

func (r *keyReader) str(key string) (string, bool) {
	v, ok := r.f.Value(Arch + "." + key)
	if !ok {
		return "", false
	}
	s, ok := gguf.As[string](v)
	if !ok {
		r.fail("llama.%s is a %v, want a string", key, v.Type())
	}
	return s, ok
}
