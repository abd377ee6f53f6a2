// Package modeltest writes model files with random weights for tests and
// benchmarks, as net/http/httptest serves them for HTTP: GGUF files laid
// out as llama.cpp's converter and quantizer write them (the metadata, a
// synthetic vocabulary, any mix of weight types), which the model packages
// load and llama.cpp runs. It is test support, not a model API: the
// weights are random, so the text a model of them writes is gibberish.
package modeltest

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model"
)

// Presets are model sizes for WriteRandom, by name:
//
//	tiny   2 layers, 64 wide, 4 heads, 2 KV heads, FFN 128, vocabulary 256: tests
//	small  12 layers, 768 wide, 12 heads, 4 KV heads, FFN 2048, vocabulary 32000: ~110M weights
//	1b     16 layers, 2048 wide, 32 heads, 8 KV heads, FFN 8192, vocabulary 128256, tied output:
//	       the shape of Llama 3.2 1B, ~1.24G weights (~0.7 GB in q4_0)
var Presets = map[string]model.Config{
	"tiny": {
		Arch: "llama", ContextLength: 512, EmbeddingLength: 64, BlockCount: 2, FeedForward: 128,
		HeadCount: 4, HeadCountKV: 2, HeadDim: 16, RopeDim: 16,
		RopeFreqBase: 10000, RopeFreqScale: 1, RopeScaling: "linear", RopeCtxOrig: 512, RopeAttnFactor: 1, RMSEps: 1e-5, VocabSize: 256,
	},
	"small": {
		Arch: "llama", ContextLength: 2048, EmbeddingLength: 768, BlockCount: 12, FeedForward: 2048,
		HeadCount: 12, HeadCountKV: 4, HeadDim: 64, RopeDim: 64,
		RopeFreqBase: 10000, RopeFreqScale: 1, RopeScaling: "linear", RopeCtxOrig: 2048, RopeAttnFactor: 1, RMSEps: 1e-5, VocabSize: 32000,
	},
	"1b": {
		Arch: "llama", ContextLength: 131072, EmbeddingLength: 2048, BlockCount: 16, FeedForward: 8192,
		HeadCount: 32, HeadCountKV: 8, HeadDim: 64, RopeDim: 64,
		RopeFreqBase: 500000, RopeFreqScale: 1, RopeScaling: "linear", RopeCtxOrig: 131072, RopeAttnFactor: 1, RMSEps: 1e-5, VocabSize: 128256,
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

// RandomArchitectures are the architectures WriteRandom writes, by
// general.architecture: llama, qwen2 (biases on q, k and v), qwen3
// (per-head RMS norms of q and k), gemma2 and gemma3 (norms after each
// sub-layer, the output tied to token_embd; gemma3 with q and k norms)
// phi3 (attn_qkv and the gate and up projections fused) and qwen3moe
// (Qwen3's attention, experts' feed-forwards: RandomModel.Experts), and
// bert (an encoder: position embeddings, post-norm blocks with LayerNorm,
// a WordPiece vocabulary; RandomModel.Pooling).
var RandomArchitectures = []string{"llama", "qwen2", "qwen3", "qwen3moe", "gemma2", "gemma3", "phi3", "bert"}

// RandomModel says what WriteRandom writes.
type RandomModel struct {
	model.Config
	// Type is the type of the weight matrices (token_embd, attention,
	// feed-forward, output): f32, f16, or a type ggml quantizes to without
	// an importance matrix (q8_0, q4_0, q4_K, ...). Norm weights and
	// biases are always f32, as in llama.cpp's files. The zero value is
	// f32.
	Type ggml.Type
	// Types, if set, chooses each matrix's type by its name and row
	// length instead of Type: MixQ4KM is llama.cpp's Q4_K_M.
	Types func(name string, rowLen int64) ggml.Type
	// Tied leaves out output.weight: the output projection then uses
	// token_embd, as Llama 3.2 does.
	Tied bool
	// Biases adds the optional biases llama.cpp takes for Llama (attn_q,
	// attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down), small
	// random values. Qwen2's files always have q, k and v's; Qwen3's none.
	Biases bool
	// Converted writes the metadata a file made by llama.cpp's
	// convert_hf_to_gguf.py and llama-quantize carries beyond the model's
	// sizes: general.type, name, basename, size_label, file_type and
	// quantization_version, general.alignment, and the tokenizer's pre,
	// add_bos_token, add_eos_token, padding_token_id and chat_template.
	// With the SentencePiece vocabulary it leaves out llama.vocab_size,
	// as files converted before 2024 do.
	Converted bool
	// Vocab is the tokenizer: "llama" (the zero value: SentencePiece, as
	// in Llama 2, TinyLlama and Mistral) or "gpt2" (byte-level BPE with
	// merges and <|...|> control tokens, as in Llama 3 and SmolLM).
	Vocab string
	// Seed makes the weights: the same seed, the same file.
	Seed uint64

	// Gemma's keys, written where not 0 (gemma2, gemma3):
	// attention.sliding_window, attention.sliding_window_pattern,
	// rope.freq_base_swa, attn_logit_softcapping and
	// final_logit_softcapping.
	SlidingWindow, SlidingWindowPattern    int
	RopeBaseSWA, AttnSoftcap, FinalSoftcap float32

	// Experts, if > 0, makes each block's feed-forward a mixture of that
	// many experts (llama, as Mixtral; qwen3moe, always), ExpertsUsed of
	// them a token (2 where 0), each ExpertFF wide (FeedForward where 0;
	// written as expert_feed_forward_length for qwen3moe).
	Experts, ExpertsUsed, ExpertFF int

	// Pooling is bert's pooling_type (1 mean, 2 CLS, 3 last; not written
	// where 0).
	Pooling int

	// RopeFactors writes Phi-3's rope_factors_long and
	// rope_factors_short (random factors from 1 to 4) (phi3).
	RopeFactors bool
}

// MixQ4KM returns the weight types llama.cpp's llama-quantize chooses for
// Q4_K_M in a model of blockCount blocks: q6_K for the output (or the
// token embeddings when the output is tied to them) and for attn_v and
// ffn_down in the first and last eighth of the blocks and every third
// block between, q4_K for the others. A row whose length is not a multiple
// of 256 takes the type llama.cpp falls back to (q5_0 for q4_K, q8_0 for
// q6_K).
func MixQ4KM(blockCount int, tied bool) func(name string, rowLen int64) ggml.Type {
	moreBits := func(i int) bool {
		n := blockCount
		return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
	}
	return func(name string, rowLen int64) ggml.Type {
		t := ggml.TypeQ4_K
		switch il, ok := blockOf(name); {
		case name == "output.weight", tied && name == "token_embd.weight":
			t = ggml.TypeQ6_K
		case ok && (strings.Contains(name, ".attn_v.") || strings.Contains(name, ".ffn_down.")) && moreBits(il):
			t = ggml.TypeQ6_K
		}
		if rowLen%t.BlockSize() != 0 {
			t = map[ggml.Type]ggml.Type{ggml.TypeQ4_K: ggml.TypeQ5_0, ggml.TypeQ6_K: ggml.TypeQ8_0}[t]
		}
		return t
	}
}

// fileTypes is llama.cpp's general.file_type (enum llama_ftype) of a file
// whose matrices are all of one type; mixes are named by the caller.
var fileTypes = map[ggml.Type]uint32{
	ggml.TypeF32: 0, ggml.TypeF16: 1, ggml.TypeQ4_0: 2, ggml.TypeQ4_1: 3, ggml.TypeQ8_0: 7,
	ggml.TypeQ5_0: 8, ggml.TypeQ5_1: 9, ggml.TypeQ6_K: 18, ggml.TypeBF16: 32,
}

// WriteRandom writes a GGUF file of architecture r.Arch (RandomArchitectures;
// "llama" when empty) at path with random weights, the
// sizes of r.Config, and a vocabulary of r.VocabSize tokens: SentencePiece
// style (<unk>, <s>, </s>, byte tokens <0x00>.. as many as fit in half the
// vocabulary, at most 256, and "▁"-prefixed and plain word pieces) or
// GPT-2 style (the 256 byte runes, merged pieces, control tokens at the
// end). Matrices are uniform with variance 1/fan-in, so activations stay
// near 1; norm weights are near 1. Tensors are generated and quantized in
// chunks while the file is written, so memory stays small whatever the
// size.
func WriteRandom(path string, r RandomModel) error {
	b, err := Builder(r)
	if err != nil {
		return err
	}
	return b.WriteFile(path)
}

// WriteRandomTo is WriteRandom to a writer.
func WriteRandomTo(w io.Writer, r RandomModel) error {
	b, err := Builder(r)
	if err != nil {
		return err
	}
	_, err = b.WriteTo(w)
	return err
}

// Builder returns the builder of the file WriteRandom writes: to change
// (a key, a tensor) before writing it.
func Builder(r RandomModel) (*gguf.Builder, error) {
	c := r.Config
	if c.Arch == "" {
		c.Arch = "llama"
	}
	if !slices.Contains(RandomArchitectures, c.Arch) {
		return nil, fmt.Errorf("%w: architecture %q: modeltest writes %v", model.ErrModel, c.Arch, RandomArchitectures)
	}
	arch := c.Arch
	gemma := arch == "gemma2" || arch == "gemma3"
	if arch == "qwen3moe" && r.Experts == 0 {
		return nil, fmt.Errorf("%w: a qwen3moe model needs RandomModel.Experts", model.ErrModel)
	}
	moe := r.Experts > 0
	if moe && arch != "llama" && arch != "qwen3moe" {
		return nil, fmt.Errorf("%w: modeltest writes experts for llama and qwen3moe, not %s", model.ErrModel, arch)
	}
	if moe && r.ExpertsUsed == 0 {
		r.ExpertsUsed = 2
	}
	if moe && arch == "llama" && r.ExpertFF != 0 && r.ExpertFF != c.FeedForward {
		return nil, fmt.Errorf("%w: a llama model's experts are feed_forward_length (%d) wide, not %d", model.ErrModel, c.FeedForward, r.ExpertFF)
	}
	if c.HeadDim == 0 && c.HeadCount > 0 {
		c.HeadDim = c.EmbeddingLength / c.HeadCount
	}
	if c.RopeDim == 0 {
		c.RopeDim = c.HeadDim
	}
	if c.RopeFreqScale == 0 {
		c.RopeFreqScale = 1
	}
	if c.RopeScaling == "" {
		c.RopeScaling = "linear"
	}
	if c.RopeCtxOrig == 0 {
		c.RopeCtxOrig = c.ContextLength
	}
	if c.RopeAttnFactor == 0 {
		c.RopeAttnFactor = 1
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	gpt2 := false
	switch r.Vocab {
	case "", "llama":
		if c.VocabSize < 4 {
			return nil, fmt.Errorf("%w: a vocabulary of %d tokens; want at least 4", model.ErrModel, c.VocabSize)
		}
	case "gpt2":
		gpt2 = true
		if c.VocabSize < 256+len(gpt2Specials) {
			return nil, fmt.Errorf("%w: a GPT-2 vocabulary of %d tokens; it needs at least %d (MinGPT2Vocab: its 256 bytes and %d special tokens): raise Config.VocabSize, or use the llama vocabulary", model.ErrModel, c.VocabSize, MinGPT2Vocab, len(gpt2Specials))
		}
	default:
		return nil, fmt.Errorf("%w: vocabulary %q: want llama or gpt2", model.ErrModel, r.Vocab)
	}
	typeOf := r.Types
	if typeOf == nil {
		typeOf = func(string, int64) ggml.Type { return r.Type }
	}

	b := gguf.NewBuilder()
	u32 := func(n int) uint32 { return uint32(n) }
	type pair struct {
		key string
		v   any
	}
	// A name with "phi3" in it makes llama.cpp (and package tokenizer)
	// apply Phi-3's rules for special tokens, whose <|endoftext|> the
	// synthetic vocabulary has not: the name spells it out.
	name := fmt.Sprintf("random %s %d×%d", strings.ReplaceAll(arch, "phi3", "phi three"), c.BlockCount, c.EmbeddingLength)
	kv := []pair{{gguf.KeyArchitecture, arch}}
	if r.Converted {
		kv = append(kv, []pair{
			{"general.type", "model"},
			{"general.name", name},
			{"general.basename", "random-" + arch},
			{"general.size_label", fmt.Sprintf("%.0fM", float64(Params(c, r.Tied))/1e6)},
			{gguf.KeyAlignment, uint32(32)},
		}...)
	} else {
		kv = append(kv, pair{"general.name", fmt.Sprintf("%s %v", name, r.Type)})
	}
	kv = append(kv, []pair{
		{arch + ".context_length", u32(c.ContextLength)},
		{arch + ".embedding_length", u32(c.EmbeddingLength)},
		{arch + ".block_count", u32(c.BlockCount)},
		{arch + ".feed_forward_length", u32(c.FeedForward)},
		{arch + ".attention.head_count", u32(c.HeadCount)},
		{arch + ".attention.head_count_kv", u32(c.HeadCountKV)},
		{arch + ".rope.dimension_count", u32(c.RopeDim)},
		{arch + ".rope.freq_base", c.RopeFreqBase},
		epsKey(arch, c),
	}...)
	if !r.Converted || gpt2 {
		kv = append(kv, pair{arch + ".vocab_size", u32(c.VocabSize)})
	}
	if c.HeadDim != c.EmbeddingLength/c.HeadCount {
		kv = append(kv, pair{arch + ".attention.key_length", u32(c.HeadDim)}, pair{arch + ".attention.value_length", u32(c.HeadDim)})
	}
	switch {
	case c.RopeScaling == "yarn":
		kv = append(kv, pair{arch + ".rope.scaling.type", "yarn"}, pair{arch + ".rope.scaling.factor", 1 / c.RopeFreqScale},
			pair{arch + ".rope.scaling.original_context_length", u32(c.RopeCtxOrig)})
	case c.RopeScaling == "none":
		kv = append(kv, pair{arch + ".rope.scaling.type", "none"})
	case c.RopeCtxOrig != c.ContextLength:
		kv = append(kv, pair{arch + ".rope.scaling.original_context_length", u32(c.RopeCtxOrig)})
	case c.RopeFreqScale != 1:
		kv = append(kv, pair{arch + ".rope.scaling.type", "linear"}, pair{arch + ".rope.scaling.factor", 1 / c.RopeFreqScale})
	}
	if c.RopeAttnFactor != 1 {
		kv = append(kv, pair{arch + ".rope.scaling.attn_factor", c.RopeAttnFactor})
	}
	if arch == "bert" {
		// randomWPMVocab's [SEP] and [MASK] (llama.cpp's defaults, 102 and
		// 103, are BERT's real vocabulary's; [PAD] is written with the
		// converter's keys).
		kv = append(kv, pair{"tokenizer.ggml.seperator_token_id", uint32(2)}, pair{"tokenizer.ggml.mask_token_id", uint32(4)})
		kv = append(kv, pair{"tokenizer.ggml.token_type_count", uint32(2)}, pair{arch + ".attention.causal", false})
		if r.Pooling != 0 {
			kv = append(kv, pair{arch + ".pooling_type", uint32(r.Pooling)})
		}
	}
	if moe {
		kv = append(kv, pair{arch + ".expert_count", u32(r.Experts)}, pair{arch + ".expert_used_count", u32(r.ExpertsUsed)})
		if arch == "qwen3moe" && r.ExpertFF != 0 {
			kv = append(kv, pair{arch + ".expert_feed_forward_length", u32(r.ExpertFF)})
		}
	}
	for _, g := range []struct {
		key string
		v   any
		set bool
	}{
		{"attention.sliding_window", u32(r.SlidingWindow), r.SlidingWindow != 0},
		{"attention.sliding_window_pattern", u32(r.SlidingWindowPattern), r.SlidingWindowPattern != 0},
		{"rope.freq_base_swa", r.RopeBaseSWA, r.RopeBaseSWA != 0},
		{"attn_logit_softcapping", r.AttnSoftcap, r.AttnSoftcap != 0},
		{"final_logit_softcapping", r.FinalSoftcap, r.FinalSoftcap != 0},
	} {
		if g.set && gemma {
			kv = append(kv, pair{arch + "." + g.key, g.v})
		}
	}
	if r.Converted {
		if r.Types == nil {
			if ft, ok := fileTypes[r.Type]; ok {
				kv = append(kv, pair{"general.file_type", ft})
			}
		} else {
			kv = append(kv, pair{"general.file_type", uint32(15)}) // LLAMA_FTYPE_MOSTLY_Q4_K_M
		}
		kv = append(kv, pair{"general.quantization_version", uint32(2)})
	}
	if gpt2 {
		tokens, types, merges := randomGPT2Vocab(c.VocabSize)
		kv = append(kv, []pair{
			{"tokenizer.ggml.model", "gpt2"},
			{"tokenizer.ggml.tokens", tokens},
			{"tokenizer.ggml.token_type", types},
			{"tokenizer.ggml.merges", merges},
			{"tokenizer.ggml.bos_token_id", uint32(c.VocabSize - len(gpt2Specials))},
			{"tokenizer.ggml.eos_token_id", uint32(c.VocabSize - len(gpt2Specials) + 2)},
		}...)
		if r.Converted {
			kv = append(kv, []pair{
				{"tokenizer.ggml.pre", "llama-bpe"},
				{"tokenizer.ggml.add_bos_token", true},
				{"tokenizer.ggml.padding_token_id", uint32(c.VocabSize - len(gpt2Specials) + 1)},
				{"tokenizer.chat_template", "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] }}<|eot_id|>{% endfor %}"},
			}...)
		}
	} else {
		tokens, scores, types := randomVocab(c.VocabSize)
		if arch == "bert" {
			tokens, scores, types = randomWPMVocab(c.VocabSize)
		}
		kv = append(kv, []pair{
			{"tokenizer.ggml.model", map[bool]string{false: "llama", true: "bert"}[arch == "bert"]},
			{"tokenizer.ggml.tokens", tokens},
			{"tokenizer.ggml.scores", scores},
			{"tokenizer.ggml.token_type", types},
			{"tokenizer.ggml.unknown_token_id", uint32(0)},
			{"tokenizer.ggml.bos_token_id", uint32(1)},
			{"tokenizer.ggml.eos_token_id", uint32(2)},
		}...)
		if r.Converted {
			kv = append(kv, []pair{
				{"tokenizer.ggml.pre", "default"},
				{"tokenizer.ggml.padding_token_id", map[bool]uint32{false: 0, true: 3}[arch == "bert"]},
				{"tokenizer.ggml.add_bos_token", true},
				{"tokenizer.ggml.add_eos_token", false},
				{"tokenizer.chat_template", "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}</s>\n{% endfor %}"},
			}...)
		}
	}
	for _, p := range kv {
		if err := b.Set(p.key, p.v); err != nil {
			return nil, err
		}
	}

	e, q, k, f, v := int64(c.EmbeddingLength), int64(c.QDim()), int64(c.KVDim()), int64(c.FeedForward), int64(c.VocabSize)
	hd := int64(c.HeadDim)
	n := 0
	var add func(name string, ne0, ne1 int64, kind tensorKind) error
	addShape := func(name string, shape []int64, kind tensorKind) error {
		n++
		ne0, ne1 := shape[0], int64(1)
		for _, d := range shape[1:] {
			ne1 *= d
		}
		typ := ggml.TypeF32
		if kind == matrixTensor {
			typ = typeOf(name, ne0)
			if typ != ggml.TypeF32 && typ != ggml.TypeF16 && (!typ.CanQuantize() || typ.RequiresImatrix()) {
				return fmt.Errorf("%w: %s: weight type %v: want f32, f16 or a type that quantizes without an importance matrix", model.ErrModel, name, typ)
			}
			if ne0%typ.BlockSize() != 0 {
				return fmt.Errorf("%w: %s: a row of %d is not a whole number of %v blocks (%d)", model.ErrModel, name, ne0, typ, typ.BlockSize())
			}
		}
		g := randomTensor{typ: typ, ne0: ne0, ne1: ne1, kind: kind, seed: r.Seed, index: uint64(n)}
		return b.AddTensor(name, typ, shape, gguf.FromReader(g.open))
	}
	add = func(name string, ne0, ne1 int64, kind tensorKind) error {
		if ne1 == 1 {
			return addShape(name, []int64{ne0}, kind)
		}
		return addShape(name, []int64{ne0, ne1}, kind)
	}
	if err := add("token_embd.weight", e, v, matrixTensor); err != nil {
		return nil, err
	}
	if arch == "bert" {
		return b, bertTensors(c, add)
	}
	for i := range c.BlockCount {
		p := fmt.Sprintf("blk.%d.", i)
		for _, w := range []struct {
			name     string
			ne0, ne1 int64
		}{
			{"attn_norm", e, 0},
			{"attn_q", e, q}, {"attn_k", e, k}, {"attn_v", e, k},
			{"attn_qkv", e, q + 2*k},                       // phi3
			{"attn_q_norm", hd, 0}, {"attn_k_norm", hd, 0}, // qwen3
			{"attn_output", q, e},
			{"ffn_norm", e, 0},
			{"ffn_gate", e, f}, {"ffn_up", e, f}, {"ffn_down", f, e},
			{"ffn_up_fused", e, 2 * f},                             // phi3
			{"post_attention_norm", e, 0}, {"post_ffw_norm", e, 0}, // gemma
		} {
			if (w.name == "attn_q_norm" || w.name == "attn_k_norm") && arch != "qwen3" && arch != "qwen3moe" && arch != "gemma3" {
				continue
			}
			if moe && (w.name == "ffn_gate" || w.name == "ffn_up" || w.name == "ffn_down") {
				if w.name != "ffn_gate" {
					continue
				}
				ff := int64(r.ExpertFF)
				switch {
				case ff == 0 && arch == "qwen3moe":
					ff = f / int64(r.ExpertsUsed) // llama.cpp's default width of Qwen3's experts
				case ff == 0:
					ff = f
				}
				nx := int64(r.Experts)
				if err := add(p+"ffn_gate_inp.weight", e, nx, matrixTensor); err != nil {
					return nil, err
				}
				for _, x := range []struct {
					name    string
					in, out int64
				}{{"ffn_gate_exps", e, ff}, {"ffn_up_exps", e, ff}, {"ffn_down_exps", ff, e}} {
					if err := addShape(p+x.name+".weight", []int64{x.in, x.out, nx}, matrixTensor); err != nil {
						return nil, err
					}
				}
				continue
			}
			if strings.HasPrefix(w.name, "post_") && !gemma {
				continue
			}
			fusedName := w.name == "attn_qkv" || w.name == "ffn_up_fused"
			separate := w.name == "attn_q" || w.name == "attn_k" || w.name == "attn_v" || w.name == "ffn_gate" || w.name == "ffn_up"
			if arch == "phi3" && separate || arch != "phi3" && fusedName {
				continue
			}
			if w.name == "ffn_up_fused" {
				w.name = "ffn_up"
			}
			if w.ne1 == 0 {
				if err := add(p+w.name+".weight", w.ne0, 1, normTensor); err != nil {
					return nil, err
				}
				continue
			}
			if err := add(p+w.name+".weight", w.ne0, w.ne1, matrixTensor); err != nil {
				return nil, err
			}
			qkv := w.name == "attn_q" || w.name == "attn_k" || w.name == "attn_v"
			if r.Biases && arch == "llama" || arch == "qwen2" && qkv {
				if err := add(p+w.name+".bias", w.ne1, 1, biasTensor); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := add("output_norm.weight", e, 1, normTensor); err != nil {
		return nil, err
	}
	if r.RopeFactors && arch == "phi3" {
		for _, name := range []string{"rope_factors_long.weight", "rope_factors_short.weight"} {
			if err := add(name, int64(c.RopeDim/2), 1, factorTensor); err != nil {
				return nil, err
			}
		}
	}
	if !r.Tied && !gemma {
		if err := add("output.weight", e, v, matrixTensor); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// tensorKind says how randomTensor draws a tensor's values.
type tensorKind int

const (
	matrixTensor tensorKind = iota // uniform with variance 1/ne0
	normTensor                     // 1 ± 0.1
	biasTensor                     // ± 0.1
	factorTensor                   // 1 to 4: RoPE frequency factors
)

// randomTensor generates one tensor's data, row by row, from its own
// random stream (seed, index), as its kind says.
type randomTensor struct {
	typ         ggml.Type
	ne0, ne1    int64
	kind        tensorKind
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
	switch r.g.kind {
	case normTensor:
		for i := range vals {
			vals[i] = 1 + 0.2*(r.rng.Float32()-0.5)
		}
	case biasTensor:
		for i := range vals {
			vals[i] = 0.2 * (r.rng.Float32() - 0.5)
		}
	case factorTensor:
		for i := range vals {
			vals[i] = 1 + 3*r.rng.Float32()
		}
	default:
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

// randomWPMVocab makes a WordPiece vocabulary of n tokens, as BERT's:
// [UNK], [CLS] and [SEP] where randomVocab has <unk>, <s> and </s> (the
// same IDs), [PAD] and [MASK], then words and "##" continuations; no
// byte tokens (llama.cpp's WordPiece has none).
func randomWPMVocab(n int) (tokens []string, scores []float32, types []int32) {
	tokens = []string{"[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"}
	types = []int32{2, 3, 3, 3, 3}
	seen := map[string]bool{}
	syll := []string{"a", "e", "i", "o", "u", "ka", "lo", "mi", "ne", "ru", "sa", "ti", "th", "er", "an", "in", "on", "ing", "ed", "st"}
	for i := 0; len(tokens) < n; i++ {
		var w strings.Builder
		for j := i; ; j /= len(syll) {
			w.WriteString(syll[j%len(syll)])
			if j < len(syll) {
				break
			}
		}
		s := w.String()
		if i%3 == 2 {
			s = "##" + s
		}
		if seen[s] {
			continue // "on"+"e" is "o"+"ne"
		}
		seen[s] = true
		tokens = append(tokens, s)
		types = append(types, 1)
	}
	tokens, types = tokens[:n], types[:n]
	scores = make([]float32, n)
	return tokens, scores, types
}

// gpt2Specials are the control tokens at the end of a GPT-2 style
// vocabulary, as in Llama 3's: BOS, end of text (padding), end of turn
// (EOS), and the header marks of its chat template.
var gpt2Specials = []string{"<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"}

// MinGPT2Vocab is the smallest vocabulary RandomModel's GPT-2 vocabulary
// takes: its 256 byte tokens and its special tokens.
var MinGPT2Vocab = 256 + len(gpt2Specials)

// randomGPT2Vocab makes a byte-level BPE vocabulary of n tokens: the 256
// byte runes of GPT-2's byte-to-unicode map (type 1, normal), pieces
// merged from two earlier ones with their merges ("a b"), and
// gpt2Specials (type 3, control) last.
func randomGPT2Vocab(n int) (tokens []string, types []int32, merges []string) {
	runes := make([]rune, 0, 256)
	for r := range gpt2Byte {
		runes = append(runes, r)
	}
	sort.Slice(runes, func(i, j int) bool { return gpt2Byte[runes[i]] < gpt2Byte[runes[j]] })
	for _, r := range runes {
		tokens = append(tokens, string(r))
	}
	seen := map[string]bool{}
	for _, t := range tokens {
		seen[t] = true
	}
	// Pieces grow breadth first: each piece, in order, merged with each
	// letter (a space, Ġ, begins pieces only), so lengths grow with the
	// logarithm of the vocabulary.
	letters := []string{"Ġ", "e", "t", "a", "o", "n", "i", "s", "r", "h", "l", "d"}
	pieces := slices.Clone(letters)
	want := n - len(gpt2Specials)
	for j := 0; len(tokens) < want; j++ {
		for _, b := range letters[1:] {
			if m := pieces[j] + b; len(tokens) < want && !seen[m] {
				seen[m] = true
				tokens = append(tokens, m)
				merges = append(merges, pieces[j]+" "+b)
				pieces = append(pieces, m)
			}
		}
	}
	types = make([]int32, len(tokens), n)
	for i := range types {
		types[i] = 1
	}
	for _, s := range gpt2Specials {
		tokens = append(tokens, s)
		types = append(types, 3)
	}
	return tokens, types, merges
}

// Params returns the number of weights of a Llama model of configuration
// c with a separate output matrix (one vocabulary matrix fewer when tied).
func Params(c model.Config, tied bool) int64 {
	e, f, v := int64(c.EmbeddingLength), int64(c.FeedForward), int64(c.VocabSize)
	layer := e + e*int64(c.QDim()) + 2*e*int64(c.KVDim()) + int64(c.QDim())*e + e + 3*e*f
	n := int64(c.BlockCount)*layer + e + v*e
	if !tied {
		n += v * e
	}
	return n
}

// blockOf returns the block number of a block tensor's name, "blk.N.*".
func blockOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil
}

// gpt2Byte inverts GPT-2's bytes_to_unicode: printable Latin-1 bytes stand
// for themselves, the others for the runes from U+0100 on, in order.
var gpt2Byte = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}()

// epsKey is the key of the model's norms' epsilon: LayerNorm's for bert
// (NormEps, else RMSEps), the RMS norm's for the others.
func epsKey(arch string, c model.Config) struct {
	key string
	v   any
} {
	if arch == "bert" {
		eps := c.NormEps
		if eps == 0 {
			eps = c.RMSEps
		}
		return struct {
			key string
			v   any
		}{arch + ".attention.layer_norm_epsilon", eps}
	}
	return struct {
		key string
		v   any
	}{arch + ".attention.layer_norm_rms_epsilon", c.RMSEps}
}

// bertTensors adds the tensors of a BERT encoder after token_embd:
// token_types, position_embd, token_embd_norm, and per block q, k, v and
// the attention's output with their biases, attn_output_norm, ffn_up and
// ffn_down with biases, and layer_output_norm.
func bertTensors(c model.Config, add func(name string, ne0, ne1 int64, kind tensorKind) error) error {
	e, q, k, f := int64(c.EmbeddingLength), int64(c.QDim()), int64(c.KVDim()), int64(c.FeedForward)
	type t struct {
		name     string
		ne0, ne1 int64
		kind     tensorKind
	}
	ts := []t{
		{"token_types.weight", e, 2, biasTensor}, {"position_embd.weight", e, int64(c.ContextLength), matrixTensor},
		{"token_embd_norm.weight", e, 1, normTensor}, {"token_embd_norm.bias", e, 1, biasTensor},
	}
	for i := range c.BlockCount {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			t{p + "attn_q.weight", e, q, matrixTensor}, t{p + "attn_q.bias", q, 1, biasTensor},
			t{p + "attn_k.weight", e, k, matrixTensor}, t{p + "attn_k.bias", k, 1, biasTensor},
			t{p + "attn_v.weight", e, k, matrixTensor}, t{p + "attn_v.bias", k, 1, biasTensor},
			t{p + "attn_output.weight", q, e, matrixTensor}, t{p + "attn_output.bias", e, 1, biasTensor},
			t{p + "attn_output_norm.weight", e, 1, normTensor}, t{p + "attn_output_norm.bias", e, 1, biasTensor},
			t{p + "ffn_up.weight", e, f, matrixTensor}, t{p + "ffn_up.bias", f, 1, biasTensor},
			t{p + "ffn_down.weight", f, e, matrixTensor}, t{p + "ffn_down.bias", e, 1, biasTensor},
			t{p + "layer_output_norm.weight", e, 1, normTensor}, t{p + "layer_output_norm.bias", e, 1, biasTensor})
	}
	for _, x := range ts {
		if err := add(x.name, x.ne0, x.ne1, x.kind); err != nil {
			return err
		}
	}
	return nil
}
