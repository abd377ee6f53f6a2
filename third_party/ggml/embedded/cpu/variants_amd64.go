//go:build !ggml_system && !(darwin && arm64) && amd64 && !ggml_native && !ggml_portable

package cpu

import (
	// The AVX-512 VNNI copy of llamafile's sgemm that sgemm_variants.c
	// chooses on CPUs that have it.
	_ "github.com/go-ggml/ggml/third_party/ggml/embedded/cpuvnni"
)
