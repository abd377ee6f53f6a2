//go:build !ggml_system && !(darwin && arm64) && (amd64 || (arm64 && linux))

package ggml_test

import (
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// A binary whose ggml CPU code needs instructions the CPU lacks stops at
// start with a message that names them and the tag to build with (exit
// status 2), before any of that code runs: never SIGILL. The CPU is made
// to look older with the check's test variable.
func TestCPUCheckStopsOnMissingInstructions(t *testing.T) {
	if os.Getenv("GOGGML_TEST_CPU_HAS") != "" {
		t.Fatal("the CPU check let this process start") // the child must not get here
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCPUCheckStopsOnMissingInstructions$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GOGGML_TEST_CPU_HAS=0x1") // SSE4.2 only, or nothing on arm64
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err == nil && !levelNeedsMore() {
		t.Skip("this build's CPU code needs nothing beyond the baseline (-tags ggml_portable)")
	}
	require.ErrorAs(t, err, &ee, "output: %s", out)
	require.Equal(t, 2, ee.ExitCode(), "output: %s", out)
	want := map[string]string{"amd64": "avx2", "arm64": "dotprod"}[runtime.GOARCH]
	require.Contains(t, string(out), want)
	require.Contains(t, string(out), "ggml_portable")
	require.NotContains(t, string(out), "PASS", "no test ran in the child")
}

// levelNeedsMore reports whether ggml's CPU code was built for more than
// the baseline that GOGGML_TEST_CPU_HAS=0x1 leaves.
func levelNeedsMore() bool {
	f := ggml.CPUFeatures()
	return f["AVX2"] || f["FP16_VA"]
}

// The default level (no tag) is x86-64-v3 on amd64: ggml's AVX2, FMA and
// F16C code is on, AVX-512's is not, whatever CGO_CFLAGS says.
func TestCPULevelDefault(t *testing.T) {
	if runtime.GOARCH != "amd64" || cpuLevelTag != "" {
		t.Skip("the default level of amd64 only")
	}
	f := ggml.CPUFeatures()
	for _, k := range []string{"AVX", "AVX2", "FMA", "F16C"} {
		require.True(t, f[k], "%s: %v", k, f)
	}
	require.False(t, f["AVX512"], "x86-64-v3 has no AVX-512: %v", f)
}
