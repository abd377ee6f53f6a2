//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

// variants.c: the CPU variants' dispatcher. Three provider files are
// compiled twice, at the default level (x86-64-v3, this package; entry
// points prefixed goggml_base_) and for x86-64-v4 with AVX-512 VNNI
// (package cpuvnni; prefixed goggml_avx512vnni_): llamafile's sgemm,
// the x86 quantized dot products and row quantizers, and the kernels of
// the repacked weight layouts (the list is
// variants_gen.h, generated from the provider's sources). This file
// defines their unprefixed names, which the rest of ggml-cpu calls (its
// type traits table, its mul_mat): each calls the copy chosen once, at
// start, by what the CPU has. Written for go-ggml; it contains no ggml
// code.

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ggml_compute_params;

#define GOGGML_SGEMM_SIG(name)                                                                          \
	bool name(const struct ggml_compute_params *params, int64_t m, int64_t n, int64_t k, const void *A, \
		  int64_t lda, const void *B, int64_t ldb, void *C, int64_t ldc, int Atype, int Btype, int Ctype)
#define GOGGML_VEC_DOT_SIG(name) \
	void name(int n, float *s, size_t bs, const void *vx, size_t bx, const void *vy, size_t by, int nrc)
#define GOGGML_QUANTIZE_ROW_SIG(name) void name(const float *x, void *y, int64_t k)
#define GOGGML_GEMX_SIG(name) \
	void name(int n, float *s, size_t bs, const void *vx, const void *vy, int nr, int nc)
#define GOGGML_QUANTIZE_MAT_SIG(name) void name(const float *x, void *vy, int64_t k)

// For each entry point: the two copies' declarations, the pointer to the
// chosen one (the base copy until goggml_cpu_variant_pick says otherwise),
// and the unprefixed function.
#define GOGGML_SGEMM(name)                                                                          \
	GOGGML_SGEMM_SIG(goggml_base_##name);                                                       \
	GOGGML_SGEMM_SIG(goggml_avx512vnni_##name);                                                 \
	static GOGGML_SGEMM_SIG((*goggml_p_##name)) = goggml_base_##name;                            \
	GOGGML_SGEMM_SIG(name) {                                                                    \
		return goggml_p_##name(params, m, n, k, A, lda, B, ldb, C, ldc, Atype, Btype, Ctype); \
	}
#define GOGGML_VEC_DOT(name)                                              \
	GOGGML_VEC_DOT_SIG(goggml_base_##name);                           \
	GOGGML_VEC_DOT_SIG(goggml_avx512vnni_##name);                     \
	static GOGGML_VEC_DOT_SIG((*goggml_p_##name)) = goggml_base_##name; \
	GOGGML_VEC_DOT_SIG(name) { goggml_p_##name(n, s, bs, vx, bx, vy, by, nrc); }
#define GOGGML_QUANTIZE_ROW(name)                                              \
	GOGGML_QUANTIZE_ROW_SIG(goggml_base_##name);                           \
	GOGGML_QUANTIZE_ROW_SIG(goggml_avx512vnni_##name);                     \
	static GOGGML_QUANTIZE_ROW_SIG((*goggml_p_##name)) = goggml_base_##name; \
	GOGGML_QUANTIZE_ROW_SIG(name) { goggml_p_##name(x, y, k); }
#define GOGGML_GEMX(name)                                              \
	GOGGML_GEMX_SIG(goggml_base_##name);                           \
	GOGGML_GEMX_SIG(goggml_avx512vnni_##name);                     \
	static GOGGML_GEMX_SIG((*goggml_p_##name)) = goggml_base_##name; \
	GOGGML_GEMX_SIG(name) { goggml_p_##name(n, s, bs, vx, vy, nr, nc); }
#define GOGGML_QUANTIZE_MAT(name)                                              \
	GOGGML_QUANTIZE_MAT_SIG(goggml_base_##name);                           \
	GOGGML_QUANTIZE_MAT_SIG(goggml_avx512vnni_##name);                     \
	static GOGGML_QUANTIZE_MAT_SIG((*goggml_p_##name)) = goggml_base_##name; \
	GOGGML_QUANTIZE_MAT_SIG(name) { goggml_p_##name(x, vy, k); }
#include "variants_gen.h"
#undef GOGGML_SGEMM
#undef GOGGML_VEC_DOT
#undef GOGGML_QUANTIZE_ROW
#undef GOGGML_GEMX
#undef GOGGML_QUANTIZE_MAT

// goggml_cpu_variant names the copies in use, for ggml.CPUKernelVariant.
const char *goggml_cpu_variant = "x86-64-v3";

// The CPU has what package cpuvnni was compiled for: x86-64-v4 (AVX-512 F,
// BW, CD, DQ and VL, with the OS saving their registers, which
// __builtin_cpu_supports checks) and AVX-512 VNNI. x86-64-v3, the rest of
// x86-64-v4, is the default level, which cpucheck.c has checked.
static bool goggml_has_avx512vnni(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
	       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

// Chosen once, before the Go runtime and any ggml code start (priority 102:
// after the level check of internal/provider/cpucheck.c), so the pointers
// never change while ggml runs. GOGGML_CPU_VARIANT=x86-64-v3 keeps the
// default level's copies (to compare the two, or to rule the variant out);
// another value is ignored with a message.
__attribute__((constructor(102))) static void goggml_cpu_variant_pick(void) {
	const char *want = getenv("GOGGML_CPU_VARIANT");
	if (want != NULL && *want != 0 && strcmp(want, "x86-64-v3") != 0) {
		static const char msg[] = "go-ggml: GOGGML_CPU_VARIANT takes x86-64-v3 (the build's own kernels) "
					  "or nothing (the best copy for this CPU); ignoring its value\n";
		ssize_t n = write(2, msg, sizeof msg - 1);
		(void)n;
		want = NULL;
	}
	if (want != NULL && *want != 0) {
		return; // x86-64-v3
	}
	if (!goggml_has_avx512vnni()) {
		return;
	}
#define GOGGML_SGEMM(name) goggml_p_##name = goggml_avx512vnni_##name;
#define GOGGML_VEC_DOT(name) goggml_p_##name = goggml_avx512vnni_##name;
#define GOGGML_QUANTIZE_ROW(name) goggml_p_##name = goggml_avx512vnni_##name;
#define GOGGML_GEMX(name) goggml_p_##name = goggml_avx512vnni_##name;
#define GOGGML_QUANTIZE_MAT(name) goggml_p_##name = goggml_avx512vnni_##name;
#include "variants_gen.h"
#undef GOGGML_SGEMM
#undef GOGGML_VEC_DOT
#undef GOGGML_QUANTIZE_ROW
#undef GOGGML_GEMX
#undef GOGGML_QUANTIZE_MAT
	goggml_cpu_variant = "x86-64-v4+avx512vnni";
}

// goggml_cpu_variant_entries returns the number of entry points and sets
// *vnni to the number of them that call the AVX-512 VNNI copy: for a test
// that the choice reached every pointer.
int goggml_cpu_variant_entries(int *vnni) {
	int n = 0;
	*vnni = 0;
#define GOGGML_SGEMM(name) n++, *vnni += goggml_p_##name == goggml_avx512vnni_##name;
#define GOGGML_VEC_DOT(name) n++, *vnni += goggml_p_##name == goggml_avx512vnni_##name;
#define GOGGML_QUANTIZE_ROW(name) n++, *vnni += goggml_p_##name == goggml_avx512vnni_##name;
#define GOGGML_GEMX(name) n++, *vnni += goggml_p_##name == goggml_avx512vnni_##name;
#define GOGGML_QUANTIZE_MAT(name) n++, *vnni += goggml_p_##name == goggml_avx512vnni_##name;
#include "variants_gen.h"
#undef GOGGML_SGEMM
#undef GOGGML_VEC_DOT
#undef GOGGML_QUANTIZE_ROW
#undef GOGGML_GEMX
#undef GOGGML_QUANTIZE_MAT
	return n;
}
