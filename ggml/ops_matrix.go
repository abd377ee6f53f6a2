package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// The matrix ops of ggml.h: the products (mul_mat, with its precision,
// mul_mat_id for mixtures of experts, out_prod) and the ops on square
// matrices (diag, tri, solve_tri).

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

// Precision is the accumulator precision an op asks its backend for
// (enum ggml_prec). The CPU backend accumulates in f32 either way; GPU
// backends may use f16 by default.
type Precision int

// Precisions (GGML_PREC_*).
const (
	PrecDefault Precision = 0  // the backend's choice
	PrecF32     Precision = 10 // f32 accumulators
)

func (p Precision) valid() bool { return p == PrecDefault || p == PrecF32 }

// MulMatPrec is MulMat with its accumulator precision set
// (ggml_mul_mat_set_prec).
func (c *Context) MulMatPrec(a, b *Tensor, prec Precision) *Tensor {
	if !prec.valid() {
		if p := c.begin("mul_mat", a, b); p != nil {
			return p
		}
		return c.fail("mul_mat", ErrInvalid, fmt.Sprintf("precision %d is not PrecDefault or PrecF32", prec), a, b)
	}
	t := c.MulMat(a, b)
	if t.err == nil && prec != PrecDefault {
		C.ggml_mul_mat_set_prec(t.c, C.enum_ggml_prec(prec))
	}
	return t
}

// MulMatID is the mixture-of-experts matrix product (ggml_mul_mat_id): as
// holds one matrix per expert, [k, m, nExpert]; b holds the activations,
// [k, nb1, nTokens]; ids, i32 [nUsed, nTokens], names for each token the
// experts it uses. The result is f32 [m, nUsed, nTokens] with
//
//	result[:, e, t] = MulMat(as[:, :, ids[e, t]], b[:, e % nb1, t])
//
// so b's dimension 1 is broadcast over the used experts when nUsed is a
// multiple of it (nb1 = 1: one row of b for all experts). as must have a
// CPU dot product (as MulMat's a), not be transposed, and have adjacent
// elements in dimension 0; b is f32, or already of the type the CPU
// converts b to for as (f16 for an f16 as, q8_0 for q4_0, ...), with
// adjacent elements in dimension 0. For quantized as the CPU quantizes an
// f32 b (to q8_0, q8_1 or q8_K) before the dot products, as MulMat does.
//
// Every id must lie in [0, nExpert): ggml's kernel checks this only in debug
// builds, and an id out of range makes it write outside its work buffer
// (wrong results, a corrupted heap or a segfault).
// Ids that the graph computes are accepted only when bounded by
// construction (an argsort or top-k of rows of at most nExpert, the usual
// router, through views); ids that are inputs in host memory are checked
// before compute (ErrInvalid).
func (c *Context) MulMatID(as, b, ids *Tensor) *Tensor {
	const op = "mul_mat_id"
	if p := c.begin(op, as, b, ids); p != nil {
		return p
	}
	if p := c.checkTypes(op, TypeF32, as, b); p != nil {
		return p
	}
	an, bn, in := as.Ne(), b.Ne(), ids.Ne()
	switch {
	case ids.Type() != TypeI32:
		return c.fail(op, ErrType, fmt.Sprintf("ids must be i32, not %v", ids.Type()), as, b, ids)
	case an[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("as must be 3-d, one matrix per expert (ne3 %d != 1)", an[3]), as, b, ids)
	case bn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("b must be 3-d (ne3 %d != 1)", bn[3]), as, b, ids)
	case in[2] != 1 || in[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("ids must be a matrix, not %v", in), as, b, ids)
	case in[1] != bn[2]:
		return c.fail(op, ErrShape, fmt.Sprintf("ids.ne1 (%d) != b.ne2 (%d): one list of experts per token", in[1], bn[2]), as, b, ids)
	case an[0] != bn[0]:
		return c.fail(op, ErrShape, fmt.Sprintf("as.ne0 (%d) != b.ne0 (%d): both must have the shared dimension innermost", an[0], bn[0]), as, b, ids)
	case bn[1] == 0 || in[0]%bn[1] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("ids.ne0 (%d) must be a multiple of b.ne1 (%d)", in[0], bn[1]), as, b, ids)
	case as.IsTransposed():
		return c.fail(op, ErrShape, "as must not be transposed (nb0 > nb1); make it contiguous with Cont", as, b, ids)
	case !adjacent(as) || !adjacent(b):
		return c.fail(op, ErrShape, "as's and b's elements must be adjacent in dimension 0 (nb0 = type size); copy with Cont", as, b, ids)
	case an[2] > math.MaxInt32 || in[0] > math.MaxInt32 || in[1] > math.MaxInt32:
		return c.fail(op, ErrShape, "ggml's kernel counts experts and ids in 32-bit integers", as, b, ids)
	}
	if p := c.seqIndices(op, "experts", ids, an[2], as, b, ids); p != nil {
		return p
	}
	ne := [MaxDims]int64{an[1], in[0], bn[2], 1}
	if p := c.ensure(op, TypeF32, ne, nil, as, b, ids); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_mul_mat_id(c.c, as.c, b.c, ids.c) }, as, b, ids)
}

// mul_mat_id's ids (src[2]) name experts, the matrices of src[0] along ne2.
func init() {
	registerIndexCheck(C.GGML_OP_MUL_MAT_ID, "mul_mat_id", func(n *C.struct_ggml_tensor) (*C.struct_ggml_tensor, int64) {
		return n.src[2], int64(n.src[0].ne[2])
	})
}

// OutProd returns the outer products of the columns of a and b summed over
// their shared dimension 1 (ggml_out_prod): with a of shape [m, k] and b of
// shape [n, k] the result is f32 [m, n], result[i,j] = sum over x of
// a[i,x]*b[j,x]; that is a times b transposed. a is broadcast over b's
// dimensions 2 and 3 when f32; a quantized a (of the block types) must
// match b there. a is f32 or quantized, not transposed, with adjacent
// elements in dimension 0; b is f32 with any strides (a transposed b is
// read in place).
func (c *Context) OutProd(a, b *Tensor) *Tensor {
	const op = "out_prod"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	if p := c.checkTypes(op, TypeF32, a, b); p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case an[1] != bn[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne1 (%d) != b.ne1 (%d): the summed dimension is dimension 1 of both", an[1], bn[1]), a, b)
	case an[2] == 0 || bn[2]%an[2] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("b.ne2 (%d) must be a multiple of a.ne2 (%d)", bn[2], an[2]), a, b)
	case an[3] == 0 || bn[3]%an[3] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("b.ne3 (%d) must be a multiple of a.ne3 (%d)", bn[3], an[3]), a, b)
	case a.IsTransposed():
		return c.fail(op, ErrShape, "a must not be transposed (nb0 > nb1); make it contiguous with Cont", a, b)
	case !adjacent(a):
		return c.fail(op, ErrShape, "a's elements must be adjacent in dimension 0; copy it with Cont", a, b)
	case a.Type().IsQuantized() && (an[2] != bn[2] || an[3] != bn[3]):
		return c.fail(op, ErrShape, fmt.Sprintf("a quantized a is not broadcast: a.ne2, a.ne3 (%d, %d) must equal b's (%d, %d)", an[2], an[3], bn[2], bn[3]), a, b)
	}
	ne := [MaxDims]int64{an[0], bn[0], bn[2], bn[3]}
	if p := c.ensure(op, TypeF32, ne, nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_out_prod(c.c, a.c, b.c) }, a, b)
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

// SolveTri solves a x = b for x by forward substitution
// (ggml_solve_tri), for each matrix of a batch: a, f32 [n, n, ...], is
// lower triangular with a[j, i] the element of row i and column j (only
// j <= i is read); b and the result x are f32 [k, n, ...] with b[c, i] the
// element of row i and column c. a and b are contiguous with the same
// dimensions 2 and 3. ggml implements only left, lower and !uni (a x = b,
// a lower triangular, its diagonal read from a); other variants are
// ErrInvalid. A zero on the diagonal gives Inf or NaN.
func (c *Context) SolveTri(a, b *Tensor, left, lower, uni bool) *Tensor {
	const op = "solve_tri"
	if p := c.begin(op, a, b); p != nil {
		return p
	}
	an, bn := a.Ne(), b.Ne()
	switch {
	case !left || !lower || uni:
		return c.fail(op, ErrInvalid, fmt.Sprintf("left=%v lower=%v uni=%v: ggml solves only left, lower, non-unit systems", left, lower, uni), a, b)
	case a.Type() != TypeF32 || b.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("a and b must be f32, not %v and %v", a.Type(), b.Type()), a, b)
	case an[0] != an[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("a must be square, not %v", an[:2]), a, b)
	case an[1] != bn[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne1 (%d) != b.ne1 (%d): b needs a row per row of a", an[1], bn[1]), a, b)
	case an[2] != bn[2] || an[3] != bn[3]:
		return c.fail(op, ErrShape, fmt.Sprintf("a's batch %v != b's %v", an[2:], bn[2:]), a, b)
	case !dense(a) || !dense(b):
		return c.fail(op, ErrShape, "a and b must be contiguous; copy with Cont", a, b)
	}
	if p := c.ensure(op, TypeF32, bn, nil, a, b); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_solve_tri(c.c, a.c, b.c, C.bool(left), C.bool(lower), C.bool(uni))
	}, a, b)
}

// DeepSeek V4's hyper-connections: the residual stream is hc streams
// mixed by small matrices (upstream ggml only; with the embedded provider
// each records an ErrUnsupported error that names -tags ggml_system). All
// take f32 inputs of any strides.

// HCCombine makes DeepSeek V4's hyper-connection mixing matrices
// (ggml_dsv4_hc_comb): with mixes f32 [(2+hc)*hc, nTokens] (hc = 4, the
// only count ggml takes), scale f32 [>= 3] and base f32 [(2+hc)*hc], it
// takes the logits
//
//	l[d, s, t] = mixes[2*hc + d + hc*s, t]*scale[2] + base[2*hc + d + hc*s]
//
// applies a softmax over d and adds eps, divides each (d, ·) by eps plus its
// sum over s, and then nIter-1 times divides each (·, s) by eps plus its
// sum over d and each (d, ·) again (Sinkhorn normalization). The result is
// f32 [hc, hc, nTokens]. nIter must be at least 1.
func (c *Context) HCCombine(mixes, scale, base *Tensor, eps float32, nIter int) *Tensor {
	const op = "dsv4_hc_comb"
	in := []*Tensor{mixes, scale, base}
	if p := c.begin(op, in...); p != nil {
		return p
	}
	if !haveUpstream {
		return c.upstreamOnly(op, "HCCombine (ggml_dsv4_hc_comb)", in...)
	}
	if p := c.seqTypes(op, TypeF32, []string{"mixes", "scale", "base"}, in, in...); p != nil {
		return p
	}
	const hc, mix = 4, (2 + 4) * 4
	mn := mixes.Ne()
	switch {
	case nIter < 1 || nIter > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("nIter (%d) must be in [1, 2^31-1]", nIter), in...)
	case mn[0] != mix || mn[2] != 1 || mn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("mixes must be [(2+hc)*hc nTokens] = [%d nTokens] (ggml takes hc = %d only), not %v", mix, hc, mn), in...)
	case scale.Ne()[0] < 3 || scale.Ne()[1] != 1 || scale.Ne()[2] != 1 || scale.Ne()[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("scale must be a vector of at least 3, not %v", scale.Ne()), in...)
	case base.Ne() != [MaxDims]int64{mix, 1, 1, 1}:
		return c.fail(op, ErrShape, fmt.Sprintf("base must be a vector of %d, not %v", mix, base.Ne()), in...)
	}
	if p := c.ensure(op, TypeF32, [MaxDims]int64{hc, hc, mn[1], 1}, nil, in...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.goggml_dsv4_hc_comb(c.c, mixes.c, scale.c, base.c, C.float(eps), C.int32_t(nIter))
	}, in...)
}

// HCPre collapses DeepSeek V4's hc residual streams into one
// (ggml_dsv4_hc_pre): with x f32 [n, hc, nTokens] and weights f32 [hc,
// nTokens], the result is f32 [n, nTokens] with
//
//	result[i, t] = sum over h of x[i, h, t] * weights[h, t]
//
// hc must be at least 1.
func (c *Context) HCPre(x, weights *Tensor) *Tensor {
	const op = "dsv4_hc_pre"
	if p := c.begin(op, x, weights); p != nil {
		return p
	}
	if !haveUpstream {
		return c.upstreamOnly(op, "HCPre (ggml_dsv4_hc_pre)", x, weights)
	}
	if p := c.seqTypes(op, TypeF32, []string{"x", "weights"}, []*Tensor{x, weights}, x, weights); p != nil {
		return p
	}
	xn := x.Ne()
	switch {
	case xn[1] < 1 || xn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("x must be [n hc nTokens] with hc >= 1, not %v", xn), x, weights)
	case weights.Ne() != [MaxDims]int64{xn[1], xn[2], 1, 1}:
		return c.fail(op, ErrShape, fmt.Sprintf("weights must be [hc nTokens] = %v, not %v", xn[1:3], weights.Ne()), x, weights)
	}
	if p := c.ensure(op, TypeF32, [MaxDims]int64{xn[0], xn[2], 1, 1}, nil, x, weights); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.goggml_dsv4_hc_pre(c.c, x.c, weights.c) }, x, weights)
}

// HCPost expands a layer's output back into DeepSeek V4's hc residual
// streams (ggml_dsv4_hc_post): with x f32 [n, nTokens], residual f32 [n, hc,
// nTokens], post f32 [hc, nTokens] and comb f32 [hc, hc, nTokens] (as
// HCCombine makes), the result is f32 [n, hc, nTokens] with
//
//	result[i, d, t] = x[i, t]*post[d, t] + sum over s of residual[i, s, t]*comb[d, s, t]
//
// hc must be at least 1.
func (c *Context) HCPost(x, residual, post, comb *Tensor) *Tensor {
	const op = "dsv4_hc_post"
	in := []*Tensor{x, residual, post, comb}
	if p := c.begin(op, in...); p != nil {
		return p
	}
	if !haveUpstream {
		return c.upstreamOnly(op, "HCPost (ggml_dsv4_hc_post)", in...)
	}
	if p := c.seqTypes(op, TypeF32, []string{"x", "residual", "post", "comb"}, in, in...); p != nil {
		return p
	}
	xn, rn := x.Ne(), residual.Ne()
	n, nTok, hc := xn[0], xn[1], rn[1]
	switch {
	case xn[2] != 1 || xn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("x must be a matrix [n nTokens], not %v", xn), in...)
	case hc < 1 || rn != [MaxDims]int64{n, hc, nTok, 1}:
		return c.fail(op, ErrShape, fmt.Sprintf("residual must be [n hc nTokens] with n %d, nTokens %d and hc >= 1, not %v", n, nTok, rn), in...)
	case post.Ne() != [MaxDims]int64{hc, nTok, 1, 1}:
		return c.fail(op, ErrShape, fmt.Sprintf("post must be [hc nTokens] = %v, not %v", []int64{hc, nTok}, post.Ne()), in...)
	case comb.Ne() != [MaxDims]int64{hc, hc, nTok, 1}:
		return c.fail(op, ErrShape, fmt.Sprintf("comb must be [hc hc nTokens] = %v, not %v", []int64{hc, hc, nTok}, comb.Ne()), in...)
	}
	if p := c.ensure(op, TypeF32, [MaxDims]int64{n, hc, nTok, 1}, nil, in...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.goggml_dsv4_hc_post(c.c, x.c, residual.c, post.c, comb.c)
	}, in...)
}
