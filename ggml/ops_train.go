package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// Training: the backward ops (the gradients of silu, rms_norm, soft_max,
// rope, get_rows, repeat, im2col and pool_2d), the cross-entropy loss and
// its gradient, and the optimizer steps.

// denseF32 checks inputs that a kernel reads as dense f32 rows of one
// shape.
func (c *Context) denseF32(op string, ts []*Tensor, inputs ...*Tensor) *Tensor {
	for i, t := range ts {
		switch {
		case t.Type() != TypeF32:
			return c.fail(op, ErrType, fmt.Sprintf("input %d must be f32, not %v", i, t.Type()), inputs...)
		case !dense(t):
			return c.fail(op, ErrShape, fmt.Sprintf("input %d must be contiguous; copy it with Cont", i), inputs...)
		case !sameShape(t, ts[0]):
			return c.fail(op, ErrShape, fmt.Sprintf("input %d %v must have input 0's shape %v", i, t.Ne(), ts[0].Ne()), inputs...)
		}
	}
	return nil
}

// SiluBack is the gradient of Silu (ggml_silu_back): from dy (a) and the
// forward input x (b), dy·silu'(x). a and b have one type (f32 or f16) and
// shape, with contiguous rows.
func (c *Context) SiluBack(a, b *Tensor) *Tensor {
	const op = "silu_back"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	switch {
	case a.Type() != b.Type() || (a.Type() != TypeF32 && a.Type() != TypeF16):
		return c.fail(op, ErrType, fmt.Sprintf("a and b must both be f32 or both f16, not %v and %v", a.Type(), b.Type()), a, b)
	case !sameShape(a, b):
		return c.fail(op, ErrShape, "a and b must have the same shape", a, b)
	case !rowsContiguous(a) || !rowsContiguous(b):
		return c.fail(op, ErrShape, "a and b must have contiguous rows; copy them with Cont", a, b)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_silu_back(c.c, a.c, b.c) }, a, b)
}

// RMSNormBack is the gradient of RMSNorm (ggml_rms_norm_back): from dz (a)
// and the forward input x (b). a and b are f32 of one shape with adjacent
// elements.
func (c *Context) RMSNormBack(a, b *Tensor, eps float32) *Tensor {
	const op = "rms_norm_back"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	switch {
	case a.Type() != TypeF32 || b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32, not %v and %v", a.Type(), b.Type()), a, b)
	case !sameShape(a, b):
		return c.fail(op, ErrShape, "a and b must have the same shape", a, b)
	case !adjacent(a) || !adjacent(b):
		return c.fail(op, ErrShape, "a's and b's elements must be adjacent in dimension 0; copy them with Cont", a, b)
	case !(eps >= 0):
		return c.fail(op, ErrInvalid, fmt.Sprintf("eps %g must be >= 0", eps), a, b)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_rms_norm_back(c.c, a.c, b.c, C.float(eps)) }, a, b)
}

// SoftMaxExtBack is the gradient of SoftMaxExt (ggml_soft_max_ext_back):
// from dy (a) and the forward result y (b), scale·y·(dy - Σ y·dy) row by
// row. a and b are contiguous f32 of one shape; maxBias must be 0 (ggml's
// kernel has no ALiBi gradient).
func (c *Context) SoftMaxExtBack(a, b *Tensor, scale, maxBias float32) *Tensor {
	return c.softMaxBack(a, b, scale, maxBias, false)
}

// SoftMaxExtBackInPlace is SoftMaxExtBack computed into a
// (ggml_soft_max_ext_back_inplace).
func (c *Context) SoftMaxExtBackInPlace(a, b *Tensor, scale, maxBias float32) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.softMaxBack(a, b, scale, maxBias, true) })
}

func (c *Context) softMaxBack(a, b *Tensor, scale, maxBias float32, inPlace bool) *Tensor {
	const op = "soft_max_back"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if p := c.denseF32(op, []*Tensor{a, b}, a, b); p != nil {
		return p
	}
	if maxBias != 0 {
		return c.fail(op, ErrInvalid, fmt.Sprintf("maxBias %g: ggml's kernel takes 0 only", maxBias), a, b)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		if inPlace {
			return C.ggml_soft_max_ext_back_inplace(c.c, a.c, b.c, C.float(scale), C.float(maxBias))
		}
		return C.ggml_soft_max_ext_back(c.c, a.c, b.c, C.float(scale), C.float(maxBias))
	}, a, b)
}

// RopeBack is the gradient of Rope (ggml_rope_ext_back,
// ggml_rope_multi_back): the rotation by the opposite angles, with the
// same parameters and rules.
func (c *Context) RopeBack(a, pos *Tensor, p RopeParams) *Tensor {
	t := c.rope("rope_back", a, pos, p, false)
	if t.err == nil {
		t.c.op = C.GGML_OP_ROPE_BACK // what ggml_rope_ext_back and _multi_back do
	}
	return t
}

// GetRowsBack is the gradient of GetRows (ggml_get_rows_back): row i of a
// (f32 or f16, a matrix) is added to row b[i] of a zero f32 matrix of c's
// shape. b is an i32 vector with one index per row of a, each below c.ne1
// (checked before compute when b is an input in host memory).
func (c *Context) GetRowsBack(a, b, like *Tensor) *Tensor {
	const op = "get_rows_back"
	if p := c.begin(op, a, b, like); p != nil {
		return p
	}
	an, bn, cn := a.Ne(), b.Ne(), like.Ne()
	switch {
	case a.Type() != TypeF32 && a.Type() != TypeF16:
		return c.fail(op, ErrType, fmt.Sprintf("a must be f32 or f16, not %v", a.Type()), a, b, like)
	case b.Type() != TypeI32:
		return c.fail(op, ErrType, fmt.Sprintf("b must be i32, not %v", b.Type()), a, b, like)
	case an[2] != 1 || an[3] != 1 || cn[2] != 1 || cn[3] != 1:
		return c.fail(op, ErrShape, "a and c must be matrices", a, b, like)
	case bn[1] != 1 || bn[2] != 1 || bn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("b must be a vector, not %v", bn), a, b, like)
	case bn[0] != an[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("b.ne0 (%d) != a.ne1 (%d): one index per row of a", bn[0], an[1]), a, b, like)
	case an[0] != cn[0]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) != c.ne0 (%d)", an[0], cn[0]), a, b, like)
	case !adjacent(a) || !dense(b):
		return c.fail(op, ErrShape, "a's elements must be adjacent and b contiguous", a, b, like)
	}
	if b.c.op != C.GGML_OP_NONE {
		bound, ok := indexBound(b)
		if !ok || bound > cn[1] {
			return c.fail(op, ErrInvalid, "row indices computed by the graph cannot be checked against c's rows; pass them as an input", a, b, like)
		}
	}
	if p := c.ensure(op, TypeF32, [MaxDims]int64{cn[0], cn[1], 1, 1}, nil, a, b, like); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_get_rows_back(c.c, a.c, b.c, like.c) }, a, b, like)
}

// get_rows_back adds each row of a to the row of the result its index
// names.
func init() {
	registerIndexCheck(C.GGML_OP_GET_ROWS_BACK, "get_rows_back", func(n *C.struct_ggml_tensor) (*C.struct_ggml_tensor, int64) {
		return n.src[1], int64(n.ne[1])
	})
}

// RepeatBack sums a over the tiles of b's shape: the gradient of Repeat
// (ggml_repeat_back). Each a.ne[i] must be a multiple of b.ne[i]; a is f32
// with adjacent elements; the result has b's shape.
func (c *Context) RepeatBack(a, b *Tensor) *Tensor {
	const op = "repeat_back"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	switch {
	case a.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32, not %v", a.Type()), a, b)
	case !adjacent(a):
		return c.fail(op, ErrShape, "a's elements must be adjacent in dimension 0; copy it with Cont", a, b)
	case isEmpty(b) || !canRepeat(b, a):
		return c.fail(op, ErrShape, fmt.Sprintf("each a.ne[i] %v must be a multiple of b.ne[i] %v", a.Ne(), b.Ne()), a, b)
	}
	if p := c.ensure(op, a.Type(), b.Ne(), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_repeat_back(c.c, a.c, b.c) }, a, b)
}

// Im2ColBack is the gradient of Im2Col with respect to its input: it sums
// each element of grad, an Im2Col result, back into the input position it
// was read from (ggml_im2col_back). ne is the shape of Im2Col's input b
// ([W, H, IC, N], or [L, IC, N, 1] without is2D) and kernel is Im2Col's a;
// only its shape is used. grad and kernel are f32, grad contiguous and
// shaped as Im2Col(kernel, b, ...) would be. The result is f32 of shape ne.
//
// ggml's header names the kernel as the first argument; its CPU kernel and
// its own backward pass take the gradient first, as here.
func (c *Context) Im2ColBack(grad, kernel *Tensor, ne [MaxDims]int64, s0, s1, p0, p1, d0, d1 int, is2D bool) *Tensor {
	const op = "im2col_back"
	if p := c.begin(op, grad, kernel); p != nil {
		return p
	}
	if !is2D {
		s1, p1, d1 = 0, 0, 0
	}
	switch {
	case grad.Type() != TypeF32 || kernel.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("grad and kernel must be f32, not %v and %v", grad.Type(), kernel.Type()), grad, kernel)
	case !dense(grad):
		return c.fail(op, ErrShape, "grad must be contiguous; copy it with Cont", grad, kernel)
	}
	for i, n := range ne {
		if n < 1 {
			return c.fail(op, ErrShape, fmt.Sprintf("ne%d (%d) of the input shape must be >= 1", i, n), grad, kernel)
		}
	}
	if !is2D && ne[3] != 1 {
		return c.fail(op, ErrShape, fmt.Sprintf("ne3 (%d) must be 1 for a 1-D im2col: the input is [L, IC, N]", ne[3]), grad, kernel)
	}
	// The forward shape: check it as Im2Col would, on a stand-in for b.
	if _, err := dataSize(TypeF32, ne); err != nil {
		return c.fail(op, ErrShape, err.Error(), grad, kernel)
	}
	kn, gn := kernel.Ne(), grad.Ne()
	ps := []convParam{convStride("s0", s0), convPad("p0", p0), convDil("d0", d0)}
	if is2D {
		ps = append(ps, convStride("s1", s1), convPad("p1", p1), convDil("d1", d1))
	}
	if p := c.checkParams(op, ps, grad, kernel); p != nil {
		return p
	}
	var want [MaxDims]int64
	if is2D {
		if kn[2] != ne[2] {
			return c.fail(op, ErrShape, fmt.Sprintf("kernel.ne2 (%d) != ne2 (%d): kernel and input must have the same channels", kn[2], ne[2]), grad, kernel)
		}
		ow, ok := convOut(ne[0], kn[0], s0, p0, d0)
		if !ok {
			return c.convFail(op, "dimension 0", ne[0], kn[0], s0, p0, d0, grad, kernel)
		}
		oh, ok := convOut(ne[1], kn[1], s1, p1, d1)
		if !ok {
			return c.convFail(op, "dimension 1", ne[1], kn[1], s1, p1, d1, grad, kernel)
		}
		want = shape4(ne[2]*kn[1]*kn[0], ow, oh, ne[3])
	} else {
		if kn[1] != ne[1] {
			return c.fail(op, ErrShape, fmt.Sprintf("kernel.ne1 (%d) != ne1 (%d): kernel and input must have the same channels", kn[1], ne[1]), grad, kernel)
		}
		ow, ok := convOut(ne[0], kn[0], s0, p0, d0)
		if !ok {
			return c.convFail(op, "dimension 0", ne[0], kn[0], s0, p0, d0, grad, kernel)
		}
		want = shape4(ne[1]*kn[0], ow, ne[2], 1)
	}
	if gn != want {
		return c.fail(op, ErrShape, fmt.Sprintf("grad %v must have the shape of Im2Col's result, %v", gn, want), grad, kernel)
	}
	// The kernel keeps the result's channel and batch strides in C ints.
	chStride, nbStride := uint64(ne[0])*uint64(ne[1])*4, uint64(ne[0])*uint64(ne[1])*uint64(ne[2])*4
	channels, batch := ne[2], ne[3]
	if !is2D {
		chStride, nbStride, channels, batch = uint64(ne[0])*4, uint64(ne[0])*uint64(ne[1])*4, ne[1], ne[2]
	}
	if (channels > 1 && chStride > math.MaxInt32) || (batch > 1 && nbStride > math.MaxInt32) {
		return c.fail(op, ErrShape, "the input's channel and batch strides must fit a C int (ggml's kernel keeps them in one)", grad, kernel)
	}
	if p := c.ensure(op, TypeF32, ne, nil, grad, kernel); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		cne := [MaxDims]C.int64_t{C.int64_t(ne[0]), C.int64_t(ne[1]), C.int64_t(ne[2]), C.int64_t(ne[3])}
		return C.ggml_im2col_back(c.c, grad.c, kernel.c, &cne[0], C.int(s0), C.int(s1), C.int(p0), C.int(p1), C.int(d0), C.int(d1), C.bool(is2D))
	}, grad, kernel)
}

// Pool2DBack is the gradient of Pool2D with respect to its input af
// (ggml_pool_2d_back): grad, the gradient of Pool2D(af, op, ...)'s result,
// is spread back over af's shape. PoolMax gives each window's gradient to
// the first largest element of af in it; PoolAvg gives grad/(k0*k1) to each
// element of the window inside af. grad and af are f32 and contiguous, and
// grad has Pool2D's result shape. The result is f32 of af's shape.
func (c *Context) Pool2DBack(grad, af *Tensor, op PoolOp, k0, k1, s0, s1, p0, p1 int) *Tensor {
	const name = "pool_2d_back"
	if p := c.begin(name, grad, af); p != nil {
		return p
	}
	if p := c.poolInput(name, "af", af, op, grad, af); p != nil {
		return p
	}
	switch {
	case grad.Type() != TypeF32 || af.Type() != TypeF32:
		return c.fail(name, ErrType, fmt.Sprintf("grad and af must be f32 (ggml's kernel reads af as its f32 result), not %v and %v", grad.Type(), af.Type()), grad, af)
	case !dense(grad):
		return c.fail(name, ErrShape, "grad must be contiguous; copy it with Cont", grad, af)
	}
	ne, p := c.pool2DShape(name, af, k0, k1, s0, s1, p0, p1, grad, af)
	if p != nil {
		return p
	}
	if grad.Ne() != ne {
		return c.fail(name, ErrShape, fmt.Sprintf("grad %v must have Pool2D's result shape %v", grad.Ne(), ne), grad, af)
	}
	if p := c.ensure(name, TypeF32, af.Ne(), nil, grad, af); p != nil {
		return p
	}
	return c.call(name, func() *C.struct_ggml_tensor {
		return C.ggml_pool_2d_back(c.c, grad.c, af.c, C.enum_ggml_op_pool(op), C.int(k0), C.int(k1), C.int(s0), C.int(s1), C.float(p0), C.float(p1))
	}, grad, af)
}

// seqEvenRows reports whether every row of a (all ne1*ne2*ne3 of them) is
// reached as row i at i*nb1, as the kernels that walk rows by nb1 alone
// assume: dimensions 2 and 3 continue dimension 1's stride.
func seqEvenRows(a *Tensor) bool {
	ne, nb := a.Ne(), a.Nb()
	want := nb[1] * uint64(ne[1])
	for i := 2; i < MaxDims; i++ {
		if ne[i] > 1 && nb[i] != want {
			return false
		}
		want *= uint64(ne[i])
	}
	return true
}

// CrossEntropyLoss returns the mean over rows of the cross-entropy between
// the distributions b (the targets) and softmax(a) (a: logits), as one f32
// value (ggml_cross_entropy_loss):
//
//	loss = -1/rows * sum over rows r and i of b[i,r] * log_softmax(a[:,r])[i]
//
// a and b are f32 of the same shape, with adjacent elements in dimension 0
// and rows evenly spaced (dimensions 2 and 3 continuing dimension 1's
// stride; the row stride itself may be larger than a row). With no rows the
// loss is NaN.
func (c *Context) CrossEntropyLoss(a, b *Tensor) *Tensor {
	const op = "cross_entropy_loss"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	switch {
	case a.Type() != TypeF32 || b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("a and b must be f32, not %v and %v", a.Type(), b.Type()), a, b)
	case !sameShape(a, b):
		return c.fail(op, ErrShape, fmt.Sprintf("a %v and b %v must have the same shape", a.Ne(), b.Ne()), a, b)
	case !adjacent(a) || !adjacent(b):
		return c.fail(op, ErrShape, "a's and b's elements must be adjacent in dimension 0; copy with Cont", a, b)
	case !seqEvenRows(a) || !seqEvenRows(b):
		return c.fail(op, ErrShape, "ggml's kernel reaches row i at i*nb1: a's and b's dimensions 2 and 3 must continue dimension 1's stride; copy with Cont", a, b)
	case a.Ne()[0] > math.MaxInt32:
		return c.fail(op, ErrShape, "ggml's kernel counts a row's elements in 32-bit integers", a, b)
	}
	if p := c.ensure(op, TypeF32, [MaxDims]int64{1, 1, 1, 1}, nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_cross_entropy_loss(c.c, a.c, b.c) }, a, b)
}

// CrossEntropyLossBack returns the gradient of CrossEntropyLoss(a, b) with
// respect to a, given grad, the gradient of the loss (one f32 value)
// (ggml_cross_entropy_loss_back):
//
//	result[:, r] = (softmax(a[:, r]) - b[:, r]) * grad / rows
//
// a and b are f32 of the same shape and contiguous; the result has their
// shape.
func (c *Context) CrossEntropyLossBack(grad, a, b *Tensor) *Tensor {
	const op = "cross_entropy_loss_back"
	if p := c.begin(op, grad, a, b); p != nil {
		return p
	}
	switch {
	case grad.Type() != TypeF32 || a.Type() != TypeF32 || b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("grad, a and b must be f32, not %v, %v and %v", grad.Type(), a.Type(), b.Type()), grad, a, b)
	case grad.Ne() != [MaxDims]int64{1, 1, 1, 1}:
		return c.fail(op, ErrShape, fmt.Sprintf("grad must be a scalar, not %v", grad.Ne()), grad, a, b)
	case !sameShape(a, b):
		return c.fail(op, ErrShape, fmt.Sprintf("a %v and b %v must have the same shape", a.Ne(), b.Ne()), grad, a, b)
	case !dense(a) || !dense(b):
		return c.fail(op, ErrShape, "a and b must be contiguous; copy with Cont", grad, a, b)
	case a.Ne()[0] > math.MaxInt32:
		return c.fail(op, ErrShape, "ggml's kernel counts a row's elements in 32-bit integers", grad, a, b)
	}
	if p := c.ensure(op, TypeF32, a.Ne(), nil, grad, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_cross_entropy_loss_back(c.c, grad.c, a.c, b.c) }, grad, a, b)
}

// OptStepAdamW updates the parameter a in place by one AdamW step from its
// gradient grad and the moments m and v, which it updates too
// (ggml_opt_step_adamw). params is f32 with 7 elements: alpha, beta1,
// beta2, eps, weight decay, 1/(1-beta1^t), 1/(1-beta2^t). a must be marked
// SetParam; a, grad, m and v are contiguous f32 of one shape. The result
// is a view of a.
func (c *Context) OptStepAdamW(a, grad, m, v, params *Tensor) *Tensor {
	const op = "opt_step_adamw"
	in := []*Tensor{a, grad, m, v, params}
	if p := c.begin(op, in...); p != nil {
		return p
	}
	if !a.IsParam() {
		return c.fail(op, ErrInvalid, "a must be a parameter (SetParam)", in...)
	}
	if p := c.denseF32(op, in[:4], in...); p != nil {
		return p
	}
	if params.Type() != TypeF32 || params.Elements() != 7 || !dense(params) {
		return c.fail(op, ErrShape, fmt.Sprintf("params must be 7 contiguous f32 values, not %v %v", params.Type(), params.Ne()), in...)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), a, in...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_opt_step_adamw(c.c, a.c, grad.c, m.c, v.c, params.c) }, in...)
}

// OptStepSGD updates the parameter a in place by one SGD step with weight
// decay: a = a·(1 - alpha·wd) - alpha·grad (ggml_opt_step_sgd). params is
// f32 with 2 elements: alpha, wd. a must be marked SetParam; a and grad are
// contiguous f32 of one shape. The result is a view of a.
func (c *Context) OptStepSGD(a, grad, params *Tensor) *Tensor {
	const op = "opt_step_sgd"
	in := []*Tensor{a, grad, params}
	if p := c.begin(op, in...); p != nil {
		return p
	}
	if !a.IsParam() {
		return c.fail(op, ErrInvalid, "a must be a parameter (SetParam)", in...)
	}
	if p := c.denseF32(op, in[:2], in...); p != nil {
		return p
	}
	if params.Type() != TypeF32 || params.Elements() != 2 || !dense(params) {
		return c.fail(op, ErrShape, fmt.Sprintf("params must be 2 contiguous f32 values, not %v %v", params.Type(), params.Ne()), in...)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), a, in...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_opt_step_sgd(c.c, a.c, grad.c, params.c) }, in...)
}
