package ggml

/*
#include "goggml.h"
extern void goggmlAbort(char *message);

static void goggml_abort_cb(const char *message) { goggmlAbort((char *)message); }

// goggml_cpu_feature reports whether the CPU backend's feature list
// (ggml_backend_get_features of its registry) has name with value "1".
static int goggml_cpu_feature(const char *name) {
	ggml_backend_reg_t reg = ggml_backend_cpu_reg();
	ggml_backend_get_features_t fn = (ggml_backend_get_features_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
	if (fn == NULL) {
		return 0;
	}
	for (struct ggml_backend_feature *f = fn(reg); f->name != NULL; f++) {
		if (strcmp(f->name, name) == 0) {
			return strcmp(f->value, "1") == 0;
		}
	}
	return 0;
}

static int goggml_cpu_has_openmp(void) { return goggml_cpu_feature("OPENMP"); }

static void goggml_install_callbacks(void) {
	ggml_set_abort_callback(goggml_abort_cb);
}
*/
import "C"

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

func init() {
	// The abort callback; the log's is internal/bridge's, installed
	// before any backend starts.
	C.goggml_install_callbacks()
	checkSIMD()
	if C.GOGGML_CPU_BUILT_BY_CGO == 0 {
		for _, msg := range buildWarnings(C.ggml_cpu_has_llamafile() != 0, C.goggml_cpu_has_openmp() != 0) {
			currentLogger().Warn(msg)
		}
	}
}

// buildWarnings returns the start-up warnings for an installed ggml (the
// system provider) built without what llama.cpp's build turns on:
// llamafile's sgemm (upstream's standalone CMake leaves GGML_LLAMAFILE
// off: matrix products by a matrix, prompts, ran at half the speed), or
// built with OpenMP (GGML_OPENMP, upstream's default), whose threads spin
// between computes and fight the Go runtime's for the cores (generation
// on a 2-core machine ran at 70 or 190 tokens/s from run to run).
func buildWarnings(llamafile, openmp bool) []string {
	var out []string
	if !llamafile {
		out = append(out, "go-ggml: the installed ggml's CPU backend has no llamafile sgemm (built with GGML_LLAMAFILE=OFF, upstream's CMake default): "+
			"matrix products by a matrix (prompts) run at about half speed; rebuild ggml with -DGGML_LLAMAFILE=ON")
	}
	if openmp {
		out = append(out, "go-ggml: the installed ggml's CPU backend uses OpenMP (GGML_OPENMP=ON, upstream's default): its spinning threads "+
			"compete with Go's, and speed varies from run to run; rebuild ggml with -DGGML_OPENMP=OFF (or set OMP_WAIT_POLICY=passive)")
	}
	return out
}

// checkSIMD logs once, at start, when ggml's CPU code is below what the
// CPU can do: a warning when it runs scalar code on a CPU with the SIMD
// extension ggml needs for speed (AVX2 on amd64, NEON on arm64), a debug
// line when the CPU has AVX-512 and the build does not use it.
func checkSIMD() {
	var cpuHas, built, cpu512, built512 bool
	switch runtime.GOARCH {
	case "amd64":
		cpuHas, built = cpu.X86.HasAVX2, C.ggml_cpu_has_avx2() != 0
		cpu512, built512 = cpu.X86.HasAVX512F, C.ggml_cpu_has_avx512() != 0
	case "arm64":
		cpuHas, built = cpu.ARM64.HasASIMD, C.ggml_cpu_has_neon() != 0
	}
	if msg := simdWarning(runtime.GOARCH, C.GOGGML_CPU_BUILT_BY_CGO != 0, cpuHas, built); msg != "" {
		currentLogger().Warn(msg)
	}
	if cpu512 && !built512 && C.GOGGML_CPU_BUILT_BY_CGO != 0 {
		used := "does not use"
		if v := CPUKernelVariant(); v != "" && v != "x86-64-v3" {
			used = "uses in its matrix kernels only (" + v + ")"
		}
		currentLogger().Debug("go-ggml: this CPU has AVX-512, which ggml's CPU code of this build " + used +
			" (it is built for x86-64-v3, which runs on any AVX2 CPU); build with -tags ggml_native for code made for this machine's CPU only")
	}
}

// simdWarning returns the start-up warning for a CPU that has the SIMD
// extension ggml needs for speed (AVX2 on amd64, NEON on arm64) when ggml's
// CPU code was built without it, else "". embedded tells whether go-ggml
// compiled that code (the embedded provider: its level is a build tag) or
// it came built (an installed ggml's libggml-cpu).
func simdWarning(goarch string, embedded, cpuHas, built bool) string {
	ext := map[string]string{"amd64": "AVX2", "arm64": "NEON"}[goarch]
	if ext == "" || !cpuHas || built {
		return ""
	}
	if embedded {
		return "go-ggml: this CPU has " + ext + " but ggml's CPU code was built without it (-tags ggml_portable), " +
			"so it runs its slow scalar code. Build without that tag for code that runs on any " + ext + " CPU, or with -tags ggml_native."
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
