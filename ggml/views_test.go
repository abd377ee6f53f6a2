package ggml_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// Strided views are where ggml's own shape checks and its kernels disagree
// (ggml_is_contiguous skips dimensions of size 1, kernels assert nb0). Each
// one-input op is given views with unusual strides: it either refuses with
// ErrShape, or computes exactly what it computes on Cont of the same view.
func TestOpsOnStridedViews(t *testing.T) {
	ops := []struct {
		name string
		f    func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor
	}{
		{"scale", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Scale(a, 0.5) }},
		{"relu", (*ggml.Context).Relu},
		{"gelu", (*ggml.Context).Gelu},
		{"silu", (*ggml.Context).Silu},
		{"abs", (*ggml.Context).Abs},
		{"neg", (*ggml.Context).Neg},
		{"tanh", (*ggml.Context).Tanh},
		{"exp", (*ggml.Context).Exp},
		{"sqr", (*ggml.Context).Sqr},
		{"leaky_relu", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.LeakyRelu(a, 0.1) }},
		{"soft_max", (*ggml.Context).SoftMax},
		{"sum_rows", (*ggml.Context).SumRows},
		{"sum", (*ggml.Context).Sum},
		{"mean", (*ggml.Context).Mean},
		{"argmax", (*ggml.Context).Argmax},
		{"norm", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Norm(a, 1e-5) }},
		{"rms_norm", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.RMSNorm(a, 1e-5) }},
		{"l2_norm", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.L2Norm(a, 1e-5) }},
		{"scale_bias", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.ScaleBias(a, 0.5, 2) }},
		{"diag_mask_inf", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.DiagMaskInf(a, 0) }},
		{"argsort", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Argsort(a, ggml.SortDesc) }},
		{"cumsum", (*ggml.Context).Cumsum},
		{"pad", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Pad(a, 1, 1, 0, 0) }},
		{"cont", (*ggml.Context).Cont},
		{"transpose_cont", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Cont(c.Transpose(a)) }},
		{"clamp", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Clamp(a, -0.5, 0.5) }},
		{"top_k", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.TopK(a, 1) }},
		{"argsort_top_k", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Cont(c.ArgsortTopK(a, 1)) }},
		{"group_norm", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.GroupNorm(a, 1, 1e-5) }},
		{"roll", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Roll(a, 0, 0, 0, 0) }},
		{"pad_ext", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.PadExt(a, ggml.Padding{{1, 0}, {0, 1}}) }},
		{"pad_circular", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.PadCircular(a, ggml.Padding{{1, 1}}) }},
		{"repeat_4d", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor {
			ne := a.Ne()
			return c.Repeat4D(a, 2*ne[0], ne[1], 2*ne[2], ne[3])
		}},
		{"dup", (*ggml.Context).Dup},
		{"cont_nd", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.ContND(a, a.Elements()) }},
		{"fill", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Fill(a, 3) }},
		{"xielu", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.XIELU(a, 0.8, 0.8, 0.5, -1e-6) }},
		{"unary softplus", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Unary(a, ggml.UnarySoftplus) }},
		{"sin", (*ggml.Context).Sin},
		{"timestep_embedding", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.TimestepEmbedding(a, 4, 100) }},
		{"pool_1d", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Pool1D(a, ggml.PoolMax, 1, 1, 0) }},
		{"pool_2d", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Pool2D(a, ggml.PoolAvg, 1, 1, 1, 1, 0, 0) }},
		{"upscale", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Upscale(a, 2, ggml.ScaleNearest) }},
		{"interpolate", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor {
			ne := a.Ne()
			return c.Interpolate(a, ne[0]+1, ne[1]+1, ne[2], ne[3], ggml.ScaleBilinear)
		}},
		{"pad_reflect_1d", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.PadReflect1D(a, 0, 0) }},
		{"tri", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Tri(a, ggml.TriLowerDiag) }},
		{"softmax_sinks", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor {
			return c.SoftMaxExtSinks(a, nil, c.Fill(c.NewTensor(ggml.TypeF32, a.Ne()[2]), 0.5), 1, 0)
		}},
		{"cross_entropy_loss", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.CrossEntropyLoss(a, c.SoftMax(c.Cont(a))) }},
		{"silu_back", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.SiluBack(a, a) }},
		{"rms_norm_back", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.RMSNormBack(a, a, 1e-5) }},
		{"glu split", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.GLUSplit(a, a, ggml.GLUSwiglu) }},
		{"swiglu_oai", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.SwigluOAI(a, a, 1.7, 2) }},
		{"mul_mat", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.MulMat(a, a) }},
		{"out_prod", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.OutProd(a, a) }},
		{"add", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return c.Add(a, a) }},
		{"map_custom1", func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor {
			return c.MapCustom1(a, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
				x, y := src[0].Float32s(), dst.Float32s()
				for r := int64(ith); r < dst.Rows(); r += int64(nth) {
					i1, i2, i3 := r%dst.Ne[1], r/dst.Ne[1]%dst.Ne[2], r/(dst.Ne[1]*dst.Ne[2])
					for i0 := range dst.Ne[0] {
						y[dst.Index(i0, i1, i2, i3)] = 2 * x[src[0].Index(i0, i1, i2, i3)]
					}
				}
			}, 0)
		}},
	}
	views := []struct {
		name string
		ne   []int64
		f    func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor
	}{
		{"column", []int64{3}, (*ggml.Context).Transpose},        // [1 3], nb0 = 12
		{"transposed", []int64{3, 2}, (*ggml.Context).Transpose}, // [2 3], nb0 > nb1
		{"permuted", []int64{3, 1, 2}, func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.Permute(x, 1, 0, 2, 3) }},
		{"every other row", []int64{4, 6}, func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor {
			return c.View2D(x, 4, 3, 2*x.Nb()[1], 0)
		}},
		{"offset rows", []int64{5, 3}, func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor {
			return c.View2D(x, 3, 3, x.Nb()[1], 2*x.Nb()[0])
		}},
		// contiguous to ggml_is_contiguous (size-1 dimensions skipped), not
		// padded 1-d: the view FuzzOps found scale asserting on.
		{"transposed row batch", []int64{1, 2, 2}, (*ggml.Context).Transpose},
	}
	rng := newRNG(t)
	for _, v := range views {
		for _, op := range ops {
			t.Run(v.name+"/"+op.name, func(t *testing.T) {
				e := newEnv(t)
				n := 1
				for _, d := range v.ne {
					n *= int(d)
				}
				vals := randF32(rng, n)
				x := e.input(ggml.TypeF32, vals, v.ne...)
				view := v.f(e.ctx, x)
				require.NoError(t, view.Err())
				got := op.f(e.ctx, view)
				if err := got.Err(); err != nil {
					assert.True(t, errors.Is(err, ggml.ErrShape), "a refusal is ErrShape: %v", err)
					require.NotContains(t, []string{"cont", "transpose_cont"}, op.name, "ggml's copy kernels take any strides")
					t.Logf("refused: %v", err)
					return
				}
				want := op.f(e.ctx, e.ctx.Cont(view))
				require.NoError(t, want.Err())
				e.compute(got, want)
				require.Equal(t, want.Ne(), got.Ne())
				g, w := readFloat(t, got), readFloat(t, want)
				for i := range w {
					if math.IsNaN(w[i]) {
						assert.True(t, math.IsNaN(g[i]), "element %d", i)
						continue
					}
					assert.Equal(t, w[i], g[i], "element %d", i)
				}
			})
		}
	}
}

// readFloat reads a computed f32 or i32 tensor as float64.
func readFloat(t *testing.T, x *ggml.Tensor) []float64 {
	t.Helper()
	var out []float64
	switch x.Type() {
	case ggml.TypeF32:
		d, err := ggml.Data[float32](x)
		require.NoError(t, err)
		for _, v := range d {
			out = append(out, float64(v))
		}
	case ggml.TypeI32:
		d, err := ggml.Data[int32](x)
		require.NoError(t, err)
		for _, v := range d {
			out = append(out, float64(v))
		}
	default:
		t.Fatalf("readFloat: %v", x.Type())
	}
	return out
}

// A view's extent is offset + row + sum((ne_i-1)*nb_i), each step checked
// for 64-bit overflow: the hostile strides that used to wrap to a small
// extent (and Cont then read far outside, or 4 bytes before, the tensor)
// are ErrShape, while the views at the edge, and a huge stride of a
// dimension of size 1 (never stepped), still compute.
func TestViewExtentOverflow(t *testing.T) {
	vals := make([]float32, 64)
	for i := range vals {
		vals[i] = float32(i)
	}
	refused := []struct {
		name string
		f    func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor
	}{
		{"nb1 2^63", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.View2D(x, 1, 3, 1<<63, 0) }},
		{"nb1 -4", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.View2D(x, 1, 2, math.MaxUint64-3, 0) }},
		{"nb2 -4", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor {
			return c.View3D(x, 1, 1, 2, 4, math.MaxUint64-3, 4)
		}},
		{"nb1 one past the end", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.View2D(x, 1, 3, 128, 0) }},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			v := tc.f(e.ctx, e.input(ggml.TypeF32, vals, 64))
			require.ErrorIs(t, v.Err(), ggml.ErrShape)
			require.ErrorIs(t, e.ctx.Err(), ggml.ErrShape)
		})
	}
	accepted := []struct {
		name string
		f    func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor
		want []float32
	}{
		{"last byte", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.View2D(x, 1, 3, 124, 4) }, []float32{1, 32, 63}},
		{"nb1 2^63 of one row", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.View2D(x, 2, 1, 1<<63, 8) }, []float32{2, 3}},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			v := tc.f(e.ctx, e.input(ggml.TypeF32, vals, 64))
			require.NoError(t, v.Err())
			out := e.ctx.Cont(v)
			e.compute(out)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
