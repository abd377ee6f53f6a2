package ggml

// #include "goggml.h"
import "C"

import (
	"strings"

	provider "github.com/go-ggml/ggml/internal/provider"
)

// Version returns ggml's version string (ggml_version), or "" when the
// provider did not set one (the embedded provider does not).
func Version() string { return goString(C.ggml_version()) }

// Commit returns the ggml commit the provider was built from (ggml_commit),
// or "" when the provider did not set one.
func Commit() string { return goString(C.ggml_commit()) }

// Provider names where this binary's ggml comes from, e.g.
// "embedded (github.com/ollama/ollama v0.17.4)".
func Provider() string { return provider.Provider }

func goString(p *C.char) string {
	if p == nil {
		return ""
	}
	s := C.GoString(p)
	if s == "0x0" { // an unset version macro
		return ""
	}
	return s
}

// CPUTiledFlashAttn reports whether the CPU backend computes FlashAttnExt
// for batches of queries (a prompt's attention) in a tiled kernel, which
// reads each block of K and V once for many queries: upstream ggml's
// (-tags ggml_system), or, with the embedded provider, go-ggml's own
// (internal/provider/embedded/cpu/fattn.c) on amd64 CPUs with AVX-512 F,
// BW and VL unless GOGGML_CPU_VARIANT=x86-64-v3. Otherwise the provider's
// kernel goes query by query, and a prompt's attention is faster as two
// matrix products around a softmax (package model chooses so). Not a
// ggml call.
func CPUTiledFlashAttn() bool {
	return strings.HasPrefix(Provider(), "system") || ownAVX512Kernels()
}

// OwnCPUKernels reports whether go-ggml's own CPU kernels run in the
// provider's place (internal/provider/embedded/cpu: the tiled flash
// attention of fattn.c, which also takes a q8_0 or q4_0 cache's keys and
// values with f32 queries, where the provider's kernel rounds the queries
// to q8_0): with the embedded provider on amd64 CPUs with AVX-512 F, BW and
// VL unless GOGGML_CPU_VARIANT=x86-64-v3. Not a ggml call.
func OwnCPUKernels() bool { return ownAVX512Kernels() }
