package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// This file holds the rest of ggml.h's constructors: the backward ops that
// training graphs use, the optimizer steps, and a few small ops (acc,
// add_cast, diag, tri, fill, cont_4d, swiglu_oai, soft_max sinks).

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

// Acc returns a copy of a with b added into it: b's element (i0, i1, i2,
// i3) is added at byte offset + i0*4 + i1*nb1 + i2*nb2 + i3*nb3 of a's data
// (ggml_acc). a and b are f32, a contiguous; the rules of Set hold.
func (c *Context) Acc(a, b *Tensor, nb1, nb2, nb3, offset uint64) *Tensor {
	return c.acc(a, b, nb1, nb2, nb3, offset, false)
}

// AccInPlace is Acc computed into a (ggml_acc_inplace).
func (c *Context) AccInPlace(a, b *Tensor, nb1, nb2, nb3, offset uint64) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.acc(a, b, nb1, nb2, nb3, offset, true) })
}

func (c *Context) acc(a, b *Tensor, nb1, nb2, nb3, offset uint64, inPlace bool) *Tensor {
	const op = "acc"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if a.Type() != TypeF32 {
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32, not %v", a.Type()), a, b)
	}
	// The rules are Set's: f32 here.
	if p := c.setRules(op, a, b, nb1, nb2, nb3, offset); p != nil {
		return p
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		if inPlace {
			return C.ggml_acc_inplace(c.c, a.c, b.c, C.size_t(nb1), C.size_t(nb2), C.size_t(nb3), C.size_t(offset))
		}
		return C.ggml_acc(c.c, a.c, b.c, C.size_t(nb1), C.size_t(nb2), C.size_t(nb3), C.size_t(offset))
	}, a, b)
}

// AddCast returns a + b as a tensor of type t (ggml_add_cast): a is f16 or
// bf16 (b of a's type broadcast along rows with t a's type, or b f32 with t
// f32 or a's type) or quantized with a conversion to f32 (t then a type the
// CPU converts f32 to, b f32 of a's shape).
func (c *Context) AddCast(a, b *Tensor, t Type) *Tensor {
	const op = "add_cast"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	at := a.Type()
	if !t.Valid() {
		return c.fail(op, ErrType, fmt.Sprintf("%v is not a type of this ggml", t), a, b)
	}
	if p := c.checkTypes(op, t, a, b); p != nil {
		return p
	}
	switch {
	case !at.IsQuantized() && at != TypeF16 && at != TypeBF16:
		return c.fail(op, ErrType, fmt.Sprintf("ggml_add_cast takes a of f16, bf16 or a quantized type, not %v", at), a, b)
	case !adjacent(a) || !adjacent(b):
		return c.fail(op, ErrShape, "a's and b's elements must be adjacent in dimension 0; copy them with Cont", a, b)
	case b.Ne()[0] != a.Ne()[0] || !canRepeat(b, a):
		return c.fail(op, ErrShape, fmt.Sprintf("b %v must have a's rows (ne0 %d) and broadcast to a %v", b.Ne(), a.Ne()[0], a.Ne()), a, b)
	case at.IsQuantized():
		if !sameShape(a, b) {
			return c.fail(op, ErrShape, "with a quantized, b must have a's shape", a, b)
		}
		if a.Ne()[0]%t.BlockSize() != 0 {
			return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) must be a multiple of %v's block size", a.Ne()[0], t), a, b)
		}
	}
	if p := c.ensure(op, t, a.Ne(), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_add_cast(c.c, a.c, b.c, C.enum_ggml_type(t)) }, a, b)
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

// Diag turns each row vector of a (a.ne1 == 1) into a diagonal matrix: the
// result is [ne0, ne0, ne2, ne3] (ggml_diag). a is f32 with adjacent
// elements.
func (c *Context) Diag(a *Tensor) *Tensor {
	const op = "diag"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.rowOp(op, a, TypeF32); p != nil {
		return p
	}
	an := a.Ne()
	if an[1] != 1 {
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne1 (%d) must be 1", an[1]), a)
	}
	if p := c.ensure(op, a.Type(), [MaxDims]int64{an[0], an[0], an[2], an[3]}, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_diag(c.c, a.c) }, a)
}

// TriType says which triangle Tri keeps (enum ggml_tri_type).
type TriType int

// Triangles: element (i0, i1) is kept where i0 < i1 (TriLower), i0 <= i1,
// i0 > i1, or i0 >= i1; the rest become 0 (GGML_TRI_TYPE_*).
const (
	TriLower     TriType = 3
	TriLowerDiag TriType = 2
	TriUpper     TriType = 1
	TriUpperDiag TriType = 0
)

// Tri keeps one triangle of each square matrix of a and zeroes the rest
// (ggml_tri). a is f32, contiguous, with ne0 == ne1.
func (c *Context) Tri(a *Tensor, which TriType) *Tensor {
	const op = "tri"
	if p := c.begin(op, a); p != nil {
		return p
	}
	switch {
	case which != TriLower && which != TriLowerDiag && which != TriUpper && which != TriUpperDiag:
		return c.fail(op, ErrInvalid, fmt.Sprintf("triangle %d is not a TriType", which), a)
	case a.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32, not %v", a.Type()), a)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a)
	case a.Ne()[0] != a.Ne()[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) != a.ne1 (%d): the matrices must be square", a.Ne()[0], a.Ne()[1]), a)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_tri(c.c, a.c, C.enum_ggml_tri_type(which)) }, a)
}

// Fill returns a tensor of a's shape with every element v (ggml_fill). a
// is f32 and contiguous; only its shape matters.
func (c *Context) Fill(a *Tensor, v float32) *Tensor { return c.fill(a, v, false) }

// FillInPlace sets every element of a to v (ggml_fill_inplace).
func (c *Context) FillInPlace(a *Tensor, v float32) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.fill(a, v, true) })
}

func (c *Context) fill(a *Tensor, v float32, inPlace bool) *Tensor {
	const op = "fill"
	if p := c.begin(op, a); p != nil {
		return p
	}
	switch {
	case a.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32, not %v", a.Type()), a)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		if inPlace {
			return C.ggml_fill_inplace(c.c, a.c, C.float(v))
		}
		return C.ggml_fill(c.c, a.c, C.float(v))
	}, a)
}

// ContND copies a into a new contiguous tensor of shape ne (one to four
// dimensions) with a's element count (ggml_cont_1d .. ggml_cont_4d).
func (c *Context) ContND(a *Tensor, ne ...int64) *Tensor {
	const op = "cont"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if len(ne) < 1 || len(ne) > MaxDims {
		return c.fail(op, ErrShape, fmt.Sprintf("%d dimensions given, ggml takes 1 to %d", len(ne), MaxDims), a)
	}
	shape := [MaxDims]int64{1, 1, 1, 1}
	n := int64(1)
	for i, v := range ne {
		if v < 0 {
			return c.fail(op, ErrShape, fmt.Sprintf("ne%d (%d) must be >= 0", i, v), a)
		}
		shape[i] = v
		if v != 0 && n > math.MaxInt64/v {
			return c.fail(op, ErrShape, fmt.Sprintf("shape %v overflows", ne), a)
		}
		n *= v
	}
	if n != a.Elements() {
		return c.fail(op, ErrShape, fmt.Sprintf("shape %v holds %d elements, a %d", ne, n, a.Elements()), a)
	}
	if a.Type().IsQuantized() && shape[0]%a.Type().BlockSize() != 0 {
		return c.fail(op, ErrShape, fmt.Sprintf("ne0 (%d) must be a multiple of %v's block size", shape[0], a.Type()), a)
	}
	// ggml copies any type to itself (ggml_compute_forward_dup_bytes).
	if p := c.ensure(op, a.Type(), shape, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_cont_4d(c.c, a.c, C.int64_t(shape[0]), C.int64_t(shape[1]), C.int64_t(shape[2]), C.int64_t(shape[3]))
	}, a)
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
