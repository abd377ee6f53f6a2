package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// ropeRef is RoPE in float64, as ggml defines it with ext_factor 0: pair i
// of the first dims dimensions turns by p·base^(-2i/dims)·scale/ff[i], and
// sin and cos are scaled by attn.
func ropeRef(x []float64, n0, n1, n2 int, pos []int32, dims int, neox bool, base, scale, attn float64, ff []float32) []float64 {
	out := append([]float64(nil), x...)
	for i2 := range n2 {
		for i1 := range n1 {
			row := out[(i2*n1+i1)*n0:][:n0]
			src := x[(i2*n1+i1)*n0:][:n0]
			for i := 0; i < dims/2; i++ {
				theta := float64(pos[i2]) * math.Pow(base, -2*float64(i)/float64(dims)) * scale
				if ff != nil {
					theta /= float64(ff[i])
				}
				cs, sn := math.Cos(theta)*attn, math.Sin(theta)*attn
				j0, j1 := 2*i, 2*i+1
				if neox {
					j0, j1 = i, i+dims/2
				}
				row[j0] = src[j0]*cs - src[j1]*sn
				row[j1] = src[j0]*sn + src[j1]*cs
			}
		}
	}
	return out
}

func TestRope(t *testing.T) {
	rng := newRNG(t)
	const n0, n1, n2 = 16, 3, 5 // head dim, heads, tokens
	for _, mode := range []ggml.RopeMode{ggml.RopeNormal, ggml.RopeNeoX} {
		for _, withFF := range []bool{false, true} {
			t.Run(fmt.Sprintf("mode=%d/ff=%v", mode, withFF), func(t *testing.T) {
				e := newEnv(t)
				xv := randF32(rng, n0*n1*n2)
				pos := make([]int32, n2)
				for i := range pos {
					pos[i] = int32(rng.IntN(200))
				}
				a := e.input(ggml.TypeF32, xv, n0, n1, n2)
				p := e.input(ggml.TypeI32, pos, n2)
				params := ggml.RopeParams{Dims: 12, Mode: mode, CtxOrig: 4096, FreqBase: 10000, FreqScale: 0.5,
					AttnFactor: 1.25, BetaFast: 32, BetaSlow: 1}
				var ff []float32
				if withFF {
					ff = make([]float32, 6)
					for i := range ff {
						ff[i] = float32(1 + rng.Float64())
					}
					params.FreqFactors = e.input(ggml.TypeF32, ff, 6)
				}
				out := e.ctx.Rope(a, p, params)
				e.compute(out)
				got, err := ggml.Data[float32](out)
				require.NoError(t, err)
				xs := make([]float64, len(xv))
				for i, v := range xv {
					xs[i] = float64(v)
				}
				ref := newND(n0, n1, n2)
				ref.v = ropeRef(xs, n0, n1, n2, pos, 12, mode == ggml.RopeNeoX, 10000, 0.5, 1.25, ff)
				// Angles up to ~100 rad in f32: cos/sin good to ~1e-5.
				requireClose(t, ref, got, func(int) float64 { return 2e-5 })
			})
		}
	}
}

func TestGLU(t *testing.T) {
	rng := newRNG(t)
	const f16Eps = 1.0 / 2048
	gelu := func(x float64) float64 { return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))) }
	acts := []struct {
		op  ggml.GLUOp
		f   func(x float64) float64
		tbl bool // through ggml's f16 table
	}{
		{ggml.GLUReglu, func(x float64) float64 { return math.Max(x, 0) }, false},
		{ggml.GLUGeglu, gelu, true},
		{ggml.GLUSwiglu, func(x float64) float64 { return x / (1 + math.Exp(-x)) }, false},
		{ggml.GLUGegluErf, func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, false},
		{ggml.GLUGegluQuick, func(x float64) float64 { return x / (1 + math.Exp(-1.702*x)) }, true},
	}
	const n0, n1 = 16, 3
	for _, act := range acts {
		for _, variant := range []string{"fused", "swapped", "split"} {
			t.Run(fmt.Sprintf("%d/%s", act.op, variant), func(t *testing.T) {
				e := newEnv(t)
				var out *ggml.Tensor
				ref := newND(n0/2, n1)
				var xs, gs []float64
				if variant == "split" {
					av, bv := randF32(rng, n0/2*n1), randF32(rng, n0/2*n1)
					a := e.input(ggml.TypeF32, av, n0/2, n1)
					b := e.input(ggml.TypeF32, bv, n0/2, n1)
					out = e.ctx.GLUSplit(a, b, act.op)
					for i := range av {
						xs, gs = append(xs, float64(av[i])), append(gs, float64(bv[i]))
					}
				} else {
					av := randF32(rng, n0*n1)
					a := e.input(ggml.TypeF32, av, n0, n1)
					out = e.ctx.GLU(a, act.op, variant == "swapped")
					for r := range n1 {
						for i := range n0 / 2 {
							x, g := float64(av[r*n0+i]), float64(av[r*n0+n0/2+i])
							if variant == "swapped" {
								x, g = g, x
							}
							xs, gs = append(xs, x), append(gs, g)
						}
					}
				}
				e.compute(out)
				got, err := ggml.Data[float32](out)
				require.NoError(t, err)
				for i := range ref.v {
					ref.v[i] = act.f(xs[i]) * gs[i]
				}
				requireClose(t, ref, got, func(i int) float64 {
					if act.tbl {
						return (1.13*math.Abs(xs[i])*f16Eps+math.Abs(act.f(xs[i]))*f16Eps)*math.Abs(gs[i]) + 1e-6
					}
					return 1e-6 * math.Max(1, math.Abs(ref.v[i]))
				})
			})
		}
	}
}

func TestRopeGLUMisuse(t *testing.T) {
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		{"rope odd dims", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeI32, 2), ggml.RopeParams{Dims: 3, FreqBase: 1e4, FreqScale: 1})
		}},
		{"rope dims past ne0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeI32, 2), ggml.RopeParams{Dims: 10})
		}},
		{"rope positions count", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeI32, 3), ggml.RopeParams{Dims: 8})
		}},
		{"rope positions type", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeF32, 2), ggml.RopeParams{Dims: 8})
		}},
		{"rope mode", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeI32, 2), ggml.RopeParams{Dims: 8, Mode: 1})
		}},
		{"rope q8_0", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeQ8_0, 32, 1, 2), c.NewTensor(ggml.TypeI32, 2), ggml.RopeParams{Dims: 8})
		}},
		{"rope freq factors short", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeI32, 2),
				ggml.RopeParams{Dims: 8, FreqFactors: c.NewTensor(ggml.TypeF32, 3)})
		}},
		{"rope transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.Transpose(c.NewTensor(ggml.TypeF32, 2, 8)), c.NewTensor(ggml.TypeI32, 1), ggml.RopeParams{Dims: 2})
		}},
		{"glu unknown op", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.GLU(c.NewTensor(ggml.TypeF32, 8), 99, false) }},
		{"glu split shapes", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.GLUSplit(c.NewTensor(ggml.TypeF32, 8), c.NewTensor(ggml.TypeF32, 4), ggml.GLUSwiglu)
		}},
		{"glu split types", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.GLUSplit(c.NewTensor(ggml.TypeF32, 8), c.NewTensor(ggml.TypeF16, 8), ggml.GLUSwiglu)
		}},
		{"glu i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Swiglu(c.NewTensor(ggml.TypeI32, 8)) }},
		{"glu one element", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Geglu(c.NewTensor(ggml.TypeF32, 1)) }},
		{"glu transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Reglu(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 4))) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
			require.NoError(t, err)
			defer c.Close()
			require.ErrorIs(t, tc.op(c).Err(), tc.want)
		})
	}
}

// mropeRef is multi-section RoPE in float64 (ext_factor 0, attn 1, scale
// 1): pair k of a row takes its angle from the position component of its
// section, component pos[s·n2 + token]; the frequency exponent counts pairs
// from the row's start, or, for RopeVision, from the start of the section.
func mropeRef(x []float64, n0, n1, n2 int, pos []int32, dims int, mode ggml.RopeMode, sec [4]int, base float64) []float64 {
	out := append([]float64(nil), x...)
	sd := sec[0] + sec[1] + sec[2] + sec[3]
	pairs, off := dims/2, dims/2
	if mode == ggml.RopeVision {
		pairs, off = n0/2, dims
	}
	// component of sector s.
	comp := func(s int) int {
		if mode == ggml.RopeIMRope {
			switch {
			case s%3 == 1 && s < 1+3*sec[1]:
				return 1
			case s%3 == 2 && s < 2+3*sec[2]:
				return 2
			}
			return 0
		}
		switch {
		case s < sec[0]:
			return 0
		case s < sec[0]+sec[1]:
			return 1
		case s < sec[0]+sec[1]+sec[2]:
			return 2
		}
		return 3
	}
	starts := [4]int{0, sec[0], sec[0] + sec[1], sec[0] + sec[1] + sec[2]}
	for i2 := range n2 {
		for k := range pairs {
			s := k % sd
			cp := comp(s)
			exp := k
			if mode == ggml.RopeVision { // restart at the last start of this section
				exp = k - (k-starts[cp])/sd*sd - starts[cp]
				if k < starts[cp] {
					exp = k
				}
			}
			theta := float64(pos[cp*n2+i2]) * math.Pow(base, -2*float64(exp)/float64(dims))
			cs, sn := math.Cos(theta), math.Sin(theta)
			for i1 := range n1 {
				row := out[(i2*n1+i1)*n0:][:n0]
				src := x[(i2*n1+i1)*n0:][:n0]
				j0, j1 := k, k+off
				row[j0] = src[j0]*cs - src[j1]*sn
				row[j1] = src[j0]*sn + src[j1]*cs
			}
		}
	}
	return out
}

func TestRopeMulti(t *testing.T) {
	rng := newRNG(t)
	const n0, n1, n2 = 16, 2, 4
	for _, tc := range []struct {
		mode ggml.RopeMode
		dims int
		sec  [4]int
	}{
		{ggml.RopeMRope, 12, [4]int{2, 2, 2, 0}},
		{ggml.RopeMRope, 16, [4]int{3, 2, 2, 1}},
		{ggml.RopeIMRope, 16, [4]int{3, 3, 2, 0}},
		{ggml.RopeVision, 8, [4]int{2, 2, 0, 0}},
	} {
		t.Run(fmt.Sprintf("mode=%d/sec=%v", tc.mode, tc.sec), func(t *testing.T) {
			e := newEnv(t)
			xv := randF32(rng, n0*n1*n2)
			pos := make([]int32, 4*n2)
			for i := range pos {
				pos[i] = int32(rng.IntN(100))
			}
			a := e.input(ggml.TypeF32, xv, n0, n1, n2)
			p := e.input(ggml.TypeI32, pos, 4*n2)
			out := e.ctx.Rope(a, p, ggml.RopeParams{Dims: tc.dims, Mode: tc.mode, Sections: tc.sec, CtxOrig: 4096,
				FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1})
			inPlace := e.ctx.RopeInPlace(e.ctx.Cont(a), p, ggml.RopeParams{Dims: tc.dims, Mode: tc.mode, Sections: tc.sec,
				CtxOrig: 4096, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1})
			e.compute(out, inPlace)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			gotIn, err := ggml.Data[float32](inPlace)
			require.NoError(t, err)
			require.Equal(t, got, gotIn)
			xs := make([]float64, len(xv))
			for i, v := range xv {
				xs[i] = float64(v)
			}
			ref := newND(n0, n1, n2)
			ref.v = mropeRef(xs, n0, n1, n2, pos, tc.dims, tc.mode, tc.sec, 10000)
			requireClose(t, ref, got, func(int) float64 { return 2e-5 })
		})
	}
}
