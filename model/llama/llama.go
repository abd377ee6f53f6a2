package llama

import (
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model"
)

// Arch is the general.architecture of the files this package runs.
const Arch = "llama"

func init() {
	model.Register(model.Architecture{Name: Arch, Open: Open})
}

// Open reads a Llama file's hyperparameters (model.ReadConfig) and returns
// the network that runs it: model.Decoder's blocks with RoPE's normal mode
// and SwiGLU, as llama.cpp's llm_build_llama. The tensors: token_embd,
// output_norm and output (absent: tied to token_embd), Llama 3.1's
// rope_freqs, and per block attn_norm, attn_q, attn_k, attn_v,
// attn_output, ffn_norm, ffn_gate, ffn_up and ffn_down, with the optional
// biases llama.cpp takes. With llama.expert_count above 0 (Mixtral) each
// block's feed-forward is a mixture of experts (model.MoE: ffn_gate_inp,
// ffn_gate_exps, ffn_up_exps, ffn_down_exps), llama.expert_used_count of
// them a token.
func Open(f *gguf.File) (model.Network, error) {
	c, err := model.ReadArchConfig(f, Arch)
	if err != nil {
		return nil, err
	}
	if err := c.NeedRMSEps(); err != nil {
		return nil, err
	}
	x, err := model.ReadExperts(f, c, c.FeedForward)
	if err != nil {
		return nil, err
	}
	specs := append(model.OutputSpecs(c), model.TensorSpec{
		Name: "rope_freqs.weight", Shape: []int64{int64(c.RopeDim / 2)}, Optional: true, Use: model.UseConst,
	})
	for il := range c.BlockCount {
		specs = append(specs, model.AttnSpecs(c, il, model.AttnParts{Biases: true, OutBias: true})...)
		if x.Count > 0 {
			specs = append(specs, model.MoESpecs(c, il, x.Count, x.FeedForward)...)
		} else {
			specs = append(specs, model.FFNSpecs(c, il, true)...)
		}
	}
	return &model.DecoderNetwork{C: c, Specs: specs, Mode: ggml.RopeNormal, GLU: ggml.GLUSwiglu, FreqFactors: "rope_freqs.weight", ExpertsUsed: x.Used}, nil
}
