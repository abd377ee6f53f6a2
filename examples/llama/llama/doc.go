// Package llama runs Llama-architecture models from GGUF files with
// go-ggml: an example to read and copy, not a library with a stable API.
//
//	m, err := llama.Load(ctx, "model.gguf", llama.Options{GPULayers: -1})
//	defer m.Close()
//	logits, err := m.Eval(ctx, []int32{1, 15043, 3186}, false) // the prompt, one batch
//	s := llama.NewSampler(0.8, 40, 0.95, seed)
//	for range 16 {
//		id := s.Sample(logits)
//		fmt.Print(m.Vocab.Decode([]int32{id}))
//		logits, err = m.Eval(ctx, []int32{id}, false) // one token at a time
//	}
//
// # The file
//
// llama.cpp's conventions: general.architecture "llama", the hyperparameters
// under llama.* (ReadConfig), and the tensors token_embd, blk.N.attn_norm,
// attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down,
// output_norm, and output (absent: the output projection uses token_embd),
// plus Llama 3.1's rope_freqs. Matrices may be of any type ggml multiplies
// (f32, f16, q8_0, q4_0, the k-quants, ...); norms are f32. Biases, experts
// and other architectures are refused with ErrModel. WriteRandom writes such
// a file with random weights.
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
