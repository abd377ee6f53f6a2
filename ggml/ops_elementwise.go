package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math/bits"
)

// This file holds the initial op set. Each op checks in Go what ggml's
// constructor asserts, records an *OpError on the context when a rule is
// broken (see Context), and otherwise calls the constructor.

// call runs a C constructor; an assert inside it (a check missing here)
// becomes a recorded error instead of an abort.
func (c *Context) call(op string, f func() *C.struct_ggml_tensor, inputs ...*Tensor) (t *Tensor) {
	defer func() {
		if r := recover(); r != nil {
			ae, ok := r.(*AssertError)
			if !ok {
				panic(r)
			}
			t = c.fail(op, ae, "ggml asserted: "+ae.Message, inputs...)
		}
	}()
	return c.result(f(), inputs...)
}

// canRepeat reports whether b can be broadcast to a's shape (ggml_can_repeat).
func canRepeat(b, a *Tensor) bool {
	if isEmpty(b) {
		return isEmpty(a)
	}
	for i := range MaxDims {
		if a.c.ne[i]%b.c.ne[i] != 0 {
			return false
		}
	}
	return true
}

func isEmpty(t *Tensor) bool {
	for i := range MaxDims {
		if t.c.ne[i] == 0 {
			return true
		}
	}
	return false
}

func sameShape(a, b *Tensor) bool { return a.Ne() == b.Ne() }

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

// Sub returns a - b, element-wise, b broadcast to a's shape (ggml_sub).
func (c *Context) Sub(a, b *Tensor) *Tensor {
	return c.binary("sub", a, b, func() *C.struct_ggml_tensor { return C.ggml_sub(c.c, a.c, b.c) })
}

// Mul returns a * b, element-wise, b broadcast to a's shape (ggml_mul).
func (c *Context) Mul(a, b *Tensor) *Tensor {
	return c.binary("mul", a, b, func() *C.struct_ggml_tensor { return C.ggml_mul(c.c, a.c, b.c) })
}

// Div returns a / b, element-wise, b broadcast to a's shape (ggml_div).
func (c *Context) Div(a, b *Tensor) *Tensor {
	return c.binary("div", a, b, func() *C.struct_ggml_tensor { return C.ggml_div(c.c, a.c, b.c) })
}

// Scale returns a * s (ggml_scale). a must be f32 and contiguous.
func (c *Context) Scale(a *Tensor, s float32) *Tensor {
	return c.scale("scale", a, func() *C.struct_ggml_tensor { return C.ggml_scale(c.c, a.c, C.float(s)) })
}

// ScaleBias returns a*s + b (ggml_scale_bias). a must be f32 and contiguous.
func (c *Context) ScaleBias(a *Tensor, s, b float32) *Tensor {
	return c.scale("scale_bias", a, func() *C.struct_ggml_tensor { return C.ggml_scale_bias(c.c, a.c, C.float(s), C.float(b)) })
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

// MulMat returns the matrix product of a and b as ggml defines it: with a of
// shape [k, m] and b of shape [k, n] the result is [m, n] (f32), result[i,j]
// = sum over k of a[k,i]*b[k,j]; that is b times a transposed. a is
// broadcast over b's dimensions 2 and 3 (ggml_mul_mat). a's type needs a
// dot product on the CPU; b is f32, or already of the type the CPU converts
// b to for a (f16 for f16 a, q8_0 for q4_0, q8_K for the k-quants, ...).
func (c *Context) MulMat(a, b *Tensor) *Tensor {
	const op = "mul_mat"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if p := c.checkTypes(op, TypeF32, a, b); p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case an[0] != bn[0]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) != b.ne0 (%d): both must have the shared dimension innermost", an[0], bn[0]), a, b)
	case an[2] == 0 || bn[2]%an[2] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("b.ne2 (%d) must be a multiple of a.ne2 (%d)", bn[2], an[2]), a, b)
	case an[3] == 0 || bn[3]%an[3] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("b.ne3 (%d) must be a multiple of a.ne3 (%d)", bn[3], an[3]), a, b)
	case a.IsTransposed():
		return c.fail(op, ErrShape, "a must not be transposed (nb0 > nb1); make it contiguous with Cont", a, b)
	case a.Nb()[0] != a.Type().Size() || b.Nb()[0] != b.Type().Size():
		return c.fail(op, ErrShape, "a's and b's elements must be adjacent in dimension 0 (nb0 = type size); copy with Cont", a, b)
	case !rowsApart(a) || !rowsApart(b):
		// ggml's sgemm asserts its leading dimension (nb1 in elements) is
		// at least ne0, even for one row, whose nb1 ggml leaves arbitrary.
		return c.fail(op, ErrShape, "a's and b's rows must not overlap (nb1 >= the size of a row), even a single row's; copy with Cont", a, b)
	}
	ne := [MaxDims]int64{an[1], bn[1], bn[2], bn[3]}
	if p := c.ensure(op, TypeF32, ne, nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_mul_mat(c.c, a.c, b.c) }, a, b)
}

func (c *Context) unary(op string, a *Tensor, f func() *C.struct_ggml_tensor) *Tensor {
	if p := c.begin(op, a); p != nil {
		return p
	}
	if t := a.Type(); t != TypeF32 && t != TypeF16 && (t != TypeBF16 || !unaryBF16[op]) {
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 or f16%s, not %v", map[bool]string{true: " or bf16"}[unaryBF16[op]], t), a)
	}
	if !rowsContiguous(a) {
		return c.fail(op, ErrShape, "a must be contiguous in dimensions >= 1 (ggml_is_contiguous_1) with adjacent elements in dimension 0; copy it with Cont", a)
	}
	if p := c.ensure(op, a.Type(), a.Ne(), nil, a); p != nil {
		return p
	}
	return c.call(op, f, a)
}

// Relu returns max(a, 0), element-wise (ggml_relu).
func (c *Context) Relu(a *Tensor) *Tensor {
	return c.unary("relu", a, func() *C.struct_ggml_tensor { return C.ggml_relu(c.c, a.c) })
}

// Gelu returns the GELU of a, element-wise, in ggml's tanh approximation
// (ggml_gelu).
func (c *Context) Gelu(a *Tensor) *Tensor {
	return c.unary("gelu", a, func() *C.struct_ggml_tensor { return C.ggml_gelu(c.c, a.c) })
}

// Silu returns a * sigmoid(a), element-wise (ggml_silu).
func (c *Context) Silu(a *Tensor) *Tensor {
	return c.unary("silu", a, func() *C.struct_ggml_tensor { return C.ggml_silu(c.c, a.c) })
}

// SoftMax returns the softmax of each row of a (along ne0) (ggml_soft_max).
// a must be contiguous.
func (c *Context) SoftMax(a *Tensor) *Tensor {
	return c.SoftMaxExt(a, nil, 1, 0)
}

// SoftMaxExt returns softmax(a*scale + mask) of each row, with ALiBi slopes
// when maxBias > 0 (ggml_soft_max_ext). mask may be nil; if given it is f16
// or f32, contiguous, mask.ne0 == a.ne0, mask.ne1 >= a.ne1, and a.ne2, a.ne3
// are multiples of mask.ne2, mask.ne3. maxBias > 0 needs a mask.
func (c *Context) SoftMaxExt(a, mask *Tensor, scale, maxBias float32) *Tensor {
	return c.softMax(a, mask, scale, maxBias, false)
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

// indexBound returns an upper bound (exclusive) on the values of an i32
// tensor the graph computes, when its ops guarantee one: an argsort's
// or top_k's indices are below its rows' length; views and copies keep the bound.
func indexBound(t *Tensor) (int64, bool) {
	for t != nil && t.live() {
		switch t.c.op {
		case C.GGML_OP_ARGSORT, C.GGML_OP_TOP_K:
			if len(t.srcs) > 0 && t.srcs[0] != nil {
				return t.srcs[0].Ne()[0], true
			}
			return 0, false
		case C.GGML_OP_VIEW, C.GGML_OP_RESHAPE, C.GGML_OP_PERMUTE, C.GGML_OP_TRANSPOSE, C.GGML_OP_CONT, C.GGML_OP_CPY, C.GGML_OP_GET_ROWS:
			if len(t.srcs) == 0 || t.srcs[0] == nil || t.srcs[0].Type() != TypeI32 {
				return 0, false
			}
			t = t.srcs[0]
		default:
			return 0, false
		}
	}
	return 0, false
}
