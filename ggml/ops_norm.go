package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// The normalizations of ggml.h: norm, rms_norm, group_norm and l2_norm,
// each in-place variant beside its op. Their gradient (rms_norm_back) is
// in ops_train.go.

func (c *Context) norm(op string, a *Tensor, eps float32, f func() *C.struct_ggml_tensor) *Tensor {
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.rowOp(op, a, TypeF32); p != nil {
		return p
	}
	if !(eps >= 0) {
		return c.fail(op, ErrInvalid, fmt.Sprintf("eps %g must be >= 0", eps), a)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, f, a)
}

// Norm normalizes each row of a to mean 0 and variance 1:
// (x - mean) / sqrt(var + eps) (ggml_norm). a must be f32.
func (c *Context) Norm(a *Tensor, eps float32) *Tensor {
	return c.norm("norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_norm(c.c, a.c, C.float(eps)) })
}

// NormInPlace is Norm computed into a (ggml_norm_inplace).
func (c *Context) NormInPlace(a *Tensor, eps float32) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.norm("norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_norm_inplace(c.c, a.c, C.float(eps)) })
	})
}

// RMSNorm divides each row of a by its root mean square:
// x / sqrt(mean(x²) + eps) (ggml_rms_norm). a must be f32.
func (c *Context) RMSNorm(a *Tensor, eps float32) *Tensor {
	return c.norm("rms_norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_rms_norm(c.c, a.c, C.float(eps)) })
}

// RMSNormInPlace is RMSNorm computed into a (ggml_rms_norm_inplace).
func (c *Context) RMSNormInPlace(a *Tensor, eps float32) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.norm("rms_norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_rms_norm_inplace(c.c, a.c, C.float(eps)) })
	})
}

// GroupNorm normalises a in groups of channels (dimension 2): a.ne2 is cut
// into groups of ceil(a.ne2/groups) channels, and each group of each
// sample (dimension 3) gets mean 0 and variance 1, with eps added to the
// variance (ggml_group_norm). a is f32 with adjacent elements; 1 <= groups
// <= a.ne2.
func (c *Context) GroupNorm(a *Tensor, groups int, eps float32) *Tensor {
	return c.groupNorm(a, groups, eps, false)
}

// GroupNormInPlace is GroupNorm computed into a (ggml_group_norm_inplace).
func (c *Context) GroupNormInPlace(a *Tensor, groups int, eps float32) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.groupNorm(a, groups, eps, true) })
}

func (c *Context) groupNorm(a *Tensor, groups int, eps float32, inPlace bool) *Tensor {
	const op = "group_norm"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.rowOp(op, a, TypeF32); p != nil {
		return p
	}
	an := a.Ne()
	switch {
	case groups < 1 || int64(groups) > an[2]:
		return c.fail(op, ErrInvalid, fmt.Sprintf("groups %d must be 1 to a.ne2 (%d)", groups, an[2]), a)
	case an[2] > math.MaxInt32:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne2 (%d) must fit in int32", an[2]), a)
	case !(eps >= 0) || math.IsInf(float64(eps), 0):
		return c.fail(op, ErrInvalid, fmt.Sprintf("eps %g must be finite and >= 0", eps), a)
	}
	if p := c.ensure(op, a.Type(), an, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		if inPlace {
			return C.ggml_group_norm_inplace(c.c, a.c, C.int(groups), C.float(eps))
		}
		return C.ggml_group_norm(c.c, a.c, C.int(groups), C.float(eps))
	}, a)
}

// L2Norm divides each row of a by its Euclidean length, or by eps where
// that is larger: x / max(sqrt(sum(x²)), eps) (ggml_l2_norm). a must be f32.
func (c *Context) L2Norm(a *Tensor, eps float32) *Tensor {
	return c.norm("l2_norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_l2_norm(c.c, a.c, C.float(eps)) })
}

// L2NormInPlace is L2Norm computed into a (ggml_l2_norm_inplace).
func (c *Context) L2NormInPlace(a *Tensor, eps float32) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.norm("l2_norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_l2_norm_inplace(c.c, a.c, C.float(eps)) })
	})
}
