//go:build !ggml_system && !(darwin && arm64)

// own_avx512.c: whether go-ggml's own AVX-512 kernels of this package run
// (outprod.c, softmax.c), decided once for all of them. Written for
// go-ggml; it contains no ggml code.

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
// goggml_own_avx512 is set once, before the Go runtime and any ggml code
// start (after variants.c's choice, priority 102), and never changes: the
// CPU has AVX-512 F, BW and VL, and GOGGML_CPU_VARIANT does not hold the
// package to its own x86-64-v3 kernels.
int goggml_own_avx512;

__attribute__((constructor(103))) static void goggml_own_avx512_pick(void) {
	const char *want = getenv("GOGGML_CPU_VARIANT");
	__builtin_cpu_init();
	goggml_own_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	                    __builtin_cpu_supports("avx512vl") && (want == NULL || strcmp(want, "x86-64-v3") != 0);
}
#endif
