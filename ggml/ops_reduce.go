package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// The reductions of ggml.h (sum, sum_rows, cumsum, mean, argmax,
// count_equal) and the sorts (argsort, argsort_top_k, top_k).

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

// SumRows returns the sum of each row of a: shape [1, ne1, ne2, ne3]
// (ggml_sum_rows). a must be f32.
func (c *Context) SumRows(a *Tensor) *Tensor {
	const op = "sum_rows"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if a.Type() != TypeF32 {
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 only, not %v", a.Type()), a)
	}
	if a.Nb()[0] != a.Type().Size() {
		return c.fail(op, ErrShape, "a's elements must be adjacent in dimension 0; copy it with Cont", a)
	}
	ne := a.Ne()
	ne[0] = 1
	if p := c.ensure(op, a.Type(), ne, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_sum_rows(c.c, a.c) }, a)
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

// ArgsortTopK returns, for each row of a, the indices (i32) of its k
// largest elements, largest first: a view of the first k columns of a
// descending Argsort (ggml_argsort_top_k), so not contiguous: Cont it to
// read it. a is f32 with adjacent elements.
func (c *Context) ArgsortTopK(a *Tensor, k int) *Tensor {
	const op = "argsort_top_k"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.topKRules(op, a, k); p != nil {
		return p
	}
	// An argsort of a's shape, then a view of it.
	if p := c.ensure(op, TypeI32, a.Ne(), nil, a); p != nil {
		return p
	}
	if p := c.ensure(op, TypeI32, a.Ne(), a, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_argsort_top_k(c.c, a.c, C.int(k)) }, a)
}

// TopK returns, for each row of a, the indices (i32) of its k largest
// elements, in no particular order: ggml's kernel does not sort them and
// swaps the first two on purpose (ggml_top_k). a is f32, contiguous in
// dimensions >= 1 with adjacent elements; 1 <= k <= a.ne0. ArgsortTopK
// returns them sorted.
func (c *Context) TopK(a *Tensor, k int) *Tensor {
	const op = "top_k"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.topKRules(op, a, k); p != nil {
		return p
	}
	if !rowsContiguous(a) {
		return c.fail(op, ErrShape, "a's rows must be contiguous (ggml_is_contiguous_1, and one stride apart); copy it with Cont", a)
	}
	ne := a.Ne()
	ne[0] = int64(k)
	if p := c.ensure(op, TypeI32, ne, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_top_k(c.c, a.c, C.int(k)) }, a)
}

func (c *Context) topKRules(op string, a *Tensor, k int) *Tensor {
	if p := c.rowOp(op, a, TypeF32); p != nil {
		return p
	}
	if !flatRows(a) {
		return c.fail(op, ErrShape, "a's rows must be one stride apart; copy it with Cont", a)
	}
	if k < 1 || int64(k) > a.Ne()[0] {
		return c.fail(op, ErrInvalid, fmt.Sprintf("k %d must be 1 to a.ne0 (%d)", k, a.Ne()[0]), a)
	}
	return nil
}
