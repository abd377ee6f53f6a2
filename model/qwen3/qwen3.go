// Package qwen3 is the Qwen3 architecture for package model (dense
// Qwen3 models, general.architecture "qwen3"), as llama.cpp's
// convert_hf_to_gguf.py writes them. Importing it registers the
// architecture with model.Load.
//
// The file: the qwen3.* hyperparameters model.ReadConfig reads (head sizes
// from attention.key_length, YaRN rope scaling); the tensors token_embd,
// output_norm, output (absent: tied to token_embd), and per block
// attn_norm, attn_q, attn_k, attn_v, the per-head RMS norms attn_q_norm
// and attn_k_norm, attn_output, ffn_norm, ffn_gate, ffn_up and ffn_down.
// The forward pass is llama.cpp's llm_build_qwen3: model.Decoder's blocks,
// q and k normalized per head before RoPE's NeoX mode, and SwiGLU.
package qwen3

import (
	"fmt"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model"
)

// Arch is the general.architecture of the files this package runs.
const Arch = "qwen3"

// ArchMoE is the general.architecture of Qwen3's mixture-of-experts
// models (Qwen3-30B-A3B, ...).
const ArchMoE = "qwen3moe"

func init() {
	model.Register(model.Architecture{Name: Arch, Open: Open})
	model.Register(model.Architecture{Name: ArchMoE, Open: OpenMoE})
}

// OpenMoE reads a Qwen3-MoE file's hyperparameters and returns the network
// that runs it: Qwen3's attention, and a mixture of experts in each block
// (expert_count, expert_used_count, each expert expert_feed_forward_length
// wide, or feed_forward_length/expert_used_count where the file has
// none), as llama.cpp's llm_build_qwen3moe.
func OpenMoE(f *gguf.File) (model.Network, error) {
	c, err := model.ReadArchConfig(f, ArchMoE)
	if err != nil {
		return nil, err
	}
	if err := c.NeedRMSEps(); err != nil {
		return nil, err
	}
	k := model.NewKeys(f, ArchMoE)
	used := k.Int("expert_used_count", 0)
	if err := k.Err(); err != nil {
		return nil, err
	}
	if used == 0 {
		return nil, fmt.Errorf("%w: qwen3moe.expert_used_count is missing or 0", model.ErrModel)
	}
	x, err := model.ReadExperts(f, c, c.FeedForward/used)
	if err != nil {
		return nil, err
	}
	if x.Count == 0 {
		return nil, fmt.Errorf("%w: qwen3moe.expert_count is missing or 0", model.ErrModel)
	}
	specs := model.OutputSpecs(c)
	for il := range c.BlockCount {
		specs = append(specs, model.AttnSpecs(c, il, model.AttnParts{QKNorm: true})...)
		specs = append(specs, model.MoESpecs(c, il, x.Count, x.FeedForward)...)
	}
	return &model.DecoderNetwork{C: c, Specs: specs, Mode: ggml.RopeNeoX, GLU: ggml.GLUSwiglu, ExpertsUsed: x.Used}, nil
}

// Open reads a Qwen3 file's hyperparameters and returns the network that
// runs it.
func Open(f *gguf.File) (model.Network, error) {
	c, err := model.ReadArchConfig(f, Arch)
	if err != nil {
		return nil, err
	}
	if err := c.NeedRMSEps(); err != nil {
		return nil, err
	}
	specs := model.OutputSpecs(c)
	for il := range c.BlockCount {
		specs = append(specs, model.AttnSpecs(c, il, model.AttnParts{QKNorm: true})...)
		specs = append(specs, model.FFNSpecs(c, il, false)...)
	}
	return &model.DecoderNetwork{C: c, Specs: specs, Mode: ggml.RopeNeoX, GLU: ggml.GLUSwiglu}, nil
}
