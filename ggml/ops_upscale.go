package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
)

// This file holds the resampling ops (Interpolate, Upscale and their
// variants) and timestep embeddings.

// ScaleMode is how Interpolate and Upscale compute new samples (enum
// ggml_scale_mode), optionally combined with flags (enum ggml_scale_flag):
// ScaleBilinear|ScaleAlignCorners.
type ScaleMode uint32

// Scale modes and flags. Bilinear and bicubic apply to dimensions 0 and 1;
// dimensions 2 and 3 are always resized by nearest neighbour
// (GGML_SCALE_MODE_*, GGML_SCALE_FLAG_*).
const (
	// ScaleNearest takes the source element floor(i / scale).
	ScaleNearest ScaleMode = 0
	// ScaleBilinear interpolates between the 2x2 nearest sources, half-pixel
	// centred, clamped at the edges.
	ScaleBilinear ScaleMode = 1
	// ScaleBicubic interpolates over the 4x4 nearest sources (cubic
	// convolution with a = -0.75, as PyTorch), clamped at the edges.
	ScaleBicubic ScaleMode = 2
	// ScaleAlignCorners maps the corner samples of the input and the
	// result onto each other (PyTorch's align_corners=True).
	ScaleAlignCorners ScaleMode = 1 << 8
	// ScaleAntialias makes bilinear downsampling average over the whole
	// footprint of each result sample (PyTorch's antialias=True); bilinear
	// only.
	ScaleAntialias ScaleMode = 1 << 9
)

// maxResized is the largest size of a dimension that interpolation resizes
// by nearest neighbour: ggml computes the source index in float32, which
// stays below the source's size only up to about 2^22.
const maxResized = 1 << 21

// interpolate checks and builds an upscale-family op whose result is ne.
func (c *Context) interpolate(op string, a *Tensor, ne [MaxDims]int64, mode ScaleMode, f func() *C.struct_ggml_tensor) *Tensor {
	if p := c.begin(op, a); p != nil {
		return p
	}
	base, flags := mode&0xFF, mode&^0xFF
	switch {
	case base > ScaleBicubic:
		return c.fail(op, ErrInvalid, fmt.Sprintf("unknown scale mode %d", base), a)
	case flags&^(ScaleAlignCorners|ScaleAntialias) != 0:
		return c.fail(op, ErrInvalid, fmt.Sprintf("unknown scale flags %#x", uint32(flags)), a)
	case flags&ScaleAntialias != 0 && base != ScaleBilinear:
		return c.fail(op, ErrInvalid, "ScaleAntialias works with ScaleBilinear only (ggml asserts it)", a)
	case a.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 only, not %v", a.Type()), a)
	}
	if p := c.convNonEmpty(op, a); p != nil {
		return p
	}
	an := a.Ne()
	for i, n := range ne {
		if n < 1 {
			return c.fail(op, ErrShape, fmt.Sprintf("the result's ne%d (%d) must be >= 1", i, n), a)
		}
		nearest := i >= 2 || base == ScaleNearest
		if nearest && n != an[i] && (n > maxResized || an[i] > maxResized) {
			return c.fail(op, ErrShape, fmt.Sprintf("dimension %d resized from %d to %d: ggml's float32 index arithmetic is exact only up to %d", i, an[i], n, maxResized), a)
		}
	}
	if p := c.ensure(op, TypeF32, ne, nil, a); p != nil {
		return p
	}
	return c.call(op, f, a)
}

// Interpolate resizes a to the shape [ne0, ne1, ne2, ne3]
// (ggml_interpolate): up or down, by mode (see ScaleMode). a is f32, with
// any strides; the result is f32.
func (c *Context) Interpolate(a *Tensor, ne0, ne1, ne2, ne3 int64, mode ScaleMode) *Tensor {
	return c.interpolate("interpolate", a, shape4(ne0, ne1, ne2, ne3), mode, func() *C.struct_ggml_tensor {
		return C.ggml_interpolate(c.c, a.c, C.int64_t(ne0), C.int64_t(ne1), C.int64_t(ne2), C.int64_t(ne3), C.uint32_t(mode))
	})
}

// UpscaleExt is Interpolate with int sizes (ggml_upscale_ext, which ggml
// deprecates for ggml_interpolate; this calls ggml_interpolate, as
// ggml_upscale_ext does).
func (c *Context) UpscaleExt(a *Tensor, ne0, ne1, ne2, ne3 int, mode ScaleMode) *Tensor {
	const op = "upscale_ext"
	for _, n := range []int{ne0, ne1, ne2, ne3} {
		if n < 1 || n > math.MaxInt32 {
			if p := c.begin(op, a); p != nil {
				return p
			}
			return c.fail(op, ErrShape, fmt.Sprintf("the sizes %d, %d, %d, %d must be between 1 and %d", ne0, ne1, ne2, ne3, math.MaxInt32), a)
		}
	}
	return c.interpolate(op, a, shape4(int64(ne0), int64(ne1), int64(ne2), int64(ne3)), mode, func() *C.struct_ggml_tensor {
		return C.ggml_interpolate(c.c, a.c, C.int64_t(ne0), C.int64_t(ne1), C.int64_t(ne2), C.int64_t(ne3), C.uint32_t(mode))
	})
}

// Upscale multiplies a's dimensions 0 and 1 by factor, an integer > 1
// (ggml_upscale), by mode (see ScaleMode). a is f32.
func (c *Context) Upscale(a *Tensor, factor int, mode ScaleMode) *Tensor {
	const op = "upscale"
	if p := c.begin(op, a); p != nil {
		return p
	}
	if factor < 2 || factor > math.MaxInt32 {
		return c.fail(op, ErrInvalid, fmt.Sprintf("factor %d must be > 1 (ggml asserts it)", factor), a)
	}
	ne := a.Ne()
	if ne[0] > math.MaxInt64/int64(factor) || ne[1] > math.MaxInt64/int64(factor) {
		return c.fail(op, ErrShape, fmt.Sprintf("%v times %d overflows", ne, factor), a)
	}
	ne[0] *= int64(factor)
	ne[1] *= int64(factor)
	return c.interpolate(op, a, ne, mode, func() *C.struct_ggml_tensor {
		return C.ggml_upscale(c.c, a.c, C.int(factor), C.enum_ggml_scale_mode(mode))
	})
}

// TimestepEmbedding returns the sinusoidal embeddings of the timesteps t
// (f32 vector of N values), as in diffusion models
// (ggml_timestep_embedding): f32 [dim, N], row i holding
// cos(t[i]*f_j) for j < dim/2, then sin(t[i]*f_j), with
// f_j = maxPeriod^(-j/(dim/2)); an odd dim ends each row with 0. dim and
// maxPeriod are >= 1.
func (c *Context) TimestepEmbedding(t *Tensor, dim, maxPeriod int) *Tensor {
	const op = "timestep_embedding"
	if p := c.begin(op, t); p != nil {
		return p
	}
	ne := t.Ne()
	switch {
	case t.Type() != TypeF32:
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes f32 only, not %v", t.Type()), t)
	case !adjacent(t):
		return c.fail(op, ErrShape, "t's elements must be adjacent (ggml's kernel asserts nb0 == 4); copy it with Cont", t)
	case ne[1] != 1 || ne[2] != 1 || ne[3] != 1:
		return c.fail(op, ErrShape, fmt.Sprintf("t %v must be a vector (ggml reads only its first row)", ne), t)
	case dim < 1 || dim > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("dim %d must be >= 1", dim), t)
	case maxPeriod < 1 || maxPeriod > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("maxPeriod %d must be >= 1 (ggml takes its logarithm)", maxPeriod), t)
	}
	if p := c.ensure(op, TypeF32, shape4(int64(dim), ne[0], 1, 1), nil, t); p != nil {
		return p
	}
	return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_timestep_embedding(c.c, t.c, C.int(dim), C.int(maxPeriod)) }, t)
}
