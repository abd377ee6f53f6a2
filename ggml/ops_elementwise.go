package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// The element-wise arithmetic of ggml.h: add, add_cast, add_id, add1, acc,
// sub, mul, div, scale and clamp, each in-place variant beside its op. The
// binary ops broadcast (repeat) b to a's shape.

func (c *Context) binary(op string, a, b *Tensor, f func() *C.struct_ggml_tensor) *Tensor {
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if p := c.checkTypes(op, a.Type(), a, b); p != nil {
		return p
	}
	if !canRepeat(b, a) {
		return c.fail(op, ErrShape, fmt.Sprintf("b %v cannot be broadcast to a %v: each a.ne[i] must be a multiple of b.ne[i]", b.Ne(), a.Ne()), a, b)
	}
	if a.Nb()[0] != a.Type().Size() {
		return c.fail(op, ErrShape, fmt.Sprintf("a's elements must be adjacent in dimension 0 (nb0 %d != type size %d); copy it with Cont", a.Nb()[0], a.Type().Size()), a, b)
	}
	if b.Nb()[0] != b.Type().Size() && !sameShape(a, b) {
		return c.fail(op, ErrShape, "b with non-adjacent elements in dimension 0 cannot be broadcast: it must have a's shape, or be copied with Cont", a, b)
	}
	if a.Type().IsQuantized() && (!sameShape(a, b) || b.Nb()[0] != b.Type().Size()) {
		return c.fail(op, ErrShape, "with a quantized, b must have a's shape and adjacent elements (ggml's kernel does not broadcast)", a, b)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a, b); p != nil {
		return p
	}
	return c.call(op, f, a, b)
}

// Add returns a + b, element-wise; b is broadcast (repeated) to a's shape
// (ggml_add). a and b are f32, f16 or bf16 with b of a's type or f32; or a
// is of a quantized type the CPU converts to f32 and back (not q8_1, q8_K
// or the iq1, iq2 and iq3 types), with b f32 of a's shape. Sub, Mul and
// Div take the float types only.
func (c *Context) Add(a, b *Tensor) *Tensor {
	return c.binary("add", a, b, func() *C.struct_ggml_tensor { return C.ggml_add(c.c, a.c, b.c) })
}

// AddInPlace is Add computed into a (ggml_add_inplace).
func (c *Context) AddInPlace(a, b *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.binary("add", a, b, func() *C.struct_ggml_tensor { return C.ggml_add_inplace(c.c, a.c, b.c) })
	})
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
		return c.invalidType(op, t, a, b)
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

// AddID returns a plus, for each row, the row of b that ids selects
// (ggml_add_id): result[:, i1, i2, i3] = a[:, i1, i2, i3] + b[:, ids[i1,
// i2]], the per-expert bias of a mixture of experts. a and b are f32 with
// adjacent elements in dimension 0, b a matrix with b.ne0 == a.ne0; ids is
// an i32 matrix with ids.ne0 == a.ne1 and ids.ne1 == a.ne2 (a's dimension
// 3 reuses it). The result has a's shape.
//
// Every id must lie in [0, b.ne1): ggml's kernel asserts it on its worker
// threads, which ends the process. Ids that are inputs in host memory are
// checked before compute (ErrInvalid); ids that the graph computes are
// accepted only when bounded by construction (an argsort or top-k, through
// views).
func (c *Context) AddID(a, b, ids *Tensor) *Tensor {
	const op = "add_id"
	if p := c.begin(op, a, b, ids); p != nil {
		return p
	}
	an, bn, in := a.Ne(), b.Ne(), ids.Ne()
	switch {
	case a.Type() != TypeF32 || b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes a and b of f32, not %v and %v", a.Type(), b.Type()), a, b, ids)
	case ids.Type() != TypeI32:
		return c.fail(op, ErrType, fmt.Sprintf("ids must be i32, not %v", ids.Type()), a, b, ids)
	case an[0] != bn[0]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) != b.ne0 (%d)", an[0], bn[0]), a, b, ids)
	case bn[2] != 1 || bn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("b must be a matrix, one row per id (ggml's kernel reads its first matrix only), not %v", bn), a, b, ids)
	case in[2] != 1 || in[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("ids must be a matrix, not %v", in), a, b, ids)
	case an[1] != in[0]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne1 (%d) != ids.ne0 (%d): one id per row of a", an[1], in[0]), a, b, ids)
	case an[2] != in[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne2 (%d) != ids.ne1 (%d)", an[2], in[1]), a, b, ids)
	case !adjacent(a) || !adjacent(b):
		return c.fail(op, ErrShape, "a's and b's elements must be adjacent in dimension 0; copy with Cont", a, b, ids)
	}
	if rows, ok := seqMul(an[1], an[2], an[3]); !ok || rows > math.MaxInt32 {
		return c.fail(op, ErrShape, fmt.Sprintf("a %v: ggml's kernel counts its rows in 32-bit integers", an), a, b, ids)
	}
	if p := c.seqIndices(op, "rows of b", ids, bn[1], a, b, ids); p != nil {
		return p
	}
	if p := c.ensure(op, TypeF32, an, nil, a, b, ids); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_add_id(c.c, a.c, b.c, ids.c) }, a, b, ids)
}

// add_id's ids (src[2]) name rows of b (src[1]).
func init() {
	registerIndexCheck(C.GGML_OP_ADD_ID, "add_id", func(n *C.struct_ggml_tensor) (*C.struct_ggml_tensor, int64) {
		return n.src[2], int64(n.src[1].ne[1])
	})
}

// Add1 returns a + b, b a tensor of one element added to every element of
// a (ggml_add1). a is contiguous: f32 with b f32, f16 or bf16 with b f32 or
// of a's type, or quantized with b f32 when the CPU converts a's type to
// f32 and back (the sum is requantized; a.ne3 must then be 1).
func (c *Context) Add1(a, b *Tensor) *Tensor {
	return c.add1(a, b, false)
}

// Add1InPlace is Add1 computed into a (ggml_add1_inplace).
func (c *Context) Add1InPlace(a, b *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor { return c.add1(a, b, true) })
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

// Sub returns a - b, element-wise, b broadcast to a's shape (ggml_sub).
func (c *Context) Sub(a, b *Tensor) *Tensor {
	return c.binary("sub", a, b, func() *C.struct_ggml_tensor { return C.ggml_sub(c.c, a.c, b.c) })
}

// SubInPlace is Sub computed into a (ggml_sub_inplace).
func (c *Context) SubInPlace(a, b *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.binary("sub", a, b, func() *C.struct_ggml_tensor { return C.ggml_sub_inplace(c.c, a.c, b.c) })
	})
}

// Mul returns a * b, element-wise, b broadcast to a's shape (ggml_mul).
func (c *Context) Mul(a, b *Tensor) *Tensor {
	return c.binary("mul", a, b, func() *C.struct_ggml_tensor { return C.ggml_mul(c.c, a.c, b.c) })
}

// MulInPlace is Mul computed into a (ggml_mul_inplace).
func (c *Context) MulInPlace(a, b *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.binary("mul", a, b, func() *C.struct_ggml_tensor { return C.ggml_mul_inplace(c.c, a.c, b.c) })
	})
}

// Div returns a / b, element-wise, b broadcast to a's shape (ggml_div).
func (c *Context) Div(a, b *Tensor) *Tensor {
	return c.binary("div", a, b, func() *C.struct_ggml_tensor { return C.ggml_div(c.c, a.c, b.c) })
}

// DivInPlace is Div computed into a (ggml_div_inplace).
func (c *Context) DivInPlace(a, b *Tensor) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.binary("div", a, b, func() *C.struct_ggml_tensor { return C.ggml_div_inplace(c.c, a.c, b.c) })
	})
}

// Scale returns a * s (ggml_scale). a must be f32 and contiguous.
func (c *Context) Scale(a *Tensor, s float32) *Tensor {
	return c.scale("scale", a, func() *C.struct_ggml_tensor { return C.ggml_scale(c.c, a.c, C.float(s)) })
}

// ScaleInPlace is Scale computed into a (ggml_scale_inplace).
func (c *Context) ScaleInPlace(a *Tensor, s float32) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.scale("scale", a, func() *C.struct_ggml_tensor { return C.ggml_scale_inplace(c.c, a.c, C.float(s)) })
	})
}

// ScaleBias returns a*s + b (ggml_scale_bias). a must be f32 and contiguous.
func (c *Context) ScaleBias(a *Tensor, s, b float32) *Tensor {
	return c.scale("scale_bias", a, func() *C.struct_ggml_tensor { return C.ggml_scale_bias(c.c, a.c, C.float(s), C.float(b)) })
}

// ScaleBiasInPlace is ScaleBias computed into a (ggml_scale_bias_inplace).
func (c *Context) ScaleBiasInPlace(a *Tensor, s, b float32) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.scale("scale_bias", a, func() *C.struct_ggml_tensor { return C.ggml_scale_bias_inplace(c.c, a.c, C.float(s), C.float(b)) })
	})
}

func (c *Context) scale(op string, a *Tensor, f func() *C.struct_ggml_tensor) *Tensor {
	if p := c.begin(op, a); p != nil {
		return p
	}
	if a.Type() != TypeF32 {
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 only, not %v", a.Type()), a)
	}
	if !dense(a) { // ggml asserts padded 1-d rows, its kernel contiguity
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, f, a)
}

// Clamp returns a with every element limited to [lo, hi] (ggml's
// GGML_OP_CLAMP). Unlike ggml_clamp, whose result is a view of a (computing
// it overwrites a), the result is a tensor of its own; ClampInPlace is
// ggml_clamp itself. a is f32 or f16, contiguous in dimensions >= 1 with
// adjacent elements.
func (c *Context) Clamp(a *Tensor, lo, hi float32) *Tensor {
	return c.clamp("clamp", a, lo, hi, false)
}

// ClampInPlace is Clamp computed into a's own memory: the result is a view
// of a (ggml_clamp).
func (c *Context) ClampInPlace(a *Tensor, lo, hi float32) *Tensor {
	return c.clamp("clamp", a, lo, hi, true)
}

func (c *Context) clamp(op string, a *Tensor, lo, hi float32, inPlace bool) *Tensor {
	if p := c.begin(op, a); p != nil {
		return p
	}
	switch {
	case a.Type() != TypeF32 && a.Type() != TypeF16:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 or f16, not %v", a.Type()), a)
	case !rowsContiguous(a):
		return c.fail(op, ErrShape, "a must be contiguous in dimensions >= 1 with adjacent elements in dimension 0; copy it with Cont", a)
	case math.IsNaN(float64(lo)) || math.IsNaN(float64(hi)):
		return c.fail(op, ErrInvalid, fmt.Sprintf("bounds %g and %g must not be NaN", lo, hi), a)
	}
	if inPlace {
		if p := c.ensure(op, a.Type(), a.Ne(), a, a); p != nil {
			return p
		}
		return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_clamp(c.c, a.c, C.float(lo), C.float(hi)) }, a)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.goggml_clamp_new(c.c, a.c, C.float(lo), C.float(hi)) }, a)
}
