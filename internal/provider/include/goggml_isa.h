// goggml_isa.h: the instruction set extensions that the embedded
// provider's code can be compiled for (internal/provider/embedded), as bits
// of goggml_cpu_isa, with their names for messages. Written for go-ggml.
#ifndef GOGGML_ISA_H
#define GOGGML_ISA_H

enum {
	GOGGML_ISA_SSE42 = 1 << 0,
	GOGGML_ISA_POPCNT = 1 << 1,
	GOGGML_ISA_AVX = 1 << 2,
	GOGGML_ISA_AVX2 = 1 << 3,
	GOGGML_ISA_FMA = 1 << 4,
	GOGGML_ISA_F16C = 1 << 5,
	GOGGML_ISA_BMI2 = 1 << 6,
	GOGGML_ISA_AVX512F = 1 << 7,
	GOGGML_ISA_AVX512BW = 1 << 8,
	GOGGML_ISA_AVX512VL = 1 << 9,
	GOGGML_ISA_AVX512DQ = 1 << 10,
	GOGGML_ISA_AVX512VNNI = 1 << 11,
	GOGGML_ISA_AVX512BF16 = 1 << 12,
	GOGGML_ISA_AVXVNNI = 1 << 13,
	GOGGML_ISA_ARM_FP16 = 1 << 16,
	GOGGML_ISA_ARM_DOTPROD = 1 << 17,
	GOGGML_ISA_ARM_I8MM = 1 << 18,
	GOGGML_ISA_ARM_SVE = 1 << 19,
};

#endif
