package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// Rotary position embeddings (rope and its multi-section modes), fused
// flash attention, and attention's helpers: the causal masks, SAM's
// windows and relative positions. Rope's gradient (rope_back) is in
// ops_train.go.

// DiagMaskInf sets to -inf the elements of each matrix of a above the
// diagonal shifted by nPast: element (i, j) with i > j + nPast
// (ggml_diag_mask_inf), the causal mask of attention. a must be f32 and
// contiguous.
func (c *Context) DiagMaskInf(a *Tensor, nPast int) *Tensor {
	return c.diagMask("diag_mask_inf", a, nPast, func() *C.struct_ggml_tensor { return C.ggml_diag_mask_inf(c.c, a.c, C.int(nPast)) })
}

// DiagMaskInfInPlace is DiagMaskInf computed into a
// (ggml_diag_mask_inf_inplace).
func (c *Context) DiagMaskInfInPlace(a *Tensor, nPast int) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.diagMask("diag_mask_inf", a, nPast, func() *C.struct_ggml_tensor { return C.ggml_diag_mask_inf_inplace(c.c, a.c, C.int(nPast)) })
	})
}

// DiagMaskZero is DiagMaskInf with 0 instead of -inf (ggml_diag_mask_zero).
func (c *Context) DiagMaskZero(a *Tensor, nPast int) *Tensor {
	return c.diagMask("diag_mask_zero", a, nPast, func() *C.struct_ggml_tensor { return C.ggml_diag_mask_zero(c.c, a.c, C.int(nPast)) })
}

// DiagMaskZeroInPlace is DiagMaskZero computed into a
// (ggml_diag_mask_zero_inplace).
func (c *Context) DiagMaskZeroInPlace(a *Tensor, nPast int) *Tensor {
	return c.inPlace(a, func() *Tensor {
		return c.diagMask("diag_mask_zero", a, nPast, func() *C.struct_ggml_tensor { return C.ggml_diag_mask_zero_inplace(c.c, a.c, C.int(nPast)) })
	})
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

// RopeMode is how Rope pairs up the dimensions it rotates.
type RopeMode int

// Rope modes (GGML_ROPE_TYPE_*). The multi-section modes take the angle of
// each pair from one of four position components (RopeParams.Sections).
const (
	RopeNormal RopeMode = 0 // pairs (x[2i], x[2i+1]), as LLaMA
	RopeNeoX   RopeMode = 2 // pairs (x[i], x[i+dims/2]), as GPT-NeoX
	// RopeMRope pairs as NeoX; pair i turns by position component s, the
	// section that i mod sum(Sections) falls in (Qwen2-VL's M-RoPE).
	RopeMRope RopeMode = 8
	// RopeIMRope is RopeMRope with the sections interleaved (Qwen3-VL).
	RopeIMRope RopeMode = 40
	// RopeVision rotates pairs (x[i], x[i+dims]) over the whole row, with
	// Dims = ne0/2; each section restarts its frequencies (vision encoders).
	RopeVision RopeMode = 24
)

// multi reports whether the mode is one of the multi-section modes.
func (m RopeMode) multi() bool { return m&C.GGML_ROPE_TYPE_MROPE != 0 }

// RopeParams are Rope's parameters (those of ggml_rope_ext).
type RopeParams struct {
	Dims       int      // leading dimensions of each row to rotate; even, at most ne0
	Mode       RopeMode // RopeNormal or RopeNeoX
	CtxOrig    int      // the training context, for YaRN
	FreqBase   float32  // usually 10000
	FreqScale  float32  // 1: no scaling
	ExtFactor  float32  // YaRN extrapolation mix; 0: none
	AttnFactor float32  // scales sin and cos; usually 1
	BetaFast   float32  // YaRN; usually 32
	BetaSlow   float32  // YaRN; usually 1
	// FreqFactors, if not nil, divides each pair's frequency: f32 with at
	// least Dims/2 elements.
	FreqFactors *Tensor
	// Sections, for the multi-section modes only, are the numbers of pairs
	// that take their angle from each of the four position components
	// (time, height, width, extra); pos then holds 4·a.ne2 positions,
	// component-major.
	Sections [4]int
}

// Rope rotates pairs of dimensions of each row of a by angles that grow
// with the row's position, read from pos (i32, one per a.ne2, or four per
// a.ne2 in the multi-section modes) (ggml_rope_ext, or ggml_rope_multi for
// the multi-section modes). a is f32 or f16 with adjacent elements.
func (c *Context) Rope(a, pos *Tensor, p RopeParams) *Tensor {
	return c.rope("rope", a, pos, p, false)
}

// RopeInPlace is Rope computed into a's own memory: the result is a view
// of a (ggml_rope_ext_inplace, ggml_rope_multi_inplace).
func (c *Context) RopeInPlace(a, pos *Tensor, p RopeParams) *Tensor {
	return c.rope("rope", a, pos, p, true)
}

func (c *Context) rope(op string, a, pos *Tensor, p RopeParams, inPlace bool) *Tensor {
	inputs := []*Tensor{a, pos}
	if p.FreqFactors != nil {
		inputs = append(inputs, p.FreqFactors)
	}
	if p := c.begin(op, inputs...); p != nil {
		return p
	}
	an, pn := a.Ne(), pos.Ne()
	perToken := int64(1)
	if p.Mode.multi() {
		perToken = 4
	}
	switch {
	case p.Mode != RopeNormal && p.Mode != RopeNeoX && p.Mode != RopeMRope && p.Mode != RopeIMRope && p.Mode != RopeVision:
		return c.fail(op, ErrInvalid, fmt.Sprintf("mode %d is not a rope mode of this ggml", p.Mode), inputs...)
	case a.Type() != TypeF32 && a.Type() != TypeF16:
		return c.fail(op, ErrType, fmt.Sprintf("a must be f32 or f16, not %v", a.Type()), inputs...)
	case !adjacent(a):
		return c.fail(op, ErrShape, "a's elements must be adjacent in dimension 0; copy it with Cont", inputs...)
	case pos.Type() != TypeI32:
		return c.fail(op, ErrType, fmt.Sprintf("pos must be i32, not %v", pos.Type()), inputs...)
	case pn[1] != 1 || pn[2] != 1 || pn[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("pos must be a vector, not %v", pn), inputs...)
	case pn[0] != perToken*an[2]:
		return c.fail(op, ErrShape, fmt.Sprintf("pos.ne0 (%d) != %d·a.ne2 (%d): %d position(s) per row group", pn[0], perToken, an[2], perToken), inputs...)
	case p.Dims <= 0 || p.Dims%2 != 0 || int64(p.Dims) > an[0]:
		return c.fail(op, ErrInvalid, fmt.Sprintf("Dims %d must be even, > 0 and at most a.ne0 (%d)", p.Dims, an[0]), inputs...)
	case an[0]%2 != 0:
		// ggml copies the dimensions past Dims two at a time.
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) must be even", an[0]), inputs...)
	case p.Mode == RopeVision && int64(p.Dims) != an[0]/2:
		return c.fail(op, ErrInvalid, fmt.Sprintf("RopeVision needs Dims (%d) = a.ne0/2 (%d)", p.Dims, an[0]/2), inputs...)
	}
	if p.Mode.multi() {
		sum := 0
		for i, s := range p.Sections {
			if s < 0 || s > math.MaxInt32/4 {
				return c.fail(op, ErrInvalid, fmt.Sprintf("Sections[%d] (%d) must be >= 0", i, s), inputs...)
			}
			sum += s
		}
		if p.Sections[0] <= 0 && p.Sections[1] <= 0 && p.Sections[2] <= 0 {
			return c.fail(op, ErrInvalid, "one of Sections[0..2] must be > 0", inputs...)
		}
		if int64(sum) > an[0] {
			return c.fail(op, ErrInvalid, fmt.Sprintf("Sections sum to %d, more than a.ne0 (%d)", sum, an[0]), inputs...)
		}
	} else if p.Sections != [4]int{} {
		return c.fail(op, ErrInvalid, "Sections are for the multi-section modes only", inputs...)
	}
	var ff *C.struct_ggml_tensor
	if f := p.FreqFactors; f != nil {
		if f.Type() != TypeF32 || f.Ne()[0] < int64(p.Dims/2) || !adjacent(f) {
			return c.fail(op, ErrShape, fmt.Sprintf("FreqFactors must be f32 with at least Dims/2 (%d) adjacent elements", p.Dims/2), inputs...)
		}
		ff = f.c
	}
	var viewOf *Tensor
	if inPlace {
		viewOf = a
	}
	if p := c.ensure(op, a.Type(), an, viewOf, inputs...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		dims, mode, ctxOrig := C.int(p.Dims), C.int(p.Mode), C.int(p.CtxOrig)
		fb, fs, ef, af, bf, bs := C.float(p.FreqBase), C.float(p.FreqScale), C.float(p.ExtFactor), C.float(p.AttnFactor), C.float(p.BetaFast), C.float(p.BetaSlow)
		if p.Mode.multi() {
			var sec [4]C.int
			for i, s := range p.Sections {
				sec[i] = C.int(s)
			}
			if inPlace {
				return C.ggml_rope_multi_inplace(c.c, a.c, pos.c, ff, dims, &sec[0], mode, ctxOrig, fb, fs, ef, af, bf, bs)
			}
			return C.ggml_rope_multi(c.c, a.c, pos.c, ff, dims, &sec[0], mode, ctxOrig, fb, fs, ef, af, bf, bs)
		}
		if inPlace {
			return C.ggml_rope_ext_inplace(c.c, a.c, pos.c, ff, dims, mode, ctxOrig, fb, fs, ef, af, bf, bs)
		}
		return C.ggml_rope_ext(c.c, a.c, pos.c, ff, dims, mode, ctxOrig, fb, fs, ef, af, bf, bs)
	}, inputs...)
}

// FlashAttnParams are FlashAttnExt's parameters.
type FlashAttnParams struct {
	Scale        float32 // multiplies q·k; usually 1/sqrt(head dim)
	MaxBias      float32 // ALiBi: > 0 needs a mask
	LogitSoftcap float32 // if > 0, scores become softcap·tanh(score/softcap)
	// Sinks, if not nil, is one f32 logit per head that joins each
	// softmax's denominator (attention sinks; ggml_flash_attn_ext_add_sinks).
	Sinks     *Tensor
	Precision Precision // ggml_flash_attn_ext_set_prec
}

// FlashAttnExt is fused attention: for each query row n of head h,
// softmax over the keys j of (scale·q·k_j + slope_h·mask[j, n]) weighs
// the rows of v (ggml_flash_attn_ext). q is f32 [D, N, H, B]; k is
// [D, KV, Hk, B] and v [Dv, KV, Hv, B] with H a multiple of Hk and Hv
// (grouped-query attention); mask, if not nil, is f16 [>= KV, >= N, H/m2,
// B/m3], contiguous, -Inf where a key is hidden. The result is f32 [Dv, H,
// N, B]: heads and queries swapped, ready for a reshape to [Dv·H, N, B].
func (c *Context) FlashAttnExt(q, k, v, mask *Tensor, p FlashAttnParams) *Tensor {
	const op = "flash_attn_ext"
	inputs := []*Tensor{q, k, v}
	if mask != nil {
		inputs = append(inputs, mask)
	}
	if p.Sinks != nil {
		inputs = append(inputs, p.Sinks)
	}
	if r := c.begin(op, inputs...); r != nil {
		return r
	}
	if r := c.checkTypeList(op, TypeF32, []Type{q.Type(), k.Type(), v.Type()}, inputs...); r != nil {
		return r
	}
	qn, kn, vn := q.Ne(), k.Ne(), v.Ne()
	switch {
	case !adjacent(q) || !adjacent(k) || !adjacent(v):
		return c.fail(op, ErrShape, "q's, k's and v's elements must be adjacent in dimension 0; copy them with Cont", inputs...)
	case qn[0] != kn[0]:
		return c.fail(op, ErrShape, fmt.Sprintf("q.ne0 (%d) != k.ne0 (%d): the head dimension", qn[0], kn[0]), inputs...)
	case kn[1] != vn[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("k.ne1 (%d) != v.ne1 (%d): one value row per key", kn[1], vn[1]), inputs...)
	case kn[2] == 0 || vn[2] == 0 || qn[2]%kn[2] != 0 || qn[2]%vn[2] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("q's heads (%d) must be a multiple of k's (%d) and v's (%d)", qn[2], kn[2], vn[2]), inputs...)
	case qn[3] != kn[3] || qn[3] != vn[3]:
		return c.fail(op, ErrShape, fmt.Sprintf("q.ne3 (%d), k.ne3 (%d) and v.ne3 (%d) must be equal", qn[3], kn[3], vn[3]), inputs...)
	case p.MaxBias > 0 && mask == nil:
		return c.fail(op, ErrInvalid, fmt.Sprintf("MaxBias %g needs a mask", p.MaxBias), inputs...)
	case !p.Precision.valid():
		return c.fail(op, ErrInvalid, fmt.Sprintf("precision %d is not PrecDefault or PrecF32", p.Precision), inputs...)
	case math.IsNaN(float64(p.Scale)) || math.IsNaN(float64(p.MaxBias)) || math.IsNaN(float64(p.LogitSoftcap)):
		return c.fail(op, ErrInvalid, "Scale, MaxBias and LogitSoftcap must not be NaN", inputs...)
	case p.LogitSoftcap < 0:
		return c.fail(op, ErrInvalid, fmt.Sprintf("LogitSoftcap %g must be >= 0", p.LogitSoftcap), inputs...)
	case qn[1]*qn[2]*qn[3] > math.MaxInt32:
		return c.fail(op, ErrShape, "q has more than 2^31 rows (ggml indexes them as int)", inputs...)
	}
	var mc, sc *C.struct_ggml_tensor
	if mask != nil {
		mn := mask.Ne()
		switch {
		case mask.Type() != TypeF16:
			return c.fail(op, ErrType, fmt.Sprintf("mask must be f16, not %v", mask.Type()), inputs...)
		case !dense(mask):
			return c.fail(op, ErrShape, "mask must be contiguous", inputs...)
		case mn[0] < kn[1]:
			return c.fail(op, ErrShape, fmt.Sprintf("mask.ne0 (%d) must be at least the number of keys k.ne1 (%d)", mn[0], kn[1]), inputs...)
		case mn[1] < qn[1]:
			return c.fail(op, ErrShape, fmt.Sprintf("mask.ne1 (%d) must be at least the number of queries q.ne1 (%d)", mn[1], qn[1]), inputs...)
		case mn[2] == 0 || mn[3] == 0 || qn[2]%mn[2] != 0 || qn[3]%mn[3] != 0:
			return c.fail(op, ErrShape, fmt.Sprintf("q.ne2 (%d) and q.ne3 (%d) must be multiples of mask.ne2 (%d) and mask.ne3 (%d)", qn[2], qn[3], mn[2], mn[3]), inputs...)
		}
		mc = mask.c
	}
	if s := p.Sinks; s != nil {
		if s.Type() != TypeF32 || s.Ne()[0] != qn[2] || !adjacent(s) {
			return c.fail(op, ErrShape, fmt.Sprintf("Sinks must be f32 with ne0 = q's heads (%d) and adjacent elements", qn[2]), inputs...)
		}
		sc = s.c
	}
	if r := c.ensure(op, TypeF32, [MaxDims]int64{vn[0], qn[2], qn[1], qn[3]}, nil, inputs...); r != nil {
		return r
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		r := C.ggml_flash_attn_ext(c.c, q.c, k.c, v.c, mc, C.float(p.Scale), C.float(p.MaxBias), C.float(p.LogitSoftcap))
		if sc != nil {
			C.ggml_flash_attn_ext_add_sinks(r, sc)
		}
		if p.Precision != PrecDefault {
			C.ggml_flash_attn_ext_set_prec(r, C.enum_ggml_prec(p.Precision))
		}
		return r
	}, inputs...)
}

// WinPart cuts the f32 image a, [C, W, H] (channels innermost), into w×w
// windows, zero-padding W and H up to multiples of w (ggml_win_part, as in
// SAM): the result is f32 [C, w, w, nx*ny] with nx = ceil(W/w), ny =
// ceil(H/w), window (px, py) at index py*nx + px. a must be contiguous and
// 3-d, w >= 1.
func (c *Context) WinPart(a *Tensor, w int) *Tensor {
	const op = "win_part"
	if p := c.begin(op, a); p != nil {
		return p
	}
	an := a.Ne()
	switch {
	case a.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 only, not %v", a.Type()), a)
	case an[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("a must be 3-d, not %v", an), a)
	case w < 1 || w > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("window size %d must be >= 1", w), a)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a)
	case an[1] > math.MaxInt32-int64(w) || an[2] > math.MaxInt32-int64(w):
		return c.fail(op, ErrShape, fmt.Sprintf("a %v: ggml counts windows in 32-bit integers", an), a)
	}
	ww := int64(w)
	nx, ny := (an[1]+ww-1)/ww, (an[2]+ww-1)/ww
	if nx*ny > math.MaxInt32 {
		return c.fail(op, ErrShape, fmt.Sprintf("%d×%d windows: ggml counts them in 32-bit integers", nx, ny), a)
	}
	ne := [MaxDims]int64{an[0], ww, ww, nx * ny}
	if p := c.ensure(op, TypeF32, ne, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_win_part(c.c, a.c, C.int(w)) }, a)
}

// WinUnpart reassembles the w×w windows of a (as WinPart makes them, f32
// [C, w, w, ceil(w0/w)*ceil(h0/w)], contiguous) into an f32 image [C, w0,
// h0], dropping the padding (ggml_win_unpart).
func (c *Context) WinUnpart(a *Tensor, w0, h0, w int) *Tensor {
	const op = "win_unpart"
	if p := c.begin(op, a); p != nil {
		return p
	}
	an := a.Ne()
	switch {
	case a.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 only, not %v", a.Type()), a)
	case w < 1 || w > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("window size %d must be >= 1", w), a)
	case w0 < 0 || h0 < 0 || w0 > math.MaxInt32-w || h0 > math.MaxInt32-w:
		return c.fail(op, ErrInvalid, fmt.Sprintf("image size %d×%d must be >= 0 (and fit 32-bit integers)", w0, h0), a)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a)
	}
	nx, ny := int64((w0+w-1)/w), int64((h0+w-1)/w)
	if an[1] != int64(w) || an[2] != int64(w) || an[3] != nx*ny {
		return c.fail(op, ErrShape, fmt.Sprintf("a must be [C %d %d %d] (windows of %d for a %d×%d image), not %v", w, w, nx*ny, w, w0, h0, an), a)
	}
	ne := [MaxDims]int64{an[0], int64(w0), int64(h0), 1}
	if p := c.ensure(op, TypeF32, ne, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.ggml_win_unpart(c.c, a.c, C.int(w0), C.int(h0), C.int(w))
	}, a)
}

// GetRelPos expands SAM's relative position table a, f16 [C, 2*n-1], to
// the f16 [C, n, n] table of every query-key pair (ggml_get_rel_pos):
// result[:, k, q] = a[:, (n-1-k) + q]. qh and kh, the query and key
// lengths, must both be n (ggml supports no other case). a must be an f16
// contiguous matrix. (ggml's CPU kernel also takes bf16 but labels the
// copied bits f16, so bf16 is refused here.)
func (c *Context) GetRelPos(a *Tensor, qh, kh int) *Tensor {
	const op = "get_rel_pos"
	if p := c.begin(op, a); p != nil {
		return p
	}
	an := a.Ne()
	switch {
	case a.Type() != TypeF16:
		return c.fail(op, ErrType, fmt.Sprintf("a must be f16, not %v", a.Type()), a)
	case qh != kh:
		return c.fail(op, ErrInvalid, fmt.Sprintf("qh (%d) != kh (%d): ggml supports equal lengths only", qh, kh), a)
	case qh < 1 || qh > math.MaxInt32/2:
		return c.fail(op, ErrInvalid, fmt.Sprintf("length %d must be >= 1", qh), a)
	case an[1] != int64(2*qh-1):
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne1 (%d) must be 2*qh-1 (%d)", an[1], 2*qh-1), a)
	case an[2] != 1 || an[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("a must be a matrix (ggml's kernel reads its first matrix only), not %v", an), a)
	case !dense(a):
		return c.fail(op, ErrShape, "a must be contiguous; copy it with Cont", a)
	}
	ne := [MaxDims]int64{an[0], int64(kh), int64(qh), 1}
	if p := c.ensure(op, TypeF16, ne, nil, a); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_get_rel_pos(c.c, a.c, C.int(qh), C.int(kh)) }, a)
}

// AddRelPos adds SAM's decomposed relative position terms to attention
// scores (ggml_add_rel_pos): a, f32 [W*W, R1, R2] with R1*R2 rows of
// scores, each row W×W (x innermost); pw and ph, f32 of the same shape [W,
// P1, P2, R2] with P1*P2 = R1. With r a row (over dimensions 1 and 2):
//
//	result[x + W*y, r] = a[x + W*y, r] + pw[x, r] + ph[y, r]
//
// a, pw and ph must be contiguous, and a 3-d (ggml's kernel would add to
// the first matrix of dimension 3 only).
func (c *Context) AddRelPos(a, pw, ph *Tensor) *Tensor {
	const op = "add_rel_pos"
	if p := c.begin(op, a, pw, ph); p != nil {
		return p
	}
	an, pn := a.Ne(), pw.Ne()
	sq, sqOK := seqMul(pn[0], pn[0])
	rows, rowsOK := seqMul(pn[1], pn[2])
	switch {
	case a.Type() != TypeF32 || pw.Type() != TypeF32 || ph.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("a, pw and ph must be f32, not %v, %v and %v", a.Type(), pw.Type(), ph.Type()), a, pw, ph)
	case !sameShape(pw, ph):
		return c.fail(op, ErrShape, fmt.Sprintf("pw %v and ph %v must have the same shape", pn, ph.Ne()), a, pw, ph)
	case !dense(a) || !dense(pw) || !dense(ph):
		return c.fail(op, ErrShape, "a, pw and ph must be contiguous; copy with Cont", a, pw, ph)
	case an[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("a must be 3-d, not %v", an), a, pw, ph)
	case pn[3] != an[2]:
		return c.fail(op, ErrShape, fmt.Sprintf("pw.ne3 (%d) != a.ne2 (%d)", pn[3], an[2]), a, pw, ph)
	case !sqOK || sq != an[0]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne0 (%d) must be pw.ne0 squared (%d²)", an[0], pn[0]), a, pw, ph)
	case !rowsOK || rows != an[1]:
		return c.fail(op, ErrShape, fmt.Sprintf("a.ne1 (%d) must be pw.ne1*pw.ne2 (%d*%d)", an[1], pn[1], pn[2]), a, pw, ph)
	case pn[3] > math.MaxInt32:
		return c.fail(op, ErrShape, "ggml's kernel counts pw.ne3 in 32-bit integers", a, pw, ph)
	}
	if p := c.ensure(op, TypeF32, an, nil, a, pw, ph); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_add_rel_pos(c.c, a.c, pw.c, ph.c) }, a, pw, ph)
}

// LightningIndexer scores the keys of DeepSeek sparse attention's
// indexer (ggml_lightning_indexer; upstream ggml only). With q f32 [d,
// nHead, nTokens, nStreams], k [d, 1, nKV, nStreams] (f32 or any type
// whose rows convert to f32), weights f32 [nHead, nTokens, 1, nStreams]
// (already scaled) and mask f16 [nKV, nTokens, 1, nMask] (nStreams a
// multiple of nMask; stream s uses mask s mod nMask), the result is f32
// [nKV, nTokens, 1, nStreams] with
//
//	result[j, t, 0, s] = sum over h of max(q[:, h, t, s] · k[:, 0, j, s], 0) * weights[h, t, 0, s]
//	                     + mask[j, t, 0, s mod nMask]
//
// Every input's elements must be adjacent (nb0 = the type's size); other
// strides are free. d, nHead, nTokens, nStreams and nKV must be below 2^31
// (ggml's kernel counts them in C ints). With the embedded provider it
// records an ErrUnsupported error that names -tags ggml_system.
func (c *Context) LightningIndexer(q, k, weights, mask *Tensor) *Tensor {
	const op = "lightning_indexer"
	in := []*Tensor{q, k, weights, mask}
	if p := c.begin(op, in...); p != nil {
		return p
	}
	if !haveUpstream {
		return c.upstreamOnly(op, "LightningIndexer (ggml_lightning_indexer)", in...)
	}
	if p := c.checkTypes(op, TypeF32, in...); p != nil {
		return p
	}
	for i, x := range in {
		if !adjacent(x) {
			return c.fail(op, ErrShape, fmt.Sprintf("%s's elements must be adjacent (nb0 = %d); copy it with Cont",
				[]string{"q", "k", "weights", "mask"}[i], x.Type().Size()), in...)
		}
	}
	qn, kn, wn, mn := q.Ne(), k.Ne(), weights.Ne(), mask.Ne()
	switch {
	case kn[0] != qn[0] || kn[1] != 1 || kn[3] != qn[3]:
		return c.fail(op, ErrShape, fmt.Sprintf("k must be [d 1 nKV nStreams] with q's d %d and nStreams %d, not %v", qn[0], qn[3], kn), in...)
	case wn != [MaxDims]int64{qn[1], qn[2], 1, qn[3]}:
		return c.fail(op, ErrShape, fmt.Sprintf("weights must be [nHead nTokens 1 nStreams] = %v, not %v", []int64{qn[1], qn[2], 1, qn[3]}, wn), in...)
	case mn[0] != kn[2] || mn[1] != qn[2] || mn[2] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("mask must be [nKV nTokens 1 nMask] with nKV %d and nTokens %d, not %v", kn[2], qn[2], mn), in...)
	case mn[3] < 1 || qn[3]%mn[3] != 0:
		return c.fail(op, ErrShape, fmt.Sprintf("q's nStreams (%d) must be a multiple of mask.ne3 (%d)", qn[3], mn[3]), in...)
	case qn[0] > math.MaxInt32 || qn[1] > math.MaxInt32 || qn[2] > math.MaxInt32 || qn[3] > math.MaxInt32 || kn[2] > math.MaxInt32:
		return c.fail(op, ErrShape, fmt.Sprintf("q %v, k %v: ggml's kernel counts dimensions in C ints", qn, kn), in...)
	}
	if p := c.ensure(op, TypeF32, [MaxDims]int64{kn[2], qn[2], 1, qn[3]}, nil, in...); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor {
		return C.goggml_lightning_indexer(c.c, q.c, k.c, weights.c, mask.c)
	}, in...)
}
