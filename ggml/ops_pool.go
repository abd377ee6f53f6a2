package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// This file holds the pooling ops (1-D and 2-D, max and average); their
// gradient is in ops_train.go. As for the convolutions (ops_conv.go),
// ggml's CPU kernels assert on worker threads: the checks here run first.

// PoolOp is the reduction of a pooling op (enum ggml_op_pool).
type PoolOp int

// Pooling reductions (GGML_OP_POOL_*).
const (
	PoolMax PoolOp = 0 // the largest element of each window
	PoolAvg PoolOp = 1 // the window's sum divided by its full size, padding included
)

// poolOut is ggml_calc_pool_output_size, (in + 2p - k)/s + 1, computed in
// float32 as ggml computes it (with a float padding).
func poolOut(in int64, k, s, p int) int64 {
	f := float32(float32(in) + float32(2*p))
	f = float32(f - float32(k))
	f = float32(f / float32(s))
	f = float32(f + 1)
	return int64(f)
}

// poolInput checks the input of a pooling kernel, called name in errors:
// f32 or f16, contiguous.
func (c *Context) poolInput(op, name string, a *Tensor, p PoolOp, inputs ...*Tensor) *Tensor {
	switch {
	case p != PoolMax && p != PoolAvg:
		return c.fail(op, ErrInvalid, fmt.Sprintf("unknown pooling op %d", p), inputs...)
	case !isConvFloat(a.Type()):
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes %s of f32 or f16, not %v", name, a.Type()), inputs...)
	case !dense(a):
		return c.fail(op, ErrShape, name+" must be contiguous (ggml's kernel walks it as one array); copy it with Cont", inputs...)
	}
	return c.convNonEmpty(op, inputs...)
}

// Pool1D pools each row of a over windows of k0 elements with stride s0
// and padding p0 (ggml_pool_1d). ggml's CPU kernel supports only
// non-overlapping windows without padding: s0 == k0 and p0 == 0; the f32
// result is [ne0/k0, ne1, ne2, ne3] (a trailing partial window is dropped).
// a is f32 or f16 and contiguous.
func (c *Context) Pool1D(a *Tensor, op PoolOp, k0, s0, p0 int) *Tensor {
	const name = "pool_1d"
	if p := c.begin(name, a); p != nil {
		return p
	}
	if p := c.poolInput(name, "a", a, op, a); p != nil {
		return p
	}
	if p := c.checkParams(name, []convParam{{"k0", k0, 1, math.MaxInt32}, convStride("s0", s0), convPad("p0", p0)}, a); p != nil {
		return p
	}
	ne := a.Ne()
	switch {
	case s0 != k0 || p0 != 0:
		return c.fail(name, ErrInvalid, fmt.Sprintf("ggml's CPU kernel supports only s0 == k0 and p0 == 0, not k0 %d, s0 %d, p0 %d", k0, s0, p0), a)
	case int64(k0) > ne[0]:
		return c.fail(name, ErrShape, fmt.Sprintf("the window k0 (%d) is longer than a's rows (%d)", k0, ne[0]), a)
	case ne[0] > math.MaxInt32:
		return c.fail(name, ErrShape, "a's rows must be shorter than 2^31 (ggml's kernel indexes them with a C int)", a)
	}
	// ggml sizes the result in float32, which for rows beyond 2^24 can round
	// up past the row; its kernel would then read beyond it.
	if out := poolOut(ne[0], k0, s0, p0); out < 1 || out*int64(k0) > ne[0] {
		return c.fail(name, ErrShape, fmt.Sprintf("ggml's float32 output size for rows of %d is %d windows of %d, past the row", ne[0], out, k0), a)
	} else {
		ne[0] = out
	}
	if p := c.ensure(name, TypeF32, ne, nil, a); p != nil {
		return p
	}
	return c.call(name, func() *C.struct_ggml_tensor {
		return C.ggml_pool_1d(c.c, a.c, C.enum_ggml_op_pool(op), C.int(k0), C.int(s0), C.int(p0))
	}, a)
}

// pool2DShape checks Pool2D's parameters and returns its result's shape.
func (c *Context) pool2DShape(op string, a *Tensor, k0, k1, s0, s1, p0, p1 int, inputs ...*Tensor) ([MaxDims]int64, *Tensor) {
	var none [MaxDims]int64
	ps := []convParam{{"k0", k0, 1, math.MaxInt32}, {"k1", k1, 1, math.MaxInt32}, convStride("s0", s0), convStride("s1", s1), convPad("p0", p0), convPad("p1", p1)}
	if p := c.checkParams(op, ps, inputs...); p != nil {
		return none, p
	}
	ne := a.Ne()
	switch {
	case int64(k0) > ne[0]+2*int64(p0) || int64(k1) > ne[1]+2*int64(p1):
		return none, c.fail(op, ErrShape, fmt.Sprintf("the window %dx%d is larger than a's %dx%d plus padding %d, %d on both sides", k0, k1, ne[0], ne[1], p0, p1), inputs...)
	case ne[0]+2*int64(p0) > math.MaxInt32 || ne[1]+2*int64(p1) > math.MaxInt32 || int64(k0)*int64(k1) > math.MaxInt32:
		return none, c.fail(op, ErrShape, "a's padded rows and columns, and the window's size, must be below 2^31 (ggml's kernel indexes with C ints)", inputs...)
	}
	ne[0] = poolOut(ne[0], k0, s0, p0)
	ne[1] = poolOut(ne[1], k1, s1, p1)
	if ne[0] < 1 || ne[1] < 1 {
		return none, c.fail(op, ErrShape, fmt.Sprintf("ggml's float32 output size is %dx%d", ne[0], ne[1]), inputs...)
	}
	return ne, nil
}

// Pool2D pools each [ne0, ne1] plane of a over k0 x k1 windows with strides
// s0, s1 and padding p0, p1 on both sides (ggml_pool_2d); the f32 result is
// [(ne0 + 2*p0 - k0)/s0 + 1, (ne1 + 2*p1 - k1)/s1 + 1, ne2, ne3] (ggml
// computes these sizes in float32). PoolAvg divides each window's sum of
// the elements inside a by k0*k1, padding included; a PoolMax window that
// lies wholly in the padding gives -math.MaxFloat32. a is f32 or f16 and
// contiguous. (ggml takes float paddings but its kernel truncates them.)
func (c *Context) Pool2D(a *Tensor, op PoolOp, k0, k1, s0, s1, p0, p1 int) *Tensor {
	const name = "pool_2d"
	if p := c.begin(name, a); p != nil {
		return p
	}
	if p := c.poolInput(name, "a", a, op, a); p != nil {
		return p
	}
	ne, p := c.pool2DShape(name, a, k0, k1, s0, s1, p0, p1, a)
	if p != nil {
		return p
	}
	if p := c.ensure(name, TypeF32, ne, nil, a); p != nil {
		return p
	}
	return c.call(name, func() *C.struct_ggml_tensor {
		return C.ggml_pool_2d(c.c, a.c, C.enum_ggml_op_pool(op), C.int(k0), C.int(k1), C.int(s0), C.int(s1), C.float(p0), C.float(p1))
	}, a)
}
