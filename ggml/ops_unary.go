package ggml

// #include "goggml.h"
import "C"

// The element-wise functions of one tensor. Each needs a's rows contiguous
// (ggml_is_contiguous_1) and an f32 or f16 tensor (bf16 too where ggml's
// generic unary kernel computes the op); the result has a's type and shape.

// unaryBF16 are the ops whose CPU kernel also takes bf16.
var unaryBF16 = map[string]bool{
	"relu": true, "abs": true, "sgn": true, "neg": true, "step": true, "tanh": true, "elu": true,
	"sigmoid": true, "hardsigmoid": true, "hardswish": true, "exp": true, "expm1": true, "softplus": true,
	"sqr": true, "sqrt": true, "sin": true, "cos": true, "log": true,
	"floor": true, "ceil": true, "round": true, "trunc": true,
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

// Sigmoid returns 1/(1+exp(-a)) (ggml_sigmoid).
func (c *Context) Sigmoid(a *Tensor) *Tensor {
	return c.unary("sigmoid", a, func() *C.struct_ggml_tensor { return C.ggml_sigmoid(c.c, a.c) })
}

// Hardsigmoid returns min(1, max(0, (a+3)/6)) (ggml_hardsigmoid).
func (c *Context) Hardsigmoid(a *Tensor) *Tensor {
	return c.unary("hardsigmoid", a, func() *C.struct_ggml_tensor { return C.ggml_hardsigmoid(c.c, a.c) })
}

// Hardswish returns a * min(1, max(0, (a+3)/6)) (ggml_hardswish).
func (c *Context) Hardswish(a *Tensor) *Tensor {
	return c.unary("hardswish", a, func() *C.struct_ggml_tensor { return C.ggml_hardswish(c.c, a.c) })
}

// Exp returns exp(a) (ggml_exp).
func (c *Context) Exp(a *Tensor) *Tensor {
	return c.unary("exp", a, func() *C.struct_ggml_tensor { return C.ggml_exp(c.c, a.c) })
}

// Expm1 returns exp(a)-1, computed by ggml as that difference (ggml_expm1).
func (c *Context) Expm1(a *Tensor) *Tensor {
	return c.unary("expm1", a, func() *C.struct_ggml_tensor { return C.ggml_expm1(c.c, a.c) })
}

// Softplus returns log(1+exp(a)), and a itself above 20 (ggml_softplus).
func (c *Context) Softplus(a *Tensor) *Tensor {
	return c.unary("softplus", a, func() *C.struct_ggml_tensor { return C.ggml_softplus(c.c, a.c) })
}

// Sqr returns a*a (ggml_sqr).
func (c *Context) Sqr(a *Tensor) *Tensor {
	return c.unary("sqr", a, func() *C.struct_ggml_tensor { return C.ggml_sqr(c.c, a.c) })
}

// Sqrt returns the square root of a (ggml_sqrt); NaN below 0.
func (c *Context) Sqrt(a *Tensor) *Tensor {
	return c.unary("sqrt", a, func() *C.struct_ggml_tensor { return C.ggml_sqrt(c.c, a.c) })
}

// Log returns the natural logarithm of a (ggml_log); NaN below 0.
func (c *Context) Log(a *Tensor) *Tensor {
	return c.unary("log", a, func() *C.struct_ggml_tensor { return C.ggml_log(c.c, a.c) })
}

// Sin returns sin(a) (ggml_sin).
func (c *Context) Sin(a *Tensor) *Tensor {
	return c.unary("sin", a, func() *C.struct_ggml_tensor { return C.ggml_sin(c.c, a.c) })
}

// Cos returns cos(a) (ggml_cos).
func (c *Context) Cos(a *Tensor) *Tensor {
	return c.unary("cos", a, func() *C.struct_ggml_tensor { return C.ggml_cos(c.c, a.c) })
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

// GeluQuick returns a*sigmoid(1.702a), through ggml's f16 table for f32
// (ggml_gelu_quick).
func (c *Context) GeluQuick(a *Tensor) *Tensor {
	return c.unary("gelu_quick", a, func() *C.struct_ggml_tensor { return C.ggml_gelu_quick(c.c, a.c) })
}

// GeluErf returns the exact GELU, 0.5a(1+erf(a/√2)) (ggml_gelu_erf).
func (c *Context) GeluErf(a *Tensor) *Tensor {
	return c.unary("gelu_erf", a, func() *C.struct_ggml_tensor { return C.ggml_gelu_erf(c.c, a.c) })
}
