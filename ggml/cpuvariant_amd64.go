//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

package ggml

/*
extern const char *goggml_cpu_variant;
static const char *goggml_cpu_kernel_variant(void) { return goggml_cpu_variant; }
int goggml_cpu_variant_entries(int *vnni);
*/
import "C"

// cpuVariantEntries returns the number of dispatched entry points and how
// many of them call the AVX-512 VNNI copy (for a test).
func cpuVariantEntries() (total, vnni int) {
	var v C.int
	n := C.goggml_cpu_variant_entries(&v)
	return int(n), int(v)
}

// CPUKernelVariant names the copy of the CPU backend's matrix kernels
// (llamafile's sgemm, which ggml-cpu calls for f32, f16, bf16, q8_0 and
// q4_0 products by a matrix, and the quantized dot products and row
// quantizers of every other product) that this process runs. A build of
// the default level on linux/amd64 holds two, and picks one at start by
// what the CPU has:
// "x86-64-v3" (the build's level) or "x86-64-v4+avx512vnni" (AVX-512 with
// VNNI: ggml's quantized dot products gain vpdpbusd). The environment
// variable GOGGML_CPU_VARIANT=x86-64-v3, read at start, keeps the first.
// It is "" for builds with one copy only: -tags ggml_native or
// ggml_portable, the system provider, other architectures. Not a ggml
// call: go-ggml's dispatcher (internal/provider/embedded/cpu).
func CPUKernelVariant() string { return C.GoString(C.goggml_cpu_kernel_variant()) }
