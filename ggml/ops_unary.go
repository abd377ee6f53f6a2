package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// The element-wise functions of one tensor (ggml.h's unary ops, named and
// through Unary), and the gated linear units. Each needs a's rows
// contiguous (ggml_is_contiguous_1) and an f32 or f16 tensor (bf16 too
// where ggml's generic unary kernel computes the op); the result has a's
// type and shape.

// unaryBF16 are the ops whose CPU kernel also takes bf16.
var unaryBF16 = map[string]bool{
	"relu": true, "abs": true, "sgn": true, "neg": true, "step": true, "tanh": true, "elu": true,
	"sigmoid": true, "hardsigmoid": true, "hardswish": true, "exp": true, "expm1": true, "softplus": true,
	"sqr": true, "sqrt": true, "sin": true, "cos": true, "log": true,
	"floor": true, "ceil": true, "round": true, "trunc": true,
}

func (c *Context) unary(op string, a *Tensor, f func() *C.struct_ggml_tensor) *Tensor {
	if p := c.begin(op, a); p != nil {
		return p
	}
	if t := a.Type(); t != TypeF32 && t != TypeF16 && (t != TypeBF16 || !unaryBF16[op]) {
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 or f16%s, not %v", map[bool]string{true: " or bf16"}[unaryBF16[op]], t), a)
	}
	if !rowsContiguous(a) {
		return c.fail(op, ErrShape, "a must be contiguous in dimensions >= 1 (ggml_is_contiguous_1) with adjacent elements in dimension 0; copy it with Cont", a)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, f, a)
}

// Sqr returns a*a (ggml_sqr).
func (c *Context) Sqr(a *Tensor) *Tensor {
	return c.unary("sqr", a, func() *C.struct_ggml_tensor { return C.ggml_sqr(c.c, a.c) })
}

// SqrInPlace is Sqr computed into a (ggml_sqr_inplace).
func (c *Context) SqrInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.unary("sqr", a, func() *C.struct_ggml_tensor { return C.ggml_sqr_inplace(c.c, a.c) })
	})
}

// Sqrt returns the square root of a (ggml_sqrt); NaN below 0.
func (c *Context) Sqrt(a *Tensor) *Tensor {
	return c.unary("sqrt", a, func() *C.struct_ggml_tensor { return C.ggml_sqrt(c.c, a.c) })
}

// SqrtInPlace is Sqrt computed into a (ggml_sqrt_inplace).
func (c *Context) SqrtInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.unary("sqrt", a, func() *C.struct_ggml_tensor { return C.ggml_sqrt_inplace(c.c, a.c) })
	})
}

// Log returns the natural logarithm of a (ggml_log); NaN below 0.
func (c *Context) Log(a *Tensor) *Tensor {
	return c.unary("log", a, func() *C.struct_ggml_tensor { return C.ggml_log(c.c, a.c) })
}

// LogInPlace is Log computed into a (ggml_log_inplace).
func (c *Context) LogInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.unary("log", a, func() *C.struct_ggml_tensor { return C.ggml_log_inplace(c.c, a.c) })
	})
}

// Expm1 returns exp(a)-1, computed by ggml as that difference (ggml_expm1).
func (c *Context) Expm1(a *Tensor) *Tensor {
	return c.unary("expm1", a, func() *C.struct_ggml_tensor { return C.ggml_expm1(c.c, a.c) })
}

// Softplus returns log(1+exp(a)), and a itself above 20 (ggml_softplus).
func (c *Context) Softplus(a *Tensor) *Tensor {
	return c.unary("softplus", a, func() *C.struct_ggml_tensor { return C.ggml_softplus(c.c, a.c) })
}

// Sin returns sin(a) (ggml_sin).
func (c *Context) Sin(a *Tensor) *Tensor {
	return c.unary("sin", a, func() *C.struct_ggml_tensor { return C.ggml_sin(c.c, a.c) })
}

// SinInPlace is Sin computed into a (ggml_sin_inplace).
func (c *Context) SinInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.unary("sin", a, func() *C.struct_ggml_tensor { return C.ggml_sin_inplace(c.c, a.c) })
	})
}

// Cos returns cos(a) (ggml_cos).
func (c *Context) Cos(a *Tensor) *Tensor {
	return c.unary("cos", a, func() *C.struct_ggml_tensor { return C.ggml_cos(c.c, a.c) })
}

// CosInPlace is Cos computed into a (ggml_cos_inplace).
func (c *Context) CosInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.unary("cos", a, func() *C.struct_ggml_tensor { return C.ggml_cos_inplace(c.c, a.c) })
	})
}

// Abs returns |a| (ggml_abs).
func (c *Context) Abs(a *Tensor) *Tensor {
	return c.unary("abs", a, func() *C.struct_ggml_tensor { return C.ggml_abs(c.c, a.c) })
}

// Sgn returns the sign of a: -1, 0 or 1 (ggml_sgn).
func (c *Context) Sgn(a *Tensor) *Tensor {
	return c.unary("sgn", a, func() *C.struct_ggml_tensor { return C.ggml_sgn(c.c, a.c) })
}

// Neg returns -a (ggml_neg).
func (c *Context) Neg(a *Tensor) *Tensor {
	return c.unary("neg", a, func() *C.struct_ggml_tensor { return C.ggml_neg(c.c, a.c) })
}

// Step returns 1 where a > 0, else 0 (ggml_step).
func (c *Context) Step(a *Tensor) *Tensor {
	return c.unary("step", a, func() *C.struct_ggml_tensor { return C.ggml_step(c.c, a.c) })
}

// Tanh returns tanh(a) (ggml_tanh).
func (c *Context) Tanh(a *Tensor) *Tensor {
	return c.unary("tanh", a, func() *C.struct_ggml_tensor { return C.ggml_tanh(c.c, a.c) })
}

// Elu returns a where a > 0, else exp(a)-1 (ggml_elu).
func (c *Context) Elu(a *Tensor) *Tensor {
	return c.unary("elu", a, func() *C.struct_ggml_tensor { return C.ggml_elu(c.c, a.c) })
}

// Relu returns max(a, 0), element-wise (ggml_relu).
func (c *Context) Relu(a *Tensor) *Tensor {
	return c.unary("relu", a, func() *C.struct_ggml_tensor { return C.ggml_relu(c.c, a.c) })
}

// LeakyRelu returns a where a > 0, else slope*a (ggml_leaky_relu). a must
// be f32 or f16 with contiguous rows.
func (c *Context) LeakyRelu(a *Tensor, slope float32) *Tensor {
	return c.leakyRelu(a, slope, false)
}

// LeakyReluInPlace is LeakyRelu computed into a (ggml_leaky_relu with
// inplace set).
func (c *Context) LeakyReluInPlace(a *Tensor, slope float32) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.leakyRelu(a, slope, true) })
}

func (c *Context) leakyRelu(a *Tensor, slope float32, inPlace bool) *Tensor {
	const op = "leaky_relu"
	if p := c.begin(op, a); p != nil {
		return p
	}
	switch {
	case a.Type() != TypeF32 && a.Type() != TypeF16:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 or f16, not %v", a.Type()), a)
	case !rowsContiguous(a):
		return c.fail(op, ErrShape, "a must have contiguous rows; copy it with Cont", a)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_leaky_relu(c.c, a.c, C.float(slope), C.bool(inPlace)) }, a)
}

// Sigmoid returns 1/(1+exp(-a)) (ggml_sigmoid).
func (c *Context) Sigmoid(a *Tensor) *Tensor {
	return c.unary("sigmoid", a, func() *C.struct_ggml_tensor { return C.ggml_sigmoid(c.c, a.c) })
}

// Gelu returns the GELU of a, element-wise, in ggml's tanh approximation
// (ggml_gelu).
func (c *Context) Gelu(a *Tensor) *Tensor {
	return c.unary("gelu", a, func() *C.struct_ggml_tensor { return C.ggml_gelu(c.c, a.c) })
}

// GeluErf returns the exact GELU, 0.5a(1+erf(a/√2)) (ggml_gelu_erf).
func (c *Context) GeluErf(a *Tensor) *Tensor {
	return c.unary("gelu_erf", a, func() *C.struct_ggml_tensor { return C.ggml_gelu_erf(c.c, a.c) })
}

// GeluQuick returns a*sigmoid(1.702a), through ggml's f16 table for f32
// (ggml_gelu_quick).
func (c *Context) GeluQuick(a *Tensor) *Tensor {
	return c.unary("gelu_quick", a, func() *C.struct_ggml_tensor { return C.ggml_gelu_quick(c.c, a.c) })
}

// Silu returns a * sigmoid(a), element-wise (ggml_silu).
func (c *Context) Silu(a *Tensor) *Tensor {
	return c.unary("silu", a, func() *C.struct_ggml_tensor { return C.ggml_silu(c.c, a.c) })
}

// Hardswish returns a * min(1, max(0, (a+3)/6)) (ggml_hardswish).
func (c *Context) Hardswish(a *Tensor) *Tensor {
	return c.unary("hardswish", a, func() *C.struct_ggml_tensor { return C.ggml_hardswish(c.c, a.c) })
}

// Hardsigmoid returns min(1, max(0, (a+3)/6)) (ggml_hardsigmoid).
func (c *Context) Hardsigmoid(a *Tensor) *Tensor {
	return c.unary("hardsigmoid", a, func() *C.struct_ggml_tensor { return C.ggml_hardsigmoid(c.c, a.c) })
}

// Exp returns exp(a) (ggml_exp).
func (c *Context) Exp(a *Tensor) *Tensor {
	return c.unary("exp", a, func() *C.struct_ggml_tensor { return C.ggml_exp(c.c, a.c) })
}

// Floor rounds a down (ggml_floor).
func (c *Context) Floor(a *Tensor) *Tensor {
	return c.unary("floor", a, func() *C.struct_ggml_tensor { return C.ggml_floor(c.c, a.c) })
}

// Ceil rounds a up (ggml_ceil).
func (c *Context) Ceil(a *Tensor) *Tensor {
	return c.unary("ceil", a, func() *C.struct_ggml_tensor { return C.ggml_ceil(c.c, a.c) })
}

// Round rounds a to the nearest integer, halves away from zero (ggml_round).
func (c *Context) Round(a *Tensor) *Tensor {
	return c.unary("round", a, func() *C.struct_ggml_tensor { return C.ggml_round(c.c, a.c) })
}

// Trunc rounds a toward zero (ggml_trunc).
func (c *Context) Trunc(a *Tensor) *Tensor {
	return c.unary("trunc", a, func() *C.struct_ggml_tensor { return C.ggml_trunc(c.c, a.c) })
}

// XIELU returns the xIELU activation of a, element-wise, from its trained
// raw parameters (ggml_xielu): with ap = softplus(alphaP) and an = beta +
// softplus(alphaN), x > 0 gives ap·x² + beta·x, and x <= 0 gives
// (expm1(min(x, eps)) - x)·an + beta·x. a is f32 or f16 with contiguous
// rows.
func (c *Context) XIELU(a *Tensor, alphaN, alphaP, beta, eps float32) *Tensor {
	return c.unary("xielu", a, func() *C.struct_ggml_tensor {
		return C.ggml_xielu(c.c, a.c, C.float(alphaN), C.float(alphaP), C.float(beta), C.float(eps))
	})
}

// UnaryOp names one of ggml's unary functions (enum ggml_unary_op).
type UnaryOp int

// The unary functions. Each has its own method too (Abs, Relu, ...);
// Unary and UnaryInPlace take one as a value. UnaryXIELU needs its
// parameters: use XIELU. The numbers are ggml's: enum_check.go does not
// compile where the linked provider's ggml.h numbers them otherwise (ggml
// has inserted functions in the middle of enum ggml_unary_op from one
// version to the next).
const (
	UnaryAbs         UnaryOp = 0
	UnarySgn         UnaryOp = 1
	UnaryNeg         UnaryOp = 2
	UnaryStep        UnaryOp = 3
	UnaryTanh        UnaryOp = 4
	UnaryElu         UnaryOp = 5
	UnaryRelu        UnaryOp = 6
	UnarySigmoid     UnaryOp = 7
	UnaryGelu        UnaryOp = 8
	UnaryGeluQuick   UnaryOp = 9
	UnarySilu        UnaryOp = 10
	UnaryHardswish   UnaryOp = 11
	UnaryHardsigmoid UnaryOp = 12
	UnaryExp         UnaryOp = 13
	UnaryExpm1       UnaryOp = 14
	UnarySoftplus    UnaryOp = 15
	UnaryGeluErf     UnaryOp = 16
	UnaryXIELU       UnaryOp = 17
	UnaryFloor       UnaryOp = 18
	UnaryCeil        UnaryOp = 19
	UnaryRound       UnaryOp = 20
	UnaryTrunc       UnaryOp = 21
)

// unaryNames are the op names the unary checks use.
var unaryNames = map[UnaryOp]string{
	UnaryAbs: "abs", UnarySgn: "sgn", UnaryNeg: "neg", UnaryStep: "step", UnaryTanh: "tanh", UnaryElu: "elu",
	UnaryRelu: "relu", UnarySigmoid: "sigmoid", UnaryGelu: "gelu", UnaryGeluQuick: "gelu_quick", UnarySilu: "silu",
	UnaryHardswish: "hardswish", UnaryHardsigmoid: "hardsigmoid", UnaryExp: "exp", UnaryExpm1: "expm1",
	UnarySoftplus: "softplus", UnaryGeluErf: "gelu_erf", UnaryFloor: "floor", UnaryCeil: "ceil",
	UnaryRound: "round", UnaryTrunc: "trunc",
}

// String returns the function's name, e.g. "gelu_quick".
func (u UnaryOp) String() string {
	if n, ok := unaryNames[u]; ok {
		return n
	}
	if u == UnaryXIELU {
		return "xielu"
	}
	return fmt.Sprintf("UnaryOp(%d)", int(u))
}

// Unary returns fn(a), element-wise (ggml_unary).
func (c *Context) Unary(a *Tensor, fn UnaryOp) *Tensor {
	return c.unaryOp(a, fn, false)
}

// UnaryInPlace is Unary computed into a (ggml_unary_inplace, and the
// ggml_<fn>_inplace functions, which are this).
func (c *Context) UnaryInPlace(a *Tensor, fn UnaryOp) *Tensor {
	return c.unaryOp(a, fn, true)
}

func (c *Context) unaryOp(a *Tensor, fn UnaryOp, inPlace bool) *Tensor {
	name, ok := unaryNames[fn]
	if !ok {
		if p := c.begin("unary", a); p != nil {
			return p
		}
		return c.fail("unary", ErrInvalid, fmt.Sprintf("%v is not a unary function Unary takes (XIELU has its own method)", fn), a)
	}
	build := func() *Tensor {
		return c.unary(name, a, func() *C.struct_ggml_tensor {
			if inPlace {
				return C.ggml_unary_inplace(c.c, a.c, C.enum_ggml_unary_op(fn))
			}
			return C.ggml_unary(c.c, a.c, C.enum_ggml_unary_op(fn))
		})
	}
	if inPlace {
		return c.inPlace(a, build)
	}
	return build()
}

// GLUOp is the activation of a gated linear unit (enum ggml_glu_op).
type GLUOp int

// GLU activations, with ggml's numbers (enum ggml_glu_op; enum_check.go
// checks them against the linked provider's ggml.h).
const (
	GLUReglu      GLUOp = 0 // relu
	GLUGeglu      GLUOp = 1 // gelu (tanh approximation, ggml's f16 table)
	GLUSwiglu     GLUOp = 2 // silu
	GLUGegluErf   GLUOp = 4 // exact gelu
	GLUGegluQuick GLUOp = 5 // gelu quick
)

var gluNames = map[GLUOp]string{GLUReglu: "reglu", GLUGeglu: "geglu", GLUSwiglu: "swiglu", GLUGegluErf: "geglu_erf", GLUGegluQuick: "geglu_quick"}

// GLU returns act(x) * g where x and g are the two halves of each row of a
// (ggml_glu): x the first half, g the second, or the other way round when
// swapped. The result has half of a.ne0.
func (c *Context) GLU(a *Tensor, act GLUOp, swapped bool) *Tensor {
	return c.glu(a, nil, act, swapped)
}

// GLUSplit returns act(a) * b for a and b of the same shape and type
// (ggml_glu_split).
func (c *Context) GLUSplit(a, b *Tensor, act GLUOp) *Tensor { return c.glu(a, b, act, false) }

// Swiglu is GLU(a, GLUSwiglu, false) (ggml_swiglu).
func (c *Context) Swiglu(a *Tensor) *Tensor { return c.GLU(a, GLUSwiglu, false) }

// Geglu is GLU(a, GLUGeglu, false) (ggml_geglu).
func (c *Context) Geglu(a *Tensor) *Tensor { return c.GLU(a, GLUGeglu, false) }

// Reglu is GLU(a, GLUReglu, false) (ggml_reglu).
func (c *Context) Reglu(a *Tensor) *Tensor { return c.GLU(a, GLUReglu, false) }

func (c *Context) glu(a, b *Tensor, act GLUOp, swapped bool) *Tensor {
	name, ok := gluNames[act]
	if !ok {
		name = "glu"
	}
	inputs := []*Tensor{a}
	if b != nil {
		inputs = append(inputs, b)
	}
	if p := c.begin(name, inputs...); p != nil {
		return p
	}
	if !ok {
		return c.fail(name, ErrInvalid, fmt.Sprintf("unknown GLU activation %d", act), inputs...)
	}
	if a.Type() != TypeF32 && a.Type() != TypeF16 {
		return c.fail(name, ErrType, fmt.Sprintf("ggml's kernels take f32 or f16, not %v", a.Type()), inputs...)
	}
	if !rowsContiguous(a) {
		return c.fail(name, ErrShape, "a must be contiguous in dimensions >= 1; copy it with Cont", inputs...)
	}
	ne := a.Ne()
	if b != nil {
		switch {
		case b.Type() != a.Type():
			return c.fail(name, ErrType, fmt.Sprintf("a is %v, b %v: they must be the same type", a.Type(), b.Type()), inputs...)
		case !sameShape(a, b):
			return c.fail(name, ErrShape, "a and b must have the same shape", inputs...)
		case !rowsContiguous(b):
			return c.fail(name, ErrShape, "b must be contiguous in dimensions >= 1; copy it with Cont", inputs...)
		}
	} else {
		if ne[0] < 2 {
			return c.fail(name, ErrShape, fmt.Sprintf("a.ne0 (%d) must hold two halves", ne[0]), inputs...)
		}
		ne[0] /= 2
	}
	if p := c.ensure(name, a.Type(), ne, nil, inputs...); p != nil {
		return p
	}
	return c.call(name, func() *C.struct_ggml_tensor {
		if b != nil {
			return C.ggml_glu_split(c.c, a.c, b.c, C.enum_ggml_glu_op(act))
		}
		return C.ggml_glu(c.c, a.c, C.enum_ggml_glu_op(act), C.bool(swapped))
	}, inputs...)
}

// SwigluOAI is the gated unit of gpt-oss (ggml_swiglu_oai): with x = min(a,
// limit) and g = clamp(b, -limit, limit), x·sigmoid(alpha·x)·(g + 1). a
// and b are f32 of one shape with contiguous rows.
func (c *Context) SwigluOAI(a, b *Tensor, alpha, limit float32) *Tensor {
	const op = "swiglu_oai"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	switch {
	case a.Type() != TypeF32 || b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32, not %v and %v", a.Type(), b.Type()), a, b)
	case !sameShape(a, b):
		return c.fail(op, ErrShape, "a and b must have the same shape", a, b)
	case !rowsContiguous(a) || !rowsContiguous(b):
		return c.fail(op, ErrShape, "a and b must have contiguous rows; copy them with Cont", a, b)
	case math.IsNaN(float64(alpha)) || !(limit >= 0):
		return c.fail(op, ErrInvalid, fmt.Sprintf("alpha %g must not be NaN, limit %g must be >= 0", alpha, limit), a, b)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_swiglu_oai(c.c, a.c, b.c, C.float(alpha), C.float(limit)) }, a, b)
}
