//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable && cgo

package cpu

import (
	// The AVX-512 VNNI copy of the matrix kernels that variants.c picks
	// on CPUs that have it.
	_ "github.com/go-ggml/ggml/internal/provider/embedded/cpuvnni"
)
