package llama

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
)

// Presets are model sizes for WriteRandom, by name:
//
//	tiny   2 layers, 64 wide, 4 heads, 2 KV heads, FFN 128, vocabulary 256: tests
//	small  12 layers, 768 wide, 12 heads, 4 KV heads, FFN 2048, vocabulary 32000: ~110M weights
//	1b     16 layers, 2048 wide, 32 heads, 8 KV heads, FFN 8192, vocabulary 128256, tied output:
//	       the shape of Llama 3.2 1B, ~1.24G weights (~0.7 GB in q4_0)
var Presets = map[string]Config{
	"tiny": {
		ContextLength: 512, EmbeddingLength: 64, BlockCount: 2, FeedForward: 128,
		HeadCount: 4, HeadCountKV: 2, HeadDim: 16, RopeDim: 16,
		RopeFreqBase: 10000, RopeFreqScale: 1, RMSEps: 1e-5, VocabSize: 256,
	},
	"small": {
		ContextLength: 2048, EmbeddingLength: 768, BlockCount: 12, FeedForward: 2048,
		HeadCount: 12, HeadCountKV: 4, HeadDim: 64, RopeDim: 64,
		RopeFreqBase: 10000, RopeFreqScale: 1, RMSEps: 1e-5, VocabSize: 32000,
	},
	"1b": {
		ContextLength: 131072, EmbeddingLength: 2048, BlockCount: 16, FeedForward: 8192,
		HeadCount: 32, HeadCountKV: 8, HeadDim: 64, RopeDim: 64,
		RopeFreqBase: 500000, RopeFreqScale: 1, RMSEps: 1e-5, VocabSize: 128256,
	},
}

// PresetNames returns the names of Presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RandomModel says what WriteRandom writes.
type RandomModel struct {
	Config
	// Type is the type of the weight matrices (token_embd, attention,
	// feed-forward, output): f32, f16, or a type ggml quantizes to without
	// an importance matrix (q8_0, q4_0, ...). Norm weights are always f32,
	// as in llama.cpp's files. The zero value is f32.
	Type ggml.Type
	// Tied leaves out output.weight: the output projection then uses
	// token_embd, as Llama 3.2 does.
	Tied bool
	// Seed makes the weights: the same seed, the same file.
	Seed uint64
}

// WriteRandom writes a Llama GGUF file at path with random weights, the
// sizes of r.Config, and a SentencePiece-style vocabulary of r.VocabSize
// tokens: <unk>, <s>, </s>, byte tokens <0x00>.. (as many as fit in half
// the vocabulary, at most 256) and "▁"-prefixed and plain word pieces.
// Matrices are uniform with variance 1/fan-in, so activations stay near 1;
// norm weights are near 1. Tensors are generated and quantized in chunks
// while the file is written, so memory stays small whatever the size.
func WriteRandom(path string, r RandomModel) error {
	b, err := randomBuilder(r)
	if err != nil {
		return err
	}
	return b.WriteFile(path)
}

// WriteRandomTo is WriteRandom to a writer.
func WriteRandomTo(w io.Writer, r RandomModel) error {
	b, err := randomBuilder(r)
	if err != nil {
		return err
	}
	_, err = b.WriteTo(w)
	return err
}

func randomBuilder(r RandomModel) (*gguf.Builder, error) {
	c := r.Config
	if c.HeadDim == 0 && c.HeadCount > 0 {
		c.HeadDim = c.EmbeddingLength / c.HeadCount
	}
	if c.RopeDim == 0 {
		c.RopeDim = c.HeadDim
	}
	if c.RopeFreqScale == 0 {
		c.RopeFreqScale = 1
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.VocabSize < 4 {
		return nil, fmt.Errorf("%w: a vocabulary of %d tokens; want at least 4", ErrModel, c.VocabSize)
	}
	if c.RopeFreqScale != 1 {
		return nil, fmt.Errorf("%w: WriteRandom writes no RoPE scaling (RopeFreqScale %g)", ErrModel, c.RopeFreqScale)
	}
	t := r.Type
	if t != ggml.TypeF32 && t != ggml.TypeF16 && (!t.CanQuantize() || t.RequiresImatrix()) {
		return nil, fmt.Errorf("%w: weight type %v: want f32, f16 or a type that quantizes without an importance matrix", ErrModel, t)
	}
	for _, n := range []int{c.EmbeddingLength, c.QDim(), c.FeedForward} {
		if int64(n)%t.BlockSize() != 0 {
			return nil, fmt.Errorf("%w: a row of %d is not a whole number of %v blocks (%d)", ErrModel, n, t, t.BlockSize())
		}
	}

	b := gguf.NewBuilder()
	u32 := func(n int) uint32 { return uint32(n) }
	type pair struct {
		key string
		v   any
	}
	kv := []pair{
		{gguf.KeyArchitecture, Arch},
		{"general.name", fmt.Sprintf("random llama %d×%d %v", c.BlockCount, c.EmbeddingLength, t)},
		{"llama.context_length", u32(c.ContextLength)},
		{"llama.embedding_length", u32(c.EmbeddingLength)},
		{"llama.block_count", u32(c.BlockCount)},
		{"llama.feed_forward_length", u32(c.FeedForward)},
		{"llama.attention.head_count", u32(c.HeadCount)},
		{"llama.attention.head_count_kv", u32(c.HeadCountKV)},
		{"llama.rope.dimension_count", u32(c.RopeDim)},
		{"llama.rope.freq_base", c.RopeFreqBase},
		{"llama.attention.layer_norm_rms_epsilon", c.RMSEps},
		{"llama.vocab_size", u32(c.VocabSize)},
	}
	if c.HeadDim != c.EmbeddingLength/c.HeadCount {
		kv = append(kv, pair{"llama.attention.key_length", u32(c.HeadDim)}, pair{"llama.attention.value_length", u32(c.HeadDim)})
	}
	tokens, scores, types := randomVocab(c.VocabSize)
	kv = append(kv, []pair{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.scores", scores},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.unknown_token_id", uint32(0)},
		{"tokenizer.ggml.bos_token_id", uint32(1)},
		{"tokenizer.ggml.eos_token_id", uint32(2)},
	}...)
	for _, p := range kv {
		if err := b.Set(p.key, p.v); err != nil {
			return nil, err
		}
	}

	e, q, k, f, v := int64(c.EmbeddingLength), int64(c.QDim()), int64(c.KVDim()), int64(c.FeedForward), int64(c.VocabSize)
	n := 0
	add := func(name string, typ ggml.Type, ne0, ne1 int64, norm bool) error {
		n++
		g := randomTensor{typ: typ, ne0: ne0, ne1: ne1, norm: norm, seed: r.Seed, index: uint64(n)}
		shape := []int64{ne0, ne1}
		if ne1 == 1 {
			shape = shape[:1]
		}
		return b.AddTensor(name, typ, shape, gguf.FromReader(g.open))
	}
	if err := add("token_embd.weight", t, e, v, false); err != nil {
		return nil, err
	}
	for i := range c.BlockCount {
		p := fmt.Sprintf("blk.%d.", i)
		for _, w := range []struct {
			name     string
			typ      ggml.Type
			ne0, ne1 int64
		}{
			{"attn_norm", ggml.TypeF32, e, 1},
			{"attn_q", t, e, q}, {"attn_k", t, e, k}, {"attn_v", t, e, k}, {"attn_output", t, q, e},
			{"ffn_norm", ggml.TypeF32, e, 1},
			{"ffn_gate", t, e, f}, {"ffn_up", t, e, f}, {"ffn_down", t, f, e},
		} {
			if err := add(p+w.name+".weight", w.typ, w.ne0, w.ne1, w.ne1 == 1); err != nil {
				return nil, err
			}
		}
	}
	if err := add("output_norm.weight", ggml.TypeF32, e, 1, true); err != nil {
		return nil, err
	}
	if !r.Tied {
		if err := add("output.weight", t, e, v, false); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// randomTensor generates one tensor's data, row by row, from its own
// random stream (seed, index): norm weights 1 ± 0.1, matrices uniform with
// variance 1/ne0.
type randomTensor struct {
	typ         ggml.Type
	ne0, ne1    int64
	norm        bool
	seed, index uint64
}

func (g randomTensor) open() (io.Reader, error) {
	rows := max(1, (1<<20)/g.ne0) // about 4 MiB of float32 a chunk
	return &randomReader{g: g, rng: rand.New(rand.NewPCG(g.seed, g.index)), rows: rows}, nil
}

// randomReader serves a randomTensor's bytes, a chunk of rows at a time.
type randomReader struct {
	g    randomTensor
	rng  *rand.Rand
	rows int64 // rows per chunk
	row  int64 // rows generated so far
	f32  []float32
	buf  []byte
}

func (r *randomReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.row == r.g.ne1 {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

func (r *randomReader) next() error {
	rows := min(r.rows, r.g.ne1-r.row)
	r.row += rows
	n := int(rows * r.g.ne0)
	if cap(r.f32) < n {
		r.f32 = make([]float32, n)
	}
	vals := r.f32[:n]
	if r.g.norm {
		for i := range vals {
			vals[i] = 1 + 0.2*(r.rng.Float32()-0.5)
		}
	} else {
		a := float32(math.Sqrt(3 / float64(r.g.ne0))) // uniform(-a, a): variance 1/ne0
		for i := range vals {
			vals[i] = a * (2*r.rng.Float32() - 1)
		}
	}
	switch r.g.typ {
	case ggml.TypeF32:
		if cap(r.buf) < 4*n {
			r.buf = make([]byte, 4*n)
		}
		r.buf = r.buf[:4*n]
		for i, v := range vals {
			bits := math.Float32bits(v)
			r.buf[4*i], r.buf[4*i+1], r.buf[4*i+2], r.buf[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
		}
	default:
		b, err := ggml.Quantize(r.g.typ, vals, r.g.ne0, nil)
		if err != nil {
			return err
		}
		r.buf = b
	}
	return nil
}

// randomVocab makes a SentencePiece-style vocabulary of n tokens with
// llama.cpp's token types (1 normal, 2 unknown, 3 control, 6 byte).
func randomVocab(n int) (tokens []string, scores []float32, types []int32) {
	tokens = []string{"<unk>", "<s>", "</s>"}
	types = []int32{2, 3, 3}
	nBytes := min(256, (n-3)/2)
	for i := range nBytes {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", i))
		types = append(types, 6)
	}
	syll := []string{"a", "e", "i", "o", "u", "ka", "lo", "mi", "ne", "ru", "sa", "ti", "th", "er", "an", "in", "on", "ing", "ed", "st"}
	seen := map[string]bool{}
	for i := 0; len(tokens) < n; i++ {
		var w strings.Builder
		for j := i; ; j /= len(syll) {
			w.WriteString(syll[j%len(syll)])
			if j < len(syll) {
				break
			}
		}
		s := w.String()
		if i%3 != 2 {
			s = "▁" + s
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		tokens = append(tokens, s)
		types = append(types, 1)
	}
	scores = make([]float32, n)
	for i := range scores {
		scores[i] = -float32(i)
	}
	return tokens, scores, types
}
