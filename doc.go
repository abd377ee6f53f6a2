// Package goggml is the front door of go-ggml, the Go bindings to ggml, the
// C tensor library under llama.cpp and whisper.cpp. It holds no code: this
// page says which package to import for what.
//
// # Where to start
//
// To run a language model (Llama, Mixtral, Qwen2, Qwen3, Gemma 2 and 3,
// Phi-3; BERT embeddings), import [github.com/go-ggml/ggml/model] and the
// architectures the files need:
//
//	import (
//		"github.com/go-ggml/ggml/model"
//		_ "github.com/go-ggml/ggml/model/llama"
//	)
//
//	m, err := model.Load(ctx, "model.gguf", model.Options{})
//	...
//	for piece, err := range m.Chat(ctx, msgs, model.GenerateOptions{MaxTokens: 128}) { ... }
//
// model/chat renders chat templates, model/sample samples tokens,
// model/engine batches many sequences on one model, and model/server
// serves the OpenAI API over it (cmd/llama-server is that server).
//
// To build and run tensor graphs yourself, import
// [github.com/go-ggml/ggml/ggml] (contexts, tensors, about 175 ops, graphs,
// autodiff, quantization) and [github.com/go-ggml/ggml/backend] (buffers,
// backends, devices, allocation, transfers). The README's quick start
// (examples/quickstart) multiplies two matrices on the best device and
// checks the product against float64.
//
// The other packages:
//   - sched: ggml's scheduler, one graph over several backends;
//   - cpu: the CPU backend's threads, thread pools and features;
//   - gguf: GGUF files, read, written and loaded into backend buffers;
//   - opt: training with ggml-opt (examples/mnist);
//   - tokenizer: SentencePiece and byte-level BPE, as llama.cpp tokenizes;
//   - rpc: ggml's RPC backend, a server's devices used as local ones
//     (upstream ggml only);
//   - vulkan, cuda, metal: what each GPU backend has of its own;
//   - backend/backendtest: helpers for tests that run graphs.
//
// # Where ggml comes from
//
// By default go-ggml compiles ggml's core and CPU backend from the Go
// module github.com/ollama/ollama (the embedded provider); nothing needs
// to be installed but a C and C++ compiler, and the first build takes a
// minute or two. It builds from the module cache, go mod vendor, a replace
// to a local copy, go.work and forks (docs/providers.md says how it finds
// ggml, and the one case that needs CGO_CPPFLAGS). With -tags ggml_system it links an installed upstream
// ggml (v0.21.0 or later) found with pkg-config instead; only that
// provider has the RPC backend and the meta device. docs/providers.md
// says what differs.
//
// # Build tags
//
//   - ggml_system: link an installed upstream ggml (see above);
//   - vulkan, cuda: link ggml's Vulkan or CUDA backend, built first with
//     go run github.com/go-ggml/ggml/build/gpulib vulkan (or cuda), whose
//     output goes into CGO_LDFLAGS as -L;
//   - on darwin/arm64, Metal is compiled in by the provider, with no tag.
//
// Without a tag, backend.Load loads a GPU backend built as a module at run
// time.
package goggml
