//go:build !ggml_system && !(darwin && arm64)

// cpu_isa.c: records which instruction set extensions this package (and
// package core, built with the same flags) was compiled to use, from the
// compiler's own macros. Data only: it is read by a constructor that runs
// before any code of this level (internal/provider/cpucheck.c). Written for
// go-ggml; it contains no ggml code.

#include "../../include/goggml_isa.h"

const unsigned long long goggml_cpu_isa = 0
#if defined(__x86_64__)
#if defined(__SSE4_2__)
	| GOGGML_ISA_SSE42
#endif
#if defined(__POPCNT__)
	| GOGGML_ISA_POPCNT
#endif
#if defined(__AVX__)
	| GOGGML_ISA_AVX
#endif
#if defined(__AVX2__)
	| GOGGML_ISA_AVX2
#endif
#if defined(__FMA__)
	| GOGGML_ISA_FMA
#endif
#if defined(__F16C__)
	| GOGGML_ISA_F16C
#endif
#if defined(__BMI2__)
	| GOGGML_ISA_BMI2
#endif
#if defined(__AVX512F__)
	| GOGGML_ISA_AVX512F
#endif
#if defined(__AVX512BW__)
	| GOGGML_ISA_AVX512BW
#endif
#if defined(__AVX512VL__)
	| GOGGML_ISA_AVX512VL
#endif
#if defined(__AVX512DQ__)
	| GOGGML_ISA_AVX512DQ
#endif
#if defined(__AVX512VNNI__)
	| GOGGML_ISA_AVX512VNNI
#endif
#if defined(__AVX512BF16__)
	| GOGGML_ISA_AVX512BF16
#endif
#if defined(__AVXVNNI__)
	| GOGGML_ISA_AVXVNNI
#endif
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC)
	| GOGGML_ISA_ARM_FP16
#endif
#if defined(__ARM_FEATURE_DOTPROD)
	| GOGGML_ISA_ARM_DOTPROD
#endif
#if defined(__ARM_FEATURE_MATMUL_INT8)
	| GOGGML_ISA_ARM_I8MM
#endif
#if defined(__ARM_FEATURE_SVE)
	| GOGGML_ISA_ARM_SVE
#endif
#endif
	;
