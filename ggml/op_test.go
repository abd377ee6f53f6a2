package ggml_test

import (
	"math"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/require"
)

// Each in-place op computes what its out-of-place op (checked against
// float64 elsewhere) computes, into its input's memory.
func TestInPlaceOps(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1, n2 = 8, 6, 2
	av := randF32(rng, n0*n1*n2)
	for i := range av {
		av[i] = float32(math.Abs(float64(av[i]))) + 0.1 // positive: log and sqrt
	}
	bv := randF32(rng, n0*n1*n2)
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	b := e.input(ggml.TypeF32, bv, n0, n1, n2)
	row := e.input(ggml.TypeF32, bv[:n0], n0)
	one := e.input(ggml.TypeF32, bv[:1], 1)
	mask := e.input(ggml.TypeF32, bv[:n0*n1], n0, n1)
	c := e.ctx
	type pair struct {
		name      string
		want, got *ggml.Tensor
	}
	var pairs []pair
	add := func(name string, want *ggml.Tensor, in func(x *ggml.Tensor) *ggml.Tensor) {
		x := c.Cont(a) // a fresh copy for each in-place op
		got := in(x)
		require.NoError(t, c.Err(), name)
		require.Equal(t, x, got.ViewSource(), "%s: the result is a view of its input", name)
		pairs = append(pairs, pair{name, want, got}, pair{name + " (input)", want, x})
	}
	add("add", c.Add(a, row), func(x *ggml.Tensor) *ggml.Tensor { return c.AddInPlace(x, row) })
	add("sub", c.Sub(a, b), func(x *ggml.Tensor) *ggml.Tensor { return c.SubInPlace(x, b) })
	add("mul", c.Mul(a, row), func(x *ggml.Tensor) *ggml.Tensor { return c.MulInPlace(x, row) })
	add("div", c.Div(a, b), func(x *ggml.Tensor) *ggml.Tensor { return c.DivInPlace(x, b) })
	add("add1", c.Add1(a, one), func(x *ggml.Tensor) *ggml.Tensor { return c.Add1InPlace(x, one) })
	add("scale", c.Scale(a, 1.5), func(x *ggml.Tensor) *ggml.Tensor { return c.ScaleInPlace(x, 1.5) })
	add("scale_bias", c.ScaleBias(a, 1.5, -2), func(x *ggml.Tensor) *ggml.Tensor { return c.ScaleBiasInPlace(x, 1.5, -2) })
	add("sqr", c.Sqr(a), c.SqrInPlace)
	add("sqrt", c.Sqrt(a), c.SqrtInPlace)
	add("log", c.Log(a), c.LogInPlace)
	add("sin", c.Sin(a), c.SinInPlace)
	add("cos", c.Cos(a), c.CosInPlace)
	add("norm", c.Norm(a, 1e-5), func(x *ggml.Tensor) *ggml.Tensor { return c.NormInPlace(x, 1e-5) })
	add("rms_norm", c.RMSNorm(a, 1e-5), func(x *ggml.Tensor) *ggml.Tensor { return c.RMSNormInPlace(x, 1e-5) })
	add("l2_norm", c.L2Norm(a, 1e-5), func(x *ggml.Tensor) *ggml.Tensor { return c.L2NormInPlace(x, 1e-5) })
	add("group_norm", c.GroupNorm(a, 2, 1e-5), func(x *ggml.Tensor) *ggml.Tensor { return c.GroupNormInPlace(x, 2, 1e-5) })
	add("soft_max", c.SoftMax(a), c.SoftMaxInPlace)
	add("soft_max_ext", c.SoftMaxExt(a, mask, 0.5, 0), func(x *ggml.Tensor) *ggml.Tensor { return c.SoftMaxExtInPlace(x, mask, 0.5, 0) })
	add("diag_mask_inf", c.DiagMaskInf(a, 1), func(x *ggml.Tensor) *ggml.Tensor { return c.DiagMaskInfInPlace(x, 1) })
	add("diag_mask_zero", c.DiagMaskZero(a, 1), func(x *ggml.Tensor) *ggml.Tensor { return c.DiagMaskZeroInPlace(x, 1) })
	add("leaky_relu", c.LeakyRelu(b, 0.2), func(x *ggml.Tensor) *ggml.Tensor {
		return c.LeakyReluInPlace(c.SubInPlace(x, c.Sub(a, b)), 0.2) // x becomes b first
	})
	unaries := map[ggml.UnaryOp]func(*ggml.Tensor) *ggml.Tensor{
		ggml.UnaryAbs: c.Abs, ggml.UnarySgn: c.Sgn, ggml.UnaryNeg: c.Neg, ggml.UnaryStep: c.Step, ggml.UnaryTanh: c.Tanh,
		ggml.UnaryElu: c.Elu, ggml.UnaryRelu: c.Relu, ggml.UnarySigmoid: c.Sigmoid, ggml.UnaryGelu: c.Gelu,
		ggml.UnaryGeluQuick: c.GeluQuick, ggml.UnarySilu: c.Silu, ggml.UnaryHardswish: c.Hardswish,
		ggml.UnaryHardsigmoid: c.Hardsigmoid, ggml.UnaryExp: c.Exp, ggml.UnaryExpm1: c.Expm1,
		ggml.UnarySoftplus: c.Softplus, ggml.UnaryGeluErf: c.GeluErf, ggml.UnaryFloor: c.Floor,
		ggml.UnaryCeil: c.Ceil, ggml.UnaryRound: c.Round, ggml.UnaryTrunc: c.Trunc,
	}
	for fn, method := range unaries {
		want := method(b)
		pairs = append(pairs, pair{fn.String() + " via Unary", want, c.Unary(b, fn)})
		add(fn.String(), want, func(x *ggml.Tensor) *ggml.Tensor {
			return c.UnaryInPlace(c.SubInPlace(x, c.Sub(a, b)), fn)
		})
	}
	outs := []*ggml.Tensor{}
	for _, p := range pairs {
		outs = append(outs, p.want, p.got)
	}
	e.compute(outs...)
	for _, p := range pairs {
		w, err := ggml.Data[float32](p.want)
		require.NoError(t, err, p.name)
		g, err := ggml.Data[float32](p.got)
		require.NoError(t, err, p.name)
		for i := range w {
			if w[i] != g[i] && !(math.IsNaN(float64(w[i])) && math.IsNaN(float64(g[i]))) {
				// a-b then +b again rounds: allow an ulp-scale difference
				// where the input went through SubInPlace.
				require.InDelta(t, w[i], g[i], 4e-6*math.Max(1, math.Abs(float64(w[i]))), "%s element %d", p.name, i)
			}
		}
	}
}
