//go:build cuda

package main

// With -tags cuda the CUDA devices join the registry.
import _ "github.com/go-ggml/ggml/cuda"
