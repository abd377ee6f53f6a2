package ggml_test

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"
)

// The default level on amd64 picks its matrix kernels at start: the
// AVX-512 VNNI copy exactly when the CPU has everything it was compiled for
// (x86-64-v4 and VNNI, as golang.org/x/sys/cpu sees the CPU), and the
// build's own copy when GOGGML_CPU_VARIANT=x86-64-v3 says so.
func TestCPUKernelVariantChoice(t *testing.T) {
	got := ggml.CPUKernelVariant()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" || cpuLevelTag != "" || !strings.HasPrefix(ggml.Provider(), "embedded") {
		require.Empty(t, got, "a build with one copy of the kernels")
		t.Skip("the default level of linux/amd64 with the embedded provider only")
	}
	x := cpu.X86
	vnni := x.HasAVX512F && x.HasAVX512BW && x.HasAVX512CD && x.HasAVX512DQ && x.HasAVX512VL && x.HasAVX512VNNI
	want := "x86-64-v3"
	if vnni && os.Getenv("GOGGML_CPU_VARIANT") != "x86-64-v3" { // another value is ignored
		want = "x86-64-v4+avx512vnni"
	}
	require.Equal(t, want, got)
	// Every entry point calls the chosen copy.
	total, onVNNI := ggml.CPUVariantEntries()
	require.Greater(t, total, 2, "sgemm, the dot products and the quantizers")
	if want == "x86-64-v3" {
		require.Zero(t, onVNNI, "entry points that call the AVX-512 VNNI copy")
	} else {
		require.Equal(t, total, onVNNI, "entry points that call the AVX-512 VNNI copy")
	}
	t.Logf("kernels: %s (%d entry points)", got, total)
	if want != "x86-64-v3" && os.Getenv("GOGGML_TEST_VARIANT_CHILD") == "" {
		// Another value is ignored, with a message: the best copy runs.
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCPUKernelVariantChoice$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "GOGGML_CPU_VARIANT=avx512", "GOGGML_TEST_VARIANT_CHILD=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "GOGGML_CPU_VARIANT takes x86-64-v3")
		require.Contains(t, string(out), "kernels: "+want+" (")
	}
}

// The matrix kernels compute the products of f32, f16, bf16, q8_0 and q4_0
// weights, by a matrix (sgemm's kernels) and by a vector (the dot products
// of arch/x86/quants.c), against the float64 reference, with whichever
// copy the CPU picked. On a CPU that picks the AVX-512 VNNI copy, the test
// runs again in a child process held to the build's own copy, which also
// computes the products of every other weight type the CPU multiplies;
// those must agree between the two copies (both sum the same integer
// blocks, so closely).
func TestMulMatKernelVariants(t *testing.T) {
	seed := newRNG(t).Uint64() // the child gets the run's seed: the same
	got := variantProducts(t, seed)
	if path := os.Getenv("GOGGML_TEST_VARIANT_OUT"); path != "" {
		data, err := json.Marshal(got)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		return
	}
	if ggml.CPUKernelVariant() != "x86-64-v4+avx512vnni" {
		return
	}
	path := filepath.Join(t.TempDir(), "base.json")
	cmd := exec.Command(os.Args[0], "-test.run", "^(TestMulMatKernelVariants|TestCPUKernelVariantChoice)$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "GOGGML_CPU_VARIANT=x86-64-v3",
		"GOGGML_TEST_VARIANT_OUT="+path, "GOGGML_SEED="+strconv.FormatUint(testutil.RunSeed(t), 10))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "kernels: x86-64-v3 (")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var base map[string][]float32
	require.NoError(t, json.Unmarshal(data, &base))
	// The child computes every product; the parent those its -run picks.
	require.GreaterOrEqual(t, len(base), len(got))
	for name, v := range got {
		b, ok := base[name]
		require.True(t, ok, "%s: not computed by the base copy", name)
		require.Len(t, b, len(v), name)
		var scale float64
		for _, x := range b {
			scale = max(scale, abs(float64(x)))
		}
		for i := range v {
			require.InDelta(t, b[i], v[i], 1e-5*scale, "%s: element %d, AVX-512 VNNI copy against x86-64-v3's", name, i)
		}
	}
	t.Logf("%d products agree between the two copies", len(got))
}

// variantProducts computes y = w·x for weights of every type the CPU
// multiplies, x of 40 columns and of one, and checks the types of the
// issue's rows against the float64 reference. The results by "type/n".
// Each product draws from a generator of its own, seeded from seed and its
// name, so that a run of some subtests (-run) draws what a whole run does.
func variantProducts(t *testing.T, seed uint64) map[string][]float32 {
	const k, m = 256, 96
	res := map[string][]float32{}
	for _, ty := range []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeBF16, ggml.TypeQ8_0, ggml.TypeQ4_0,
		ggml.TypeQ4_1, ggml.TypeQ5_0, ggml.TypeQ5_1, ggml.TypeQ2_K, ggml.TypeQ3_K, ggml.TypeQ4_K, ggml.TypeQ5_K,
		ggml.TypeQ6_K, ggml.TypeIQ4_NL, ggml.TypeIQ4_XS, ggml.TypeTQ1_0, ggml.TypeTQ2_0, ggml.TypeMXFP4} {
		for _, n := range []int{40, 1} {
			name := fmt.Sprintf("%v/%d", ty, n)
			t.Run(name, func(t *testing.T) {
				h := fnv.New64a()
				h.Write([]byte(name))
				rng := rand.New(rand.NewPCG(seed, h.Sum64()))
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
				x := e.input(ggml.TypeF32, xv, k, int64(n))
				out := e.ctx.MulMat(w, x)
				e.compute(out)
				got := seqOutF32(t, out, m, int64(n))
				res[name] = got
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
				case ggml.TypeQ8_0, ggml.TypeQ4_0:
					xr = q8_0CPU(xv)
				default:
					return // checked against the other copy only
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
				// scales): a few times k roundings of the magnitude. For
				// a q8_0 b, also one step of b's rounding on the row's
				// largest weight: q8_0CPU follows x86's quantizer, other
				// CPUs' (arm64's id = 1/d) may round one value the other
				// way.
				flip := make([]float64, m*n)
				if ty == ggml.TypeQ8_0 || ty == ggml.TypeQ4_0 {
					for j := range n {
						var step float64 // b's largest quantum in column j
						for b := 0; b < k; b += 32 {
							var amax float32
							for _, v := range xv[j*k+b : j*k+b+32] {
								amax = max(amax, float32(abs(float64(v))))
							}
							step = max(step, float64(amax)/127)
						}
						for i := range m {
							var wmax float64
							for _, w := range wv[i*k : (i+1)*k] {
								wmax = max(wmax, abs(float64(w)))
							}
							flip[ref.idx(i, j, 0, 0)] = 1.01 * wmax * step
						}
					}
				}
				tol := seqMagTol(mag, 4*k*seqU, 1e-6)
				if ty == ggml.TypeF16 && backendtest.F16HalfAccumulation(t) {
					// Sums in f16 (upstream's AVX512-FP16 build): k/128
					// additions in each of 128 lanes, 8 in the reduction,
					// and the products' rounding, each up to 2^-11 of the
					// magnitude.
					tol = seqMagTol(mag, float64(k/128+9)*0x1p-11, 1e-6)
					t.Log("this ggml sums f16 products in f16: the bound is half precision's")
				}
				requireClose(t, ref, got, func(i int) float64 { return tol(i) + flip[i] })
			})
		}
	}
	return res
}

func abs(v float64) float64 { return math.Abs(v) }

// bf16Round is ggml's f32 to bf16 conversion (round to nearest even) of a
// finite v, back in float64.
func bf16Round(v float32) float64 {
	u := math.Float32bits(v)
	u = (u + 0x7fff + (u>>16)&1) >> 16
	return float64(math.Float32frombits(u << 16))
}
