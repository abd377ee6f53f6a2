//go:build !ggml_system && darwin && arm64

package provider

import (
	// On darwin/arm64 the provider's own cgo package compiles ggml's core,
	// its CPU backend and Metal: Apple's compiler targets the machine's CPU
	// (NEON, dot product, FP16) without flags, and Metal needs the
	// provider's build.
	_ "github.com/ollama/ollama/ml/backend/ggml/ggml/src"
)
