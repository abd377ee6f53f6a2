// Package llama runs Llama-architecture models from GGUF files with
// go-ggml: an example to read and copy, not a library with a stable API.
//
//	m, err := llama.Load(ctx, "model.gguf", llama.Options{GPULayers: -1})
//	defer m.Close()
//	logits, err := m.Eval(ctx, []int32{1, 15043, 3186}, false) // the prompt, one batch
//	s := llama.NewSampler(0.8, 40, 0.95, seed)
//	for range 16 {
//		id, err := s.Sample(logits)
//		fmt.Print(m.Vocab.Decode([]int32{id}))
//		logits, err = m.Eval(ctx, []int32{id}, false) // one token at a time
//	}
//
// # The file
//
// llama.cpp's conventions, read as llama.cpp reads a file of architecture
// LLM_ARCH_LLAMA (Llama 2, Llama 3 to 3.2, TinyLlama, Mistral 7B v0.1,
// SmolLM, ... as convert_hf_to_gguf.py and llama-quantize write them):
//
//   - general.architecture "llama"; the hyperparameters under llama.*
//     (ReadConfig): context_length, embedding_length, block_count,
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
//   - The vocabulary (ReadVocab): tokenizer.ggml.tokens, decoded as
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
// Refused with an ErrModel error that names the key or tensor, before any
// weight is loaded: other architectures, mixture-of-experts models
// (llama.expert_count > 0: Mixtral), per-layer hyperparameter arrays, a
// tensor this package does not know, a missing or misshapen tensor, a
// type the ops cannot take, inconsistent sizes, and a tokenizer other than
// llama and gpt2. Keys llama.cpp ignores for this architecture are ignored
// here too, attention.sliding_window among them (Mistral 7B v0.1's 4096,
// which llama.cpp does not apply either).
//
// WriteRandom writes such a file with random weights: uniform types or a
// mix (MixQ4KM), optionally with biases, and with the metadata and
// vocabulary a converted file carries (RandomModel.Converted, Vocab).
//
// # The forward pass
//
// Model.build in graph.go makes the graph of one batch from go-ggml's ops,
// the way llama.cpp's llm_build_llama does:
//
//	x = token_embd[tokens]
//	per block:  h = RMSNorm(x)·attn_norm
//	            q, k, v = h·Wq, h·Wk, h·Wv; RoPE (normal mode) on q and k
//	            k, v → the KV cache at the tokens' positions (SetRows)
//	            x += Wo · softmax(q·Kᵀ/√d + causal mask) · V   (grouped-query: MulMat broadcasts KV heads)
//	            h = RMSNorm(x)·ffn_norm
//	            x += Wdown · (silu(h·Wgate) ⊙ h·Wup)
//	logits = output · RMSNorm(x)·output_norm
//
// # Running it
//
// Load places the last Options.GPULayers blocks (and the output layer) on
// the accelerator, the rest on the CPU, through the buffer types gguf.Load
// puts each tensor in; the scheduler (package sched) then runs each op where
// its weights are. Each layer's KV cache lives in a buffer on its layer's
// device. Before it allocates anything, Load checks what each device will
// hold against its free memory (*MemoryError); it then reserves the
// scheduler's compute buffers for the largest batch, and Memory reports
// whether a compute ever needed more.
//
// Eval processes up to BatchSize tokens per compute. A graph is built only
// when the shape of the batch changes (the number of tokens, or the number
// of cache cells attended to, rounded up to 256): token-by-token generation
// reuses one graph and only copies in new inputs — token IDs, positions,
// the cache rows to write and the causal mask. Stats tells how the time
// splits between graph building, inputs, ggml's compute and reading the
// logits.
//
// A Model holds one sequence and is used by one goroutine at a time.
package llama
