package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// Every element-wise function against its float64 definition, on fresh
// random inputs, in f32 (tolerances: a few f32 ulps; f16 table ops as
// TestUnaryOps derives) and in f16 (the input and result rounded to f16).
func TestUnaryFamily(t *testing.T) {
	rng := newRNG(t)
	const eps32, eps16 = 1.2e-7, 1.0 / 2048
	type op struct {
		name     string
		build    func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor
		ref      func(x float64) float64
		positive bool    // inputs must be > 0
		slope    float64 // bound on |f'| for the f16 input rounding
	}
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	ops := []op{
		{"abs", (*ggml.Context).Abs, math.Abs, false, 1},
		{"sgn", (*ggml.Context).Sgn, func(x float64) float64 {
			if x > 0 {
				return 1
			} else if x < 0 {
				return -1
			}
			return 0
		}, false, 0},
		{"neg", (*ggml.Context).Neg, func(x float64) float64 { return -x }, false, 1},
		{"step", (*ggml.Context).Step, func(x float64) float64 {
			if x > 0 {
				return 1
			}
			return 0
		}, false, 0},
		{"tanh", (*ggml.Context).Tanh, math.Tanh, false, 1},
		{"elu", (*ggml.Context).Elu, func(x float64) float64 {
			if x > 0 {
				return x
			}
			return math.Expm1(x)
		}, false, 1},
		{"sigmoid", (*ggml.Context).Sigmoid, sig, false, 0.25},
		{"hardsigmoid", (*ggml.Context).Hardsigmoid, func(x float64) float64 { return math.Min(1, math.Max(0, (x+3)/6)) }, false, 1.0 / 6},
		{"hardswish", (*ggml.Context).Hardswish, func(x float64) float64 { return x * math.Min(1, math.Max(0, (x+3)/6)) }, false, 1.5},
		{"exp", (*ggml.Context).Exp, math.Exp, false, 20},
		{"expm1", (*ggml.Context).Expm1, math.Expm1, false, 20},
		{"softplus", (*ggml.Context).Softplus, func(x float64) float64 {
			if x > 20 {
				return x
			}
			return math.Log1p(math.Exp(x))
		}, false, 1},
		{"sqr", (*ggml.Context).Sqr, func(x float64) float64 { return x * x }, false, 6},
		{"sqrt", (*ggml.Context).Sqrt, math.Sqrt, true, 2},
		{"log", (*ggml.Context).Log, math.Log, true, 10},
		{"sin", (*ggml.Context).Sin, math.Sin, false, 1},
		{"cos", (*ggml.Context).Cos, math.Cos, false, 1},
		{"floor", (*ggml.Context).Floor, math.Floor, false, 0},
		{"ceil", (*ggml.Context).Ceil, math.Ceil, false, 0},
		{"round", (*ggml.Context).Round, math.Round, false, 0},
		{"trunc", (*ggml.Context).Trunc, math.Trunc, false, 0},
		{"gelu_erf", (*ggml.Context).GeluErf, func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, false, 1.13},
		{"gelu_quick", (*ggml.Context).GeluQuick, func(x float64) float64 { return x * sig(1.702*x) }, false, 1.1},
	}
	for _, o := range ops {
		for _, ty := range []ggml.Type{ggml.TypeF32, ggml.TypeF16} {
			t.Run(fmt.Sprintf("%s/%v", o.name, ty), func(t *testing.T) {
				e := newEnv(t)
				const n0, n1 = 33, 3
				xv := make([]float32, n0*n1)
				for i := range xv {
					x := rng.NormFloat64() * 2.5
					if o.positive {
						x = math.Abs(x) + 0.05
					}
					if o.name == "round" || o.name == "floor" || o.name == "ceil" || o.name == "trunc" {
						// keep away from the rounding boundaries an f16 input would blur
						x = math.Round(x*4)/4 + 0.1
					}
					xv[i] = float32(x)
				}
				var a *ggml.Tensor
				var xs []float64
				if ty == ggml.TypeF16 {
					h := toF16(xv)
					a = e.input(ggml.TypeF16, h, n0, n1)
					xs = fromF16Slice(h) // the inputs as f16 holds them
				} else {
					a = e.input(ggml.TypeF32, xv, n0, n1)
					for _, v := range xv {
						xs = append(xs, float64(v))
					}
				}
				out := o.build(e.ctx, a)
				require.NoError(t, e.ctx.Err())
				require.Equal(t, ty, out.Type())
				// Read back as f32 through a copy (f16 results are rounded).
				f := e.ctx.Cpy(out, e.ctx.NewTensor(ggml.TypeF32, n0, n1))
				e.compute(f)
				got, err := ggml.Data[float32](f)
				require.NoError(t, err)
				ref := newND(n0, n1)
				for i, x := range xs {
					ref.v[i] = o.ref(x)
				}
				requireClose(t, ref, got, func(i int) float64 {
					r := math.Abs(ref.v[i])
					switch {
					case ty == ggml.TypeF16:
						return r*eps16 + 1e-6
					case o.name == "gelu_quick": // f16 table: input and result rounded
						return o.slope*math.Abs(xs[i])*eps16 + r*eps16 + 1e-6
					case o.name == "expm1": // computed as expf(x)-1
						return 4 * eps32 * math.Max(1, math.Exp(xs[i]))
					default:
						return 8*eps32*r + 1e-7
					}
				})
			})
		}
	}
}

func TestUnaryTypes(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Abs(c.NewTensor(ggml.TypeBF16, 4)).Err(), "abs takes bf16")
	require.ErrorIs(t, c.GeluErf(c.NewTensor(ggml.TypeBF16, 4)).Err(), ggml.ErrType)
	c2, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
	defer c2.Close()
	require.ErrorIs(t, c2.Log(c2.NewTensor(ggml.TypeI32, 4)).Err(), ggml.ErrType)
	c3, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
	defer c3.Close()
	require.ErrorIs(t, c3.Sqrt(c3.Transpose(c3.NewTensor(ggml.TypeF32, 4, 4))).Err(), ggml.ErrShape)
}

// toF16 rounds f32 values to f16 bits (round to nearest even).
func toF16(v []float32) []uint16 {
	out := make([]uint16, len(v))
	for i, f := range v {
		out[i] = f32ToF16(f)
	}
	return out
}

func fromF16Slice(h []uint16) []float64 {
	out := make([]float64, len(h))
	for i, b := range h {
		out[i] = f16ToF64(b)
	}
	return out
}

func f16ToF64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	man := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * man * math.Pow(2, -24)
	case 31:
		if man == 0 {
			return sign * math.Inf(1)
		}
		return math.NaN()
	}
	return sign * (1 + man/1024) * math.Pow(2, float64(exp-15))
}

func f32ToF16(f float32) uint16 {
	x := float64(f)
	sign := uint16(0)
	if x < 0 {
		sign, x = 0x8000, -x
	}
	if x == 0 {
		return sign
	}
	if x >= 65520 {
		return sign | 0x7c00
	}
	e := math.Floor(math.Log2(x))
	if e < -14 { // subnormal
		return sign | uint16(math.RoundToEven(x/math.Pow(2, -24)))
	}
	m := math.RoundToEven((x/math.Pow(2, e) - 1) * 1024)
	if m == 1024 {
		m, e = 0, e+1
	}
	return sign | uint16(e+15)<<10 | uint16(m)
}
