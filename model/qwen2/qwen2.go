// Package qwen2 is the Qwen2 architecture for package model: Qwen2 and
// Qwen2.5 (general.architecture "qwen2"), as llama.cpp's
// convert_hf_to_gguf.py writes them. Importing it registers the
// architecture with model.Load.
//
// The file: the qwen2.* hyperparameters model.ReadConfig reads (YaRN
// rope scaling included, Qwen2.5's long context); the tensors
// token_embd, output_norm, output (absent: tied to token_embd) and its
// optional bias, and per block attn_norm, attn_q, attn_k, attn_v with
// their biases (optional, as llama.cpp takes them), attn_output, ffn_norm,
// ffn_gate, ffn_up and ffn_down. The forward pass is llama.cpp's
// llm_build_qwen2: model.Decoder's blocks with RoPE's NeoX mode and SwiGLU.
package qwen2

import (
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model"
)

// Arch is the general.architecture of the files this package runs.
const Arch = "qwen2"

func init() {
	model.Register(model.Architecture{Name: Arch, Open: Open})
}

// Open reads a Qwen2 file's hyperparameters and returns the network that
// runs it.
func Open(f *gguf.File) (model.Network, error) {
	c, err := model.ReadArchConfig(f, Arch)
	if err != nil {
		return nil, err
	}
	if err := c.NeedRMSEps(); err != nil {
		return nil, err
	}
	specs := append(model.OutputSpecs(c), model.Optional(model.Vector("output.bias", int64(c.VocabSize))))
	for il := range c.BlockCount {
		specs = append(specs, model.AttnSpecs(c, il, model.AttnParts{Biases: true})...)
		specs = append(specs, model.FFNSpecs(c, il, false)...)
	}
	return &model.DecoderNetwork{C: c, Specs: specs, Mode: ggml.RopeNeoX, GLU: ggml.GLUSwiglu}, nil
}
