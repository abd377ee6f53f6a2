package ggml

// #include "goggml.h"
import "C"

import "fmt"

// The in-place variants of ggml's ops (ggml_*_inplace). Each checks what its
// out-of-place op checks; its result is a view of a, so computing it
// overwrites a's memory, and it takes no memory of its own. They save
// memory where a is an intermediate result nobody reads again; on a graph
// input they change the input.

// inPlace builds an op whose result is a view of a.
func (c *Context) inPlace(a *Tensor, build func() *Tensor) *Tensor {
	if c == nil {
		return build()
	}
	c.inPlaceOf = a
	defer func() { c.inPlaceOf = nil }()
	return build()
}

// AddInPlace is Add computed into a (ggml_add_inplace).
func (c *Context) AddInPlace(a, b *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.binary("add", a, b, func() *C.struct_ggml_tensor { return C.ggml_add_inplace(c.c, a.c, b.c) })
	})
}

// SubInPlace is Sub computed into a (ggml_sub_inplace).
func (c *Context) SubInPlace(a, b *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.binary("sub", a, b, func() *C.struct_ggml_tensor { return C.ggml_sub_inplace(c.c, a.c, b.c) })
	})
}

// MulInPlace is Mul computed into a (ggml_mul_inplace).
func (c *Context) MulInPlace(a, b *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.binary("mul", a, b, func() *C.struct_ggml_tensor { return C.ggml_mul_inplace(c.c, a.c, b.c) })
	})
}

// DivInPlace is Div computed into a (ggml_div_inplace).
func (c *Context) DivInPlace(a, b *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.binary("div", a, b, func() *C.struct_ggml_tensor { return C.ggml_div_inplace(c.c, a.c, b.c) })
	})
}

// Add1InPlace is Add1 computed into a (ggml_add1_inplace).
func (c *Context) Add1InPlace(a, b *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.add1(a, b, true) })
}

// ScaleInPlace is Scale computed into a (ggml_scale_inplace).
func (c *Context) ScaleInPlace(a *Tensor, s float32) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.scale("scale", a, func() *C.struct_ggml_tensor { return C.ggml_scale_inplace(c.c, a.c, C.float(s)) })
	})
}

// ScaleBiasInPlace is ScaleBias computed into a (ggml_scale_bias_inplace).
func (c *Context) ScaleBiasInPlace(a *Tensor, s, b float32) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.scale("scale_bias", a, func() *C.struct_ggml_tensor { return C.ggml_scale_bias_inplace(c.c, a.c, C.float(s), C.float(b)) })
	})
}

// SqrInPlace is Sqr computed into a (ggml_sqr_inplace).
func (c *Context) SqrInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.unary("sqr", a, func() *C.struct_ggml_tensor { return C.ggml_sqr_inplace(c.c, a.c) })
	})
}

// SqrtInPlace is Sqrt computed into a (ggml_sqrt_inplace).
func (c *Context) SqrtInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.unary("sqrt", a, func() *C.struct_ggml_tensor { return C.ggml_sqrt_inplace(c.c, a.c) })
	})
}

// LogInPlace is Log computed into a (ggml_log_inplace).
func (c *Context) LogInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.unary("log", a, func() *C.struct_ggml_tensor { return C.ggml_log_inplace(c.c, a.c) })
	})
}

// SinInPlace is Sin computed into a (ggml_sin_inplace).
func (c *Context) SinInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.unary("sin", a, func() *C.struct_ggml_tensor { return C.ggml_sin_inplace(c.c, a.c) })
	})
}

// CosInPlace is Cos computed into a (ggml_cos_inplace).
func (c *Context) CosInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.unary("cos", a, func() *C.struct_ggml_tensor { return C.ggml_cos_inplace(c.c, a.c) })
	})
}

// UnaryOp names one of ggml's unary functions (enum ggml_unary_op).
type UnaryOp int

// The unary functions. Each has its own method too (Abs, Relu, ...);
// Unary and UnaryInPlace take one as a value. UnaryXIELU needs its
// parameters: use XIELU. The numbers come from the linked provider's ggml.h
// through cgo: ggml has inserted functions in the middle of enum
// ggml_unary_op from one version to the next.
const (
	UnaryAbs         UnaryOp = C.GGML_UNARY_OP_ABS
	UnarySgn         UnaryOp = C.GGML_UNARY_OP_SGN
	UnaryNeg         UnaryOp = C.GGML_UNARY_OP_NEG
	UnaryStep        UnaryOp = C.GGML_UNARY_OP_STEP
	UnaryTanh        UnaryOp = C.GGML_UNARY_OP_TANH
	UnaryElu         UnaryOp = C.GGML_UNARY_OP_ELU
	UnaryRelu        UnaryOp = C.GGML_UNARY_OP_RELU
	UnarySigmoid     UnaryOp = C.GGML_UNARY_OP_SIGMOID
	UnaryGelu        UnaryOp = C.GGML_UNARY_OP_GELU
	UnaryGeluQuick   UnaryOp = C.GGML_UNARY_OP_GELU_QUICK
	UnarySilu        UnaryOp = C.GGML_UNARY_OP_SILU
	UnaryHardswish   UnaryOp = C.GGML_UNARY_OP_HARDSWISH
	UnaryHardsigmoid UnaryOp = C.GGML_UNARY_OP_HARDSIGMOID
	UnaryExp         UnaryOp = C.GGML_UNARY_OP_EXP
	UnaryExpm1       UnaryOp = C.GGML_UNARY_OP_EXPM1
	UnarySoftplus    UnaryOp = C.GGML_UNARY_OP_SOFTPLUS
	UnaryGeluErf     UnaryOp = C.GGML_UNARY_OP_GELU_ERF
	UnaryXIELU       UnaryOp = C.GGML_UNARY_OP_XIELU
	UnaryFloor       UnaryOp = C.GGML_UNARY_OP_FLOOR
	UnaryCeil        UnaryOp = C.GGML_UNARY_OP_CEIL
	UnaryRound       UnaryOp = C.GGML_UNARY_OP_ROUND
	UnaryTrunc       UnaryOp = C.GGML_UNARY_OP_TRUNC
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

// NormInPlace is Norm computed into a (ggml_norm_inplace).
func (c *Context) NormInPlace(a *Tensor, eps float32) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.norm("norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_norm_inplace(c.c, a.c, C.float(eps)) })
	})
}

// RMSNormInPlace is RMSNorm computed into a (ggml_rms_norm_inplace).
func (c *Context) RMSNormInPlace(a *Tensor, eps float32) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.norm("rms_norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_rms_norm_inplace(c.c, a.c, C.float(eps)) })
	})
}

// L2NormInPlace is L2Norm computed into a (ggml_l2_norm_inplace).
func (c *Context) L2NormInPlace(a *Tensor, eps float32) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.norm("l2_norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_l2_norm_inplace(c.c, a.c, C.float(eps)) })
	})
}

// GroupNormInPlace is GroupNorm computed into a (ggml_group_norm_inplace).
func (c *Context) GroupNormInPlace(a *Tensor, groups int, eps float32) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.groupNorm(a, groups, eps, true) })
}

// SoftMaxInPlace is SoftMax computed into a (ggml_soft_max_inplace).
func (c *Context) SoftMaxInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.softMax(a, nil, 1, 0, true) })
}

// SoftMaxExtInPlace is SoftMaxExt computed into a
// (ggml_soft_max_ext_inplace).
func (c *Context) SoftMaxExtInPlace(a, mask *Tensor, scale, maxBias float32) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.softMax(a, mask, scale, maxBias, true) })
}

// DiagMaskInfInPlace is DiagMaskInf computed into a
// (ggml_diag_mask_inf_inplace).
func (c *Context) DiagMaskInfInPlace(a *Tensor, nPast int) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.diagMask("diag_mask_inf", a, nPast, func() *C.struct_ggml_tensor { return C.ggml_diag_mask_inf_inplace(c.c, a.c, C.int(nPast)) })
	})
}

// DiagMaskZeroInPlace is DiagMaskZero computed into a
// (ggml_diag_mask_zero_inplace).
func (c *Context) DiagMaskZeroInPlace(a *Tensor, nPast int) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.diagMask("diag_mask_zero", a, nPast, func() *C.struct_ggml_tensor { return C.ggml_diag_mask_zero_inplace(c.c, a.c, C.int(nPast)) })
	})
}

// LeakyReluInPlace is LeakyRelu computed into a (ggml_leaky_relu with
// inplace set).
func (c *Context) LeakyReluInPlace(a *Tensor, slope float32) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.leakyRelu(a, slope, true) })
}
