package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

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

// GLUOp is the activation of a gated linear unit (enum ggml_glu_op).
type GLUOp int

// GLU activations. The numbers come from the linked provider's ggml.h
// through cgo: enum ggml_glu_op grows with ggml's op set.
const (
	GLUReglu      GLUOp = C.GGML_GLU_OP_REGLU       // relu
	GLUGeglu      GLUOp = C.GGML_GLU_OP_GEGLU       // gelu (tanh approximation, ggml's f16 table)
	GLUSwiglu     GLUOp = C.GGML_GLU_OP_SWIGLU      // silu
	GLUGegluErf   GLUOp = C.GGML_GLU_OP_GEGLU_ERF   // exact gelu
	GLUGegluQuick GLUOp = C.GGML_GLU_OP_GEGLU_QUICK // gelu quick
)

var gluNames = map[GLUOp]string{GLUReglu: "reglu", GLUGeglu: "geglu", GLUSwiglu: "swiglu", GLUGegluErf: "geglu_erf", GLUGegluQuick: "geglu_quick"}

// GLU returns act(x) * g where x and g are the two halves of each row of a
// (ggml_glu): x the first half, g the second, or the other way round when
// swapped. The result has half of a.ne0.
func (c *Context) GLU(a *Tensor, act GLUOp, swapped bool) *Tensor {
	return c.glu(a, nil, act, swapped)
}

// GLUSplit returns act(a) * b for a and b of the same shape and type
// (ggml_glu_split).
func (c *Context) GLUSplit(a, b *Tensor, act GLUOp) *Tensor { return c.glu(a, b, act, false) }

// Swiglu is GLU(a, GLUSwiglu, false) (ggml_swiglu).
func (c *Context) Swiglu(a *Tensor) *Tensor { return c.GLU(a, GLUSwiglu, false) }

// Geglu is GLU(a, GLUGeglu, false) (ggml_geglu).
func (c *Context) Geglu(a *Tensor) *Tensor { return c.GLU(a, GLUGeglu, false) }

// Reglu is GLU(a, GLUReglu, false) (ggml_reglu).
func (c *Context) Reglu(a *Tensor) *Tensor { return c.GLU(a, GLUReglu, false) }

func (c *Context) glu(a, b *Tensor, act GLUOp, swapped bool) *Tensor {
	name, ok := gluNames[act]
	if !ok {
		name = "glu"
	}
	inputs := []*Tensor{a}
	if b != nil {
		inputs = append(inputs, b)
	}
	if p := c.begin(name, inputs...); p != nil {
		return p
	}
	if !ok {
		return c.fail(name, ErrInvalid, fmt.Sprintf("unknown GLU activation %d", act), inputs...)
	}
	if a.Type() != TypeF32 && a.Type() != TypeF16 {
		return c.fail(name, ErrType, fmt.Sprintf("ggml's kernels take f32 or f16, not %v", a.Type()), inputs...)
	}
	if !rowsContiguous(a) {
		return c.fail(name, ErrShape, "a must be contiguous in dimensions >= 1; copy it with Cont", inputs...)
	}
	ne := a.Ne()
	if b != nil {
		switch {
		case b.Type() != a.Type():
			return c.fail(name, ErrType, fmt.Sprintf("a is %v, b %v: they must be the same type", a.Type(), b.Type()), inputs...)
		case !sameShape(a, b):
			return c.fail(name, ErrShape, "a and b must have the same shape", inputs...)
		case !rowsContiguous(b):
			return c.fail(name, ErrShape, "b must be contiguous in dimensions >= 1; copy it with Cont", inputs...)
		}
	} else {
		if ne[0] < 2 {
			return c.fail(name, ErrShape, fmt.Sprintf("a.ne0 (%d) must hold two halves", ne[0]), inputs...)
		}
		ne[0] /= 2
	}
	if p := c.ensure(name, a.Type(), ne, nil, inputs...); p != nil {
		return p
	}
	return c.call(name, func() *C.struct_ggml_tensor {
		if b != nil {
			return C.ggml_glu_split(c.c, a.c, b.c, C.enum_ggml_glu_op(act))
		}
		return C.ggml_glu(c.c, a.c, C.enum_ggml_glu_op(act), C.bool(swapped))
	}, inputs...)
}
