// Package llama is the Llama architecture for package model: Llama 2,
// Llama 3 to 3.2, TinyLlama, Mistral 7B v0.1, SmolLM, ... as llama.cpp's
// convert_hf_to_gguf.py and llama-quantize write them. Importing it
// registers the architecture "llama" with model.Load:
//
//	import (
//		"github.com/go-ggml/ggml/model"
//		_ "github.com/go-ggml/ggml/model/llama"
//	)
//
//	m, err := model.Load(ctx, "Llama-3.2-1B-Instruct-Q4_K_M.gguf", model.Options{})
//
// # The file
//
// llama.cpp's conventions, read as llama.cpp reads a file of architecture
// LLM_ARCH_LLAMA (Llama 2, Llama 3 to 3.2, TinyLlama, Mistral 7B v0.1,
// SmolLM, ... as convert_hf_to_gguf.py and llama-quantize write them):
//
//   - general.architecture "llama"; the hyperparameters under llama.*
//     (model.ReadConfig): context_length, embedding_length, block_count,
//     feed_forward_length, attention.head_count, attention.head_count_kv
//     (default: head_count), attention.key_length and value_length (head
//     sizes other than embedding_length/head_count; the two must agree),
//     rope.dimension_count (default: the head size; fewer rotates the
//     first dimensions of each head only), rope.freq_base (default 10000),
//     attention.layer_norm_rms_epsilon, and vocab_size, which is optional:
//     the vocabulary is the rows of token_embd.
//   - RoPE scaling: linear (rope.scaling.type "linear", or no type, with
//     rope.scaling.factor or the older rope.scale_linear) or none; Llama
//     3.1's frequency factors, the tensor rope_freqs. YaRN and LongRoPE
//     are refused.
//   - The tensors token_embd, blk.N.attn_norm, attn_q, attn_k, attn_v,
//     attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down, output_norm, and
//     output (absent: the output projection uses token_embd), each
//     ".weight"; the optional biases llama.cpp takes (blk.N.attn_q.bias,
//     attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down); norms,
//     biases and rope_freqs are f32.
//   - Matrices of any mix of types, as llama-quantize writes them (Q4_K_M
//     is q4_K with q6_K for the output and some attn_v and ffn_down; other
//     files use q2_K to q8_0, iq4_nl, iq4_xs, f16, bf16, ...): Load builds
//     each matrix's ops (MulMat, and GetRows for token_embd) before it
//     loads anything, and refuses a type ggml's CPU cannot run; a matrix
//     the accelerator cannot run stays on the CPU, as llama.cpp does.
//   - The vocabulary (model.ReadVocab): tokenizer.ggml.tokens, decoded as
//     SentencePiece (model "llama") or byte-level BPE ("gpt2", Llama 3);
//     token_type (control, byte, ...), bos_token_id and eos_token_id,
//     checked against the tokens. Vocab.Tokenizer is the file's tokenizer
//     (package tokenizer: merges, scores, pre, add_bos_token, ... as
//     llama.cpp reads them), for text prompts; a file whose tokenizer it
//     refuses still runs from token IDs. chat_template is read by no one.
//   - general.* keys other than the architecture and alignment (name,
//     file_type, quantization_version, ...) describe the file and change
//     nothing.
//
// Refused with a model.ErrModel error that names the key or tensor, before any
// weight is loaded: other architectures, mixture-of-experts models
// (llama.expert_count > 0: Mixtral), per-layer hyperparameter arrays, a
// tensor this package does not know, a missing or misshapen tensor, a
// type the ops cannot take, inconsistent sizes, and a tokenizer other than
// llama and gpt2. Keys llama.cpp ignores for this architecture are ignored
// here too, attention.sliding_window among them (Mistral 7B v0.1's 4096,
// which llama.cpp does not apply either).
//
// modeltest.WriteRandom writes such a file with random weights: uniform types or a
// mix (MixQ4KM), optionally with biases, and with the metadata and
// vocabulary a converted file carries (RandomModel.Converted, Vocab).
//
// # The forward pass
//
// Forward builds the graph of one batch from go-ggml's ops, the way
// llama.cpp's llm_build_llama does; the KV cache and the attention over
// it are package model's (model.Batch.Attention).
package llama
