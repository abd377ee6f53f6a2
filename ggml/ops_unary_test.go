package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/require"
)

func TestUnaryOps(t *testing.T) {
	rng := newRNG(t)
	// gelu on f32 goes through ggml's f16 table: x and the result are
	// rounded to f16 (relative error 2^-11 each), and gelu' <= 1.13.
	const f16Eps = 1.0 / 2048
	geluTol := func(x, r float64) float64 { return 1.13*math.Abs(x)*f16Eps + math.Abs(r)*f16Eps + 1e-6 }
	ops := []struct {
		name  string
		build func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor
		ref   func(x float64) float64
		tol   func(x, r float64) float64
	}{
		{"relu", (*ggml.Context).Relu, func(x float64) float64 { return math.Max(x, 0) }, nil},
		{"silu", (*ggml.Context).Silu, func(x float64) float64 { return x / (1 + math.Exp(-x)) }, nil},
		{"gelu", (*ggml.Context).Gelu, func(x float64) float64 {
			return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		}, geluTol},
	}
	for _, op := range ops {
		for _, ne := range [][]int{{17}, {8, 3}, {4, 3, 2, 2}} {
			t.Run(fmt.Sprintf("%s/%v", op.name, ne), func(t *testing.T) {
				e := newEnv(t)
				n := 1
				for _, v := range ne {
					n *= v
				}
				av := randF32(rng, n)
				for i := range av {
					av[i] *= 3
				}
				a := e.input(ggml.TypeF32, av, i64s(ne)...)
				out := op.build(e.ctx, a)
				e.compute(out)
				got, err := ggml.Data[float32](out)
				require.NoError(t, err)
				ref := fromF32(av, ne...)
				for i := range ref.v {
					ref.v[i] = op.ref(ref.v[i])
				}
				tol := relTol(ref, 4*f32Rel)
				if op.tol != nil {
					tol = func(i int) float64 { return op.tol(float64(av[i]), ref.v[i]) }
				}
				requireClose(t, ref, got, tol)
			})
		}
	}
}

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
					// An f16 result beyond f16's range rounds to an
					// infinity (exp of x above ~11.09): checked here, and
					// left out of the comparison below.
					if ty == ggml.TypeF16 && math.Abs(ref.v[i]) >= f16Overflow {
						require.True(t, math.IsInf(float64(got[i]), int(math.Copysign(1, ref.v[i]))),
							"element %d: %s(%g) = %g overflows f16, got %g", i, o.name, x, ref.v[i], got[i])
						ref.v[i], got[i] = 0, 0
					}
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

func TestXIELU(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	av := randF32(rng, 64)
	a := e.input(ggml.TypeF32, av, 64)
	const an, ap, beta, eps = 0.8, 0.8, 0.5, -1e-6
	out := e.ctx.XIELU(a, an, ap, beta, eps)
	e.compute(out)
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	softplus := func(x float64) float64 { return math.Log1p(math.Exp(x)) }
	ref := newND(64)
	for i, x32 := range av {
		x := float64(x32)
		if x > 0 {
			ref.v[i] = softplus(ap)*x*x + beta*x
		} else {
			ref.v[i] = (math.Expm1(math.Min(x, eps))-x)*(beta+softplus(an)) + beta*x
		}
	}
	requireClose(t, ref, got, relTol(ref, 1e-5))
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

func TestSwigluOAIAndSinks(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1, n2 = 7, 3, 2
	av, bv := randF32(rng, n0*n1*n2), randF32(rng, n0*n1*n2)
	for i := range av {
		av[i] *= 3
		bv[i] *= 3
	}
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	b := e.input(ggml.TypeF32, bv, n0, n1, n2)
	const alpha, limit = 1.702, 2.5
	oai := e.ctx.SwigluOAI(a, b, alpha, limit)
	sv := randF32(rng, n2)
	sinks := e.input(ggml.TypeF32, sv, n2)
	sm := e.ctx.SoftMaxExtSinks(a, nil, sinks, 0.7, 0)
	e.compute(oai, sm)
	got, err := ggml.Data[float32](oai)
	require.NoError(t, err)
	ref := newND(n0, n1, n2)
	for i := range av {
		x := math.Min(float64(av[i]), limit)
		y := math.Max(math.Min(float64(bv[i]), limit), -limit)
		ref.v[i] = x / (1 + math.Exp(-alpha*x)) * (y + 1)
	}
	requireClose(t, ref, got, relTol(ref, 2e-6))

	got, err = ggml.Data[float32](sm)
	require.NoError(t, err)
	for r := range n1 * n2 {
		h := r / n1
		m := float64(sv[h])
		for i := range n0 {
			m = math.Max(m, 0.7*float64(av[r*n0+i]))
		}
		den := math.Exp(float64(sv[h]) - m)
		for i := range n0 {
			den += math.Exp(0.7*float64(av[r*n0+i]) - m)
		}
		for i := range n0 {
			ref.v[r*n0+i] = math.Exp(0.7*float64(av[r*n0+i])-m) / den
		}
	}
	requireClose(t, ref, got, relTol(ref, 1e-6))
}
