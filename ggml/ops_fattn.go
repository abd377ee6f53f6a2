package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

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
