package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// DiagMaskInf sets to -inf the elements of each matrix of a above the
// diagonal shifted by nPast: element (i, j) with i > j + nPast
// (ggml_diag_mask_inf), the causal mask of attention. a must be f32 and
// contiguous.
func (c *Context) DiagMaskInf(a *Tensor, nPast int) *Tensor {
	return c.diagMask("diag_mask_inf", a, nPast, func() *C.struct_ggml_tensor { return C.ggml_diag_mask_inf(c.c, a.c, C.int(nPast)) })
}

// DiagMaskZero is DiagMaskInf with 0 instead of -inf (ggml_diag_mask_zero).
func (c *Context) DiagMaskZero(a *Tensor, nPast int) *Tensor {
	return c.diagMask("diag_mask_zero", a, nPast, func() *C.struct_ggml_tensor { return C.ggml_diag_mask_zero(c.c, a.c, C.int(nPast)) })
}

func (c *Context) diagMask(op string, a *Tensor, nPast int, f func() *C.struct_ggml_tensor) *Tensor {
	if p := c.begin(op, a); p != nil {
		return p
	}
	switch {
	case a.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 only, not %v", a.Type()), a)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a)
	case nPast < 0 || nPast > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("nPast %d must be >= 0", nPast), a)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, f, a)
}

// LeakyRelu returns a where a > 0, else slope*a (ggml_leaky_relu). a must
// be f32 or f16 with contiguous rows.
func (c *Context) LeakyRelu(a *Tensor, slope float32) *Tensor {
	return c.leakyRelu(a, slope, false)
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

// SortOrder is the order of Argsort (enum ggml_sort_order).
type SortOrder int

// Sort orders (GGML_SORT_ORDER_*).
const (
	SortAsc  SortOrder = 0
	SortDesc SortOrder = 1
)

// Argsort returns, for each row of a, the indices that sort it: i32 of a's
// shape (ggml_argsort). a is f32 or i32 with adjacent elements.
func (c *Context) Argsort(a *Tensor, order SortOrder) *Tensor {
	const op = "argsort"
	if p := c.begin(op, a); p != nil {
		return p
	}
	switch {
	case order != SortAsc && order != SortDesc:
		return c.fail(op, ErrInvalid, fmt.Sprintf("unknown sort order %d", order), a)
	case a.Type() != TypeF32 && a.Type() != TypeI32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 or i32, not %v", a.Type()), a)
	case a.Type() == TypeI32 && C.GOGGML_ARGSORT_I32 == 0:
		return c.fail(op, ErrType, "the linked ggml (upstream) sorts f32 only; the embedded provider also sorts i32", a)
	case !adjacent(a) || !flatRows(a):
		return c.fail(op, ErrShape, "a's elements must be adjacent in dimension 0, its rows one stride apart; copy it with Cont", a)
	case a.Ne()[0] > math.MaxInt32:
		return c.fail(op, ErrShape, "rows are longer than an i32 index reaches", a)
	}
	if p := c.ensure(op, TypeI32, a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_argsort(c.c, a.c, C.enum_ggml_sort_order(order)) }, a)
}

// Cumsum returns the running sum along each row of a (ggml_cumsum). a must
// be f32 with adjacent elements.
func (c *Context) Cumsum(a *Tensor) *Tensor {
	const op = "cumsum"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.rowOp(op, a, TypeF32); p != nil {
		return p
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_cumsum(c.c, a.c) }, a)
}

// CountEqual returns how many elements of a and b are equal, as one i64
// (ggml_count_equal). a and b are i32 of the same shape.
func (c *Context) CountEqual(a, b *Tensor) *Tensor {
	const op = "count_equal"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	switch {
	case a.Type() != TypeI32 || b.Type() != TypeI32:
		return c.fail(op, ErrType, fmt.Sprintf("a and b must be i32, not %v and %v", a.Type(), b.Type()), a, b)
	case !sameShape(a, b):
		return c.fail(op, ErrShape, "a and b must have the same shape", a, b)
	}
	if p := c.ensure(op, TypeI64, [MaxDims]int64{1, 1, 1, 1}, nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_count_equal(c.c, a.c, b.c) }, a, b)
}

// Pad appends p0..p3 zeros at the end of each dimension of a (ggml_pad).
// a must be f32 with adjacent elements.
func (c *Context) Pad(a *Tensor, p0, p1, p2, p3 int) *Tensor {
	const op = "pad"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.rowOp(op, a, TypeF32); p != nil {
		return p
	}
	pads := [MaxDims]int{p0, p1, p2, p3}
	ne := a.Ne()
	for i, p := range pads {
		if p < 0 || p > math.MaxInt32 {
			return c.fail(op, ErrInvalid, fmt.Sprintf("padding %d of dimension %d must be >= 0", p, i), a)
		}
		ne[i] += int64(p)
	}
	if p := c.ensure(op, a.Type(), ne, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_pad(c.c, a.c, C.int(p0), C.int(p1), C.int(p2), C.int(p3))
	}, a)
}

// Arange returns the f32 vector start, start+step, ... up to but not
// including stop: ceil((stop-start)/step) values, computed in float32 as
// ggml does (ggml_arange). It needs finite arguments, stop > start and
// step > 0.
func (c *Context) Arange(start, stop, step float32) *Tensor {
	const op = "arange"
	if p := c.begin(op); p != nil {
		return p
	}
	finite := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	switch {
	case !finite(start) || !finite(stop) || !finite(step):
		return c.fail(op, ErrInvalid, fmt.Sprintf("start %g, stop %g and step %g must be finite", start, stop, step))
	case !(stop > start):
		return c.fail(op, ErrInvalid, fmt.Sprintf("stop %g must be > start %g", stop, start))
	case !(step > 0):
		return c.fail(op, ErrInvalid, fmt.Sprintf("step %g must be > 0", step))
	}
	n := math.Ceil(float64((stop - start) / step)) // float32 division, as in C
	if !(n >= 1 && n <= 1<<40) {
		return c.fail(op, ErrShape, fmt.Sprintf("(stop-start)/step gives %g values: must be 1 to 2^40", n))
	}
	if p := c.ensure(op, TypeF32, [MaxDims]int64{int64(n), 1, 1, 1}, nil); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_arange(c.c, C.float(start), C.float(stop), C.float(step)) })
}

// Add1 returns a + b, b a tensor of one element added to every element of
// a (ggml_add1). a is contiguous: f32 with b f32, f16 or bf16 with b f32 or
// of a's type, or quantized with b f32 when the CPU converts a's type to
// f32 and back (the sum is requantized; a.ne3 must then be 1).
func (c *Context) Add1(a, b *Tensor) *Tensor {
	return c.add1(a, b, false)
}

func (c *Context) add1(a, b *Tensor, inPlace bool) *Tensor {
	const op = "add1"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if p := c.checkTypes(op, a.Type(), a, b); p != nil {
		return p
	}
	at := a.Type()
	switch {
	case b.Elements() != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("b must hold one element, not %d", b.Elements()), a, b)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a, b)
	case at.IsQuantized() && a.Ne()[3] != 1:
		// ggml_compute_forward_add1_q_f32 places row (i1, i2, i3) at
		// i1*nb1 + i2*nb2 + i3*nb0: rows of i3 > 0 land on others.
		return c.fail(op, ErrShape, fmt.Sprintf("with a quantized a, a.ne3 (%d) must be 1: ggml's kernel misplaces the rows of dimension 3", a.Ne()[3]), a, b)
	}
	if p := c.ensure(op, at, a.Ne(), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		if inPlace {
			return C.goggml_add1_inplace(c.c, a.c, b.c)
		}
		return C.goggml_add1(c.c, a.c, b.c)
	}, a, b)
}
