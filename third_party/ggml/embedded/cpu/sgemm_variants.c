//go:build !ggml_system && !(darwin && arm64) && amd64 && !ggml_native && !ggml_portable

// sgemm_variants.c: llamafile_sgemm, the entry point that ggml-cpu.c calls
// for its matrix products, chooses at start between the default level's
// copy of llamafile's sgemm (goggml_llamafile_sgemm_base, in this package)
// and the AVX-512 VNNI copy (goggml_llamafile_sgemm_avx512vnni, package
// cpuvnni), by what the CPU has. Written for go-ggml; it contains no ggml
// code.

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ggml_compute_params;

#define GOGGML_SGEMM_ARGS                                                                 \
	const struct ggml_compute_params *params, int64_t m, int64_t n, int64_t k,            \
		const void *A, int64_t lda, const void *B, int64_t ldb, void *C, int64_t ldc, \
		int Atype, int Btype, int Ctype

bool goggml_llamafile_sgemm_base(GOGGML_SGEMM_ARGS);
bool goggml_llamafile_sgemm_avx512vnni(GOGGML_SGEMM_ARGS);

static bool (*goggml_sgemm)(GOGGML_SGEMM_ARGS) = goggml_llamafile_sgemm_base;

// goggml_sgemm_variant names the copy in use, for cpu.KernelVariant.
const char *goggml_sgemm_variant = "x86-64-v3";

// The CPU has what package cpuvnni was compiled for: x86-64-v4 (AVX-512 F,
// BW, CD, DQ and VL, with the OS saving their registers, which
// __builtin_cpu_supports checks) and AVX-512 VNNI. x86-64-v3, the rest of
// x86-64-v4, is the default level, which cpucheck.c has checked.
static bool goggml_has_avx512vnni(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
	       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
	       __builtin_cpu_supports("avx512vnni");
}

// Chosen once, before the Go runtime and any ggml code start (priority 102:
// after the level check of third_party/ggml/cpucheck.c). GOGGML_CPU_VARIANT
// =x86-64-v3 keeps the default level's copy (to compare the two, or to rule
// the variant out).
__attribute__((constructor(102))) static void goggml_sgemm_pick(void) {
	const char *want = getenv("GOGGML_CPU_VARIANT");
	if (want != NULL && strcmp(want, "x86-64-v3") == 0) {
		return;
	}
	if (goggml_has_avx512vnni()) {
		goggml_sgemm = goggml_llamafile_sgemm_avx512vnni;
		goggml_sgemm_variant = "x86-64-v4+avx512vnni";
	}
}

bool llamafile_sgemm(GOGGML_SGEMM_ARGS) {
	return goggml_sgemm(params, m, n, k, A, lda, B, ldb, C, ldc, Atype, Btype, Ctype);
}
