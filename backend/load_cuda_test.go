package backend_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/sched"
)

// The CUDA backend built as a module (make cuda-dl, on a machine with the
// CUDA toolkit) is loaded into this binary: ops of every family compute on
// the GPU what they compute on the CPU, and a scheduler runs a graph whose
// custom op (CPU only) sits between GPU ops.
func TestLoadCUDAModule(t *testing.T) {
	path, err := filepath.Abs("../build/cuda-dl/lib/libggml-cuda.so")
	require.NoError(t, err)
	if _, err := os.Stat(path); err != nil {
		t.Skip("needs the CUDA module: run make cuda-dl on a machine with the CUDA toolkit")
	}
	if !strings.HasPrefix(ggml.Provider(), "embedded") {
		// Both ggmls say backend API version 2, so ggml would load it, but
		// the structs a module and the core share differ between them.
		t.Skip("the module is built from the embedded provider's ggml (build/backend.sh); this binary links " + ggml.Provider())
	}
	if _, err := backend.RegByName("CUDA"); err == nil {
		t.Skip("CUDA is built in (-tags cuda): the module would be a second copy")
	}
	r, err := backend.Load(path)
	require.NoError(t, err)
	require.Equal(t, "CUDA", r.Name())
	if r.DeviceCount() == 0 {
		require.NoError(t, backend.Unload(r))
		t.Skip("the CUDA module loaded but sees no device")
	}
	gpu, err := r.Device(0).Init("")
	require.NoError(t, err)
	cpu, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	defer cpu.Close()
	t.Logf("device %s", r.Device(0).Description())
	rng := testutil.NewRNG(t)

	// Each case builds its output from f32 inputs of the given shapes (and
	// fixed i32 inputs where it needs indices).
	type input struct {
		ne  []int64
		i32 []int32
	}
	f := func(ne ...int64) input { return input{ne: ne} }
	ix := func(v ...int32) input { return input{ne: []int64{int64(len(v))}, i32: v} }
	cases := []struct {
		name string
		in   []input
		op   func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor
	}{
		{"mul_mat", []input{f(64, 24), f(64, 9)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor { return c.MulMat(x[0], x[1]) }},
		{"mul_mat f16", []input{f(64, 24), f(64, 9)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.MulMat(c.Cast(x[0], ggml.TypeF16), x[1])
		}},
		{"mul_mat q8_0", []input{f(64, 24), f(64, 9)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.MulMat(c.Cast(x[0], ggml.TypeQ8_0), x[1])
		}},
		{"soft_max_ext", []input{f(32, 8, 2), f(32, 8)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.SoftMaxExt(x[0], x[1], 0.5, 0)
		}},
		{"rms_norm*mul", []input{f(64, 6), f(64)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.Mul(c.RMSNorm(x[0], 1e-5), x[1])
		}},
		{"group_norm", []input{f(8, 8, 6)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor { return c.GroupNorm(x[0], 3, 1e-5) }},
		{"rope neox", []input{f(64, 4, 5), ix(0, 3, 9, 27, 81)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.Rope(x[0], x[1], ggml.RopeParams{Dims: 64, Mode: ggml.RopeNeoX, CtxOrig: 4096, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1})
		}},
		{"flash_attn_ext", []input{f(64, 7, 4), f(64, 32, 2), f(64, 32, 2), f(32, 7)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.FlashAttnExt(x[0], c.Cast(x[1], ggml.TypeF16), c.Cast(x[2], ggml.TypeF16), c.Cast(x[3], ggml.TypeF16),
				ggml.FlashAttnParams{Scale: 0.125, Precision: ggml.PrecF32})
		}},
		{"conv_2d", []input{f(3, 3, 4, 8), f(12, 10, 4, 2)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.Conv2D(c.Cast(x[0], ggml.TypeF16), x[1], 1, 1, 1, 1, 1, 1)
		}},
		{"pool_2d", []input{f(12, 10, 3)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.Pool2D(x[0], ggml.PoolMax, 2, 2, 2, 2, 0, 0)
		}},
		{"get_rows", []input{f(16, 10), ix(9, 0, 4, 4)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor { return c.GetRows(x[0], x[1]) }},
		{"set_rows", []input{f(16, 10), f(16, 3), ix(7, 1, 4)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.SetRows(x[0], x[1], x[2])
		}},
		{"argsort", []input{f(33, 5)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.Cast(c.Argsort(x[0], ggml.SortDesc), ggml.TypeF32)
		}},
		{"clamp+gelu+silu", []input{f(128)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.Silu(c.Gelu(c.Clamp(x[0], -1, 1)))
		}},
		{"swiglu", []input{f(64, 3)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor { return c.Swiglu(x[0]) }},
		{"concat+pad+roll", []input{f(8, 3), f(8, 2)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.Roll(c.PadExt(c.Concat(x[0], x[1], 1), ggml.Padding{{1, 2}, {0, 1}}), 3, -1, 0, 0)
		}},
		{"cumsum+sum_rows", []input{f(40, 6)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor { return c.SumRows(c.Cumsum(x[0])) }},
		{"ssm_conv", []input{f(7, 16, 2), f(4, 16)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor { return c.SSMConv(x[0], x[1]) }},
		{"upscale", []input{f(5, 4, 3)}, func(c *ggml.Context, x []*ggml.Tensor) *ggml.Tensor {
			return c.Interpolate(x[0], 9, 7, 3, 1, ggml.ScaleBilinear)
		}},
	}
	run := func(be *backend.Backend, tc int, vals [][]float32) ([]float32, bool) {
		k := cases[tc]
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 64, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		defer c.Close()
		x := make([]*ggml.Tensor, len(k.in))
		for i, in := range k.in {
			ty := ggml.TypeF32
			if in.i32 != nil {
				ty = ggml.TypeI32
			}
			x[i] = c.NewTensor(ty, in.ne...).SetInput()
		}
		y := k.op(c, x).SetOutput()
		require.NoError(t, c.Err())
		g, err := c.BuildGraph(y)
		require.NoError(t, err)
		for _, n := range g.Nodes() {
			if !be.SupportsOp(n) {
				t.Logf("%s: %s does not support %s", k.name, be.Name(), n.Op())
				return nil, false
			}
		}
		buf, err := backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		defer buf.Close()
		for i, in := range k.in {
			if in.i32 != nil {
				require.NoError(t, ggml.SetData(x[i], in.i32))
			} else {
				require.NoError(t, ggml.SetData(x[i], vals[i]))
			}
		}
		require.NoError(t, be.Compute(context.Background(), g))
		out, err := ggml.Data[float32](y)
		require.NoError(t, err)
		return out, true
	}
	for tc, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			vals := make([][]float32, len(k.in))
			for i, in := range k.in {
				n := int64(1)
				for _, v := range in.ne {
					n *= v
				}
				vals[i] = make([]float32, n)
				for j := range vals[i] {
					vals[i][j] = float32(rng.NormFloat64())
				}
			}
			want, _ := run(cpu, tc, vals)
			got, ok := run(gpu, tc, vals)
			if !ok {
				t.Skip("op not on this GPU")
			}
			require.Len(t, got, len(want))
			// The GPU may round inputs through f16 or tf32 (2^-11 relative)
			// before sums of tens of terms: the tolerance scales with the
			// output's typical size, which bounds those terms here. A wrong
			// layout or op errs by the size itself.
			rms := 0.0
			for _, w := range want {
				rms += float64(w) * float64(w)
			}
			rms = math.Sqrt(rms / float64(max(len(want), 1)))
			for i := range want {
				tol := 3e-3 * math.Max(math.Max(1, rms), math.Abs(float64(want[i])))
				require.InDelta(t, want[i], got[i], tol, "%s element %d", k.name, i)
			}
		})
	}

	// A scheduler over the GPU and the CPU: the custom op runs on the CPU
	// between GPU matrix products.
	t.Run("sched with custom op", func(t *testing.T) {
		s, err := sched.New([]*backend.Backend{gpu, cpu}, sched.Options{})
		require.NoError(t, err)
		defer s.Close()
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		defer c.Close()
		w := c.NewTensor(ggml.TypeF32, 32, 32).SetInput()
		xin := c.NewTensor(ggml.TypeF32, 32, 4).SetInput()
		h := c.MulMat(w, xin)
		h = c.MapCustom1(h, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
			in, out := src[0].Float32s(), dst.Float32s()
			for i := ith; i < len(out); i += nth {
				out[i] = 2 * in[i]
			}
		}, 0)
		h0 := h.Sources()[0] // the first product
		y := c.MulMat(w, h).SetOutput()
		g, err := c.BuildGraph(y)
		require.NoError(t, err)
		// Left alone, ggml's scheduler keeps such a small graph on the CPU
		// with its custom op: pin the products to the GPU.
		require.NoError(t, s.SetTensorBackend(h0, gpu))
		require.NoError(t, s.SetTensorBackend(y, gpu))
		require.NoError(t, s.AllocGraph(g))
		wv, xv := make([]float32, 32*32), make([]float32, 32*4)
		for i := range wv {
			wv[i] = float32(rng.NormFloat64()) / 8
		}
		for i := range xv {
			xv[i] = float32(rng.NormFloat64())
		}
		require.NoError(t, ggml.SetData(w, wv))
		require.NoError(t, ggml.SetData(xin, xv))
		require.NoError(t, s.Compute(context.Background(), g))
		require.Greater(t, s.NumSplits(), 1, "the custom op splits the graph")
		got, err := ggml.Data[float32](y)
		require.NoError(t, err)
		for j := range 4 {
			hv := make([]float64, 32)
			for i := range 32 {
				for k := range 32 {
					hv[i] += float64(wv[i*32+k]) * float64(xv[j*32+k])
				}
				hv[i] *= 2
			}
			for i := range 32 {
				want := 0.0
				for k := range 32 {
					want += float64(wv[i*32+k]) * hv[k]
				}
				require.InDelta(t, want, float64(got[j*32+i]), 3e-3*math.Max(1, math.Abs(want)), "y[%d,%d]", i, j)
			}
		}
	})

	require.NoError(t, gpu.Close())
	require.NoError(t, backend.Unload(r))
}
