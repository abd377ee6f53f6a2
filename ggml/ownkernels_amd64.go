//go:build !ggml_system && amd64

package ggml

// extern int goggml_own_avx512;
import "C"

// ownAVX512Kernels reports whether the embedded build's own AVX-512
// kernels of the CPU backend run in this process (out_prod, the softmax's
// first pass, batched flash attention: internal/provider/embedded/cpu), for
// tests whose bounds differ between those and the provider's.
func ownAVX512Kernels() bool { return C.goggml_own_avx512 != 0 }
