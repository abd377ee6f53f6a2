package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// adjacent reports whether a's elements are adjacent in dimension 0, which
// ggml's row kernels read as a plain array.
func adjacent(a *Tensor) bool { return a.Nb()[0] == a.Type().Size() }

// dense reports whether a's elements lie packed in ggml's order, with the
// strides a new tensor of its shape has: what "contiguous" means to the
// kernels that walk a tensor as one array or step rows by nb1. Stricter
// than ggml_is_contiguous, which skips dimensions of size 1 (a transposed
// [1 n m] passes it, and such kernels then read the wrong memory).
func dense(a *Tensor) bool {
	ne, nb := a.Ne(), a.Nb()
	t := a.Type()
	return nb[0] == t.Size() && nb[1] == nb[0]*uint64(ne[0]/t.BlockSize()) &&
		nb[2] == nb[1]*uint64(ne[1]) && nb[3] == nb[2]*uint64(ne[2])
}

// flatRows reports whether row r (of ne1·ne2·ne3) of a lies at byte r·nb1,
// as the CPU kernels that walk rows by one index assume (gelu, silu,
// leaky_relu, clamp, argsort, top_k, the GLUs). ggml_is_contiguous and
// ggml_is_contiguous_1 skip dimensions of size 1, so they pass tensors
// where it does not hold (a transposed [1 n m]), and those kernels then
// compute from the wrong rows.
func flatRows(a *Tensor) bool {
	ne, nb := a.Ne(), a.Nb()
	return (ne[2] <= 1 || nb[2] == nb[1]*uint64(ne[1])) &&
		(ne[3] <= 1 || nb[3] == nb[1]*uint64(ne[1])*uint64(ne[2]))
}

// rowsContiguous is what the row-walking kernels need: ggml_is_contiguous_1,
// adjacent elements, and flatRows.
func rowsContiguous(a *Tensor) bool {
	return bool(C.ggml_is_contiguous_1(a.c)) && adjacent(a) && flatRows(a)
}

// rowsApart reports whether a's rows do not overlap: nb1 is at least a
// row's size.
func rowsApart(a *Tensor) bool {
	rs := uint64(a.Ne()[0]) / uint64(a.Type().BlockSize()) * a.Type().Size()
	return a.Nb()[1] >= rs
}

// rowOp checks what the row kernels of sum, mean, argmax and the norms
// need: one of types, and adjacent elements in dimension 0.
func (c *Context) rowOp(op string, a *Tensor, types ...Type) *Tensor {
	ok := false
	for _, t := range types {
		ok = ok || a.Type() == t
	}
	if !ok {
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes %v, not %v", types, a.Type()), a)
	}
	if !adjacent(a) {
		return c.fail(op, ErrShape, "a's elements must be adjacent in dimension 0; copy it with Cont", a)
	}
	return nil
}

// Sum returns the sum of all elements of a, as a tensor of one element of
// a's type (ggml_sum).
func (c *Context) Sum(a *Tensor) *Tensor {
	const op = "sum"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.rowOp(op, a, TypeF32, TypeF16, TypeBF16); p != nil {
		return p
	}
	if p := c.ensure(op, a.Type(), [MaxDims]int64{1, 1, 1, 1}, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_sum(c.c, a.c) }, a)
}

// Mean returns the mean of each row of a: f32 of shape [1, ne1, ne2, ne3]
// (ggml_mean). a must be f32.
func (c *Context) Mean(a *Tensor) *Tensor {
	const op = "mean"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.rowOp(op, a, TypeF32); p != nil {
		return p
	}
	ne := a.Ne()
	ne[0] = 1
	if p := c.ensure(op, TypeF32, ne, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_mean(c.c, a.c) }, a)
}

// Argmax returns, for each row of the f32 matrix a, the index of its
// largest element: i32 of shape [ne1] (ggml_argmax).
func (c *Context) Argmax(a *Tensor) *Tensor {
	const op = "argmax"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.rowOp(op, a, TypeF32); p != nil {
		return p
	}
	ne := a.Ne()
	if ne[2] != 1 || ne[3] != 1 {
		return c.fail(op, ErrShape, fmt.Sprintf("a must be a matrix (ne2 = ne3 = 1), not %v", ne), a)
	}
	if ne[0] > math.MaxInt32 {
		return c.fail(op, ErrShape, fmt.Sprintf("rows of %d elements are longer than an i32 index reaches", ne[0]), a)
	}
	if p := c.ensure(op, TypeI32, [MaxDims]int64{ne[1], 1, 1, 1}, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_argmax(c.c, a.c) }, a)
}

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

// RMSNorm divides each row of a by its root mean square:
// x / sqrt(mean(x²) + eps) (ggml_rms_norm). a must be f32.
func (c *Context) RMSNorm(a *Tensor, eps float32) *Tensor {
	return c.norm("rms_norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_rms_norm(c.c, a.c, C.float(eps)) })
}

// L2Norm divides each row of a by its Euclidean length, or by eps where
// that is larger: x / max(sqrt(sum(x²)), eps) (ggml_l2_norm). a must be f32.
func (c *Context) L2Norm(a *Tensor, eps float32) *Tensor {
	return c.norm("l2_norm", a, eps, func() *C.struct_ggml_tensor { return C.ggml_l2_norm(c.c, a.c, C.float(eps)) })
}

// Repeat tiles a to b's shape: each b.ne[i] must be a multiple of a.ne[i]
// (ggml_repeat). The result has a's type and b's shape.
func (c *Context) Repeat(a, b *Tensor) *Tensor {
	const op = "repeat"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if p := c.checkTypes(op, a.Type(), a); p != nil {
		return p
	}
	if !canRepeat(a, b) {
		return c.fail(op, ErrShape, fmt.Sprintf("a %v cannot be tiled to b %v: each b.ne[i] must be a multiple of a.ne[i]", a.Ne(), b.Ne()), a, b)
	}
	if !adjacent(a) {
		return c.fail(op, ErrShape, "a's elements must be adjacent in dimension 0; copy it with Cont", a, b)
	}
	if p := c.ensure(op, a.Type(), b.Ne(), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_repeat(c.c, a.c, b.c) }, a, b)
}

// Concat joins a and b along dimension dim; the other dimensions must be
// equal, and the types the same (ggml_concat).
func (c *Context) Concat(a, b *Tensor, dim int) *Tensor {
	const op = "concat"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if dim < 0 || dim >= MaxDims {
		return c.fail(op, ErrInvalid, fmt.Sprintf("dim %d is not 0 to %d", dim, MaxDims-1), a, b)
	}
	if p := c.checkTypes(op, a.Type(), a, b); p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	ne := an
	for d := range MaxDims {
		if d == dim {
			ne[d] = an[d] + bn[d]
		} else if an[d] != bn[d] {
			return c.fail(op, ErrShape, fmt.Sprintf("a.ne%d (%d) != b.ne%d (%d): only dimension %d may differ", d, an[d], d, bn[d], dim), a, b)
		}
	}
	if p := c.ensure(op, a.Type(), ne, nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_concat(c.c, a.c, b.c, C.int(dim)) }, a, b)
}
