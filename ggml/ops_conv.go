package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
	"math/bits"
)

// This file holds the convolution ops: im2col and the convolutions built
// on it, the direct convolutions and transposed convolutions (pooling is in
// ops_pool.go, resampling in ops_upscale.go). Shapes
// follow ggml: ne[0] is the innermost (width) dimension, so an image batch
// is [W, H, C, N] and a 2-D kernel [KW, KH, IC, OC]. The gradients of
// im2col and pool_2d are in ops_train.go.
//
// Most of ggml's CPU convolution kernels assert their rules on worker
// threads, where an assert ends the process; the checks here run first.

// convIm2ColF16 reports whether the linked ggml's conv_2d and conv_3d round
// b to f16 whatever a's type (upstream ggml does; the embedded provider's
// Im2Col takes a's type).
const convIm2ColF16 = C.GOGGML_CONV_IM2COL_F16 != 0

// im2colWorkSize is GGML_IM2COL_WORK_SIZE: the scratch memory ggml's CPU
// backend gives the direct convolutions. One output position's patch (the
// kernel's elements) plus one f32 per output channel must fit in it.
const im2colWorkSize = 16 << 20

// convLimit is the largest padding that ggml's output size formulas, which
// compute 2*p in C int, take without overflow.
const convLimit = math.MaxInt32 / 2

// convParam is an int parameter and its allowed range.
type convParam struct {
	name     string
	v        int
	min, max int
}

func convStride(name string, v int) convParam { return convParam{name, v, 1, math.MaxInt32} }
func convDil(name string, v int) convParam    { return convParam{name, v, 1, math.MaxInt32} }
func convPad(name string, v int) convParam    { return convParam{name, v, 0, convLimit} }

// checkParams checks that each parameter lies in its range.
func (c *Context) checkParams(op string, ps []convParam, inputs ...*Tensor) *Tensor {
	for _, p := range ps {
		if p.v < p.min || p.v > p.max {
			return c.fail(op, ErrInvalid, fmt.Sprintf("%s (%d) must be between %d and %d", p.name, p.v, p.min, p.max), inputs...)
		}
	}
	return nil
}

// convNonEmpty fails when an input has no elements: ggml's convolution kernels
// divide and index by these dimensions.
func (c *Context) convNonEmpty(op string, inputs ...*Tensor) *Tensor {
	for i, t := range inputs {
		if isEmpty(t) {
			return c.fail(op, ErrShape, fmt.Sprintf("input %c %v is empty", 'a'+i, t.Ne()), inputs...)
		}
	}
	return nil
}

// convOut is ggml_calc_conv_output_size, (in + 2p - d(k-1) - 1)/s + 1, the
// number of positions of a kernel of k taps dilated by d on an input of in
// padded by p on both sides with stride s. ok is false when the dilated
// kernel, d(k-1)+1, is longer than the padded input (ggml would then
// report no or a truncated output), or on overflow.
func convOut(in, k int64, s, p, d int) (int64, bool) {
	if in < 1 || k < 1 || in > math.MaxInt64/4 {
		return 0, false
	}
	hi, ext := bits.Mul64(uint64(d), uint64(k-1))
	span := in + 2*int64(p)
	if hi != 0 || ext >= uint64(span) {
		return 0, false
	}
	return (span-int64(ext)-1)/int64(s) + 1, true
}

// convFail returns the failure for a kernel that does not fit its input.
func (c *Context) convFail(op, dim string, in, k int64, s, p, d int, inputs ...*Tensor) *Tensor {
	return c.fail(op, ErrShape, fmt.Sprintf("b too small compared to a in %s: the kernel's %d taps dilated by %d span %d, more than the input's %d plus padding 2*%d",
		dim, k, d, int64(d)*(k-1)+1, in, p), inputs...)
}

// strideFits reports whether the byte stride of dimension i of t fits a C
// int where ggml's kernel keeps it in one (only strides of dimensions
// longer than 1 are ever multiplied).
func strideFits(t *Tensor, i int) bool { return t.Ne()[i] <= 1 || t.Nb()[i] <= math.MaxInt32 }

// isConvFloat reports whether t is f32 or f16.
func isConvFloat(t Type) bool { return t == TypeF32 || t == TypeF16 }

// Im2Col unrolls the patches of b that a convolution with kernel a reads
// into rows, so that a matrix product with the kernel computes the
// convolution (ggml_im2col). Only a's shape is used.
//
// With is2D, a is [KW, KH, IC, ...] and b [W, H, IC, N]; the result is
// [IC*KH*KW, OW, OH, N], element (kw + KW*(kh + KH*ic), ow, oh, n) being
// b(ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, ic, n), or 0 in the padding.
// Without is2D, a is [K, IC, ...] and b [L, IC, N]; the result is
// [IC*K, OL, N], and s1, p1 and d1 are not used (ggml gets 0 for them, as
// in ggml_conv_1d).
//
// b is f32 with adjacent elements in dimension 0 (and, with is2D, adjacent
// rows); dst is the result type, f32 or f16, and f16 needs a f16 with
// adjacent elements. Strides and dilations are >= 1, paddings >= 0, and
// the dilated kernel must fit in the padded input.
func (c *Context) Im2Col(a, b *Tensor, s0, s1, p0, p1, d0, d1 int, is2D bool, dst Type) *Tensor {
	const op = "im2col"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if !is2D {
		s1, p1, d1 = 0, 0, 0
	}
	ne, p := c.im2colShape(op, a, b, s0, s1, p0, p1, d0, d1, is2D, dst)
	if p != nil {
		return p
	}
	if p := c.ensure(op, dst, ne, nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_im2col(c.c, a.c, b.c, C.int(s0), C.int(s1), C.int(p0), C.int(p1), C.int(d0), C.int(d1), C.bool(is2D), C.enum_ggml_type(dst))
	}, a, b)
}

// im2colShape checks what ggml_im2col and its CPU kernels assert and
// returns the result's shape.
func (c *Context) im2colShape(op string, a, b *Tensor, s0, s1, p0, p1, d0, d1 int, is2D bool, dst Type) ([MaxDims]int64, *Tensor) {
	var none [MaxDims]int64
	ps := []convParam{convStride("s0", s0), convPad("p0", p0), convDil("d0", d0)}
	if is2D {
		ps = append(ps, convStride("s1", s1), convPad("p1", p1), convDil("d1", d1))
	}
	if p := c.checkParams(op, ps, a, b); p != nil {
		return none, p
	}
	if p := c.convNonEmpty(op, a, b); p != nil {
		return none, p
	}
	if p := c.im2colTypes(op, a, b, dst, true); p != nil {
		return none, p
	}
	an, bn := a.Ne(), b.Ne()
	var ne [MaxDims]int64
	if is2D {
		switch {
		case an[2] != bn[2]:
			return none, c.fail(op, ErrShape, fmt.Sprintf("a.ne2 (%d) != b.ne2 (%d): kernel and input must have the same channels", an[2], bn[2]), a, b)
		case bn[1] > 1 && b.Nb()[1] != uint64(bn[0])*4:
			return none, c.fail(op, ErrShape, fmt.Sprintf("b's rows must be adjacent (nb1 %d != 4*ne0 %d): ggml's kernel reads a channel as one W*H array; copy it with Cont", b.Nb()[1], 4*bn[0]), a, b)
		case !strideFits(b, 2) || !strideFits(b, 3):
			return none, c.fail(op, ErrShape, "b's strides nb2 and nb3 must fit a C int (ggml's kernel keeps them in one)", a, b)
		}
		out, p := c.convOuts(op, a, b, [3]int{s0, p0, d0}, [3]int{s1, p1, d1})
		if p != nil {
			return none, p
		}
		ne = shape4(an[2]*an[1]*an[0], out[0], out[1], bn[3])
	} else {
		switch {
		case an[1] != bn[1]:
			return none, c.fail(op, ErrShape, fmt.Sprintf("a.ne1 (%d) != b.ne1 (%d): kernel and input must have the same channels", an[1], bn[1]), a, b)
		case bn[3] != 1:
			return none, c.fail(op, ErrShape, fmt.Sprintf("b.ne3 (%d) must be 1 for a 1-D im2col: b is [L, IC, N]", bn[3]), a, b)
		case !strideFits(b, 1) || !strideFits(b, 2):
			return none, c.fail(op, ErrShape, "b's strides nb1 and nb2 must fit a C int (ggml's kernel keeps them in one)", a, b)
		}
		out, p := c.convOuts(op, a, b, [3]int{s0, p0, d0})
		if p != nil {
			return none, p
		}
		ne = shape4(an[1]*an[0], out[0], bn[2], 1)
	}
	if _, err := dataSize(dst, ne); err != nil {
		return none, c.fail(op, ErrShape, err.Error(), a, b)
	}
	return ne, nil
}

// im2colTypes checks the types Im2Col and Im2Col3D take, for a result of
// type dst; f16A: the 2-D kernel's f16 path also needs a's elements
// adjacent.
func (c *Context) im2colTypes(op string, a, b *Tensor, dst Type, f16A bool) *Tensor {
	switch {
	case !isConvFloat(a.Type()):
		return c.fail(op, ErrType, fmt.Sprintf("a must be f32 or f16, not %v", a.Type()), a, b)
	case b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("b must be f32, not %v", b.Type()), a, b)
	case dst != TypeF32 && dst != TypeF16:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernels produce f32 or f16, not %v", dst), a, b)
	case dst == TypeF16 && a.Type() != TypeF16:
		return c.fail(op, ErrType, fmt.Sprintf("an f16 result needs an f16 kernel a, not %v (ggml's kernel asserts it)", a.Type()), a, b)
	case f16A && dst == TypeF16 && !adjacent(a):
		return c.fail(op, ErrShape, "a's elements must be adjacent in dimension 0 (ggml's f16 kernel asserts nb0 == 2); copy it with Cont", a, b)
	case !adjacent(b):
		return c.fail(op, ErrShape, "b's elements must be adjacent in dimension 0 (ggml's kernel asserts nb0 == 4); copy it with Cont", a, b)
	}
	return nil
}

// convOuts returns the output size of dimension i of b convolved by
// kernel a with the stride, padding and dilation spd[i], for each i given.
func (c *Context) convOuts(op string, a, b *Tensor, spd ...[3]int) ([3]int64, *Tensor) {
	var out [3]int64
	an, bn := a.Ne(), b.Ne()
	for i, sp := range spd {
		o, ok := convOut(bn[i], an[i], sp[0], sp[1], sp[2])
		if !ok {
			return out, c.convFail(op, fmt.Sprintf("dimension %d", i), bn[i], an[i], sp[0], sp[1], sp[2], a, b)
		}
		out[i] = o
	}
	return out, nil
}

// Conv1D returns the 1-D convolution (cross-correlation) of b by the
// kernel a with stride s0, zero padding p0 on both sides and dilation d0
// (ggml_conv_1d): a is [K, IC, OC], b is [L, IC, N]; the f32 result is
// [OL, OC, N] with result(ol, oc, n) = sum over k, ic of
// a(k, ic, oc) * b(ol*s0 + k*d0 - p0, ic, n).
//
// ggml computes it as an f16 Im2Col and a matrix product: a must be f16
// and contiguous, b f32 with adjacent elements in dimension 0, and b's
// values are rounded to f16.
//
// With a batch (N > 1) and several output channels (OC > 1), ggml's
// product is laid out [OL, N, OC] but ggml_conv_1d labels it [OL, OC, N];
// this op then reshapes it to [OL, N, OC], permutes it to [OL, OC, N] and
// copies it (ggml_cont), so the result is always the contiguous
// [OL, OC, N] above, at the cost of one more copy and three more tensors in
// the context.
func (c *Context) Conv1D(a, b *Tensor, s0, p0, d0 int) *Tensor {
	const op = "conv_1d"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if a.Type() != TypeF16 {
		return c.fail(op, ErrType, fmt.Sprintf("a must be f16, not %v: ggml_conv_1d makes an f16 im2col, whose kernel asserts an f16 a", a.Type()), a, b)
	}
	ine, p := c.im2colShape(op, a, b, s0, 0, p0, 0, d0, 0, false, TypeF16)
	if p != nil {
		return p
	}
	an := a.Ne()
	switch {
	case !a.IsContiguous():
		return c.fail(op, ErrShape, "a must be contiguous (ggml reshapes it); copy it with Cont", a, b)
	case an[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne3 (%d) must be 1: a is [K, IC, OC]", an[3]), a, b)
	}
	ol, n, oc := ine[1], ine[2], an[2]
	plan := []convPlanned{
		{TypeF16, ine, false},
		{TypeF16, shape4(ine[0], ol*n, 1, 1), true},
		{TypeF16, shape4(an[0]*an[1], oc, 1, 1), true},
		{TypeF32, shape4(ol*n, oc, 1, 1), false},
		{TypeF32, shape4(ol, oc, n, 1), true},
	}
	// ggml's product is [OL, N, OC] in memory: relabel, permute and copy.
	mixed := n > 1 && oc > 1
	if mixed {
		plan = append(plan,
			convPlanned{TypeF32, shape4(ol, n, oc, 1), true},
			convPlanned{TypeF32, shape4(ol, oc, n, 1), true},
			convPlanned{TypeF32, shape4(ol, oc, n, 1), false})
	}
	if p := c.ensureAll(op, plan, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		r := C.ggml_conv_1d(c.c, a.c, b.c, C.int(s0), C.int(p0), C.int(d0))
		if mixed {
			r = C.ggml_reshape_3d(c.c, r, C.int64_t(ol), C.int64_t(n), C.int64_t(oc))
			r = C.ggml_cont(c.c, C.ggml_permute(c.c, r, 0, 2, 1, 3))
		}
		return r
	}, a, b)
}

// Conv1DDW returns the depthwise 1-D convolution of b: each channel of b
// is convolved with its own kernel (ggml_conv_1d_dw). a is [K, 1, C] f16
// and b is [L, C] f32 (one batch item), both contiguous; the f32 result is
// [OL, C] with result(ol, c) = sum over k of a(k, 0, c) *
// b(ol*s0 + k*d0 - p0, c). b's values are rounded to f16 (ggml uses an f16
// Im2Col).
func (c *Context) Conv1DDW(a, b *Tensor, s0, p0, d0 int) *Tensor {
	const op = "conv_1d_dw"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case a.Type() != TypeF16:
		return c.fail(op, ErrType, fmt.Sprintf("a must be f16, not %v: ggml makes an f16 im2col, whose kernel asserts an f16 a", a.Type()), a, b)
	case !dense(a) || !b.IsContiguous():
		return c.fail(op, ErrShape, "a and b must be contiguous (ggml reshapes b, and its f16 im2col asserts a's nb0 == 2); copy with Cont", a, b)
	case an[1] != 1 || an[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("a %v must be [K, 1, C]", an), a, b)
	case bn[2] != 1 || bn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("b %v must be [L, C]: ggml_conv_1d_dw takes one batch item", bn), a, b)
	case an[2] != bn[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne2 (%d) != b.ne1 (%d): one kernel per channel", an[2], bn[1]), a, b)
	}
	// ggml reshapes b to [L, 1, C, 1] and runs a 1-D f16 im2col on it.
	if p := c.checkParams(op, []convParam{convStride("s0", s0), convPad("p0", p0), convDil("d0", d0)}, a, b); p != nil {
		return p
	}
	if p := c.convNonEmpty(op, a, b); p != nil {
		return p
	}
	if b.Type() != TypeF32 {
		return c.fail(op, ErrType, fmt.Sprintf("b must be f32, not %v", b.Type()), a, b)
	}
	ol, ok := convOut(bn[0], an[0], s0, p0, d0)
	if !ok {
		return c.convFail(op, "dimension 0", bn[0], an[0], s0, p0, d0, a, b)
	}
	ch := bn[1]
	if uint64(bn[0])*4 > math.MaxInt32 && ch > 1 {
		return c.fail(op, ErrShape, "b's rows must be shorter than 2^29 elements (ggml's kernel keeps the channel stride in a C int)", a, b)
	}
	plan := []convPlanned{
		{TypeF32, shape4(bn[0], 1, ch, 1), true},
		{TypeF16, shape4(an[0], ol, ch, 1), false},
		{TypeF32, shape4(ol, 1, ch, 1), false},
		{TypeF32, shape4(ol, ch, 1, 1), true},
	}
	if p := c.ensureAll(op, plan, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_conv_1d_dw(c.c, a.c, b.c, C.int(s0), C.int(p0), C.int(d0))
	}, a, b)
}

// Col2Im1D scatters the columns of a matrix product back into a 1-D
// signal, the inverse of Im2Col's gather (ggml_col2im_1d; upstream ggml
// only): a is [K*oc, T] (column t holds K taps of each of oc channels,
// channel c's at rows c*K..c*K+K-1), the result is [(T-1)*s0 + K - 2*p0, oc]
// of a's type with
//
//	result[i, c] = sum over t, j with t*s0 + j == i + p0 of a[c*K + j, t]
//
// (a transposed 1-D convolution when a is the product of its kernel and
// input, with p0 samples cropped from each end). a is f32, f16 or bf16
// (summed in f32), contiguous and 2-D; s0 and oc are positive, p0 >= 0,
// a.ne0 a multiple of oc, the result longer than 0. With the embedded
// provider it records an ErrUnsupported error that names -tags
// ggml_system.
func (c *Context) Col2Im1D(a *Tensor, s0, oc, p0 int) *Tensor {
	const op = "col2im_1d"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if !haveUpstream {
		return c.upstreamOnly(op, "Col2Im1D (ggml_col2im_1d)", a)
	}
	if p := c.checkTypes(op, a.Type(), a); p != nil {
		return p
	}
	an := a.Ne()
	switch {
	case s0 < 1 || s0 > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("s0 (%d) must be in [1, 2^31-1]", s0), a)
	case oc < 1 || oc > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("oc (%d) must be in [1, 2^31-1]", oc), a)
	case p0 < 0 || p0 > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("p0 (%d) must be in [0, 2^31-1]", p0), a)
	case an[2] != 1 || an[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("a must be a matrix, not %v", an), a)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a)
	case an[0] < int64(oc) || an[0]%int64(oc) != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) must be a positive multiple of oc (%d): K taps per channel", an[0], oc), a)
	}
	k := an[0] / int64(oc)
	// (T-1)*s0 + K - 2*p0 with T >= 0: the terms are below 2^63 on their own.
	span, ok := seqMul(max(an[1]-1, 0), int64(s0))
	if !ok || span > math.MaxInt64-k {
		return c.fail(op, ErrShape, fmt.Sprintf("the result of %d columns with stride %d would have more than 2^63 elements", an[1], s0), a)
	}
	tOut := k - 2*int64(p0)
	if an[1] > 0 {
		tOut += span
	} else {
		tOut -= int64(s0)
	}
	if tOut < 1 {
		return c.fail(op, ErrShape, fmt.Sprintf("the result would be empty: (T-1)*s0 + K - 2*p0 = (%d-1)*%d + %d - 2*%d < 1", an[1], s0, k, p0), a)
	}
	if p := c.ensure(op, a.Type(), [MaxDims]int64{tOut, int64(oc), 1, 1}, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.goggml_col2im_1d(c.c, a.c, C.int(s0), C.int(oc), C.int(p0))
	}, a)
}

// ConvTranspose1D returns the transposed 1-D convolution of b by a
// (ggml_conv_transpose_1d): a is [K, OC, IC], b is [L, IC]; the f32 result
// is [(L-1)*s0 + K, OC] with result(i, oc) = sum over l, k, ic with
// l*s0 + k == i of b(l, ic) * a(k, oc, ic).
//
// ggml supports only p0 == 0 and d0 == 1. a is f32 or f16 (then b's values
// are rounded to f16), b is f32, both with adjacent elements in dimension
// 0; other strides are free.
func (c *Context) ConvTranspose1D(a, b *Tensor, s0, p0, d0 int) *Tensor {
	const op = "conv_transpose_1d"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if p := c.checkParams(op, []convParam{convStride("s0", s0)}, a, b); p != nil {
		return p
	}
	if p0 != 0 || d0 != 1 {
		return c.fail(op, ErrInvalid, fmt.Sprintf("ggml supports only padding 0 and dilation 1, not p0 %d and d0 %d", p0, d0), a, b)
	}
	if p := c.convNonEmpty(op, a, b); p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case !isConvFloat(a.Type()):
		return c.fail(op, ErrType, fmt.Sprintf("a must be f32 or f16, not %v", a.Type()), a, b)
	case b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("b must be f32, not %v", b.Type()), a, b)
	case !adjacent(a) || !adjacent(b):
		return c.fail(op, ErrShape, "a's and b's elements must be adjacent in dimension 0 (ggml's kernel asserts it); copy with Cont", a, b)
	case bn[2] != 1 || bn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("b %v must be a matrix [L, IC]", bn), a, b)
	case an[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne3 (%d) must be 1: a is [K, OC, IC]", an[3]), a, b)
	case an[2] != bn[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne2 (%d) != b.ne1 (%d): kernel and input must have the same input channels", an[2], bn[1]), a, b)
	}
	// The kernel indexes in C ints.
	out := (bn[0]-1)*int64(s0) + an[0]
	if (bn[0]-1) > math.MaxInt32/int64(s0) || out > math.MaxInt32 || an[0]*an[1] > math.MaxInt32/an[2] || bn[0] > math.MaxInt32/bn[1] {
		return c.fail(op, ErrShape, "the kernel, the input and each output row must have fewer than 2^31 elements (ggml's kernel indexes them with C ints)", a, b)
	}
	if p := c.ensure(op, TypeF32, shape4(out, an[1], 1, 1), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_conv_transpose_1d(c.c, a.c, b.c, C.int(s0), C.int(p0), C.int(d0))
	}, a, b)
}

// conv2DCommon checks the parameters of a 2-D convolution and returns its
// output size.
func (c *Context) conv2DCommon(op string, a, b *Tensor, s0, s1, p0, p1, d0, d1 int) (ow, oh int64, p *Tensor) {
	ps := []convParam{convStride("s0", s0), convStride("s1", s1), convPad("p0", p0), convPad("p1", p1), convDil("d0", d0), convDil("d1", d1)}
	if p := c.checkParams(op, ps, a, b); p != nil {
		return 0, 0, p
	}
	if p := c.convNonEmpty(op, a, b); p != nil {
		return 0, 0, p
	}
	an, bn := a.Ne(), b.Ne()
	ow, ok := convOut(bn[0], an[0], s0, p0, d0)
	if !ok {
		return 0, 0, c.convFail(op, "dimension 0", bn[0], an[0], s0, p0, d0, a, b)
	}
	oh, ok = convOut(bn[1], an[1], s1, p1, d1)
	if !ok {
		return 0, 0, c.convFail(op, "dimension 1", bn[1], an[1], s1, p1, d1, a, b)
	}
	return ow, oh, nil
}

// Conv2D returns the 2-D convolution (cross-correlation) of b by the
// kernel a with strides s0, s1, zero paddings p0, p1 on both sides and
// dilations d0, d1 (ggml_conv_2d): a is [KW, KH, IC, OC], b is
// [W, H, IC, N]; the f32 result is [OW, OH, OC, N] with
// result(ow, oh, oc, n) = sum over kw, kh, ic of a(kw, kh, ic, oc) *
// b(ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, ic, n).
//
// ggml computes it as an Im2Col of a's type and a matrix product: a is f32
// or f16 (then b's values are rounded to f16) and contiguous; b is f32 with
// adjacent elements and rows (its channel and batch strides are free).
// Upstream ggml (the ggml_system provider) makes an f16 Im2Col for an f32
// a too: there b's values are rounded to f16 either way.
func (c *Context) Conv2D(a, b *Tensor, s0, s1, p0, p1, d0, d1 int) *Tensor {
	const op = "conv_2d"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	ine, p := c.im2colShape(op, a, b, s0, s1, p0, p1, d0, d1, true, a.Type())
	if p != nil {
		return p
	}
	if !a.IsContiguous() {
		return c.fail(op, ErrShape, "a must be contiguous (ggml reshapes it); copy it with Cont", a, b)
	}
	an := a.Ne()
	ow, oh, n, oc := ine[1], ine[2], ine[3], an[3]
	plan := []convPlanned{
		{a.Type(), ine, false},
		{a.Type(), shape4(ine[0], ow*oh*n, 1, 1), true},
		{a.Type(), shape4(an[0]*an[1]*an[2], oc, 1, 1), true},
		{TypeF32, shape4(ow*oh*n, oc, 1, 1), false},
		{TypeF32, shape4(ow, oh, n, oc), true},
		{TypeF32, shape4(ow, oh, oc, n), true},
		{TypeF32, shape4(ow, oh, oc, n), false},
	}
	if p := c.ensureAll(op, plan, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_conv_2d(c.c, a.c, b.c, C.int(s0), C.int(s1), C.int(p0), C.int(p1), C.int(d0), C.int(d1))
	}, a, b)
}

// Conv2DDW returns the depthwise 2-D convolution of b: each channel is
// convolved with its own kernel (ggml_conv_2d_dw). a is [KW, KH, 1, C] (or
// [KW, KH, C, 1]) f16, b is [W, H, C, N] f32, both contiguous; the f32
// result is [OW, OH, C, N] with result(ow, oh, c, n) = sum over kw, kh of
// a(kw, kh, c) * b(ow*s0 + kw*d0 - p0, oh*s1 + kh*d1 - p1, c, n). b's
// values are rounded to f16 (ggml uses an f16 Im2Col).
func (c *Context) Conv2DDW(a, b *Tensor, s0, s1, p0, p1, d0, d1 int) *Tensor {
	const op = "conv_2d_dw"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case a.Type() != TypeF16:
		return c.fail(op, ErrType, fmt.Sprintf("a must be f16, not %v: ggml makes an f16 im2col, whose kernel asserts an f16 a", a.Type()), a, b)
	case b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("b must be f32, not %v", b.Type()), a, b)
	case !a.IsContiguous() || !b.IsContiguous():
		return c.fail(op, ErrShape, "a and b must be contiguous (ggml reshapes them); copy with Cont", a, b)
	case an[2]*an[3] != bn[2]:
		return c.fail(op, ErrShape, fmt.Sprintf("a %v must hold one KW x KH kernel per channel of b (%d)", an, bn[2]), a, b)
	}
	ow, oh, p := c.conv2DCommon(op, a, b, s0, s1, p0, p1, d0, d1)
	if p != nil {
		return p
	}
	ch, n := bn[2], bn[3]
	if uint64(bn[0])*uint64(bn[1])*4 > math.MaxInt32 && ch*n > 1 {
		return c.fail(op, ErrShape, "b's channel stride must fit a C int (ggml's kernel keeps it in one)", a, b)
	}
	k := an[0] * an[1]
	plan := []convPlanned{
		{TypeF16, shape4(an[0], an[1], 1, ch), true},
		{TypeF32, shape4(bn[0], bn[1], 1, ch*n), true},
		{TypeF16, shape4(k, ow, oh, ch*n), false},
		{TypeF16, shape4(k, ow*oh, ch, n), true},
		{TypeF16, shape4(k, 1, ch, 1), true},
		{TypeF32, shape4(1, ow*oh, ch, n), false},
		{TypeF32, shape4(ow, oh, ch, n), true},
	}
	if p := c.ensureAll(op, plan, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_conv_2d_dw(c.c, a.c, b.c, C.int(s0), C.int(s1), C.int(p0), C.int(p1), C.int(d0), C.int(d1))
	}, a, b)
}

// directKernel checks the kernel of a direct convolution: f32 or f16,
// contiguous, and small enough that one output position's patch fits the
// CPU backend's scratch memory.
func (c *Context) directKernel(op string, a *Tensor, patch, outChannels int64, inputs ...*Tensor) *Tensor {
	switch {
	case !isConvFloat(a.Type()):
		return c.fail(op, ErrType, fmt.Sprintf("a must be f32 or f16, not %v", a.Type()), inputs...)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous (ggml's kernel asserts it); copy it with Cont", inputs...)
	}
	if need := float64(patch)*float64(a.Type().Size()) + float64(outChannels)*4; need > im2colWorkSize {
		return c.fail(op, ErrShape, fmt.Sprintf("one output position needs %.0f bytes of scratch (the kernel's %d elements and %d f32 outputs), more than the %d ggml's CPU backend has", need, patch, outChannels, im2colWorkSize), inputs...)
	}
	return nil
}

// Conv2DDirect is Conv2D computed without an Im2Col tensor: ggml unrolls
// patches in chunks in scratch memory (ggml_conv_2d_direct). a is
// [KW, KH, IC, OC], f32 or f16 and contiguous; b is [W, H, IC, N] f32 with
// any strides. The f32 result is [OW, OH, OC, N], defined as for Conv2D
// (with an f16 a, b's values are rounded to f16).
func (c *Context) Conv2DDirect(a, b *Tensor, s0, s1, p0, p1, d0, d1 int) *Tensor {
	const op = "conv_2d_direct"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	ow, oh, p := c.conv2DCommon(op, a, b, s0, s1, p0, p1, d0, d1)
	if p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("b must be f32, not %v", b.Type()), a, b)
	case an[2] != bn[2]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne2 (%d) != b.ne2 (%d): kernel and input must have the same channels", an[2], bn[2]), a, b)
	}
	if p := c.directKernel(op, a, an[0]*an[1]*an[2], an[3], a, b); p != nil {
		return p
	}
	if p := c.ensure(op, TypeF32, shape4(ow, oh, an[3], bn[3]), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_conv_2d_direct(c.c, a.c, b.c, C.int(s0), C.int(s1), C.int(p0), C.int(p1), C.int(d0), C.int(d1))
	}, a, b)
}

// channelsLast reports whether t, of shape [W, H, C, N], is a permuted
// view of a contiguous [C, W, H, N] tensor: the layout ggml calls
// contiguous channels (ggml_is_contiguous_channels), packed.
func channelsLast(t *Tensor) bool {
	ne, nb := t.Ne(), t.Nb()
	ts := t.Type().Size()
	return nb[0] > nb[2] && nb[1] > nb[0] && nb[2] == ts &&
		nb[0] == ts*uint64(ne[2]) && nb[1] == nb[0]*uint64(ne[0]) && (ne[3] == 1 || nb[3] == nb[1]*uint64(ne[1]))
}

// Conv2DDWDirect is Conv2DDW computed directly in f32
// (ggml_conv_2d_dw_direct): a is [KW, KH, 1, C], b is [W, H, C, N], both
// f32. Either both are contiguous, or both have their channels innermost
// in memory: b a permuted view of a contiguous [C, W, H, N] tensor and a
// of a contiguous [C, 1, KW, KH] one (Permute(x, 3, 2, 0, 1) gives both);
// the result then has the same layout as b. The result is f32
// [OW, OH, C, N], defined as for Conv2DDW.
func (c *Context) Conv2DDWDirect(a, b *Tensor, s0, s1, p0, p1, d0, d1 int) *Tensor {
	const op = "conv_2d_dw_direct"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	ow, oh, p := c.conv2DCommon(op, a, b, s0, s1, p0, p1, d0, d1)
	if p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case a.Type() != TypeF32 || b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("a and b must be f32 (ggml's kernel reads them as float), not %v and %v", a.Type(), b.Type()), a, b)
	case an[2] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne2 (%d) must be 1: a is [KW, KH, 1, C]", an[2]), a, b)
	case an[3] != bn[2]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne3 (%d) != b.ne2 (%d): one kernel per channel", an[3], bn[2]), a, b)
	}
	switch {
	case dense(b):
		if !dense(a) {
			return c.fail(op, ErrShape, "with b contiguous, a must be contiguous too; copy it with Cont", a, b)
		}
	case bool(C.ggml_is_contiguous_channels(b.c)):
		if !channelsLast(b) {
			return c.fail(op, ErrShape, "b with its channels innermost must be a permuted view of a contiguous [C, W, H, N] tensor", a, b)
		}
		nb := a.Nb()
		ch := uint64(an[3])
		if !(nb[0] >= nb[2] && nb[1] >= nb[0]) || (an[3] > 1 && nb[3] != 4) || (an[0] > 1 && nb[0] != 4*ch) || (an[1] > 1 && nb[1] != 4*ch*uint64(an[0])) {
			return c.fail(op, ErrShape, "with b's channels innermost, a must be laid out the same way: a permuted view of a contiguous [C, 1, KW, KH] tensor (Permute(x, 3, 2, 0, 1))", a, b)
		}
	default:
		return c.fail(op, ErrShape, "b must be contiguous, or a permuted view of a contiguous [C, W, H, N] tensor (ggml's kernel takes no other layout)", a, b)
	}
	if p := c.ensure(op, TypeF32, shape4(ow, oh, bn[2], bn[3]), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_conv_2d_dw_direct(c.c, a.c, b.c, C.int(s0), C.int(s1), C.int(p0), C.int(p1), C.int(d0), C.int(d1))
	}, a, b)
}

// ConvTranspose2D returns the transposed 2-D convolution of b by a with
// the given stride and no padding (ggml_conv_transpose_2d_p0): a is
// [KW, KH, OC, IC] f16, b is [W, H, IC, N] f32; the f32 result is
// [(W-1)*stride + KW, (H-1)*stride + KH, OC, N] with
// result(x, y, oc, n) = sum over w, h, kw, kh, ic with w*stride + kw == x
// and h*stride + kh == y of b(w, h, ic, n) * a(kw, kh, oc, ic). b's values
// are rounded to f16.
//
// a's dimensions 0 and 1 must be contiguous and b's elements adjacent in
// dimension 0; other strides are free.
//
// ggml's CPU kernel computes only the first item of a batch. With N > 1
// this op therefore runs ggml_conv_transpose_2d_p0 on a view of each item
// and joins the N results along dimension 3 with ggml_concat, pairwise in
// a balanced tree (N-1 concats, each result element copied about log2(N)
// times); the context needs room for 3N-1 tensors.
func (c *Context) ConvTranspose2D(a, b *Tensor, stride int) *Tensor {
	const op = "conv_transpose_2d"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if p := c.checkParams(op, []convParam{{"stride", stride, 1, math.MaxInt32}}, a, b); p != nil {
		return p
	}
	if p := c.convNonEmpty(op, a, b); p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case a.Type() != TypeF16:
		return c.fail(op, ErrType, fmt.Sprintf("a must be f16, not %v (ggml's kernel asserts it)", a.Type()), a, b)
	case b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("b must be f32, not %v", b.Type()), a, b)
	case !adjacent(a) || (an[1] > 1 && a.Nb()[1] != 2*uint64(an[0])):
		return c.fail(op, ErrShape, "a's dimensions 0 and 1 must be contiguous (ggml's kernel reads each KW x KH kernel as one array); copy it with Cont", a, b)
	case !adjacent(b):
		return c.fail(op, ErrShape, "b's elements must be adjacent in dimension 0 (ggml's kernel asserts it); copy it with Cont", a, b)
	case an[3] != bn[2]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne3 (%d) != b.ne2 (%d): kernel and input must have the same input channels", an[3], bn[2]), a, b)
	}
	s := int64(stride)
	const lim = math.MaxInt32
	if bn[0]-1 > lim/s || bn[1]-1 > lim/s {
		return c.fail(op, ErrShape, "the result is too large for ggml's kernel, which indexes it with C ints", a, b)
	}
	ow, oh := (bn[0]-1)*s+an[0], (bn[1]-1)*s+an[1]
	if ow > lim || oh > lim || ow > lim/oh || an[0]*an[1] > lim/(an[2]*an[3]) || bn[0]*bn[1] > lim/bn[2] {
		return c.fail(op, ErrShape, "the kernel, the input and each output plane must have fewer than 2^31 elements (ggml's kernel indexes them with C ints)", a, b)
	}
	n := bn[3]
	if n == 1 {
		if p := c.ensure(op, TypeF32, shape4(ow, oh, an[2], 1), nil, a, b); p != nil {
			return p
		}
		return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_conv_transpose_2d_p0(c.c, a.c, b.c, C.int(stride)) }, a, b)
	}
	// A batch: one kernel per item, on a view of it, joined by concats.
	if !itemViewFits(b) {
		return c.fail(op, ErrShape, "b's elements overlap in memory: ggml sizes a view of b's last batch item as if dense, and that runs past b's memory (ggml_view_3d asserts); copy b with Cont", a, b)
	}
	item := shape4(ow, oh, an[2], 1)
	plan := make([]convPlanned, 0, 3*n)
	for range n {
		plan = append(plan, convPlanned{TypeF32, shape4(bn[0], bn[1], bn[2], 1), true}, convPlanned{TypeF32, item, false})
	}
	var joins func(lo, hi int64)
	joins = func(lo, hi int64) {
		if hi-lo < 2 {
			return
		}
		mid := lo + (hi-lo)/2
		joins(lo, mid)
		joins(mid, hi)
		plan = append(plan, convPlanned{TypeF32, shape4(ow, oh, an[2], hi-lo), false})
	}
	joins(0, n)
	if p := c.ensureAll(op, plan, a, b); p != nil {
		return p
	}
	nb := b.Nb()
	return c.call(op, func() *C.struct_ggml_tensor {
		var build func(lo, hi int64) *C.struct_ggml_tensor
		build = func(lo, hi int64) *C.struct_ggml_tensor {
			if hi-lo == 1 {
				v := C.ggml_view_3d(c.c, b.c, C.int64_t(bn[0]), C.int64_t(bn[1]), C.int64_t(bn[2]), C.size_t(nb[1]), C.size_t(nb[2]), C.size_t(uint64(lo)*nb[3]))
				return C.ggml_conv_transpose_2d_p0(c.c, a.c, v, C.int(stride))
			}
			mid := lo + (hi-lo)/2
			l := build(lo, mid)
			return C.ggml_concat(c.c, l, build(mid, hi), 3)
		}
		return build(0, n)
	}, a, b)
}

// itemViewFits reports whether ggml_new_tensor_impl accepts a view of the
// last item (dimension 3) of t with t's strides: its dense size, from its
// offset in the memory t lies in, must not run past that memory.
func itemViewFits(t *Tensor) bool {
	ne := t.Ne()
	ne[3] = 1
	size, err := dataSize(t.Type(), ne)
	if err != nil {
		return false
	}
	offs, ok := mulAdd(0, uint64(t.Ne()[3]-1), t.Nb()[3])
	base := t
	if t.viewSrc != nil {
		base = t.viewSrc
		offs, ok = mulAdd(offs, 1, t.ViewOffset())
	}
	limit := base.Bytes()
	return ok && offs <= limit && size <= limit-offs
}

// Im2Col3D unrolls the 3-D patches of b that a convolution with kernel a
// reads (ggml_im2col_3d). a is [KW, KH, KD, IC*OC] and b is
// [W, H, D, IC*N] (batch item n's channel ic at index n*IC + ic); only a's
// shape is used. The result, of type dst (f32, or f16 with an f16 a), is
// [IC*KD*KH*KW, OW, OH, OD*N]. b is f32 with adjacent elements in dimension
// 0; its other strides are free.
func (c *Context) Im2Col3D(a, b *Tensor, ic int, s0, s1, s2, p0, p1, p2, d0, d1, d2 int, dst Type) *Tensor {
	const op = "im2col_3d"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	ne, p := c.im2col3DShape(op, a, b, ic, s0, s1, s2, p0, p1, p2, d0, d1, d2, dst)
	if p != nil {
		return p
	}
	if p := c.ensure(op, dst, ne, nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_im2col_3d(c.c, a.c, b.c, C.int64_t(ic), C.int(s0), C.int(s1), C.int(s2),
			C.int(p0), C.int(p1), C.int(p2), C.int(d0), C.int(d1), C.int(d2), C.enum_ggml_type(dst))
	}, a, b)
}

func (c *Context) im2col3DShape(op string, a, b *Tensor, ic int, s0, s1, s2, p0, p1, p2, d0, d1, d2 int, dst Type) ([MaxDims]int64, *Tensor) {
	var none [MaxDims]int64
	ps := []convParam{
		{"ic", ic, 1, math.MaxInt32},
		convStride("s0", s0), convStride("s1", s1), convStride("s2", s2),
		convPad("p0", p0), convPad("p1", p1), convPad("p2", p2),
		convDil("d0", d0), convDil("d1", d1), convDil("d2", d2),
	}
	if p := c.checkParams(op, ps, a, b); p != nil {
		return none, p
	}
	if p := c.convNonEmpty(op, a, b); p != nil {
		return none, p
	}
	if p := c.im2colTypes(op, a, b, dst, false); p != nil {
		return none, p
	}
	an, bn := a.Ne(), b.Ne()
	if bn[3]%int64(ic) != 0 {
		return none, c.fail(op, ErrShape, fmt.Sprintf("b.ne3 (%d) must be a multiple of ic (%d): b is [W, H, D, IC*N]", bn[3], ic), a, b)
	}
	out, p := c.convOuts(op, a, b, [3]int{s0, p0, d0}, [3]int{s1, p1, d1}, [3]int{s2, p2, d2})
	if p != nil {
		return none, p
	}
	n := bn[3] / int64(ic)
	k := an[0] * an[1] * an[2]
	if k > math.MaxInt64/int64(ic) || out[2] > math.MaxInt64/n {
		return none, c.fail(op, ErrShape, "the result is too large", a, b)
	}
	ne := shape4(k*int64(ic), out[0], out[1], out[2]*n)
	if _, err := dataSize(dst, ne); err != nil {
		return none, c.fail(op, ErrShape, err.Error(), a, b)
	}
	return ne, nil
}

// Conv3D returns the 3-D convolution of b by a (ggml_conv_3d): a is
// [KW, KH, KD, IC*OC] (output channel oc's kernel for input channel ic at
// index oc*IC + ic), b is [W, H, D, IC*N] (index n*IC + ic); the f32 result
// is [OW, OH, OD, OC*N] (index n*OC + oc). ggml computes it as an Im2Col3D
// of a's type and a matrix product: a is f32 or f16 (then b's values are
// rounded to f16) and contiguous, b f32 with adjacent elements in
// dimension 0. Upstream ggml (the ggml_system provider) makes an f16
// Im2Col3D for an f32 a too: there b's values are rounded to f16 either way.
func (c *Context) Conv3D(a, b *Tensor, ic int, s0, s1, s2, p0, p1, p2, d0, d1, d2 int) *Tensor {
	const op = "conv_3d"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	ine, p := c.im2col3DShape(op, a, b, ic, s0, s1, s2, p0, p1, p2, d0, d1, d2, a.Type())
	if p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case !a.IsContiguous():
		return c.fail(op, ErrShape, "a must be contiguous (ggml reshapes it); copy it with Cont", a, b)
	case an[3]%int64(ic) != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne3 (%d) must be a multiple of ic (%d): a is [KW, KH, KD, IC*OC]", an[3], ic), a, b)
	}
	oc, n := an[3]/int64(ic), bn[3]/int64(ic)
	ow, oh, od := ine[1], ine[2], ine[3]/n
	plan := []convPlanned{
		{a.Type(), ine, false},
		{a.Type(), shape4(ine[0], ow*oh*od*n, 1, 1), true},
		{a.Type(), shape4(ine[0], oc, 1, 1), true},
		{TypeF32, shape4(ow*oh*od*n, oc, 1, 1), false},
		{TypeF32, shape4(ow*oh, od, n, oc), true},
		{TypeF32, shape4(ow*oh, od, oc, n), true},
		{TypeF32, shape4(ow*oh, od, oc, n), false},
		{TypeF32, shape4(ow, oh, od, oc*n), true},
	}
	if p := c.ensureAll(op, plan, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_conv_3d(c.c, a.c, b.c, C.int64_t(ic), C.int(s0), C.int(s1), C.int(s2),
			C.int(p0), C.int(p1), C.int(p2), C.int(d0), C.int(d1), C.int(d2))
	}, a, b)
}

// Conv3DDirect is Conv3D computed without an Im2Col3D tensor
// (ggml_conv_3d_direct), with the channel and batch counts given: a is
// [KW, KH, KD, ic*oc], f32 or f16 and contiguous; b is [W, H, D, ic*n] f32
// with any strides. The f32 result is [OW, OH, OD, oc*n], laid out and
// defined as for Conv3D.
func (c *Context) Conv3DDirect(a, b *Tensor, s0, s1, s2, p0, p1, p2, d0, d1, d2, ic, n, oc int) *Tensor {
	const op = "conv_3d_direct"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	ps := []convParam{
		{"ic", ic, 1, math.MaxInt32}, {"n", n, 1, math.MaxInt32}, {"oc", oc, 1, math.MaxInt32},
		convStride("s0", s0), convStride("s1", s1), convStride("s2", s2),
		convPad("p0", p0), convPad("p1", p1), convPad("p2", p2),
		convDil("d0", d0), convDil("d1", d1), convDil("d2", d2),
	}
	if p := c.checkParams(op, ps, a, b); p != nil {
		return p
	}
	if p := c.convNonEmpty(op, a, b); p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("b must be f32, not %v", b.Type()), a, b)
	case an[3] != int64(ic)*int64(oc):
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne3 (%d) != ic*oc (%d*%d)", an[3], ic, oc), a, b)
	case bn[3] != int64(ic)*int64(n):
		return c.fail(op, ErrShape, fmt.Sprintf("b.ne3 (%d) != ic*n (%d*%d)", bn[3], ic, n), a, b)
	}
	var out [3]int64
	for i, sp := range [3][3]int{{s0, p0, d0}, {s1, p1, d1}, {s2, p2, d2}} {
		o, ok := convOut(bn[i], an[i], sp[0], sp[1], sp[2])
		if !ok {
			return c.convFail(op, fmt.Sprintf("dimension %d", i), bn[i], an[i], sp[0], sp[1], sp[2], a, b)
		}
		out[i] = o
	}
	if p := c.directKernel(op, a, an[0]*an[1]*an[2]*int64(ic), int64(oc), a, b); p != nil {
		return p
	}
	if p := c.ensure(op, TypeF32, shape4(out[0], out[1], out[2], int64(oc)*int64(n)), nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_conv_3d_direct(c.c, a.c, b.c, C.int(s0), C.int(s1), C.int(s2),
			C.int(p0), C.int(p1), C.int(p2), C.int(d0), C.int(d1), C.int(d2), C.int(ic), C.int(n), C.int(oc))
	}, a, b)
}
