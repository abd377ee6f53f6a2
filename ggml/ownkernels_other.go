//go:build ggml_system || !amd64

package ggml

// ownAVX512Kernels reports whether the embedded build's own AVX-512
// kernels of the CPU backend run: never in this build.
func ownAVX512Kernels() bool { return false }
