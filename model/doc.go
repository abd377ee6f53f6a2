// Package model runs language models from GGUF files with go-ggml: the
// runtime every architecture shares. An architecture is a package of its
// own that registers itself (model/llama, model/qwen2, model/qwen3,
// model/gemma, model/phi3, model/bert); Load finds it by the file's
// general.architecture.
//
//	import _ "github.com/go-ggml/ggml/model/llama" // the architectures a program runs
//
//	m, err := model.Load(ctx, "model.gguf", model.Options{})
//	defer m.Close()
//	for piece, err := range m.GenerateText(ctx, "Once upon a time", model.GenerateOptions{MaxTokens: 64}) {
//		fmt.Print(piece)
//	}
//	msgs := []chat.Message{{Role: "user", Content: "Why is the sky blue?"}}
//	for piece, err := range m.Chat(ctx, msgs, model.GenerateOptions{Sampling: sample.Defaults()}) {
//		fmt.Print(piece)
//	}
//
// What package model does for every architecture: it checks the file's
// tensors against the architecture's layout (Network.Tensors) before it
// loads anything, places the weights (extra buffer types, GPU layers),
// checks the memory, loads them (package gguf), keeps the KV cache,
// builds one graph per shape of batch (Network.Forward, with
// Batch.Attention), runs it through the scheduler (package sched) and
// samples. What depends on the provider: the CPU's extra buffer types and
// its fused attention kernels (see docs/cpu.md); the results do not.
//
// # Running it
//
// Load places the last Options.GPULayers blocks (and the output layer; all
// of them by default) on the accelerator, the rest on the CPU, through the buffer types gguf.Load
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
package model
