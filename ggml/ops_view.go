package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// This file holds the copy, set and rearranging ops: clamp, top_k, repeat_4d,
// pad_ext, roll, cast, dup, set, set_rows and group_norm.

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

// Repeat4D tiles a to the shape [ne0, ne1, ne2, ne3]: each ne_i must be a
// multiple of a.ne[i] (ggml_repeat_4d). Repeat takes the shape from a
// tensor instead.
func (c *Context) Repeat4D(a *Tensor, ne0, ne1, ne2, ne3 int64) *Tensor {
	const op = "repeat_4d"
	if p := c.begin(op, a); p != nil {
		return p
	}
	ne := [MaxDims]int64{ne0, ne1, ne2, ne3}
	an := a.Ne()
	if p := c.checkTypes(op, a.Type(), a); p != nil {
		return p
	}
	for i := range MaxDims {
		if ne[i] < 0 {
			return c.fail(op, ErrShape, fmt.Sprintf("ne%d (%d) must be >= 0", i, ne[i]), a)
		}
		if isEmpty(a) {
			if ne[i] == 0 {
				break
			}
			if i == MaxDims-1 {
				return c.fail(op, ErrShape, fmt.Sprintf("a %v is empty: the shape %v must be empty too", an, ne), a)
			}
			continue
		}
		if ne[i]%an[i] != 0 {
			return c.fail(op, ErrShape, fmt.Sprintf("ne%d (%d) must be a multiple of a.ne%d (%d)", i, ne[i], i, an[i]), a)
		}
	}
	if !adjacent(a) {
		return c.fail(op, ErrShape, "a's elements must be adjacent in dimension 0; copy it with Cont", a)
	}
	if p := c.ensure(op, a.Type(), ne, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_repeat_4d(c.c, a.c, C.int64_t(ne0), C.int64_t(ne1), C.int64_t(ne2), C.int64_t(ne3))
	}, a)
}

// Padding is the number of elements PadExt adds before (left) and after
// (right) each dimension.
type Padding [MaxDims][2]int

// PadExt pads each dimension i of a with p[i][0] zeros before and p[i][1]
// zeros after (ggml_pad_ext). a must be f32 with adjacent elements.
func (c *Context) PadExt(a *Tensor, p Padding) *Tensor {
	return c.padExt("pad_ext", a, p, false)
}

// PadCircular pads like PadExt but wraps around: the padding repeats a's
// elements from the other end, as on a torus (ggml_pad_ext_circular).
func (c *Context) PadCircular(a *Tensor, p Padding) *Tensor {
	return c.padExt("pad_circular", a, p, true)
}

func (c *Context) padExt(op string, a *Tensor, p Padding, circular bool) *Tensor {
	if q := c.begin(op, a); q != nil {
		return q
	}
	if q := c.rowOp(op, a, TypeF32); q != nil {
		return q
	}
	if circular && isEmpty(a) {
		return c.fail(op, ErrShape, "a is empty: there is nothing to wrap around", a)
	}
	ne := a.Ne()
	for i := range MaxDims {
		for j, v := range p[i] {
			if v < 0 || v > math.MaxInt32 {
				return c.fail(op, ErrInvalid, fmt.Sprintf("padding %d of dimension %d (side %d) must be 0 to 2^31-1", v, i, j), a)
			}
			ne[i] += int64(v)
		}
	}
	if q := c.ensure(op, a.Type(), ne, nil, a); q != nil {
		return q
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		if circular {
			return C.ggml_pad_ext_circular(c.c, a.c, C.int(p[0][0]), C.int(p[0][1]), C.int(p[1][0]), C.int(p[1][1]),
				C.int(p[2][0]), C.int(p[2][1]), C.int(p[3][0]), C.int(p[3][1]))
		}
		return C.ggml_pad_ext(c.c, a.c, C.int(p[0][0]), C.int(p[0][1]), C.int(p[1][0]), C.int(p[1][1]),
			C.int(p[2][0]), C.int(p[2][1]), C.int(p[3][0]), C.int(p[3][1]))
	}, a)
}

// Roll shifts a's elements cyclically by s0..s3 positions along each
// dimension: result[i] = a[(i - s) mod ne] (ggml_roll). |s_i| must be below
// a.ne[i]; a must be f32 with adjacent elements.
func (c *Context) Roll(a *Tensor, s0, s1, s2, s3 int) *Tensor {
	const op = "roll"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.rowOp(op, a, TypeF32); p != nil {
		return p
	}
	an := a.Ne()
	for i, s := range [MaxDims]int{s0, s1, s2, s3} {
		if s <= math.MinInt32 || s > math.MaxInt32 || int64(max(s, -s)) >= an[i] {
			return c.fail(op, ErrInvalid, fmt.Sprintf("shift %d of dimension %d: |shift| must be below a.ne%d (%d)", s, i, i, an[i]), a)
		}
	}
	if p := c.ensure(op, a.Type(), an, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_roll(c.c, a.c, C.int(s0), C.int(s1), C.int(s2), C.int(s3))
	}, a)
}

// Cast returns a converted to type t, in a new contiguous tensor of a's
// shape (ggml_cast). The conversions are Cpy's.
func (c *Context) Cast(a *Tensor, t Type) *Tensor {
	const op = "cast"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if !t.Valid() {
		return c.fail(op, ErrType, fmt.Sprintf("%v is not a type of this ggml", t), a)
	}
	if p := c.copyRules(op, a, t, nil, a); p != nil {
		return p
	}
	if p := c.ensure(op, t, a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_cast(c.c, a.c, C.enum_ggml_type(t)) }, a)
}

// copyRules checks a copy of a converted to type to, into dst (Cpy) or,
// when dst is nil, into a new contiguous tensor (Cast, Dup).
func (c *Context) copyRules(op string, a *Tensor, to Type, dst *Tensor, inputs ...*Tensor) *Tensor {
	if p := c.checkTypeList(op, to, []Type{a.Type()}, inputs...); p != nil {
		return p
	}
	if to.IsQuantized() && a.Type() != to {
		if !a.IsContiguous() || (dst != nil && !dst.IsContiguous()) {
			return c.fail(op, ErrShape, "quantizing copies need a (and the destination) contiguous; copy a with Cont first", inputs...)
		}
		// ggml quantizes a row of a at a time.
		if bs := to.BlockSize(); a.Ne()[0]%bs != 0 {
			return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) must be a multiple of %v's block size %d: a is quantized a row at a time", a.Ne()[0], to, bs), inputs...)
		}
		// It converts each row to f32 in a work buffer that ggml sizes by
		// the destination's rows (ggml_graph_plan): a longer row of a
		// overflows it (a segfault).
		if dst != nil && a.Ne()[0] > dst.Ne()[0] {
			return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) > the destination's ne0 (%d): ggml converts a's rows in a buffer sized by the destination's rows; reshape the destination", a.Ne()[0], dst.Ne()[0]), inputs...)
		}
	}
	if a.Type().IsQuantized() && a.Type() != to && dst != nil {
		// ggml dequantizes a block at a time into the destination's rows.
		if bs := a.Type().BlockSize(); !adjacent(dst) || (dst.Ne()[0]%bs != 0 && !dst.IsContiguous()) {
			return c.fail(op, ErrShape, fmt.Sprintf("dequantizing copies need the destination's elements adjacent, and it contiguous unless its ne0 is a multiple of %v's block size %d", a.Type(), bs), inputs...)
		}
	}
	return nil
}

// Dup returns a copy of a in a new contiguous tensor (ggml_dup). It is Cont
// under another op name.
func (c *Context) Dup(a *Tensor) *Tensor {
	const op = "dup"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_dup(c.c, a.c) }, a)
}

// Set returns a copy of a with b written into it: b's element (i0, i1, i2,
// i3) goes to byte offset + i0*esize + i1*nb1 + i2*nb2 + i3*nb3 of a's data
// (ggml_set). a is f32 or i32 and contiguous; b has a's type, adjacent
// elements and at most a's element count; every written element must lie
// inside a. Offsets and strides are in bytes, multiples of the element
// size, below 2^30 (ggml keeps them as int32).
func (c *Context) Set(a, b *Tensor, nb1, nb2, nb3, offset uint64) *Tensor {
	return c.set("set", a, b, nb1, nb2, nb3, offset, false)
}

// SetInPlace is Set computed into a's own memory: the result is a view of a
// (ggml_set_inplace).
func (c *Context) SetInPlace(a, b *Tensor, nb1, nb2, nb3, offset uint64) *Tensor {
	return c.set("set", a, b, nb1, nb2, nb3, offset, true)
}

// Set1D is Set with a's own strides: b is written at byte offset of a
// (ggml_set_1d).
func (c *Context) Set1D(a, b *Tensor, offset uint64) *Tensor {
	if a == nil || a.c == nil {
		return c.Set(a, b, 0, 0, 0, offset)
	}
	nb := a.Nb()
	return c.set("set_1d", a, b, nb[1], nb[2], nb[3], offset, false)
}

// Set2D is Set with b's rows nb1 bytes apart and a's strides above
// (ggml_set_2d).
func (c *Context) Set2D(a, b *Tensor, nb1, offset uint64) *Tensor {
	if a == nil || a.c == nil {
		return c.Set(a, b, nb1, 0, 0, offset)
	}
	nb := a.Nb()
	return c.set("set_2d", a, b, nb1, nb[2], nb[3], offset, false)
}

func (c *Context) set(op string, a, b *Tensor, nb1, nb2, nb3, offset uint64, inPlace bool) *Tensor {
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	at := a.Type()
	if at != TypeF32 && at != TypeI32 {
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel sets f32 or i32, not %v", at), a, b)
	}
	if p := c.setRules(op, a, b, nb1, nb2, nb3, offset); p != nil {
		return p
	}
	var viewOf *Tensor
	if inPlace {
		viewOf = a
	}
	if p := c.ensure(op, a.Type(), a.Ne(), viewOf, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		if inPlace {
			return C.ggml_set_inplace(c.c, a.c, b.c, C.size_t(nb1), C.size_t(nb2), C.size_t(nb3), C.size_t(offset))
		}
		return C.ggml_set(c.c, a.c, b.c, C.size_t(nb1), C.size_t(nb2), C.size_t(nb3), C.size_t(offset))
	}, a, b)
}

// setRules checks what set and acc need of a, b and the byte layout.
func (c *Context) setRules(op string, a, b *Tensor, nb1, nb2, nb3, offset uint64) *Tensor {
	at := a.Type()
	es := at.Size()
	bn := b.Ne()
	switch {
	case b.Type() != at:
		return c.fail(op, ErrType, fmt.Sprintf("b must have a's type %v, not %v", at, b.Type()), a, b)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a, b)
	case !adjacent(b):
		return c.fail(op, ErrShape, "b's elements must be adjacent in dimension 0; copy it with Cont", a, b)
	case b.Elements() > a.Elements():
		return c.fail(op, ErrShape, fmt.Sprintf("b has %d elements, more than a's %d", b.Elements(), a.Elements()), a, b)
	}
	for _, v := range [...]struct {
		name string
		v    uint64
	}{{"nb1", nb1}, {"nb2", nb2}, {"nb3", nb3}, {"offset", offset}} {
		if v.v >= 1<<30 || v.v%es != 0 {
			return c.fail(op, ErrInvalid, fmt.Sprintf("%s (%d) must be a multiple of %d below 2^30", v.name, v.v, es), a, b)
		}
	}
	// ggml's kernels check where b's last element starts, counting an
	// empty dimension as 1 (even an empty b must fit); here it must end
	// inside a too.
	last := offset
	for i, nb := range [MaxDims]uint64{es, nb1, nb2, nb3} {
		if bn[i] > 1 {
			var ok bool
			if last, ok = mulAdd(last, uint64(bn[i]-1), nb); !ok || last > a.Bytes() {
				return c.fail(op, ErrShape, fmt.Sprintf("b's dimension %d (%d elements, %d bytes apart) reaches past a's %d bytes", i, bn[i], nb, a.Bytes()), a, b)
			}
		}
	}
	if last > a.Bytes() || es > a.Bytes()-last {
		return c.fail(op, ErrShape, fmt.Sprintf("b's last element would land at byte %d, past a's %d bytes", last, a.Bytes()), a, b)
	}
	return nil
}

// SetRows writes rows of b (f32) into a: b's row (i, j, k) goes to a's row
// idx[i, j % idx.ne1, k % idx.ne2] of matrix (j, k), converted to a's type
// (ggml_set_rows). It returns a view of a that the graph computes, so a
// itself is updated: this is how a KV cache is filled. idx is i32 or i64
// with idx.ne0 == b.ne1; a.ne0 == b.ne0, a.ne2 == b.ne2, a.ne3 == b.ne3. An
// index outside a's rows is an error before compute when idx is an input
// in host memory; computed indices must be bounded by construction.
func (c *Context) SetRows(a, b, idx *Tensor) *Tensor {
	const op = "set_rows"
	if p := c.begin(op, a, b, idx); p != nil {
		return p
	}
	if p := c.checkTypes(op, a.Type(), a, b, idx); p != nil {
		return p
	}
	an, bn, in := a.Ne(), b.Ne(), idx.Ne()
	switch {
	case an[0] != bn[0]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) != b.ne0 (%d)", an[0], bn[0]), a, b, idx)
	case an[2] != bn[2] || an[3] != bn[3]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne2, a.ne3 (%d, %d) != b.ne2, b.ne3 (%d, %d)", an[2], an[3], bn[2], bn[3]), a, b, idx)
	case bn[1] != in[0]:
		return c.fail(op, ErrShape, fmt.Sprintf("b.ne1 (%d) != idx.ne0 (%d): one index per row of b", bn[1], in[0]), a, b, idx)
	case in[1] == 0 || in[2] == 0 || bn[2]%in[1] != 0 || bn[3]%in[2] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("b.ne2 (%d) and b.ne3 (%d) must be multiples of idx.ne1 (%d) and idx.ne2 (%d)", bn[2], bn[3], in[1], in[2]), a, b, idx)
	case in[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("idx.ne3 (%d) must be 1", in[3]), a, b, idx)
	case !adjacent(a) || !adjacent(b):
		return c.fail(op, ErrShape, "a's and b's elements must be adjacent in dimension 0 (rows contiguous)", a, b, idx)
	}
	if idx.c.op != C.GGML_OP_NONE {
		bound, ok := indexBound(idx)
		if !ok {
			return c.fail(op, ErrInvalid, "row indices computed by the graph cannot be checked against a's rows; compute them in a graph of their own and pass them as an input", a, b, idx)
		}
		if bound > an[1] {
			return c.fail(op, ErrShape, fmt.Sprintf("the indices (below %d) can exceed a's %d rows", bound, an[1]), a, b, idx)
		}
	}
	if p := c.ensure(op, a.Type(), an, a, a, b, idx); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_set_rows(c.c, a.c, b.c, idx.c) }, a, b, idx)
}

// GroupNorm normalises a in groups of channels (dimension 2): a.ne2 is cut
// into groups of ceil(a.ne2/groups) channels, and each group of each
// sample (dimension 3) gets mean 0 and variance 1, with eps added to the
// variance (ggml_group_norm). a is f32 with adjacent elements; 1 <= groups
// <= a.ne2.
func (c *Context) GroupNorm(a *Tensor, groups int, eps float32) *Tensor {
	return c.groupNorm(a, groups, eps, false)
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
