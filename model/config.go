package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
)

// ErrModel reports a file that is not a model this package can run: an
// architecture no package registered, a missing or inconsistent
// hyperparameter or tensor, a feature the architecture does not support.
var ErrModel = errors.New("model: unsupported model")

// Config holds the hyperparameters every architecture has, read from the
// ARCH.* keys of its GGUF file (ReadConfig; llama.cpp's names in the
// comments, shown for ARCH llama).
type Config struct {
	Arch            string  // general.architecture
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
	RopeScaling     string  // llama.rope.scaling.type: none, linear (the default) or yarn
	RopeCtxOrig     int     // llama.rope.scaling.original_context_length (ContextLength if absent): YaRN's n_ctx_orig
	RopeExtFactor   float32 // YaRN's extrapolation mix: 1 with yarn scaling, else 0
	RopeAttnFactor  float32 // llama.rope.scaling.attn_factor (1 if absent)
	RMSEps          float32 // llama.attention.layer_norm_rms_epsilon (0 if absent: NormEps must be there)
	NormEps         float32 // llama.attention.layer_norm_epsilon: LayerNorm's (BERT), 0 if absent
	VocabSize       int     // rows of token_embd (llama.vocab_size must agree when present)
}

// Key names, without the "ARCH." prefix.
const (
	keyContextLength  = "context_length"
	keyEmbedding      = "embedding_length"
	keyBlockCount     = "block_count"
	keyFeedForward    = "feed_forward_length"
	keyHeadCount      = "attention.head_count"
	keyHeadCountKV    = "attention.head_count_kv"
	keyKeyLength      = "attention.key_length"
	keyValueLength    = "attention.value_length"
	keyRopeDim        = "rope.dimension_count"
	keyRopeFreqBase   = "rope.freq_base"
	keyRopeScaling    = "rope.scaling.type"
	keyRopeFactor     = "rope.scaling.factor"
	keyRopeFactorOld  = "rope.scale_linear"
	keyRopeCtxOrig    = "rope.scaling.original_context_length"
	keyRopeAttnFactor = "rope.scaling.attn_factor"
	keyRMSEps         = "attention.layer_norm_rms_epsilon"
	keyNormEps        = "attention.layer_norm_epsilon"
	keyVocabSize      = "vocab_size"
)

// maxDim caps each size read from a file: large enough for any model, small
// enough that products of a few of them cannot overflow an int64.
const maxDim = 1 << 24

// FileArchitecture returns f's general.architecture.
func FileArchitecture(f *gguf.File) (string, error) {
	arch, err := f.String(gguf.KeyArchitecture)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrModel, err)
	}
	return arch, nil
}

// ReadConfig reads the hyperparameters every architecture has from the
// ARCH.* keys of f's metadata, ARCH being f's general.architecture, and
// checks them against each other, against the tensor token_embd and
// against the blocks the file holds (a tensor blk.N.* for each block). A
// file with missing or inconsistent values gives an ErrModel error that
// names the key. An architecture reads its own further keys with Keys.
func ReadConfig(f *gguf.File) (Config, error) {
	arch, err := FileArchitecture(f)
	if err != nil {
		return Config{}, err
	}
	r := Keys{f: f, arch: arch}
	c := Config{
		Arch:            arch,
		ContextLength:   r.int(keyContextLength, -1),
		EmbeddingLength: r.int(keyEmbedding, -1),
		BlockCount:      r.int(keyBlockCount, -1),
		FeedForward:     r.int(keyFeedForward, -1),
		HeadCount:       r.int(keyHeadCount, -1),
		RopeFreqBase:    r.float(keyRopeFreqBase, 10000),
		RopeFreqScale:   1,
		RMSEps:          r.float(keyRMSEps, 0),
		NormEps:         r.float(keyNormEps, 0),
	}
	for _, e := range []struct {
		key string
		v   float32
	}{{keyRMSEps, c.RMSEps}, {keyNormEps, c.NormEps}} {
		if r.Has(e.key) && !(e.v > 0) {
			r.fail("%s.%s is %g, want > 0", arch, e.key, e.v)
		}
	}
	c.HeadCountKV = r.int(keyHeadCountKV, c.HeadCount)
	if c.HeadCount > 0 {
		c.HeadDim = r.int(keyKeyLength, c.EmbeddingLength/c.HeadCount)
		if v := r.int(keyValueLength, c.HeadDim); v != c.HeadDim && r.err == nil {
			r.err = fmt.Errorf("%s.%s (%d) differs from the key length (%d)", arch, keyValueLength, v, c.HeadDim)
		}
	}
	c.RopeDim = r.int(keyRopeDim, c.HeadDim)
	// RoPE scaling as llama.cpp reads it: the type is linear when absent,
	// longrope (Phi-3's: per-dimension factors, which its package reads)
	// scales as linear,
	// the factor is rope.scaling.factor (or the older rope.scale_linear),
	// 0 or absent meaning none; type none ignores the factor. YaRN mixes
	// in extrapolation (ext_factor 1) around the original context
	// (rope.scaling.original_context_length, else the training context);
	// its attention factor, which ggml's RoPE multiplies by 1+0.1·ln(factor)
	// itself, is llama.cpp's get_mscale(factor)/(1+0.1·ln(factor)) = 1,
	// times rope.scaling.attn_factor.
	typ, ok := r.str(keyRopeScaling)
	if !ok {
		typ = "linear"
	}
	c.RopeScaling = typ
	c.RopeCtxOrig = r.int(keyRopeCtxOrig, c.ContextLength)
	c.RopeAttnFactor = r.float(keyRopeAttnFactor, 1)
	switch typ {
	case "none":
	case "linear", "yarn", "longrope":
		factor := r.float(keyRopeFactor, 0)
		if _, ok := r.f.Value(arch + "." + keyRopeFactor); !ok {
			factor = r.float(keyRopeFactorOld, 0)
		}
		if factor != 0 {
			c.RopeFreqScale = 1 / factor
		}
		if typ == "yarn" {
			c.RopeExtFactor = 1
		}
	default:
		r.fail("%s.%s %q is not supported (none, linear, yarn and longrope are)", arch, keyRopeScaling, typ)
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
		return Config{}, fmt.Errorf("%w: %s.%s is %d but token_embd.weight has %d rows", ErrModel, arch, keyVocabSize, v, c.VocabSize)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	// Before an architecture sizes anything by the block count.
	if err := checkBlocks(f, c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ReadArchConfig is ReadConfig for an architecture's Open: a file of
// another general.architecture than arch is an ErrModel error.
func ReadArchConfig(f *gguf.File, arch string) (Config, error) {
	c, err := ReadConfig(f)
	if err != nil {
		return Config{}, err
	}
	if c.Arch != arch {
		return Config{}, fmt.Errorf("%w: general.architecture is %q, not %q", ErrModel, c.Arch, arch)
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
			return fmt.Errorf("%w: %s.%s is %d, want 1 to %d", ErrModel, c.Arch, v.name, v.n, maxDim)
		}
	}
	switch {
	case c.HeadCount%c.HeadCountKV != 0:
		return fmt.Errorf("%w: %d heads are not a multiple of %d KV heads", ErrModel, c.HeadCount, c.HeadCountKV)
	case c.RopeDim <= 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0:
		return fmt.Errorf("%w: %s.%s is %d, want an even number from 2 to the head size %d", ErrModel, c.Arch, keyRopeDim, c.RopeDim, c.HeadDim)
	case c.RMSEps == 0 && c.NormEps == 0:
		return fmt.Errorf("%w: missing key %s.%s (or %s.%s)", ErrModel, c.Arch, keyRMSEps, c.Arch, keyNormEps)
	case !(c.RMSEps >= 0) || math.IsInf(float64(c.RMSEps), 0):
		return fmt.Errorf("%w: %s.%s is %g, want > 0", ErrModel, c.Arch, keyRMSEps, c.RMSEps)
	case !(c.NormEps >= 0) || math.IsInf(float64(c.NormEps), 0):
		return fmt.Errorf("%w: %s.%s is %g, want > 0", ErrModel, c.Arch, keyNormEps, c.NormEps)
	case !(c.RopeFreqBase > 0) || math.IsInf(float64(c.RopeFreqBase), 0):
		return fmt.Errorf("%w: %s.%s is %g, want > 0", ErrModel, c.Arch, keyRopeFreqBase, c.RopeFreqBase)
	case !(c.RopeFreqScale > 0) || math.IsInf(float64(c.RopeFreqScale), 0):
		return fmt.Errorf("%w: the RoPE frequency scale is %g, want > 0", ErrModel, c.RopeFreqScale)
	case !(c.RopeAttnFactor > 0) || math.IsInf(float64(c.RopeAttnFactor), 0):
		return fmt.Errorf("%w: %s.%s is %g, want > 0", ErrModel, c.Arch, keyRopeAttnFactor, c.RopeAttnFactor)
	case c.RopeCtxOrig <= 0 || c.RopeCtxOrig > math.MaxInt32:
		return fmt.Errorf("%w: %s.%s is %d, want > 0", ErrModel, c.Arch, keyRopeCtxOrig, c.RopeCtxOrig)
	}
	return nil
}

// Rope returns the ggml.RopeParams of the configuration in mode (ggml's
// RoPE types: RopeNormal for Llama, RopeNeoX for Qwen, Gemma, Phi-3, ...),
// with llama.cpp's values for its scaling.
func (c Config) Rope(mode ggml.RopeMode) ggml.RopeParams {
	return ggml.RopeParams{
		Dims: c.RopeDim, Mode: mode, CtxOrig: c.RopeCtxOrig,
		FreqBase: c.RopeFreqBase, FreqScale: c.RopeFreqScale,
		ExtFactor: c.RopeExtFactor, AttnFactor: c.RopeAttnFactor, BetaFast: 32, BetaSlow: 1,
	}
}

// QDim is the width of the queries, HeadCount·HeadDim.
func (c Config) QDim() int { return c.HeadCount * c.HeadDim }

// KVDim is the width of the keys and values, HeadCountKV·HeadDim.
func (c Config) KVDim() int { return c.HeadCountKV * c.HeadDim }

// Keys reads an architecture's keys, ARCH.NAME, from a file, keeping the
// first error: an architecture's package reads the keys of its own with
// it after ReadConfig, then checks Err.
type Keys struct {
	f    *gguf.File
	arch string
	err  error
}

// NewKeys returns a Keys that reads the keys arch.NAME of f.
func NewKeys(f *gguf.File, arch string) *Keys { return &Keys{f: f, arch: arch} }

// Err returns the first error of the reads so far, wrapping ErrModel, or
// nil.
func (r *Keys) Err() error {
	if r.err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrModel, r.err)
}

// Has reports whether the file has the key arch.key.
func (r *Keys) Has(key string) bool {
	_, ok := r.f.Value(r.arch + "." + key)
	return ok
}

func (r *Keys) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// Int reads the integer arch.key, of any GGUF integer type, from 0 to
// MaxInt32; def < 0 makes the key required.
func (r *Keys) Int(key string, def int) int { return r.int(key, def) }

// Float reads the float (f32 or f64) arch.key; def < 0 makes the key
// required.
func (r *Keys) Float(key string, def float32) float32 { return r.float(key, def) }

// String reads the string arch.key, reporting whether the file has it.
func (r *Keys) String(key string) (string, bool) { return r.str(key) }

func (r *Keys) int(key string, def int) int {
	v, ok := r.f.Value(r.arch + "." + key)
	if !ok {
		if def < 0 {
			r.fail("missing key %s.%s", r.arch, key)
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
		r.fail("%s.%s is a %v, want an integer (per-layer values are not supported)", r.arch, key, v.Type())
		return 0
	}
	if n < 0 || n > math.MaxInt32 {
		r.fail("%s.%s is %d, out of range", r.arch, key, n)
		return 0
	}
	return int(n)
}

func (r *Keys) float(key string, def float32) float32 {
	v, ok := r.f.Value(r.arch + "." + key)
	if !ok {
		if def < 0 {
			r.fail("missing key %s.%s", r.arch, key)
		}
		return def
	}
	switch x := v.Any().(type) {
	case float32:
		return x
	case float64:
		return float32(x)
	}
	r.fail("%s.%s is a %v, want a float", r.arch, key, v.Type())
	return 0
}

func (r *Keys) str(key string) (string, bool) {
	v, ok := r.f.Value(r.arch + "." + key)
	if !ok {
		return "", false
	}
	s, ok := gguf.As[string](v)
	if !ok {
		r.fail("%s.%s is a %v, want a string", r.arch, key, v.Type())
	}
	return s, ok
}

// maxExperts is llama.cpp's LLAMA_MAX_EXPERTS: the most experts a block
// may have.
const maxExperts = 1024

// Experts are a mixture-of-experts model's keys (ARCH.expert_count,
// expert_used_count and expert_feed_forward_length), read by ReadExperts;
// Count 0 is a dense model.
type Experts struct {
	Count, Used int
	// FeedForward is an expert's width: expert_feed_forward_length, or
	// def where the file has none.
	FeedForward int
}

// ReadExperts reads the mixture-of-experts keys of a file of
// configuration c; an expert's width defaults to def. Inconsistent values
// (more experts used than there are, more than llama.cpp's 1024) are an
// ErrModel error that names the key.
func ReadExperts(f *gguf.File, c Config, def int) (Experts, error) {
	k := NewKeys(f, c.Arch)
	x := Experts{Count: k.Int("expert_count", 0)}
	x.Used = k.Int("expert_used_count", 0)
	x.FeedForward = k.Int("expert_feed_forward_length", def)
	if err := k.Err(); err != nil {
		return Experts{}, err
	}
	switch {
	case x.Count == 0:
		return Experts{}, nil
	case x.Count > maxExperts:
		return Experts{}, fmt.Errorf("%w: %s.expert_count is %d, want at most %d", ErrModel, c.Arch, x.Count, maxExperts)
	case x.Used < 1 || x.Used > x.Count:
		return Experts{}, fmt.Errorf("%w: %s.expert_used_count is %d, want 1 to expert_count (%d)", ErrModel, c.Arch, x.Used, x.Count)
	case x.FeedForward < 1 || x.FeedForward > maxDim:
		return Experts{}, fmt.Errorf("%w: %s.expert_feed_forward_length is %d, want 1 to %d", ErrModel, c.Arch, x.FeedForward, maxDim)
	}
	return x, nil
}

// NeedRMSEps is the error of a file that lacks the RMS norm's epsilon
// (arch.attention.layer_norm_rms_epsilon), or nil: Validate takes either
// epsilon, and an architecture whose norms are RMS norms calls this in its
// Open so that a file with only LayerNorm's key is refused, not run with
// an epsilon of 0.
func (c Config) NeedRMSEps() error {
	if c.RMSEps == 0 {
		return fmt.Errorf("%w: key %s.%s (the RMS norms' epsilon) is missing or 0", ErrModel, c.Arch, keyRMSEps)
	}
	return nil
}

// NeedNormEps is NeedRMSEps for LayerNorm's epsilon
// (arch.attention.layer_norm_epsilon), for architectures whose norms are
// LayerNorms (BERT).
func (c Config) NeedNormEps() error {
	if c.NormEps == 0 {
		return fmt.Errorf("%w: key %s.%s (the LayerNorms' epsilon) is missing or 0", ErrModel, c.Arch, keyNormEps)
	}
	return nil
}
