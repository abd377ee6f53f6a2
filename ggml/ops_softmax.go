package ggml

// #include "goggml.h"
import "C"

import "fmt"

// Softmax (ggml.h's soft_max family): plain, with scale, mask and ALiBi,
// with attention sinks, and in place. Its gradient (soft_max_ext_back) is
// in ops_train.go.

// SoftMax returns the softmax of each row of a (along ne0) (ggml_soft_max).
// a must be contiguous.
func (c *Context) SoftMax(a *Tensor) *Tensor {
	return c.SoftMaxExt(a, nil, 1, 0)
}

// SoftMaxInPlace is SoftMax computed into a (ggml_soft_max_inplace).
func (c *Context) SoftMaxInPlace(a *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.softMax(a, nil, 1, 0, true) })
}

// SoftMaxExt returns softmax(a*scale + mask) of each row, with ALiBi slopes
// when maxBias > 0 (ggml_soft_max_ext). mask may be nil; if given it is f16
// or f32, contiguous, mask.ne0 == a.ne0, mask.ne1 >= a.ne1, and a.ne2, a.ne3
// are multiples of mask.ne2, mask.ne3. maxBias > 0 needs a mask.
func (c *Context) SoftMaxExt(a, mask *Tensor, scale, maxBias float32) *Tensor {
	return c.softMax(a, mask, scale, maxBias, false)
}

// SoftMaxExtInPlace is SoftMaxExt computed into a
// (ggml_soft_max_ext_inplace).
func (c *Context) SoftMaxExtInPlace(a, mask *Tensor, scale, maxBias float32) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.softMax(a, mask, scale, maxBias, true) })
}

func (c *Context) softMax(a, mask *Tensor, scale, maxBias float32, inPlace bool) *Tensor {
	const op = "soft_max"
	inputs := []*Tensor{a}
	if mask != nil {
		inputs = append(inputs, mask)
	}
	if p := c.begin(op, inputs...); p != nil {
		return p
	}
	if a.Type() != TypeF32 {
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 only, not %v", a.Type()), inputs...)
	}
	if !dense(a) {
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", inputs...)
	}
	if mask != nil {
		an, mn := a.Ne(), mask.Ne()
		switch {
		case mask.Type() != TypeF32 && mask.Type() != TypeF16:
			return c.fail(op, ErrType, fmt.Sprintf("mask must be f32 or f16, not %v", mask.Type()), inputs...)
		case !dense(mask):
			return c.fail(op, ErrShape, "mask must be contiguous", inputs...)
		case mn[0] != an[0]:
			return c.fail(op, ErrShape, fmt.Sprintf("mask.ne0 (%d) != a.ne0 (%d)", mn[0], an[0]), inputs...)
		case mn[1] < an[1]:
			return c.fail(op, ErrShape, fmt.Sprintf("mask.ne1 (%d) < a.ne1 (%d)", mn[1], an[1]), inputs...)
		case mn[2] == 0 || an[2]%mn[2] != 0 || mn[3] == 0 || an[3]%mn[3] != 0:
			return c.fail(op, ErrShape, fmt.Sprintf("a.ne2 (%d) and a.ne3 (%d) must be multiples of mask.ne2 (%d) and mask.ne3 (%d)", an[2], an[3], mn[2], mn[3]), inputs...)
		}
	} else if maxBias > 0 {
		return c.fail(op, ErrInvalid, fmt.Sprintf("maxBias %g > 0 needs a mask", maxBias), inputs...)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, inputs...); p != nil {
		return p
	}
	var mc *C.struct_ggml_tensor
	if mask != nil {
		mc = mask.c
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		if inPlace {
			if mc == nil && scale == 1 && maxBias == 0 {
				return C.ggml_soft_max_inplace(c.c, a.c)
			}
			return C.ggml_soft_max_ext_inplace(c.c, a.c, mc, C.float(scale), C.float(maxBias))
		}
		return C.ggml_soft_max_ext(c.c, a.c, mc, C.float(scale), C.float(maxBias))
	}, inputs...)
}

// SoftMaxExtSinks is SoftMaxExt with attention sinks: one f32 logit per
// a.ne2 (head) that joins each row's denominator (ggml_soft_max_add_sinks).
func (c *Context) SoftMaxExtSinks(a, mask, sinks *Tensor, scale, maxBias float32) *Tensor {
	const op = "soft_max"
	if p := c.begin(op, a, sinks); p != nil {
		return p
	}
	if sinks.Type() != TypeF32 || sinks.Ne()[0] != a.Ne()[2] || !adjacent(sinks) {
		return c.fail(op, ErrShape, fmt.Sprintf("sinks must be f32 with ne0 = a.ne2 (%d) and adjacent elements", a.Ne()[2]), a, sinks)
	}
	t := c.SoftMaxExt(a, mask, scale, maxBias)
	if t.err != nil {
		return t
	}
	C.ggml_soft_max_add_sinks(t.c, sinks.c)
	// The node gained a source: its handle must name it too.
	srcs := make([]*Tensor, 3)
	copy(srcs, t.srcs)
	srcs[2] = sinks
	t.srcs = srcs
	return t
}
