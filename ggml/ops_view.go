package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
	"math/bits"
)

// Views, copies and rearranging (ggml.h from dup to transpose, then
// get_rows, set_rows, the pad family, roll, fill and arange): the ops
// that move, select or make elements without computing on them.

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

// Cpy copies a into b, converting to b's type, and returns a view of b that
// the graph computes (ggml_cpy). a and b must have the same number of
// elements. The conversions are a type to itself, among f32, f16 and bf16,
// f32 to and from i32, f32, f16 or bf16 to a quantized type the CPU
// quantizes to (not the iq1, iq2 and iq3 types; a.ne0 then at most
// b.ne0), and a quantized type to f32.
func (c *Context) Cpy(a, b *Tensor) *Tensor {
	const op = "cpy"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if a.Elements() != b.Elements() {
		return c.fail(op, ErrShape, fmt.Sprintf("a has %d elements, b %d; they must be equal", a.Elements(), b.Elements()), a, b)
	}
	if p := c.copyRules(op, a, b.Type(), b, a, b); p != nil {
		return p
	}
	if p := c.ensure(op, b.Type(), b.Ne(), b, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_cpy(c.c, a.c, b.c) }, a, b)
}

// Cast returns a converted to type t, in a new contiguous tensor of a's
// shape (ggml_cast). The conversions are Cpy's.
func (c *Context) Cast(a *Tensor, t Type) *Tensor {
	const op = "cast"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if !t.Valid() {
		return c.invalidType(op, t, a)
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

// Cont returns a contiguous copy of a, same type and shape (ggml_cont).
func (c *Context) Cont(a *Tensor) *Tensor {
	const op = "cont"
	if p := c.begin(op, a); p != nil {
		return p
	}
	// ggml copies any type to itself (ggml_compute_forward_dup_bytes).
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_cont(c.c, a.c) }, a)
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

// Reshape returns a view of a with the shape ne (one to four dimensions)
// and the same number of elements (ggml_reshape_1d .. _4d). a must be
// contiguous.
func (c *Context) Reshape(a *Tensor, ne ...int64) *Tensor {
	const op = "reshape"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if len(ne) < 1 || len(ne) > MaxDims {
		return c.fail(op, ErrShape, fmt.Sprintf("%d dimensions given, ggml takes 1 to %d", len(ne), MaxDims), a)
	}
	if !a.IsContiguous() {
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a)
	}
	shape := [MaxDims]int64{1, 1, 1, 1}
	n := int64(1)
	for i, v := range ne {
		if v < 0 {
			return c.fail(op, ErrShape, fmt.Sprintf("ne%d (%d) is negative", i, v), a)
		}
		shape[i] = v
		n *= v
	}
	if _, err := dataSize(a.Type(), shape); err != nil {
		return c.fail(op, ErrShape, err.Error(), a)
	}
	if n != a.Elements() {
		return c.fail(op, ErrShape, fmt.Sprintf("new shape %v has %d elements, a has %d", ne, n, a.Elements()), a)
	}
	if p := c.ensure(op, a.Type(), shape, a, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		switch len(ne) {
		case 1:
			return C.ggml_reshape_1d(c.c, a.c, C.int64_t(ne[0]))
		case 2:
			return C.ggml_reshape_2d(c.c, a.c, C.int64_t(ne[0]), C.int64_t(ne[1]))
		case 3:
			return C.ggml_reshape_3d(c.c, a.c, C.int64_t(ne[0]), C.int64_t(ne[1]), C.int64_t(ne[2]))
		default:
			return C.ggml_reshape_4d(c.c, a.c, C.int64_t(ne[0]), C.int64_t(ne[1]), C.int64_t(ne[2]), C.int64_t(ne[3]))
		}
	}, a)
}

// view checks a view of a with shape ne and strides nb (nb[0] is the type
// size) starting offset bytes into a's data: it must lie inside the memory
// of a's source tensor.
func (c *Context) view(op string, a *Tensor, dims int, ne [MaxDims]int64, nb [MaxDims]uint64, offset uint64, f func() *C.struct_ggml_tensor) *Tensor {
	if p := c.begin(op, a); p != nil {
		return p
	}
	for i, v := range ne {
		if v < 0 {
			return c.fail(op, ErrShape, fmt.Sprintf("ne%d (%d) is negative", i, v), a)
		}
	}
	if bs := a.Type().BlockSize(); ne[0]%bs != 0 {
		return c.fail(op, ErrShape, fmt.Sprintf("ne0 (%d) of a view of %v must be a multiple of its block size %d", ne[0], a.Type(), bs), a)
	}
	size, err := dataSize(a.Type(), ne)
	if err != nil {
		return c.fail(op, ErrShape, err.Error(), a)
	}
	base, offs := a, offset
	if a.viewSrc != nil {
		var carry uint64
		base = a.viewSrc
		if offs, carry = bits.Add64(offset, a.ViewOffset(), 0); carry != 0 {
			return c.fail(op, ErrShape, fmt.Sprintf("offset %d past a's own offset %d overflows 64 bits", offset, a.ViewOffset()), a)
		}
	}
	// The bytes the view reaches with its strides (ggml_nbytes), and those
	// ggml_new_tensor_impl checks (the dense size), both from offs; every
	// sum is checked for overflow, so a stride that wraps is out of range.
	limit := base.Bytes()
	end, ok := extent(a.Type(), ne, nb, offs)
	if !ok || end > limit || offs > limit || size > limit-offs {
		reach := "past 2^64"
		if ok && end > limit {
			reach = fmt.Sprintf("byte %d", end)
		} else if ok {
			reach = fmt.Sprintf("%d bytes from byte %d (its dense size)", size, offs)
		}
		return c.fail(op, ErrShape, fmt.Sprintf("view of %v with strides %v at offset %d reaches %s of a source of %d bytes",
			ne[:dims], nb[1:dims], offset, reach, limit), a)
	}
	if p := c.ensure(op, a.Type(), ne, a, a); p != nil {
		return p
	}
	return c.call(op, f, a)
}

// View1D returns a view of ne0 elements of a, starting offset bytes into
// a's data (ggml_view_1d).
func (c *Context) View1D(a *Tensor, ne0 int64, offset uint64) *Tensor {
	ne := [MaxDims]int64{ne0, 1, 1, 1}
	return c.view("view", a, 1, ne, viewStrides(a, ne, 1, 0, 0, 0), offset, func() *C.struct_ggml_tensor {
		return C.ggml_view_1d(c.c, a.c, C.int64_t(ne0), C.size_t(offset))
	})
}

// View2D returns a view of shape [ne0, ne1] with row stride nb1 bytes,
// starting offset bytes into a's data (ggml_view_2d).
func (c *Context) View2D(a *Tensor, ne0, ne1 int64, nb1, offset uint64) *Tensor {
	ne := [MaxDims]int64{ne0, ne1, 1, 1}
	return c.view("view", a, 2, ne, viewStrides(a, ne, 2, nb1, 0, 0), offset, func() *C.struct_ggml_tensor {
		return C.ggml_view_2d(c.c, a.c, C.int64_t(ne0), C.int64_t(ne1), C.size_t(nb1), C.size_t(offset))
	})
}

// View3D returns a view of shape [ne0, ne1, ne2] with strides nb1, nb2
// bytes, starting offset bytes into a's data (ggml_view_3d).
func (c *Context) View3D(a *Tensor, ne0, ne1, ne2 int64, nb1, nb2, offset uint64) *Tensor {
	ne := [MaxDims]int64{ne0, ne1, ne2, 1}
	return c.view("view", a, 3, ne, viewStrides(a, ne, 3, nb1, nb2, 0), offset, func() *C.struct_ggml_tensor {
		return C.ggml_view_3d(c.c, a.c, C.int64_t(ne0), C.int64_t(ne1), C.int64_t(ne2), C.size_t(nb1), C.size_t(nb2), C.size_t(offset))
	})
}

// View4D returns a view of shape [ne0, ne1, ne2, ne3] with strides nb1, nb2,
// nb3 bytes, starting offset bytes into a's data (ggml_view_4d).
func (c *Context) View4D(a *Tensor, ne0, ne1, ne2, ne3 int64, nb1, nb2, nb3, offset uint64) *Tensor {
	ne := [MaxDims]int64{ne0, ne1, ne2, ne3}
	return c.view("view", a, 4, ne, viewStrides(a, ne, 4, nb1, nb2, nb3), offset, func() *C.struct_ggml_tensor {
		return C.ggml_view_4d(c.c, a.c, C.int64_t(ne0), C.int64_t(ne1), C.int64_t(ne2), C.int64_t(ne3),
			C.size_t(nb1), C.size_t(nb2), C.size_t(nb3), C.size_t(offset))
	})
}

// viewStrides returns the strides ggml gives a view of dims dimensions:
// those given, and for the dimensions the call does not take, what
// ggml_new_tensor_impl and ggml_view_2d/3d derive (size_t arithmetic, as in
// C; such a dimension has size 1, so its stride adds nothing to the view's
// extent).
func viewStrides(a *Tensor, ne [MaxDims]int64, dims int, nb1, nb2, nb3 uint64) [MaxDims]uint64 {
	t := a.Type()
	nb := [MaxDims]uint64{t.Size(), nb1, nb2, nb3}
	if dims < 2 {
		nb[1] = nb[0] * uint64(ne[0]/t.BlockSize())
	}
	for i := max(dims, 2); i < MaxDims; i++ {
		nb[i] = nb[i-1] * uint64(ne[i-1])
	}
	return nb
}

// Permute returns a view of a whose dimension i is a's dimension axis_i
// moved: a's dimension 0 goes to axis0, 1 to axis1, and so on
// (ggml_permute). The axes must be a permutation of 0..3.
func (c *Context) Permute(a *Tensor, axis0, axis1, axis2, axis3 int) *Tensor {
	const op = "permute"
	if p := c.begin(op, a); p != nil {
		return p
	}
	axes := [MaxDims]int{axis0, axis1, axis2, axis3}
	var seen [MaxDims]bool
	for _, ax := range axes {
		if ax < 0 || ax >= MaxDims || seen[ax] {
			return c.fail(op, ErrInvalid, fmt.Sprintf("axes %v must be a permutation of 0, 1, 2, 3", axes), a)
		}
		seen[ax] = true
	}
	if a.Type().BlockSize() > 1 && axis0 != 0 {
		return c.fail(op, ErrShape, quantMoves, a)
	}
	var ne [MaxDims]int64
	for i, ax := range axes {
		ne[ax] = a.Ne()[i]
	}
	if p := c.ensure(op, a.Type(), ne, a, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_permute(c.c, a.c, C.int(axis0), C.int(axis1), C.int(axis2), C.int(axis3))
	}, a)
}

// Transpose returns a view of a with dimensions 0 and 1 swapped
// (ggml_transpose).
func (c *Context) Transpose(a *Tensor) *Tensor {
	const op = "transpose"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if a.Type().BlockSize() > 1 {
		return c.fail(op, ErrShape, quantMoves, a)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), a, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_transpose(c.c, a.c) }, a)
}

// quantMoves is why a quantized tensor's dimension 0 cannot move: found by
// FuzzOps, a transposed q8_0 [32] (ne0 1, half a block) hung ggml's copy.
const quantMoves = "a quantized tensor's blocks lie along dimension 0, which must stay dimension 0 (convert it with Cast to f32 first)"

// GetRows returns the rows of a selected by the i32 indices in b: result
// row (i, j, k) is a's row b[i, j, k] of matrix (j, k) (ggml_get_rows). The
// result is f32 (i32 when a is i32) of shape [a.ne0, b.ne0, b.ne1, b.ne2].
// Requires a.ne2 == b.ne1, a.ne3 == b.ne2, b.ne3 == 1.
func (c *Context) GetRows(a, b *Tensor) *Tensor {
	const op = "get_rows"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	ty := TypeF32
	if a.Type() == TypeI32 {
		ty = TypeI32
	}
	if p := c.checkTypes(op, ty, a, b); p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case an[2] != bn[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne2 (%d) != b.ne1 (%d)", an[2], bn[1]), a, b)
	case an[3] != bn[2]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne3 (%d) != b.ne2 (%d)", an[3], bn[2]), a, b)
	case bn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("b.ne3 (%d) must be 1", bn[3]), a, b)
	}
	// ggml's kernel asserts every index is a row of a. Indices that are
	// graph inputs are checked before compute; computed ones only when they
	// are bounded by construction (argsort of a row no longer than a's).
	if b.c.op != C.GGML_OP_NONE {
		bound, ok := indexBound(b)
		if !ok {
			return c.fail(op, ErrInvalid, "row indices computed by the graph cannot be checked against a's rows; compute them in a graph of their own and pass them as an input", a, b)
		}
		if bound > an[1] {
			return c.fail(op, ErrShape, fmt.Sprintf("the indices (an argsort of rows of %d) can exceed a's %d rows", bound, an[1]), a, b)
		}
	}
	if p := c.ensure(op, ty, [MaxDims]int64{an[0], bn[0], bn[1], bn[2]}, nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_get_rows(c.c, a.c, b.c) }, a, b)
}

// get_rows' kernel asserts that each index is a row of a.
func init() {
	registerIndexCheck(C.GGML_OP_GET_ROWS, "get_rows", func(n *C.struct_ggml_tensor) (*C.struct_ggml_tensor, int64) {
		return n.src[1], int64(n.src[0].ne[1])
	})
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

// set_rows writes each row of b at the row of a its index names.
func init() {
	registerIndexCheck(C.GGML_OP_SET_ROWS, "set_rows", func(n *C.struct_ggml_tensor) (*C.struct_ggml_tensor, int64) {
		return n.src[1], int64(n.ne[1])
	})
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

// PadReflect1D pads each row of a with p0 elements before and p1 after,
// mirrored around the row's first and last element: [a b c d] with 2, 1
// gives [c b a b c d c] (ggml_pad_reflect_1d). a is f32 and contiguous;
// p0 and p1 are >= 0 and less than ne0.
func (c *Context) PadReflect1D(a *Tensor, p0, p1 int) *Tensor {
	const op = "pad_reflect_1d"
	if p := c.begin(op, a); p != nil {
		return p
	}
	ne := a.Ne()
	switch {
	case a.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 only, not %v", a.Type()), a)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a)
	case p0 < 0 || p1 < 0 || int64(p0) >= ne[0] || int64(p1) >= ne[0]:
		return c.fail(op, ErrInvalid, fmt.Sprintf("paddings %d and %d must be >= 0 and less than ne0 (%d)", p0, p1, ne[0]), a)
	}
	ne[0] += int64(p0) + int64(p1)
	if p := c.ensure(op, TypeF32, ne, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_pad_reflect_1d(c.c, a.c, C.int(p0), C.int(p1)) }, a)
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
