package ggml

/*
#include "goggml.h"
extern void goggmlLog(int level, char *text);
extern void goggmlAbort(char *message);

static void goggml_log_cb(enum ggml_log_level level, const char *text, void *ud) {
	(void)ud;
	goggmlLog((int)level, (char *)text);
}
static void goggml_abort_cb(const char *message) { goggmlAbort((char *)message); }
int goggml_cxx_has_simd(void); // simd_cxx.cpp

static void goggml_install_callbacks(void) {
	ggml_log_set(goggml_log_cb, NULL);
	ggml_set_abort_callback(goggml_abort_cb);
}
*/
import "C"

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

func init() {
	// Runs after the provider's init (we import it), so our log callback
	// replaces the one it installed, which printed to stderr.
	C.goggml_install_callbacks()
	checkSIMD()
}

// checkSIMD logs one warning when the CPU can do more than ggml was
// compiled for: without -march ggml runs its scalar code, ~40x slower. The C
// half (ggml-cpu.c: ggml_cpu_has_*) and the C++ half (llamafile's sgemm,
// the repacked kernels: CGO_CXXFLAGS) are checked apart, since the flags of
// one can be set without the other's.
func checkSIMD() {
	var cpuHas, builtC bool
	switch runtime.GOARCH {
	case "amd64":
		cpuHas, builtC = cpu.X86.HasAVX2, C.ggml_cpu_has_avx2() != 0
	case "arm64":
		cpuHas, builtC = cpu.ARM64.HasASIMD, C.ggml_cpu_has_neon() != 0
	}
	if C.GOGGML_CPU_BUILT_BY_CGO == 0 {
		// The provider's CPU code was built apart (ggml's CMake), C and C++
		// with the same flags: ggml_cpu_has_* tells for both.
		if msg := simdWarningPrebuilt(runtime.GOARCH, cpuHas, builtC); msg != "" {
			currentLogger().Warn(msg)
		}
		return
	}
	if msg := simdWarning(runtime.GOARCH, cpuHas, builtC, C.goggml_cxx_has_simd() != 0); msg != "" {
		currentLogger().Warn(msg)
	}
}

// simdWarning returns the start-up warning for a CPU that has the SIMD
// extension ggml needs for speed (AVX2 on amd64, NEON on arm64) when ggml's
// C half (builtC) or C++ half (builtCXX) was compiled without it, else "".
func simdWarning(goarch string, cpuHas, builtC, builtCXX bool) string {
	ext := map[string]string{"amd64": "AVX2", "arm64": "NEON"}[goarch]
	if ext == "" || !cpuHas || (builtC && builtCXX) {
		return ""
	}
	var what string
	switch {
	case !builtC && !builtCXX:
		what = "ggml was compiled without it, so it runs its slow scalar code"
	case !builtC:
		what = "ggml's C code was compiled without it (CGO_CFLAGS), so it runs its slow scalar code"
	default:
		what = "ggml's C++ code (llamafile's matrix products, repacked kernels) was compiled without it (CGO_CXXFLAGS), so its matrix products run slow scalar code"
	}
	return "go-ggml: this CPU has " + ext + " but " + what + ". " +
		"Build with the CPU flags in both CGO_CFLAGS and CGO_CXXFLAGS: run `make` in a go-ggml checkout, or apply the lines printed by `go run github.com/go-ggml/ggml/build/cgoenv`."
}

// simdWarningPrebuilt is simdWarning for a provider whose CPU code was
// built by ggml's own CMake (the ggml_system provider).
func simdWarningPrebuilt(goarch string, cpuHas, built bool) string {
	ext := map[string]string{"amd64": "AVX2", "arm64": "NEON"}[goarch]
	if ext == "" || !cpuHas || built {
		return ""
	}
	return "go-ggml: this CPU has " + ext + " but the installed ggml's CPU backend (libggml-cpu) was compiled without it, " +
		"so it runs its slow scalar code. Rebuild ggml for this CPU (cmake -DGGML_NATIVE=ON) or with its CPU variants (-DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON)."
}

// CPUFeatures reports what ggml's CPU code was compiled to use
// (ggml_cpu_has_*), e.g. {"AVX2": true, "F16C": true}.
func CPUFeatures() map[string]bool {
	return map[string]bool{
		"SSE3":        C.ggml_cpu_has_sse3() != 0,
		"SSSE3":       C.ggml_cpu_has_ssse3() != 0,
		"AVX":         C.ggml_cpu_has_avx() != 0,
		"AVX2":        C.ggml_cpu_has_avx2() != 0,
		"F16C":        C.ggml_cpu_has_f16c() != 0,
		"FMA":         C.ggml_cpu_has_fma() != 0,
		"AVX512":      C.ggml_cpu_has_avx512() != 0,
		"AVX512_BF16": C.ggml_cpu_has_avx512_bf16() != 0,
		"AVX_VNNI":    C.ggml_cpu_has_avx_vnni() != 0,
		"NEON":        C.ggml_cpu_has_neon() != 0,
		"FP16_VA":     C.ggml_cpu_has_fp16_va() != 0,
		"LLAMAFILE":   C.ggml_cpu_has_llamafile() != 0,
	}
}
