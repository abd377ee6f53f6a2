//go:build !ggml_system && !(darwin && arm64) && (amd64 || (arm64 && linux))

// cpucheck.c: stops the program at start, with a message, when the CPU
// lacks an instruction set extension that the embedded provider's code was
// compiled for (goggml_cpu_isa, recorded by internal/provider/embedded/cpu).
// It runs as a constructor of priority 101, before the C++ static
// initializers of ggml (default priority) and before the Go runtime starts,
// so no code built for the missing extensions has run: the alternative is
// SIGILL at some later, random point. This package is compiled without the
// level's flags. Written for go-ggml; it contains no ggml code.

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "goggml_isa.h"

extern const unsigned long long goggml_cpu_isa;

#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1 << 10)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1 << 22)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
#endif

struct goggml_isa_name {
	unsigned long long bit;
	const char *name;
};

static const struct goggml_isa_name goggml_isa_names[] = {
	{GOGGML_ISA_SSE42, "sse4.2"},
	{GOGGML_ISA_POPCNT, "popcnt"},
	{GOGGML_ISA_AVX, "avx"},
	{GOGGML_ISA_AVX2, "avx2"},
	{GOGGML_ISA_FMA, "fma"},
	{GOGGML_ISA_F16C, "f16c"},
	{GOGGML_ISA_BMI2, "bmi2"},
	{GOGGML_ISA_AVX512F, "avx512f"},
	{GOGGML_ISA_AVX512BW, "avx512bw"},
	{GOGGML_ISA_AVX512VL, "avx512vl"},
	{GOGGML_ISA_AVX512DQ, "avx512dq"},
	{GOGGML_ISA_AVX512VNNI, "avx512vnni"},
	{GOGGML_ISA_AVX512BF16, "avx512bf16"},
	{GOGGML_ISA_AVXVNNI, "avxvnni"},
	{GOGGML_ISA_ARM_FP16, "fp16 (asimdhp)"},
	{GOGGML_ISA_ARM_DOTPROD, "dotprod (asimddp)"},
	{GOGGML_ISA_ARM_I8MM, "i8mm"},
	{GOGGML_ISA_ARM_SVE, "sve"},
};

// goggml_cpu_has returns the bits of goggml_isa.h that this CPU has.
unsigned long long goggml_cpu_has(void) {
	unsigned long long has = 0;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2")) has |= GOGGML_ISA_SSE42;
	if (__builtin_cpu_supports("popcnt")) has |= GOGGML_ISA_POPCNT;
	if (__builtin_cpu_supports("avx")) has |= GOGGML_ISA_AVX;
	if (__builtin_cpu_supports("avx2")) has |= GOGGML_ISA_AVX2;
	if (__builtin_cpu_supports("fma")) has |= GOGGML_ISA_FMA;
	if (__builtin_cpu_supports("f16c")) has |= GOGGML_ISA_F16C;
	if (__builtin_cpu_supports("bmi2")) has |= GOGGML_ISA_BMI2;
	if (__builtin_cpu_supports("avx512f")) has |= GOGGML_ISA_AVX512F;
	if (__builtin_cpu_supports("avx512bw")) has |= GOGGML_ISA_AVX512BW;
	if (__builtin_cpu_supports("avx512vl")) has |= GOGGML_ISA_AVX512VL;
	if (__builtin_cpu_supports("avx512dq")) has |= GOGGML_ISA_AVX512DQ;
	if (__builtin_cpu_supports("avx512vnni")) has |= GOGGML_ISA_AVX512VNNI;
	if (__builtin_cpu_supports("avx512bf16")) has |= GOGGML_ISA_AVX512BF16;
	if (__builtin_cpu_supports("avxvnni")) has |= GOGGML_ISA_AVXVNNI;
#elif defined(__aarch64__)
	unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
	if (hw & HWCAP_ASIMDHP) has |= GOGGML_ISA_ARM_FP16;
	if (hw & HWCAP_ASIMDDP) has |= GOGGML_ISA_ARM_DOTPROD;
	if (hw & HWCAP_SVE) has |= GOGGML_ISA_ARM_SVE;
	if (hw2 & HWCAP2_I8MM) has |= GOGGML_ISA_ARM_I8MM;
#endif
	return has;
}

static void goggml_say(const char *s) {
	ssize_t n = write(2, s, strlen(s));
	(void)n;
}

__attribute__((constructor(101))) static void goggml_cpu_check(void) {
	unsigned long long has = goggml_cpu_has();
	// GOGGML_TEST_CPU_HAS (tests only): pretend the CPU has only these
	// bits, to see the message on a CPU that has everything.
	const char *test = getenv("GOGGML_TEST_CPU_HAS");
	if (test != NULL && *test != 0) {
		has &= strtoull(test, NULL, 0);
	}
	unsigned long long missing = goggml_cpu_isa & ~has;
	if (missing == 0) {
		return;
	}
	goggml_say("go-ggml: this program's ggml CPU code was compiled for instructions this CPU does not have:");
	for (size_t i = 0; i < sizeof goggml_isa_names / sizeof goggml_isa_names[0]; i++) {
		if (missing & goggml_isa_names[i].bit) {
			goggml_say(" ");
			goggml_say(goggml_isa_names[i].name);
		}
	}
	goggml_say(".\ngo-ggml: rebuild it with -tags ggml_portable (code for any CPU of this architecture)"
	           " or on this machine with -tags ggml_native.\n");
	_exit(2);
}
