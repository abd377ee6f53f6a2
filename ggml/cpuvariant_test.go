package ggml_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"
)

// The default level on amd64 picks its matrix kernels at start: the
// AVX-512 VNNI copy exactly when the CPU has everything it was compiled for
// (x86-64-v4 and VNNI, as golang.org/x/sys/cpu sees the CPU), and the
// build's own copy when GOGGML_CPU_VARIANT=x86-64-v3 says so.
func TestCPUKernelVariantChoice(t *testing.T) {
	got := ggml.CPUKernelVariant()
	if runtime.GOARCH != "amd64" || cpuLevelTag != "" || !strings.HasPrefix(ggml.Provider(), "embedded") {
		require.Empty(t, got, "a build with one copy of the kernels")
		t.Skip("the default level of amd64 with the embedded provider only")
	}
	x := cpu.X86
	vnni := x.HasAVX512F && x.HasAVX512BW && x.HasAVX512CD && x.HasAVX512DQ && x.HasAVX512VL && x.HasAVX512VNNI
	want := "x86-64-v3"
	if vnni && os.Getenv("GOGGML_CPU_VARIANT") != "x86-64-v3" {
		want = "x86-64-v4+avx512vnni"
	}
	require.Equal(t, want, got)
	t.Logf("kernels: %s", got)
}

// The matrix kernels compute the products of f32, f16, bf16, q8_0 and q4_0
// weights against the float64 reference, with whichever copy the CPU
// picked; on a CPU that picks the AVX-512 VNNI copy, the test runs again
// in a child process held to the build's own copy, so both are checked.
// The shapes are ones llamafile's sgemm takes (rows a multiple of its
// tiles, k whole blocks, more than one column).
func TestMulMatKernelVariants(t *testing.T) {
	rng := newRNG(t)
	const k, m, n = 256, 96, 40
	for _, ty := range []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeBF16, ggml.TypeQ8_0, ggml.TypeQ4_0} {
		t.Run(ty.String(), func(t *testing.T) {
			e := newEnv(t)
			var w *ggml.Tensor
			var wv []float32 // the weights as ggml reads them
			if ty == ggml.TypeF32 {
				wv = randF32(rng, k*m)
				w = e.input(ty, wv, k, m)
			} else {
				var raw []byte
				raw, wv = seqWeights(t, rng, ty, k, m)
				w = e.seqRaw(ty, raw, k, m)
			}
			xv := randF32(rng, k*n)
			x := e.input(ggml.TypeF32, xv, k, n)
			out := e.ctx.MulMat(w, x)
			e.compute(out)
			got := seqOutF32(t, out, m, n)
			// What ggml multiplies x as: the weights' vec_dot type.
			var xr []float64
			switch ty {
			case ggml.TypeF32:
				xr = fromF32(xv, k*n).v
			case ggml.TypeF16:
				xr = fromF16Slice(toF16(xv))
			case ggml.TypeBF16:
				xr = make([]float64, len(xv))
				for i, v := range xv {
					xr[i] = bf16Round(v)
				}
			default:
				xr = q8_0Ref(xv)
			}
			ref, mag := newND(m, n), newND(m, n)
			for j := range n {
				for i := range m {
					s, a := 0.0, 0.0
					for l := range k {
						p := float64(wv[i*k+l]) * xr[j*k+l]
						s += p
						a += abs(p)
					}
					ref.v[ref.idx(i, j, 0, 0)], mag.v[mag.idx(i, j, 0, 0)] = s, a
				}
			}
			// The kernels sum k products in f32 (the quantized ones
			// scale exact integer block sums by a product of f16
			// scales): a few times k roundings of the magnitude.
			requireClose(t, ref, got, seqMagTol(mag, 4*k*seqU, 1e-6))
		})
	}
	if ggml.CPUKernelVariant() != "x86-64-v4+avx512vnni" {
		return
	}
	t.Run("x86-64-v3 copy", func(t *testing.T) {
		cmd := exec.Command(os.Args[0], "-test.run", "^(TestMulMatKernelVariants|TestCPUKernelVariantChoice)$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "GOGGML_CPU_VARIANT=x86-64-v3", fmt.Sprintf("GGML_TEST_SEED=%d", rng.Uint64()))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "kernels: x86-64-v3\n")
		require.Contains(t, string(out), "--- PASS: TestMulMatKernelVariants/q4_0")
	})
}

func abs(v float64) float64 { return math.Abs(v) }

// bf16Round is ggml's f32 to bf16 conversion (round to nearest even) of a
// finite v, back in float64.
func bf16Round(v float32) float64 {
	u := math.Float32bits(v)
	u = (u + 0x7fff + (u>>16)&1) >> 16
	return float64(math.Float32frombits(u << 16))
}
