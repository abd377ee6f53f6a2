package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// The sequence models' ops: Mamba's conv and scan, RWKV 6 and 7, gated
// linear attention. As elsewhere, each op checks in Go what ggml's
// constructor and its CPU kernel assert or silently rely on.

// seqTypes checks that every input is of type t.
func (c *Context) seqTypes(op string, t Type, names []string, ts []*Tensor, inputs ...*Tensor) *Tensor {
	for i, x := range ts {
		if x.Type() != t {
			return c.fail(op, ErrType, fmt.Sprintf("%s must be %v, not %v", names[i], t, x.Type()), inputs...)
		}
	}
	return nil
}

// seqDense checks that every input is contiguous with adjacent elements:
// the kernels read them as plain arrays.
func (c *Context) seqDense(op string, names []string, ts []*Tensor, inputs ...*Tensor) *Tensor {
	for i, x := range ts {
		if !dense(x) {
			return c.fail(op, ErrShape, fmt.Sprintf("%s must be contiguous; copy it with Cont", names[i]), inputs...)
		}
	}
	return nil
}

// SSMConv is the causal 1-d convolution of Mamba (ggml_ssm_conv): sx, f32
// [dConv-1+nT, dInner, nSeqs], holds each channel's last dConv-1 inputs
// followed by nT new ones; c, f32 [dConv, dInner], the kernel of each
// channel. The result is f32 [dInner, nT, nSeqs] (note the transposition):
//
//	result[ch, t, s] = sum over i < dConv of sx[t+i, ch, s] * c[i, ch]
//
// sx's rows must be contiguous (nb0 = 4, nb1 = 4*ne0; nb2 may be larger);
// c must be contiguous; dConv >= 1 and sx.ne0 >= dConv-1.
func (c *Context) SSMConv(sx, cw *Tensor) *Tensor {
	const op = "ssm_conv"
	if p := c.begin(op, sx, cw); p != nil {
		return p
	}
	sn, cn := sx.Ne(), cw.Ne()
	switch {
	case sx.Type() != TypeF32 || cw.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes sx and c of f32, not %v and %v", sx.Type(), cw.Type()), sx, cw)
	case sn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("sx must be 3-d, not %v", sn), sx, cw)
	case cn[2] != 1 || cn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("c must be a matrix, not %v", cn), sx, cw)
	case cn[0] < 1:
		return c.fail(op, ErrShape, "c.ne0 (the kernel width) must be >= 1", sx, cw)
	case sn[1] != cn[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("sx.ne1 (%d) != c.ne1 (%d): one kernel per channel", sn[1], cn[1]), sx, cw)
	case sn[0] < cn[0]-1:
		return c.fail(op, ErrShape, fmt.Sprintf("sx.ne0 (%d) must be at least c.ne0-1 (%d)", sn[0], cn[0]-1), sx, cw)
	case !adjacent(sx) || sx.Nb()[1] != uint64(sn[0])*4:
		return c.fail(op, ErrShape, "sx's rows must be contiguous (nb0 = 4, nb1 = 4*ne0); copy it with Cont", sx, cw)
	case !dense(cw):
		return c.fail(op, ErrShape, "c must be contiguous; copy it with Cont", sx, cw)
	case sn[0] > math.MaxInt32 || sn[1] > math.MaxInt32 || sn[2] > math.MaxInt32 || sn[0]*sn[1] > math.MaxInt32:
		return c.fail(op, ErrShape, fmt.Sprintf("sx %v: ggml's kernel indexes a sequence in 32-bit integers", sn), sx, cw)
	}
	ne := [MaxDims]int64{cn[1], sn[0] - cn[0] + 1, sn[2], 1}
	if p := c.ensure(op, TypeF32, ne, nil, sx, cw); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_ssm_conv(c.c, sx.c, cw.c) }, sx, cw)
}

// SSMScan is Mamba's selective scan (ggml_ssm_scan), in its Mamba-1 form
// (a decay per state: A of [dState, nHead]) or its Mamba-2 form (a scalar
// decay per head: A of [1, nHead]). With x f32 [headDim, nHead, nTokens,
// nSeqs], dt f32 [nHead, nTokens, nSeqs], B and C f32 [dState, nGroup,
// nTokens, nSeqs] (nHead a multiple of nGroup; head h uses group
// h/(nHead/nGroup)), s f32 [dState, headDim, nHead, n] the states and ids
// i32 [nSeqs] the state each sequence starts from, it runs for each
// sequence q, token t, head h, channel d and state i, from st = s[:, :, :,
// ids[q]]:
//
//	dts       = softplus(dt[h, t, q])              (log(1+e^x); x for x > 20)
//	st[i,d,h] = st[i,d,h]*exp(dts*A[i or 0, h]) + B[i, g, t, q]*x[d, h, t, q]*dts
//	y[d,h,t,q] = sum over i of st[i,d,h] * C[i, g, t, q]
//
// The result is one f32 vector of x.Elements() + dState*headDim*nHead*nSeqs
// values: y, dense in x's shape, followed by each sequence's final state,
// [dState, headDim, nHead] each, in sequence order (not ids order). Use
// views to take them apart. (ggml computes softplus as logf(1+expf(x)) in
// float32, which loses relative accuracy as x falls below about -5.)
//
// s, dt and A must be contiguous; x, B and C must have contiguous
// matrices (nb0 = 4, nb1 = 4*ne0). Every id must lie in [0, s.ne3): ggml's
// kernel reads the state at ids[q] unchecked. Ids that the graph computes
// are accepted only when bounded by construction (an argsort or top-k,
// through views); ids that are inputs in host memory are checked before
// compute (ErrInvalid). SSMScan is SSMScanK with k = 1.
func (c *Context) SSMScan(s, x, dt, a, b, cm, ids *Tensor) *Tensor {
	return c.ssmScan(s, x, dt, a, b, cm, ids, 1)
}

// SSMScanK is SSMScan keeping k states per sequence (ggml_ssm_scan's K,
// upstream ggml's): the result is y followed by k slots of nSeqs states
// ([dState, headDim, nHead] each, in sequence order), most recent first:
// slot 0 holds each sequence's final state, slot j the state j tokens
// before the end (after token nTokens-1-j). Slots j >= nTokens are not
// written: their values are whatever the result's memory held. k must be
// 1 with Mamba-1's A ([dState, nHead]), and at most 2^31-1.
//
// The embedded provider's ggml keeps the final state only: there SSMScanK
// with k > 1 records an ErrUnsupported error that names -tags ggml_system.
func (c *Context) SSMScanK(s, x, dt, a, b, cm, ids *Tensor, k int64) *Tensor {
	return c.ssmScan(s, x, dt, a, b, cm, ids, k)
}

func (c *Context) ssmScan(s, x, dt, a, b, cm, ids *Tensor, k int64) *Tensor {
	const op = "ssm_scan"
	in := []*Tensor{s, x, dt, a, b, cm, ids}
	if p := c.begin(op, in...); p != nil {
		return p
	}
	switch {
	case k < 1 || k > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("K (%d) must be in [1, 2^31-1]", k), in...)
	case k > 1 && !haveUpstream:
		return c.upstreamOnly(op, fmt.Sprintf("K = %d (more than the final state)", k), in...)
	}
	if p := c.seqTypes(op, TypeF32, []string{"s", "x", "dt", "A", "B", "C"}, in[:6], in...); p != nil {
		return p
	}
	if ids.Type() != TypeI32 {
		return c.fail(op, ErrType, fmt.Sprintf("ids must be i32, not %v", ids.Type()), in...)
	}
	if p := c.seqDense(op, []string{"s", "dt", "A"}, []*Tensor{s, dt, a}, in...); p != nil {
		return p
	}
	for i, m := range []*Tensor{x, b, cm} {
		if !adjacent(m) || m.Nb()[1] != uint64(m.Ne()[0])*4 {
			return c.fail(op, ErrShape, fmt.Sprintf("%s must have contiguous matrices (nb0 = 4, nb1 = 4*ne0); copy it with Cont", []string{"x", "B", "C"}[i]), in...)
		}
	}
	sn, xn, dn, an, bn, in0 := s.Ne(), x.Ne(), dt.Ne(), a.Ne(), b.Ne(), ids.Ne()
	dState, headDim, nHead, nTok, nSeq := sn[0], xn[0], xn[1], xn[2], xn[3]
	switch {
	case !sameShape(b, cm):
		return c.fail(op, ErrShape, fmt.Sprintf("B %v and C %v must have the same shape", bn, cm.Ne()), in...)
	case dn != [MaxDims]int64{nHead, nTok, nSeq, 1}:
		return c.fail(op, ErrShape, fmt.Sprintf("dt must be [nHead nTokens nSeqs] = %v, not %v", []int64{nHead, nTok, nSeq}, dn), in...)
	case sn[1] != headDim || sn[2] != nHead:
		return c.fail(op, ErrShape, fmt.Sprintf("s.ne1, s.ne2 (%d, %d) must be x's headDim and nHead (%d, %d)", sn[1], sn[2], headDim, nHead), in...)
	case bn[0] != dState || bn[2] != nTok || bn[3] != nSeq:
		return c.fail(op, ErrShape, fmt.Sprintf("B must be [dState nGroup nTokens nSeqs] with dState %d, nTokens %d, nSeqs %d, not %v", dState, nTok, nSeq, bn), in...)
	case bn[1] < 1 || nHead%bn[1] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("x.ne1 (nHead %d) must be a multiple of B.ne1 (nGroup %d)", nHead, bn[1]), in...)
	case in0 != [MaxDims]int64{nSeq, 1, 1, 1}:
		return c.fail(op, ErrShape, fmt.Sprintf("ids must be a vector of nSeqs (%d) ids, not %v", nSeq, in0), in...)
	case !adjacent(ids):
		return c.fail(op, ErrShape, "ids' elements must be adjacent (nb0 = 4); copy it with Cont", in...)
	case an[2] != 1 || an[3] != 1 || an[1] != nHead:
		return c.fail(op, ErrShape, fmt.Sprintf("A must be a matrix with ne1 = nHead (%d), not %v", nHead, an), in...)
	case an[0] != 1 && an[0] != dState:
		return c.fail(op, ErrShape, fmt.Sprintf("A.ne0 (%d) must be 1 (Mamba-2) or dState (%d, Mamba-1)", an[0], dState), in...)
	case an[0] != 1 && k != 1:
		return c.fail(op, ErrInvalid, fmt.Sprintf("K (%d) must be 1 with Mamba-1's A of [dState nHead]", k), in...)
	}
	if n, ok := seqMul(dState, headDim, nHead); !ok || n > math.MaxInt32 {
		return c.fail(op, ErrShape, fmt.Sprintf("a state of %v: ggml's kernel indexes it in 32-bit integers", sn[:3]), in...)
	}
	if p := c.seqIndices(op, "states of s", ids, sn[3], in...); p != nil {
		return p
	}
	st, ok := seqMul(k, dState, headDim, nHead, nSeq)
	n := x.Elements() + st
	if !ok || n < 0 {
		return c.fail(op, ErrShape, "the result would have more than 2^63 elements", in...)
	}
	if p := c.ensure(op, TypeF32, [MaxDims]int64{n, 1, 1, 1}, nil, in...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.goggml_ssm_scan(c.c, s.c, x.c, dt.c, a.c, b.c, cm.c, ids.c, C.int64_t(k))
	}, in...)
}

// ssm_scan's ids (src[6]) name states, the sequences of s (src[0]) along
// ne3.
func init() {
	registerIndexCheck(C.GGML_OP_SSM_SCAN, "ssm_scan", func(n *C.struct_ggml_tensor) (*C.struct_ggml_tensor, int64) {
		return n.src[6], int64(n.src[0].ne[3])
	})
}

// seqHeads is the thread limit of RWKVWKV6, GatedLinearAttn and RWKVWKV7
// (registerThreadLimit): their head count H, which the kernels read from
// src[1]. The kernels give thread i the heads [H*i/n, H*(i+1)/n) but
// return at once on threads i >= H: with n > H threads heads are lost, and
// in wkv6 and gla the threads that return skip the barrier after the output
// is zeroed, so the others wait at it for ever (the graph's compute hangs).
func seqHeads(n *C.struct_ggml_tensor) int64 { return int64(n.src[1].ne[1]) }

// seqRecurrent checks the inputs of the linear-attention recurrences (RWKV
// 6 and 7, gated linear attention), named by names: all f32 and
// contiguous; those at the indices shaped [S, H, nTokens] like in[kAt]; the
// last, the state, of S*S*H*nSeqs elements with nSeqs = state.ne1 and
// nTokens a multiple of nSeqs (the tokens of each sequence together). It
// returns the result's shape.
func (c *Context) seqRecurrent(op string, names []string, in []*Tensor, kAt int, shaped ...int) ([MaxDims]int64, *Tensor) {
	var ne [MaxDims]int64
	if p := c.seqTypes(op, TypeF32, names, in, in...); p != nil {
		return ne, p
	}
	if p := c.seqDense(op, names, in, in...); p != nil {
		return ne, p
	}
	k, state := in[kAt], in[len(in)-1]
	kn := k.Ne()
	sz, h, nTok, nSeq := kn[0], kn[1], kn[2], state.Ne()[1]
	for _, i := range shaped {
		if tn := in[i].Ne(); tn[0] != sz || tn[1] != h || tn[2] != nTok {
			return ne, c.fail(op, ErrShape, fmt.Sprintf("%s.ne0..2 %v must be %s's [S H nTokens] %v", names[i], tn[:3], names[kAt], kn[:3]), in...)
		}
	}
	switch {
	case sz < 1 || h < 1 || nTok < 1:
		return ne, c.fail(op, ErrShape, fmt.Sprintf("S, H and nTokens (%d, %d, %d) must be >= 1: with no head ggml's kernel divides by zero, with no token it leaves the new state unwritten", sz, h, nTok), in...)
	case nSeq < 1 || nTok%nSeq != 0:
		return ne, c.fail(op, ErrShape, fmt.Sprintf("nTokens (%d) must be a multiple of nSeqs = state.ne1 (%d): ggml's kernel gives each sequence nTokens/nSeqs tokens", nTok, nSeq), in...)
	}
	want, ok := seqMul(sz, sz, h, nSeq)
	if !ok || state.Elements() != want {
		return ne, c.fail(op, ErrShape, fmt.Sprintf("state must hold S*S*H*nSeqs = %d*%d*%d*%d elements, not %d", sz, sz, h, nSeq, state.Elements()), in...)
	}
	// state's S*S*H*nSeqs elements bound S*nSeqs; k's bound S*H.
	return [MaxDims]int64{sz * h, nTok + sz*nSeq, 1, 1}, nil
}

// RWKVWKV6 is RWKV 6's WKV recurrence (ggml_rwkv_wkv6). k, v, r and td
// (time decay) are f32 [S, H, nTokens] (head size S, H heads); tf (time
// first, "u") holds S*H values, [S, H] or flat; state, f32 of S*S*H*nSeqs
// elements with nSeqs = state.ne1 (e.g. [S*S*H, nSeqs]), the state of each
// sequence, [S (of v), S (of k), H] each. The tokens of each sequence are
// consecutive, nTokens/nSeqs of them. With st the state of the token's
// sequence, for each token t, head h, i (along k) and j (along v):
//
//	out[j, h, t]  = sum over i of r[i,h,t] * (tf[i,h]*k[i,h,t]*v[j,h,t] + st[j,i,h])
//	st[j,i,h]     = st[j,i,h]*td[i,h,t] + k[i,h,t]*v[j,h,t]
//
// The result is f32 [S*H, nTokens + S*nSeqs]: out, one row of S*H per
// token, then the final states. Every input must be contiguous.
//
// H must be at least the CPU backend's thread count (Backend.SetThreads):
// ggml's CPU kernel gives thread i of n the heads [H*i/n, H*(i+1)/n) but
// returns at once on threads i >= H, skipping a barrier the other threads
// then wait at for ever. Compute, plans and schedulers refuse such a CPU
// backend with backend.ErrUnsupported instead of hanging.
func (c *Context) RWKVWKV6(k, v, r, tf, td, state *Tensor) *Tensor {
	const op = "rwkv_wkv6"
	in := []*Tensor{k, v, r, tf, td, state}
	if p := c.begin(op, in...); p != nil {
		return p
	}
	ne, p := c.seqRecurrent(op, []string{"k", "v", "r", "tf", "td", "state"}, in, 0, 1, 2, 4)
	if p != nil {
		return p
	}
	if kn := k.Ne(); tf.Elements() != kn[0]*kn[1] {
		return c.fail(op, ErrShape, fmt.Sprintf("tf must hold S*H = %d values, one per channel, not %d", kn[0]*kn[1], tf.Elements()), in...)
	}
	if p := c.ensure(op, TypeF32, ne, nil, in...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_rwkv_wkv6(c.c, k.c, v.c, r.c, tf.c, td.c, state.c)
	}, in...)
}

func init() { registerThreadLimit(C.GGML_OP_RWKV_WKV6, seqHeads) }

// GatedLinearAttn is gated linear attention (ggml_gated_linear_attn). k,
// v, q and g (the gate) are f32 [S, H, nTokens]; state as for RWKVWKV6.
// For each token t, head h, i (along k) and j (along v):
//
//	st[j,i,h]    = st[j,i,h]*g[i,h,t] + k[i,h,t]*v[j,h,t]
//	out[j, h, t] = scale * sum over i of q[i,h,t] * st[j,i,h]
//
// The result is f32 [S*H, nTokens + S*nSeqs]: out, then the final states.
// Every input must be contiguous. H must be at least the CPU backend's
// thread count: with fewer heads ggml's CPU kernel hangs, as RWKVWKV6's, so
// compute refuses such a backend (backend.ErrUnsupported).
func (c *Context) GatedLinearAttn(k, v, q, g, state *Tensor, scale float32) *Tensor {
	const op = "gated_linear_attn"
	in := []*Tensor{k, v, q, g, state}
	if p := c.begin(op, in...); p != nil {
		return p
	}
	ne, p := c.seqRecurrent(op, []string{"k", "v", "q", "g", "state"}, in, 0, 1, 2, 3)
	if p != nil {
		return p
	}
	if p := c.ensure(op, TypeF32, ne, nil, in...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_gated_linear_attn(c.c, k.c, v.c, q.c, g.c, state.c, C.float(scale))
	}, in...)
}

func init() { registerThreadLimit(C.GGML_OP_GATED_LINEAR_ATTN, seqHeads) }

// seqRWKV7Step is the head size ggml's RWKVWKV7 kernel needs a multiple
// of: its SIMD loop walks each head in blocks of GGML_F32_STEP floats (64
// with AVX-512, 32 with AVX, 16 with NEON) without a tail loop.
const seqRWKV7Step = 64

// RWKVWKV7 is RWKV 7's WKV recurrence (ggml_rwkv_wkv7). r, w (decay), k, v,
// a and b are f32 [S, H, nTokens]; state, f32 of S*S*H*nSeqs elements with
// nSeqs = state.ne1, holds each sequence's state, [S (along k), S (along
// v), H]. For each token t, head h, i (along v) and j (along k):
//
//	sa          = sum over j of a[j,h,t] * st[j,i,h]
//	st[j,i,h]   = st[j,i,h]*w[j,h,t] + k[j,h,t]*v[i,h,t] + sa*b[j,h,t]
//	out[i,h,t]  = sum over j of st[j,i,h] * r[j,h,t]
//
// The result is f32 [S*H, nTokens + S*nSeqs]: out, then the final states.
// Every input must be contiguous. H must be at least the CPU backend's
// thread count: with fewer heads ggml's CPU kernel skips heads (as
// RWKVWKV6's does), leaving their outputs and states unwritten, so compute
// refuses such a backend (backend.ErrUnsupported).
//
// ggml's SIMD kernel has no tail loop: a head size S that is not a
// multiple of 64 would make it read and write past each head. For such an
// S this op pads every input with zeros (ggml_pad) to S' = S rounded up to
// a multiple of 64, in both dimensions of the state, runs the kernel on
// the padded inputs, and copies the S x S part back into the layout above
// (two ggml_cont and a ggml_concat). The padding is exact: a padded k, b
// and state entry makes every padded state entry st[j,i] with j >= S zero
// at every step, a padded v, a and state entry does the same for i >= S,
// so the real entries' sums only gain zero terms (with finite inputs; an
// infinite v[i] makes k[j]*v[i] NaN in padded entries and in out[i]). The
// padded kernel costs (S'/S)^2 times the work and the op takes 15 tensors
// from the context instead of 1. (ggml's CUDA kernel takes only S == 64
// or 128, padded or not.)
func (c *Context) RWKVWKV7(r, w, k, v, a, b, state *Tensor) *Tensor {
	const op = "rwkv_wkv7"
	in := []*Tensor{r, w, k, v, a, b, state}
	if p := c.begin(op, in...); p != nil {
		return p
	}
	ne, p := c.seqRecurrent(op, []string{"r", "w", "k", "v", "a", "b", "state"}, in, 2, 0, 1, 3, 4, 5)
	if p != nil {
		return p
	}
	kn := k.Ne()
	sz, h, nTok, nSeq := kn[0], kn[1], kn[2], state.Ne()[1]
	if sz%seqRWKV7Step == 0 {
		if p := c.ensure(op, TypeF32, ne, nil, in...); p != nil {
			return p
		}
		return c.call(op, func() *C.struct_ggml_tensor {
			return C.ggml_rwkv_wkv7(c.c, r.c, w.c, k.c, v.c, a.c, b.c, state.c)
		}, in...)
	}
	// Pad S to sp, run the kernel, cut the S x S part back out.
	if sz > math.MaxInt64/2 {
		return c.fail(op, ErrShape, fmt.Sprintf("the head size S (%d) padded to a multiple of %d overflows", sz, seqRWKV7Step), in...)
	}
	sp := (sz + seqRWKV7Step - 1) / seqRWKV7Step * seqRWKV7Step
	pad := sp - sz
	sp2, ok := seqMul(sp, sp, h, 1)
	if !ok {
		return c.fail(op, ErrShape, fmt.Sprintf("the state padded to head size %d, %d*%d*%d elements a sequence, overflows", sp, sp, sp, h), in...)
	}
	rows, ok := seqMul(sp, nSeq, 1, 1)
	if !ok || rows > math.MaxInt64-nTok {
		return c.fail(op, ErrShape, fmt.Sprintf("the result padded to head size %d overflows", sp), in...)
	}
	padded := shape4(sp, h, nTok, 1)
	plan := []convPlanned{
		{TypeF32, padded, false}, {TypeF32, padded, false}, {TypeF32, padded, false},
		{TypeF32, padded, false}, {TypeF32, padded, false}, {TypeF32, padded, false},
		{TypeF32, shape4(sz, sz, h, nSeq), true},
		{TypeF32, shape4(sp, sp, h, nSeq), false},
		{TypeF32, shape4(sp2, nSeq, 1, 1), true},
		{TypeF32, shape4(sp*h, nTok+rows, 1, 1), false},
		{TypeF32, shape4(sz, h, nTok, 1), true},
		{TypeF32, shape4(sz*h, nTok, 1, 1), false},
		{TypeF32, shape4(sz, sz, h, nSeq), true},
		{TypeF32, shape4(sz*h, sz*nSeq, 1, 1), false},
		{TypeF32, ne, false},
	}
	if p := c.ensureAll(op, plan, in...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		padIn := func(t *Tensor) *C.struct_ggml_tensor { return C.ggml_pad(c.c, t.c, C.int(pad), 0, 0, 0) }
		st := C.ggml_reshape_4d(c.c, state.c, C.int64_t(sz), C.int64_t(sz), C.int64_t(h), C.int64_t(nSeq))
		st = C.ggml_reshape_2d(c.c, C.ggml_pad(c.c, st, C.int(pad), C.int(pad), 0, 0), C.int64_t(sp2), C.int64_t(nSeq))
		res := C.ggml_rwkv_wkv7(c.c, padIn(r), padIn(w), padIn(k), padIn(v), padIn(a), padIn(b), st)
		// out[i, h, t] at i + sp*h + sp*H*t.
		const f = 4 // sizeof(float)
		out := C.ggml_view_3d(c.c, res, C.int64_t(sz), C.int64_t(h), C.int64_t(nTok), C.size_t(f*sp), C.size_t(f*sp*h), 0)
		out = C.ggml_cont_2d(c.c, out, C.int64_t(sz*h), C.int64_t(nTok))
		// The states from row nTokens: st[j, i, h] of sequence q at
		// j + sp*i + sp*sp*h + sp*sp*H*q.
		fin := C.ggml_view_4d(c.c, res, C.int64_t(sz), C.int64_t(sz), C.int64_t(h), C.int64_t(nSeq),
			C.size_t(f*sp), C.size_t(f*sp*sp), C.size_t(f*sp2), C.size_t(f*sp*h*nTok))
		fin = C.ggml_cont_2d(c.c, fin, C.int64_t(sz*h), C.int64_t(sz*nSeq))
		return C.ggml_concat(c.c, out, fin, 1)
	}, in...)
}

func init() { registerThreadLimit(C.GGML_OP_RWKV_WKV7, seqHeads) }

// GatedDeltaNet is the gated delta rule of Qwen3-Next and Kimi linear
// attention (ggml_gated_delta_net; upstream ggml only). With v f32 [S, H,
// nTokens, nSeqs], q and k f32 [S, Hk, nTokens, nSeqsK] (H a multiple of
// Hk, nSeqs of nSeqsK: head h reads q and k head h mod Hk, sequence s reads
// q and k sequence s/(nSeqs/nSeqsK)), g f32 [1, H, nTokens, nSeqs] (a
// scalar gate per head) or [S, H, nTokens, nSeqs] (a gate per key row,
// KDA), beta f32 [1, H, nTokens, nSeqs] and state f32 [S, S, H, nSeqs]
// the initial states (element [i, j, h, s] is M[i][j] of head h), it runs
// for each sequence and head, token by token:
//
//	M[i][j]  *= exp(g[i or 0])
//	delta[j]  = (v[j] - sum over i of M[i][j]*k[i]) * beta
//	M[i][j]  += k[i] * delta[j]
//	out[j]    = sum over i of M[i][j]*q[i] / sqrt(S)
//
// The result is f32 [S*H, nTokens*nSeqs + K*S*nSeqs]: out, dense as [S, H,
// nTokens, nSeqs], followed by K slots of the states [S, S, H, nSeqs], most
// recent first: slot 0 holds the final states, slot j the states j tokens
// before the end. With nTokens < K, slots j >= nTokens are not written
// (their values are whatever the result's memory held). K must be in
// [1, 2^31-1].
//
// q, k and v must have adjacent elements (nb0 = 4); g, beta and state must
// be contiguous. With the embedded provider it records an ErrUnsupported
// error that names -tags ggml_system.
func (c *Context) GatedDeltaNet(q, k, v, g, beta, state *Tensor, K int64) *Tensor {
	const op = "gated_delta_net"
	in := []*Tensor{q, k, v, g, beta, state}
	if p := c.begin(op, in...); p != nil {
		return p
	}
	if !haveUpstream {
		return c.upstreamOnly(op, "GatedDeltaNet (ggml_gated_delta_net)", in...)
	}
	names := []string{"q", "k", "v", "g", "beta", "state"}
	if p := c.seqTypes(op, TypeF32, names, in, in...); p != nil {
		return p
	}
	for i, x := range in[:3] {
		if !adjacent(x) {
			return c.fail(op, ErrShape, fmt.Sprintf("%s's elements must be adjacent (nb0 = 4); copy it with Cont", names[i]), in...)
		}
	}
	if p := c.seqDense(op, names[3:], in[3:], in...); p != nil {
		return p
	}
	qn, vn, gn := q.Ne(), v.Ne(), g.Ne()
	S, H, nTok, nSeq := vn[0], vn[1], vn[2], vn[3]
	switch {
	case K < 1 || K > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("K (%d) must be in [1, 2^31-1]", K), in...)
	case !sameShape(q, k):
		return c.fail(op, ErrShape, fmt.Sprintf("q %v and k %v must have the same shape", qn, k.Ne()), in...)
	case qn[0] != S || qn[2] != nTok:
		return c.fail(op, ErrShape, fmt.Sprintf("q and k must be [S Hk nTokens nSeqsK] with S %d and nTokens %d (v's), not %v", S, nTok, qn), in...)
	case qn[1] < 1 || H%qn[1] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("v's head count (%d) must be a multiple of q's and k's (%d)", H, qn[1]), in...)
	case qn[3] < 1 || nSeq%qn[3] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("v's sequence count (%d) must be a multiple of q's and k's (%d)", nSeq, qn[3]), in...)
	case gn[0] != 1 && gn[0] != S || gn[1] != H || gn[2] != nTok || gn[3] != nSeq:
		return c.fail(op, ErrShape, fmt.Sprintf("g must be [1 H nTokens nSeqs] or [S H nTokens nSeqs] = %v, not %v", []int64{S, H, nTok, nSeq}, gn), in...)
	case beta.Ne() != [MaxDims]int64{1, H, nTok, nSeq}:
		return c.fail(op, ErrShape, fmt.Sprintf("beta must be [1 H nTokens nSeqs] = %v, not %v", []int64{1, H, nTok, nSeq}, beta.Ne()), in...)
	case state.Ne() != [MaxDims]int64{S, S, H, nSeq}:
		return c.fail(op, ErrShape, fmt.Sprintf("state must be [S S H nSeqs] = %v, not %v", []int64{S, S, H, nSeq}, state.Ne()), in...)
	}
	ne0, ok0 := seqMul(S, H)
	rows, ok1 := seqMul(nTok, nSeq)
	st, ok2 := seqMul(K, S, nSeq)
	ne1 := rows + st
	if !ok0 || !ok1 || !ok2 || ne1 < 0 {
		return c.fail(op, ErrShape, "the result would have more than 2^63 elements per dimension", in...)
	}
	if p := c.ensure(op, TypeF32, [MaxDims]int64{ne0, ne1, 1, 1}, nil, in...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.goggml_gated_delta_net(c.c, q.c, k.c, v.c, g.c, beta.c, state.c, C.int64_t(K))
	}, in...)
}
