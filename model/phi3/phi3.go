// Package phi3 is the Phi-3 architecture for package model (Phi-3 and
// Phi-3.5 mini and medium, general.architecture "phi3"), as llama.cpp's
// convert_hf_to_gguf.py writes them. Importing it registers the
// architecture with model.Load.
//
// The file: the phi3.* hyperparameters model.ReadConfig reads (a
// longrope scaling type scales as linear; rope.scaling.attn_factor
// scales RoPE's sin and cos), and the tensors token_embd, output_norm,
// output (absent: tied to token_embd) and its optional bias, and per
// block attn_norm, the fused attn_qkv (or attn_q, attn_k and attn_v),
// attn_output and its optional bias, ffn_norm, the fused ffn_up
// [e, 2·ff] (the gate's rows, then the up projection's) and ffn_down; the
// 128k models' rope_factors_long and rope_factors_short, of which a model
// whose context (Options.ContextSize) is longer than
// rope.scaling.original_context_length takes the long ones, as llama.cpp
// does. The forward pass is llama.cpp's llm_build_phi3: model.Decoder's
// blocks with RoPE's NeoX mode and SwiGLU on the fused projection.
// llama.cpp ignores Phi-3's sliding window (attention.sliding_window), and
// so does this package.
package phi3

import (
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model"
)

// Arch is the general.architecture of the files this package runs.
const Arch = "phi3"

func init() {
	model.Register(model.Architecture{Name: Arch, Open: Open})
}

// Open reads a Phi-3 file's hyperparameters and returns the network that
// runs it.
func Open(f *gguf.File) (model.Network, error) {
	c, err := model.ReadArchConfig(f, Arch)
	if err != nil {
		return nil, err
	}
	if err := c.NeedRMSEps(); err != nil {
		return nil, err
	}
	_, fused := f.Tensor("blk.0.attn_qkv.weight")
	factors := int64(c.RopeDim / 2)
	specs := append(model.OutputSpecs(c), model.Optional(model.Vector("output.bias", int64(c.VocabSize))),
		model.TensorSpec{Name: "rope_factors_long.weight", Shape: []int64{factors}, Optional: true, Use: model.UseConst},
		model.TensorSpec{Name: "rope_factors_short.weight", Shape: []int64{factors}, Optional: true, Use: model.UseConst})
	for il := range c.BlockCount {
		specs = append(specs, model.AttnSpecs(c, il, model.AttnParts{Fused: fused, OutBias: true})...)
		specs = append(specs, model.FusedFFNSpecs(c, il)...)
	}
	return &network{DecoderNetwork: model.DecoderNetwork{C: c, Specs: specs, Mode: ggml.RopeNeoX, GLU: ggml.GLUSwiglu}}, nil
}

// network is a DecoderNetwork whose RoPE factors depend on the context.
type network struct {
	model.DecoderNetwork
}

// Bind binds the weights, with the long RoPE factors where the context is
// longer than the original one, else the short ones (either may be
// absent: no factors).
func (n *network) Bind(w *model.Weights) error {
	n.FreqFactors = "rope_factors_short.weight"
	if w.ContextSize() > n.C.RopeCtxOrig {
		n.FreqFactors = "rope_factors_long.weight"
	}
	return n.DecoderNetwork.Bind(w)
}
