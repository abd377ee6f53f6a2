package ggml_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/require"
)

// Tolerances of the convolution tests, relative to the sum of the
// magnitudes of the terms that make each reference element.
const (
	// convTolF32: f32 sums of at most ~150 terms (|error| <= n * 2^-24 * sum).
	convTolF32 = 1e-5
	// convTolF16: kernels that convert to f16. The references round the same
	// inputs to f16, so what is left is the accumulation, which some CPUs
	// do in f16 (2^-11 per step).
	convTolF16 = 1e-3
)

// convIn is a test input: its graph tensor and its values, dense.
type convIn struct {
	t *ggml.Tensor
	v nd
}

func convElems(ne []int) int {
	n := 1
	for _, x := range ne {
		n *= x
	}
	return n
}

// convInput makes a contiguous input of type ty (f32 or f16) holding random
// values; f16 values are rounded into the reference.
func convInput(e *env, rng *rand.Rand, ty ggml.Type, ne ...int) convIn {
	v := randF32(rng, convElems(ne))
	if ty == ggml.TypeF16 {
		h := toF16(v)
		r := newND(ne...)
		copy(r.v, fromF16Slice(h))
		return convIn{e.input(ty, h, i64s(ne)...), r}
	}
	return convIn{e.input(ty, v, i64s(ne)...), fromF32(v, ne...)}
}

// convStrided makes an input view of shape ne whose dimensions 1 to 3 have
// element strides st[1:] (dimension 0 adjacent), over a larger tensor of
// random values.
func convStrided(e *env, rng *rand.Rand, ty ggml.Type, ne, st [4]int) convIn {
	total := 1
	for i := range 4 {
		total += (ne[i] - 1) * st[i]
	}
	base := convInput(e, rng, ty, total)
	es := int(ty.Size())
	x := e.ctx.View4D(base.t, int64(ne[0]), int64(ne[1]), int64(ne[2]), int64(ne[3]),
		uint64(st[1]*es), uint64(st[2]*es), uint64(st[3]*es), 0)
	require.NoError(e.t, x.Err())
	r := newND(ne[:]...)
	r.each(func(i0, i1, i2, i3 int) { r.v[r.idx(i0, i1, i2, i3)] = base.v.v[i0+i1*st[1]+i2*st[2]+i3*st[3]] })
	return convIn{x, r}
}

// convTransposed makes an f32 input of shape ne whose dimensions 0 and 1 are
// swapped in memory (nb0 > nb1).
func convTransposed(e *env, rng *rand.Rand, ne [4]int) convIn {
	base := convInput(e, rng, ggml.TypeF32, ne[1], ne[0], ne[2], ne[3])
	x := e.ctx.Transpose(base.t)
	require.NoError(e.t, x.Err())
	r := newND(ne[:]...)
	r.each(func(i0, i1, i2, i3 int) { r.v[r.idx(i0, i1, i2, i3)] = base.v.at(i1, i0, i2, i3) })
	return convIn{x, r}
}

// roundF16ND rounds a reference to f16 precision, as ggml does when it
// converts an f32 input to f16.
func roundF16ND(a nd) nd {
	r := nd{ne: a.ne, v: make([]float64, len(a.v))}
	for i, x := range a.v {
		r.v[i] = f16ToF64(f32ToF16(float32(x)))
	}
	return r
}

func convTol(mag nd, rel float64) func(int) float64 {
	return func(i int) float64 { return rel*mag.v[i] + 1e-12 }
}

func convData(t *testing.T, x *ggml.Tensor) []float32 {
	t.Helper()
	got, err := ggml.Data[float32](x)
	require.NoError(t, err)
	return got
}

// convGeom is the geometry of a convolution over up to three dimensions:
// input size, kernel taps, stride, padding and dilation of each.
type convGeom struct{ in, k, s, p, d [3]int }

func convGeom1(in, k, s, p, d int) convGeom {
	return convGeom{[3]int{in, 1, 1}, [3]int{k, 1, 1}, [3]int{s, 1, 1}, [3]int{p, 0, 0}, [3]int{d, 1, 1}}
}

func convGeom2(w, h, kw, kh, s0, s1, p0, p1, d0, d1 int) convGeom {
	return convGeom{[3]int{w, h, 1}, [3]int{kw, kh, 1}, [3]int{s0, s1, 1}, [3]int{p0, p1, 0}, [3]int{d0, d1, 1}}
}

// out is the number of output positions in dimension i (floor division).
func (g convGeom) out(i int) int { return (g.in[i]+2*g.p[i]-g.d[i]*(g.k[i]-1)-1)/g.s[i] + 1 }

// sum returns the convolution at output position o over nic input
// channels, and the sum of the magnitudes of its terms; taps outside the
// input read zero padding.
func (g convGeom) sum(o [3]int, nic int, in func(x [3]int, ic int) float64, ker func(k [3]int, ic int) float64) (s, mag float64) {
	for ic := range nic {
		for k2 := range g.k[2] {
			for k1 := range g.k[1] {
				for k0 := range g.k[0] {
					k := [3]int{k0, k1, k2}
					var x [3]int
					inside := true
					for i := range 3 {
						x[i] = o[i]*g.s[i] + k[i]*g.d[i] - g.p[i]
						inside = inside && x[i] >= 0 && x[i] < g.in[i]
					}
					if !inside {
						continue
					}
					t := in(x, ic) * ker(k, ic)
					s += t
					mag += math.Abs(t)
				}
			}
		}
	}
	return s, mag
}

func TestConvIm2Col(t *testing.T) {
	rng := newRNG(t)
	type tc struct {
		w, h, ic, n, kw, kh, s0, s1, p0, p1, d0, d1 int
		is2D, strided                               bool
	}
	cases := []tc{
		{6, 5, 2, 2, 3, 2, 1, 2, 1, 0, 1, 2, true, false},
		{7, 7, 3, 1, 2, 3, 2, 1, 2, 3, 2, 1, true, true},
		{4, 3, 1, 3, 4, 3, 1, 1, 0, 0, 1, 1, true, false},  // one output position
		{3, 3, 2, 1, 2, 2, 1, 1, 5, 5, 1, 1, true, false},  // mostly padding
		{9, 1, 3, 2, 3, 1, 2, 0, 1, 0, 2, 0, false, true},  // 1-D
		{5, 1, 1, 4, 5, 1, 3, 9, 2, 9, 1, 9, false, false}, // 1-D: s1, p1, d1 ignored
	}
	for _, c := range cases {
		for _, kt := range []ggml.Type{ggml.TypeF32, ggml.TypeF16} {
			for _, dst := range []ggml.Type{ggml.TypeF32, ggml.TypeF16} {
				if dst == ggml.TypeF16 && kt != ggml.TypeF16 {
					continue
				}
				e := newEnv(t)
				var a, b convIn
				var g convGeom
				if c.is2D {
					a = convInput(e, rng, kt, c.kw, c.kh, c.ic, 2)
					if c.strided {
						b = convStrided(e, rng, ggml.TypeF32, [4]int{c.w, c.h, c.ic, c.n}, [4]int{1, c.w, c.w*c.h + 3, (c.w*c.h+3)*c.ic + 5})
					} else {
						b = convInput(e, rng, ggml.TypeF32, c.w, c.h, c.ic, c.n)
					}
					g = convGeom2(c.w, c.h, c.kw, c.kh, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
				} else {
					a = convInput(e, rng, kt, c.kw, c.ic, 2)
					if c.strided {
						b = convStrided(e, rng, ggml.TypeF32, [4]int{c.w, c.ic, c.n, 1}, [4]int{1, c.w + 2, (c.w+2)*c.ic + 1, 1})
					} else {
						b = convInput(e, rng, ggml.TypeF32, c.w, c.ic, c.n)
					}
					g = convGeom1(c.w, c.kw, c.s0, c.p0, c.d0)
				}
				out := e.ctx.Im2Col(a.t, b.t, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1, c.is2D, dst)
				require.NoError(t, out.Err())
				e.compute(out)
				kh := 1
				if c.is2D {
					kh = c.kh
				}
				ow, oh := g.out(0), g.out(1)
				var ref nd
				if c.is2D {
					ref = newND(c.ic*kh*c.kw, ow, oh, c.n)
				} else {
					ref = newND(c.ic*c.kw, ow, c.n)
				}
				require.Equal(t, [4]int64{int64(ref.ne[0]), int64(ref.ne[1]), int64(ref.ne[2]), int64(ref.ne[3])}, out.Ne())
				ref.each(func(i0, i1, i2, i3 int) {
					kw, khi, ic := i0%c.kw, i0/c.kw%kh, i0/(c.kw*kh)
					x := i1*g.s[0] + kw*g.d[0] - g.p[0]
					y, n := 0, i2
					if c.is2D {
						y, n = i2*g.s[1]+khi*g.d[1]-g.p[1], i3
					}
					if x < 0 || x >= g.in[0] || y < 0 || y >= g.in[1] {
						return
					}
					if c.is2D {
						ref.v[ref.idx(i0, i1, i2, i3)] = b.v.at(x, y, ic, n)
					} else {
						ref.v[ref.idx(i0, i1, i2, i3)] = b.v.at(x, ic, n, 0)
					}
				})
				var got []float32
				if dst == ggml.TypeF16 {
					ref = roundF16ND(ref)
					h, err := ggml.Data[uint16](out)
					require.NoError(t, err)
					for _, x := range fromF16Slice(h) {
						got = append(got, float32(x))
					}
				} else {
					got = convData(t, out)
				}
				requireClose(t, ref, got, func(int) float64 { return 0 }) // a copy, exact
			}
		}
	}
}

func TestConv1D(t *testing.T) {
	rng := newRNG(t)
	cases := []struct {
		l, ic, n, k, oc, s, p, d int
		strided                  bool
	}{
		{10, 3, 1, 3, 4, 1, 0, 1, false},
		{11, 2, 1, 3, 3, 2, 2, 2, true},
		{8, 4, 3, 2, 1, 3, 1, 1, true}, // a batch, one output channel
		{7, 1, 2, 7, 1, 1, 3, 1, false},
		{5, 2, 1, 2, 2, 1, 0, 4, false},
		// Batches with several output channels: ggml's product is
		// [OL, N, OC], which Conv1D permutes into [OL, OC, N].
		{9, 3, 2, 3, 4, 1, 1, 1, false},
		{12, 2, 3, 2, 5, 2, 0, 2, true},
		{6, 1, 4, 3, 2, 1, 2, 1, false},
		{1, 2, 2, 1, 3, 1, 0, 1, false}, // one output position
		{10, 4, 5, 4, 7, 3, 2, 1, true},
	}
	for _, c := range cases {
		e := newEnv(t)
		a := convInput(e, rng, ggml.TypeF16, c.k, c.ic, c.oc)
		var b convIn
		if c.strided {
			b = convStrided(e, rng, ggml.TypeF32, [4]int{c.l, c.ic, c.n, 1}, [4]int{1, c.l + 3, (c.l+3)*c.ic + 2, 1})
		} else {
			b = convInput(e, rng, ggml.TypeF32, c.l, c.ic, c.n)
		}
		out := e.ctx.Conv1D(a.t, b.t, c.s, c.p, c.d)
		require.NoError(t, out.Err())
		e.compute(out)
		g := convGeom1(c.l, c.k, c.s, c.p, c.d)
		bv := roundF16ND(b.v) // ggml's f16 im2col
		ref, mag := newND(g.out(0), c.oc, c.n), newND(g.out(0), c.oc, c.n)
		ref.each(func(ol, oc, n, _ int) {
			s, m := g.sum([3]int{ol}, c.ic,
				func(x [3]int, ic int) float64 { return bv.at(x[0], ic, n, 0) },
				func(k [3]int, ic int) float64 { return a.v.at(k[0], ic, oc, 0) })
			ref.v[ref.idx(ol, oc, n, 0)], mag.v[mag.idx(ol, oc, n, 0)] = s, m
		})
		require.Equal(t, [4]int64{int64(g.out(0)), int64(c.oc), int64(c.n), 1}, out.Ne())
		requireClose(t, ref, convData(t, out), convTol(mag, convTolF16))
	}
}

// conv2DRef is the 2-D convolution of b [W, H, IC, N] by a [KW, KH, IC, OC].
func conv2DRef(a, b nd, g convGeom) (ref, mag nd) {
	ic, oc, n := a.ne[2], a.ne[3], b.ne[3]
	ref, mag = newND(g.out(0), g.out(1), oc, n), newND(g.out(0), g.out(1), oc, n)
	ref.each(func(ow, oh, o, bi int) {
		s, m := g.sum([3]int{ow, oh}, ic,
			func(x [3]int, c int) float64 { return b.at(x[0], x[1], c, bi) },
			func(k [3]int, c int) float64 { return a.at(k[0], k[1], c, o) })
		ref.v[ref.idx(ow, oh, o, bi)], mag.v[mag.idx(ow, oh, o, bi)] = s, m
	})
	return ref, mag
}

var conv2DCases = []struct {
	w, h, ic, n, kw, kh, oc, s0, s1, p0, p1, d0, d1 int
}{
	{5, 4, 1, 1, 3, 3, 1, 1, 1, 0, 0, 1, 1},
	{7, 6, 3, 2, 3, 2, 4, 2, 1, 1, 2, 1, 2},
	{9, 8, 2, 3, 2, 3, 3, 3, 2, 2, 1, 2, 1},
	{4, 4, 2, 1, 4, 4, 5, 1, 1, 0, 0, 1, 1}, // one output position
	{6, 5, 3, 2, 1, 1, 2, 2, 2, 1, 0, 1, 1}, // 1x1 kernel, padding
}

func TestConv2D(t *testing.T) {
	rng := newRNG(t)
	for i, c := range conv2DCases {
		for _, kt := range []ggml.Type{ggml.TypeF32, ggml.TypeF16} {
			e := newEnv(t)
			a := convInput(e, rng, kt, c.kw, c.kh, c.ic, c.oc)
			var b convIn
			if i%2 == 1 { // channel and batch strides padded
				b = convStrided(e, rng, ggml.TypeF32, [4]int{c.w, c.h, c.ic, c.n}, [4]int{1, c.w, c.w*c.h + 3, (c.w*c.h+3)*c.ic + 5})
			} else {
				b = convInput(e, rng, ggml.TypeF32, c.w, c.h, c.ic, c.n)
			}
			out := e.ctx.Conv2D(a.t, b.t, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
			require.NoError(t, out.Err())
			e.compute(out)
			g := convGeom2(c.w, c.h, c.kw, c.kh, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
			bv, tol := b.v, convTolF32
			if kt == ggml.TypeF16 || ggml.ConvIm2ColF16 {
				bv, tol = roundF16ND(b.v), convTolF16
			}
			ref, mag := conv2DRef(a.v, bv, g)
			require.Equal(t, [4]int64{int64(g.out(0)), int64(g.out(1)), int64(c.oc), int64(c.n)}, out.Ne())
			requireClose(t, ref, convData(t, out), convTol(mag, tol))
		}
	}
}

func TestConv2DDirect(t *testing.T) {
	rng := newRNG(t)
	for i, c := range conv2DCases {
		for _, kt := range []ggml.Type{ggml.TypeF32, ggml.TypeF16} {
			e := newEnv(t)
			a := convInput(e, rng, kt, c.kw, c.kh, c.ic, c.oc)
			var b convIn
			switch i % 3 {
			case 0:
				b = convInput(e, rng, ggml.TypeF32, c.w, c.h, c.ic, c.n)
			case 1: // the direct kernel takes any strides
				b = convTransposed(e, rng, [4]int{c.w, c.h, c.ic, c.n})
			default:
				b = convStrided(e, rng, ggml.TypeF32, [4]int{c.w, c.h, c.ic, c.n}, [4]int{1, c.w + 1, (c.w+1)*c.h + 2, ((c.w+1)*c.h+2)*c.ic + 1})
			}
			out := e.ctx.Conv2DDirect(a.t, b.t, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
			require.NoError(t, out.Err())
			e.compute(out)
			g := convGeom2(c.w, c.h, c.kw, c.kh, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
			bv, tol := b.v, convTolF32
			if kt == ggml.TypeF16 {
				bv, tol = roundF16ND(b.v), convTolF16
			}
			ref, mag := conv2DRef(a.v, bv, g)
			require.Equal(t, [4]int64{int64(g.out(0)), int64(g.out(1)), int64(c.oc), int64(c.n)}, out.Ne())
			requireClose(t, ref, convData(t, out), convTol(mag, tol))
		}
	}
}

// dwRef is the depthwise convolution of b [W, H, C, N] by a, whose kernel
// for channel c is ker(kw, kh, c).
func dwRef(b nd, ker func(kw, kh, c int) float64, g convGeom) (ref, mag nd) {
	ch, n := b.ne[2], b.ne[3]
	ref, mag = newND(g.out(0), g.out(1), ch, n), newND(g.out(0), g.out(1), ch, n)
	ref.each(func(ow, oh, c, bi int) {
		s, m := g.sum([3]int{ow, oh}, 1,
			func(x [3]int, _ int) float64 { return b.at(x[0], x[1], c, bi) },
			func(k [3]int, _ int) float64 { return ker(k[0], k[1], c) })
		ref.v[ref.idx(ow, oh, c, bi)], mag.v[mag.idx(ow, oh, c, bi)] = s, m
	})
	return ref, mag
}

func TestConv2DDW(t *testing.T) {
	rng := newRNG(t)
	for i, c := range conv2DCases {
		c.ic++ // at least two channels
		e := newEnv(t)
		var a convIn
		if i%2 == 0 {
			a = convInput(e, rng, ggml.TypeF16, c.kw, c.kh, 1, c.ic)
		} else {
			a = convInput(e, rng, ggml.TypeF16, c.kw, c.kh, c.ic)
		}
		b := convInput(e, rng, ggml.TypeF32, c.w, c.h, c.ic, c.n)
		out := e.ctx.Conv2DDW(a.t, b.t, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
		require.NoError(t, out.Err())
		e.compute(out)
		g := convGeom2(c.w, c.h, c.kw, c.kh, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
		ref, mag := dwRef(roundF16ND(b.v), func(kw, kh, ch int) float64 { return a.v.v[kw+c.kw*(kh+c.kh*ch)] }, g)
		require.Equal(t, [4]int64{int64(g.out(0)), int64(g.out(1)), int64(c.ic), int64(c.n)}, out.Ne())
		requireClose(t, ref, convData(t, out), convTol(mag, convTolF16))
	}
}

func TestConv2DDWDirect(t *testing.T) {
	rng := newRNG(t)
	for i, c := range conv2DCases {
		c.ic++
		for _, cwhn := range []bool{false, true} {
			e := newEnv(t)
			var a, b convIn
			if cwhn {
				// Channels innermost: permuted views of [C, W, H, N] and
				// [C, 1, KW, KH].
				x := convInput(e, rng, ggml.TypeF32, c.ic, c.w, c.h, c.n)
				b.t = e.ctx.Permute(x.t, 2, 0, 1, 3)
				b.v = newND(c.w, c.h, c.ic, c.n)
				b.v.each(func(w, h, ch, n int) { b.v.v[b.v.idx(w, h, ch, n)] = x.v.at(ch, w, h, n) })
				k := convInput(e, rng, ggml.TypeF32, c.ic, 1, c.kw, c.kh)
				a.t = e.ctx.Permute(k.t, 3, 2, 0, 1)
				a.v = newND(c.kw, c.kh, 1, c.ic)
				a.v.each(func(kw, kh, _, ch int) { a.v.v[a.v.idx(kw, kh, 0, ch)] = k.v.at(ch, 0, kw, kh) })
			} else {
				a = convInput(e, rng, ggml.TypeF32, c.kw, c.kh, 1, c.ic)
				b = convInput(e, rng, ggml.TypeF32, c.w, c.h, c.ic, c.n)
			}
			out := e.ctx.Conv2DDWDirect(a.t, b.t, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
			require.NoError(t, out.Err(), "case %d cwhn %v", i, cwhn)
			dense := e.ctx.Cont(out)
			e.compute(dense)
			g := convGeom2(c.w, c.h, c.kw, c.kh, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
			ref, mag := dwRef(b.v, func(kw, kh, ch int) float64 { return a.v.at(kw, kh, 0, ch) }, g)
			require.Equal(t, [4]int64{int64(g.out(0)), int64(g.out(1)), int64(c.ic), int64(c.n)}, out.Ne())
			requireClose(t, ref, convData(t, dense), convTol(mag, convTolF32))
		}
	}
}

func TestConv1DDW(t *testing.T) {
	rng := newRNG(t)
	for _, c := range []struct{ l, ch, k, s, p, d int }{{9, 3, 3, 1, 1, 1}, {12, 2, 4, 2, 3, 2}, {5, 4, 5, 1, 0, 1}} {
		e := newEnv(t)
		a := convInput(e, rng, ggml.TypeF16, c.k, 1, c.ch)
		b := convInput(e, rng, ggml.TypeF32, c.l, c.ch)
		out := e.ctx.Conv1DDW(a.t, b.t, c.s, c.p, c.d)
		require.NoError(t, out.Err())
		e.compute(out)
		g := convGeom1(c.l, c.k, c.s, c.p, c.d)
		bv := roundF16ND(b.v)
		ref, mag := newND(g.out(0), c.ch), newND(g.out(0), c.ch)
		ref.each(func(ol, ch, _, _ int) {
			s, m := g.sum([3]int{ol}, 1,
				func(x [3]int, _ int) float64 { return bv.at(x[0], ch, 0, 0) },
				func(k [3]int, _ int) float64 { return a.v.at(k[0], 0, ch, 0) })
			ref.v[ref.idx(ol, ch, 0, 0)], mag.v[mag.idx(ol, ch, 0, 0)] = s, m
		})
		require.Equal(t, [4]int64{int64(g.out(0)), int64(c.ch), 1, 1}, out.Ne())
		requireClose(t, ref, convData(t, out), convTol(mag, convTolF16))
	}
}

func TestConvTranspose1D(t *testing.T) {
	rng := newRNG(t)
	cases := []struct {
		l, k, ic, oc, s int
		strided         bool
	}{
		{5, 3, 2, 3, 1, false},
		{4, 2, 3, 2, 3, true}, // stride > kernel: gaps of zeros
		{6, 4, 1, 1, 2, false},
		{3, 5, 4, 2, 2, true},
	}
	for _, c := range cases {
		for _, kt := range []ggml.Type{ggml.TypeF32, ggml.TypeF16} {
			e := newEnv(t)
			var a, b convIn
			if c.strided { // the kernel takes any strides in dimensions >= 1
				a = convStrided(e, rng, kt, [4]int{c.k, c.oc, c.ic, 1}, [4]int{1, c.k + 1, (c.k+1)*c.oc + 2, 1})
				b = convStrided(e, rng, ggml.TypeF32, [4]int{c.l, c.ic, 1, 1}, [4]int{1, c.l + 3, 1, 1})
			} else {
				a = convInput(e, rng, kt, c.k, c.oc, c.ic)
				b = convInput(e, rng, ggml.TypeF32, c.l, c.ic)
			}
			out := e.ctx.ConvTranspose1D(a.t, b.t, c.s, 0, 1)
			require.NoError(t, out.Err())
			e.compute(out)
			bv, tol := b.v, convTolF32
			if kt == ggml.TypeF16 {
				bv, tol = roundF16ND(b.v), convTolF16
			}
			n := (c.l-1)*c.s + c.k
			ref, mag := newND(n, c.oc), newND(n, c.oc)
			for oc := range c.oc {
				for l := range c.l {
					for k := range c.k {
						for ic := range c.ic {
							v := bv.at(l, ic, 0, 0) * a.v.at(k, oc, ic, 0)
							ref.v[ref.idx(l*c.s+k, oc, 0, 0)] += v
							mag.v[mag.idx(l*c.s+k, oc, 0, 0)] += math.Abs(v)
						}
					}
				}
			}
			require.Equal(t, [4]int64{int64(n), int64(c.oc), 1, 1}, out.Ne())
			requireClose(t, ref, convData(t, out), convTol(mag, tol))
		}
	}
}

func TestConvTranspose2D(t *testing.T) {
	rng := newRNG(t)
	cases := []struct {
		w, h, kw, kh, ic, oc, s, n int
		strided                    bool
	}{
		{4, 3, 3, 2, 2, 3, 1, 1, false},
		{3, 3, 2, 2, 3, 2, 2, 1, true},
		{2, 4, 2, 3, 1, 1, 4, 1, false}, // stride > kernel
		{5, 2, 1, 1, 2, 2, 3, 1, true},
		// Batches: ggml's kernel computes one item; the op runs it per item
		// and concatenates.
		{4, 3, 3, 2, 2, 3, 1, 2, false},
		{3, 3, 2, 2, 3, 2, 2, 3, true},
		{2, 2, 2, 3, 1, 4, 2, 5, false},
		{3, 2, 1, 2, 4, 1, 3, 4, true},
		{2, 3, 3, 3, 2, 5, 1, 7, true},
	}
	for _, c := range cases {
		e := newEnv(t)
		a := convInput(e, rng, ggml.TypeF16, c.kw, c.kh, c.oc, c.ic)
		var b convIn
		if c.strided {
			b = convStrided(e, rng, ggml.TypeF32, [4]int{c.w, c.h, c.ic, c.n}, [4]int{1, c.w + 2, (c.w+2)*c.h + 1, ((c.w+2)*c.h+1)*c.ic + 3})
		} else {
			b = convInput(e, rng, ggml.TypeF32, c.w, c.h, c.ic, c.n)
		}
		out := e.ctx.ConvTranspose2D(a.t, b.t, c.s)
		require.NoError(t, out.Err())
		e.compute(out)
		bv := roundF16ND(b.v)
		ow, oh := (c.w-1)*c.s+c.kw, (c.h-1)*c.s+c.kh
		ref, mag := newND(ow, oh, c.oc, c.n), newND(ow, oh, c.oc, c.n)
		for n := range c.n {
			for oc := range c.oc {
				for y := range c.h {
					for x := range c.w {
						for kh := range c.kh {
							for kw := range c.kw {
								for ic := range c.ic {
									v := bv.at(x, y, ic, n) * a.v.at(kw, kh, oc, ic)
									i := ref.idx(x*c.s+kw, y*c.s+kh, oc, n)
									ref.v[i] += v
									mag.v[i] += math.Abs(v)
								}
							}
						}
					}
				}
			}
		}
		require.Equal(t, [4]int64{int64(ow), int64(oh), int64(c.oc), int64(c.n)}, out.Ne())
		requireClose(t, ref, convData(t, out), convTol(mag, convTolF16))
	}
}

// conv3DRef is the 3-D convolution of b [W, H, D, IC*N] by a
// [KW, KH, KD, IC*OC], result [OW, OH, OD, OC*N].
func conv3DRef(a, b nd, ic int, g convGeom) (ref, mag nd) {
	oc, n := a.ne[3]/ic, b.ne[3]/ic
	ref, mag = newND(g.out(0), g.out(1), g.out(2), oc*n), newND(g.out(0), g.out(1), g.out(2), oc*n)
	ref.each(func(ow, oh, od, j int) {
		bi, o := j/oc, j%oc
		s, m := g.sum([3]int{ow, oh, od}, ic,
			func(x [3]int, c int) float64 { return b.at(x[0], x[1], x[2], bi*ic+c) },
			func(k [3]int, c int) float64 { return a.at(k[0], k[1], k[2], o*ic+c) })
		ref.v[ref.idx(ow, oh, od, j)], mag.v[mag.idx(ow, oh, od, j)] = s, m
	})
	return ref, mag
}

var conv3DCases = []struct {
	w, h, d, ic, n, kw, kh, kd, oc int
	s, p, dl                       [3]int
}{
	{5, 4, 3, 2, 1, 2, 2, 2, 3, [3]int{1, 1, 1}, [3]int{0, 0, 0}, [3]int{1, 1, 1}},
	{6, 5, 4, 1, 2, 3, 2, 2, 2, [3]int{2, 1, 2}, [3]int{1, 0, 1}, [3]int{1, 2, 1}},
	{4, 4, 5, 3, 2, 1, 3, 2, 2, [3]int{1, 2, 1}, [3]int{0, 1, 2}, [3]int{1, 1, 2}},
}

func TestConv3D(t *testing.T) {
	rng := newRNG(t)
	for _, c := range conv3DCases {
		g := convGeom{[3]int{c.w, c.h, c.d}, [3]int{c.kw, c.kh, c.kd}, c.s, c.p, c.dl}
		for _, kt := range []ggml.Type{ggml.TypeF32, ggml.TypeF16} {
			for _, direct := range []bool{false, true} {
				e := newEnv(t)
				a := convInput(e, rng, kt, c.kw, c.kh, c.kd, c.ic*c.oc)
				var b convIn
				if direct { // any strides
					b = convStrided(e, rng, ggml.TypeF32, [4]int{c.w, c.h, c.d, c.ic * c.n}, [4]int{1, c.w + 1, (c.w+1)*c.h + 2, ((c.w+1)*c.h+2)*c.d + 3})
				} else {
					b = convInput(e, rng, ggml.TypeF32, c.w, c.h, c.d, c.ic*c.n)
				}
				var out *ggml.Tensor
				if direct {
					out = e.ctx.Conv3DDirect(a.t, b.t, c.s[0], c.s[1], c.s[2], c.p[0], c.p[1], c.p[2], c.dl[0], c.dl[1], c.dl[2], c.ic, c.n, c.oc)
				} else {
					out = e.ctx.Conv3D(a.t, b.t, c.ic, c.s[0], c.s[1], c.s[2], c.p[0], c.p[1], c.p[2], c.dl[0], c.dl[1], c.dl[2])
				}
				require.NoError(t, out.Err())
				e.compute(out)
				bv, tol := b.v, convTolF32
				if kt == ggml.TypeF16 || (ggml.ConvIm2ColF16 && !direct) {
					bv, tol = roundF16ND(b.v), convTolF16
				}
				ref, mag := conv3DRef(a.v, bv, c.ic, g)
				require.Equal(t, [4]int64{int64(g.out(0)), int64(g.out(1)), int64(g.out(2)), int64(c.oc * c.n)}, out.Ne())
				requireClose(t, ref, convData(t, out), convTol(mag, tol))
			}
		}
	}
}

func TestConvIm2Col3D(t *testing.T) {
	rng := newRNG(t)
	for _, c := range conv3DCases {
		g := convGeom{[3]int{c.w, c.h, c.d}, [3]int{c.kw, c.kh, c.kd}, c.s, c.p, c.dl}
		for _, dst := range []ggml.Type{ggml.TypeF32, ggml.TypeF16} {
			e := newEnv(t)
			a := convInput(e, rng, dst, c.kw, c.kh, c.kd, c.ic*c.oc)
			b := convStrided(e, rng, ggml.TypeF32, [4]int{c.w, c.h, c.d, c.ic * c.n}, [4]int{1, c.w + 2, (c.w+2)*c.h + 1, ((c.w+2)*c.h+1)*c.d + 2})
			out := e.ctx.Im2Col3D(a.t, b.t, c.ic, c.s[0], c.s[1], c.s[2], c.p[0], c.p[1], c.p[2], c.dl[0], c.dl[1], c.dl[2], dst)
			require.NoError(t, out.Err())
			e.compute(out)
			ow, oh, od := g.out(0), g.out(1), g.out(2)
			ref := newND(c.ic*c.kd*c.kh*c.kw, ow, oh, od*c.n)
			ref.each(func(i0, x0, y0, j int) {
				kw, kh, kd, ic := i0%c.kw, i0/c.kw%c.kh, i0/(c.kw*c.kh)%c.kd, i0/(c.kw*c.kh*c.kd)
				z0, n := j%od, j/od
				x, y, z := x0*c.s[0]+kw*c.dl[0]-c.p[0], y0*c.s[1]+kh*c.dl[1]-c.p[1], z0*c.s[2]+kd*c.dl[2]-c.p[2]
				if x >= 0 && x < c.w && y >= 0 && y < c.h && z >= 0 && z < c.d {
					ref.v[ref.idx(i0, x0, y0, j)] = b.v.at(x, y, z, n*c.ic+ic)
				}
			})
			require.Equal(t, [4]int64{int64(ref.ne[0]), int64(ow), int64(oh), int64(od * c.n)}, out.Ne())
			var got []float32
			if dst == ggml.TypeF16 {
				ref = roundF16ND(ref)
				h, err := ggml.Data[uint16](out)
				require.NoError(t, err)
				for _, x := range fromF16Slice(h) {
					got = append(got, float32(x))
				}
			} else {
				got = convData(t, out)
			}
			requireClose(t, ref, got, func(int) float64 { return 0 })
		}
	}
}

func TestConvPool(t *testing.T) {
	rng := newRNG(t)
	for _, ty := range []ggml.Type{ggml.TypeF32, ggml.TypeF16} {
		for _, op := range []ggml.PoolOp{ggml.PoolMax, ggml.PoolAvg} {
			// Pool1D: windows of k, stride k, no padding.
			for _, k := range []int{1, 2, 3} {
				e := newEnv(t)
				a := convInput(e, rng, ty, 8, 3, 2)
				out := e.ctx.Pool1D(a.t, op, k, k, 0)
				require.NoError(t, out.Err())
				e.compute(out)
				ref, mag := newND(8/k, 3, 2), newND(8/k, 3, 2)
				ref.each(func(o, i1, i2, _ int) {
					m, s, sa := -math.MaxFloat64, 0.0, 0.0
					for j := o * k; j < o*k+k; j++ {
						v := a.v.at(j, i1, i2, 0)
						m, s, sa = math.Max(m, v), s+v, sa+math.Abs(v)
					}
					i := ref.idx(o, i1, i2, 0)
					if op == ggml.PoolMax {
						ref.v[i] = m
					} else {
						ref.v[i], mag.v[i] = s/float64(k), sa/float64(k)
					}
				})
				require.Equal(t, [4]int64{int64(8 / k), 3, 2, 1}, out.Ne())
				requireClose(t, ref, convData(t, out), convTol(mag, convTolF32))
			}
			// Pool2D, including windows wholly in the padding (k 2, p 2).
			for _, c := range []struct{ w, h, k0, k1, s0, s1, p0, p1 int }{
				{6, 4, 2, 2, 2, 2, 0, 0}, {7, 5, 3, 3, 1, 1, 1, 1}, {7, 6, 3, 2, 2, 1, 1, 0}, {5, 5, 2, 2, 1, 2, 2, 2}, {9, 4, 4, 3, 3, 2, 2, 1},
			} {
				e := newEnv(t)
				a := convInput(e, rng, ty, c.w, c.h, 3, 2)
				out := e.ctx.Pool2D(a.t, op, c.k0, c.k1, c.s0, c.s1, c.p0, c.p1)
				require.NoError(t, out.Err())
				e.compute(out)
				ow, oh := (c.w+2*c.p0-c.k0)/c.s0+1, (c.h+2*c.p1-c.k1)/c.s1+1
				ref, mag := newND(ow, oh, 3, 2), newND(ow, oh, 3, 2)
				ref.each(func(ox, oy, i2, i3 int) {
					m, s, sa := -float64(math.MaxFloat32), 0.0, 0.0
					for ky := range c.k1 {
						for kx := range c.k0 {
							x, y := ox*c.s0-c.p0+kx, oy*c.s1-c.p1+ky
							if x < 0 || x >= c.w || y < 0 || y >= c.h {
								continue
							}
							v := a.v.at(x, y, i2, i3)
							m, s, sa = math.Max(m, v), s+v, sa+math.Abs(v)
						}
					}
					i := ref.idx(ox, oy, i2, i3)
					if op == ggml.PoolMax {
						ref.v[i] = m
					} else {
						ka := float64(c.k0 * c.k1)
						ref.v[i], mag.v[i] = s/ka, sa/ka
					}
				})
				require.Equal(t, [4]int64{int64(ow), int64(oh), 3, 2}, out.Ne())
				requireClose(t, ref, convData(t, out), convTol(mag, convTolF32))
			}
		}
	}
}

// interpRef resizes a to ne as ggml's upscale kernel defines it. The
// source coordinates are computed in float32 as ggml computes them (that
// decides which element nearest-neighbour picks at exact ties); the
// interpolation is in float64. mag is the sum of |value * weight|.
func interpRef(a nd, ne [4]int, mode ggml.ScaleMode) (ref, mag nd) {
	base := mode & 0xFF
	align := mode&ggml.ScaleAlignCorners != 0
	aa := mode&ggml.ScaleAntialias != 0
	var sf [4]float32
	for i := range 4 {
		sf[i] = float32(ne[i]) / float32(a.ne[i])
	}
	po := float32(0.5)
	if align {
		po = 0
		for i := range 2 {
			if ne[i] > 1 && a.ne[i] > 1 {
				sf[i] = float32(ne[i]-1) / float32(a.ne[i]-1)
			}
		}
	}
	clamp := func(v, n int) int { return max(0, min(v, n-1)) }
	ref, mag = newND(ne[:]...), newND(ne[:]...)
	ref.each(func(i0, i1, i2, i3 int) {
		j2, j3 := int(float32(i2)/sf[2]), int(float32(i3)/sf[3])
		src := func(x, y int) float64 { return a.at(x, y, j2, j3) }
		var v, m float64
		switch {
		case base == ggml.ScaleNearest:
			v = src(int(float32(i0)/sf[0]), int(float32(i1)/sf[1]))
			m = math.Abs(v)
		case base == ggml.ScaleBilinear && aa:
			x := float32(float32(i0)+po) / sf[0]
			y := float32(float32(i1)+po) / sf[1]
			sup0, sup1 := max(float32(1), 1/sf[0]), max(float32(1), 1/sf[1])
			inv0, inv1 := 1/sup0, 1/sup1
			xmin, xmax := max(int(float32(x-sup0)+po), 0), min(int(float32(x+sup0)+po), a.ne[0])
			ymin, ymax := max(int(float32(y-sup1)+po), 0), min(int(float32(y+sup1)+po), a.ne[1])
			tri := func(t float32) float64 { return math.Max(1-math.Abs(float64(t)), 0) }
			var tw float64
			for sy := ymin; sy < ymax; sy++ {
				wy := tri(float32(float32(sy)-y+po) * inv1)
				for sx := xmin; sx < xmax; sx++ {
					w := tri(float32(float32(sx)-x+po)*inv0) * wy
					if w <= 0 {
						continue
					}
					p := src(sx, sy)
					v += p * w
					m += math.Abs(p * w)
					tw += w
				}
			}
			if tw > 0 {
				v, m = v/tw, m/tw
			}
		case base == ggml.ScaleBilinear:
			coord := func(i int, s float32, n int) (int, int, float64) {
				c := float32(float32(i)+po)/s - po
				c0 := int(math.Floor(float64(c)))
				lo, hi := clamp(c0, n), clamp(c0+1, n)
				d := float64(c - float32(lo))
				return lo, hi, math.Max(0, math.Min(d, 1))
			}
			x0, x1, dx := coord(i0, sf[0], a.ne[0])
			y0, y1, dy := coord(i1, sf[1], a.ne[1])
			for _, t := range [4]float64{src(x0, y0) * (1 - dx) * (1 - dy), src(x1, y0) * dx * (1 - dy), src(x0, y1) * (1 - dx) * dy, src(x1, y1) * dx * dy} {
				v += t
				m += math.Abs(t)
			}
		case base == ggml.ScaleBicubic:
			const A = -0.75
			w1 := func(x float64) float64 { return ((A+2)*x-(A+3))*x*x + 1 }
			w2 := func(x float64) float64 { return ((A*x-5*A)*x+8*A)*x - 4*A }
			weights := func(d float64) [4]float64 { return [4]float64{w2(d + 1), w1(d), w1(1 - d), w2(2 - d)} }
			coord := func(i int, s float32) (int, float64) {
				c := float32(float32(i)+po)/s - po
				c0 := float32(math.Floor(float64(c)))
				return int(c0), float64(c - c0)
			}
			x0, dx := coord(i0, sf[0])
			y0, dy := coord(i1, sf[1])
			wx, wy := weights(dx), weights(dy)
			for j := range 4 {
				for i := range 4 {
					p := src(clamp(x0+i-1, a.ne[0]), clamp(y0+j-1, a.ne[1]))
					v += p * wx[i] * wy[j]
					// ggml's float32 weights lose about 2^-19 to
					// cancellation whatever their size: widen each by 0.25
					// in the magnitude (0.25 * convTolF32 > 2^-19).
					m += math.Abs(p) * (math.Abs(wx[i]) + 0.25) * (math.Abs(wy[j]) + 0.25)
				}
			}
		}
		ref.v[ref.idx(i0, i1, i2, i3)], mag.v[mag.idx(i0, i1, i2, i3)] = v, m
	})
	return ref, mag
}

func TestConvInterpolate(t *testing.T) {
	rng := newRNG(t)
	in := [4]int{5, 4, 3, 2}
	sizes := [][4]int{{10, 12, 3, 2}, {3, 3, 3, 2}, {7, 6, 3, 2}, {5, 4, 6, 3}, {1, 9, 2, 1}, {12, 1, 3, 2}}
	var modes []ggml.ScaleMode
	for _, m := range []ggml.ScaleMode{ggml.ScaleNearest, ggml.ScaleBilinear, ggml.ScaleBicubic, ggml.ScaleBilinear | ggml.ScaleAntialias} {
		modes = append(modes, m, m|ggml.ScaleAlignCorners)
	}
	for _, mode := range modes {
		for i, ne := range sizes {
			e := newEnv(t)
			var a convIn
			if i%2 == 1 { // any strides
				a = convTransposed(e, rng, in)
			} else {
				a = convInput(e, rng, ggml.TypeF32, in[:]...)
			}
			out := e.ctx.Interpolate(a.t, int64(ne[0]), int64(ne[1]), int64(ne[2]), int64(ne[3]), mode)
			require.NoError(t, out.Err())
			e.compute(out)
			ref, mag := interpRef(a.v, ne, mode)
			require.Equal(t, [4]int64{int64(ne[0]), int64(ne[1]), int64(ne[2]), int64(ne[3])}, out.Ne())
			requireClose(t, ref, convData(t, out), convTol(mag, convTolF32))
		}
	}
	// Upscale and UpscaleExt are Interpolate with other size arguments.
	for _, mode := range []ggml.ScaleMode{ggml.ScaleNearest, ggml.ScaleBilinear, ggml.ScaleBicubic | ggml.ScaleAlignCorners} {
		for _, f := range []int{2, 3} {
			e := newEnv(t)
			a := convInput(e, rng, ggml.TypeF32, in[:]...)
			up := e.ctx.Upscale(a.t, f, mode)
			ext := e.ctx.UpscaleExt(a.t, in[0]*f+1, in[1]*f-1, in[2], 1, mode)
			require.NoError(t, e.ctx.Err())
			e.compute(up, ext)
			ne := [4]int{in[0] * f, in[1] * f, in[2], in[3]}
			ref, mag := interpRef(a.v, ne, mode)
			require.Equal(t, [4]int64{int64(ne[0]), int64(ne[1]), int64(ne[2]), int64(ne[3])}, up.Ne())
			requireClose(t, ref, convData(t, up), convTol(mag, convTolF32))
			ne = [4]int{in[0]*f + 1, in[1]*f - 1, in[2], 1}
			ref, mag = interpRef(a.v, ne, mode)
			requireClose(t, ref, convData(t, ext), convTol(mag, convTolF32))
		}
	}
}

func TestConvTimestepEmbedding(t *testing.T) {
	rng := newRNG(t)
	for _, c := range []struct{ n, dim, period int }{{5, 8, 10000}, {4, 7, 10000}, {3, 16, 100}, {2, 1, 10}, {3, 6, 1}} {
		e := newEnv(t)
		ts := make([]float32, c.n)
		for i := range ts {
			ts[i] = float32(rng.Float64() * 1000)
		}
		x := e.input(ggml.TypeF32, ts, int64(c.n))
		out := e.ctx.TimestepEmbedding(x, c.dim, c.period)
		require.NoError(t, out.Err())
		e.compute(out)
		half := c.dim / 2
		ref, tol := newND(c.dim, c.n), newND(c.dim, c.n)
		for i, tv := range ts {
			for j := range half {
				u := math.Log(float64(c.period)) * float64(j) / float64(half)
				arg := float64(tv) * math.Exp(-u)
				ref.v[ref.idx(j, i, 0, 0)] = math.Cos(arg)
				ref.v[ref.idx(j+half, i, 0, 0)] = math.Sin(arg)
				// float32 log, exp and products: relative error of the
				// argument about (u+1)*2^-22.
				d := math.Abs(arg)*(u+1)*4e-7 + 4e-7
				tol.v[ref.idx(j, i, 0, 0)], tol.v[ref.idx(j+half, i, 0, 0)] = d, d
			}
		}
		require.Equal(t, [4]int64{int64(c.dim), int64(c.n), 1, 1}, out.Ne())
		requireClose(t, ref, convData(t, out), func(i int) float64 { return tol.v[i] })
	}
}

// TestConvPoolRoom checks that the composite convolutions reserve room in
// the context's pool for every tensor ggml creates on the way: with too
// little room they fail in Go with ErrNoMemory, never in ggml.
func TestConvPoolRoom(t *testing.T) {
	const w, h, ic, oc, k = 6, 5, 2, 3, 3
	dataBytes := func(n int) uint64 { return (uint64(n)*4 + 15) / 16 * 16 }
	ow, oh := w-k+1, h-k+1
	// Inputs, im2col, mul_mat and cont own data; the op makes 7 tensors.
	need := dataBytes(k*k*ic*oc) + dataBytes(w*h*ic) + dataBytes(ic*k*k*ow*oh) + 2*dataBytes(ow*oh*oc)
	failed := false
	for short := uint64(0); short <= 320; short += 16 {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 9, MemSize: need - short})
		require.NoError(t, err)
		a := c.NewTensor(ggml.TypeF32, k, k, ic, oc)
		b := c.NewTensor(ggml.TypeF32, w, h, ic)
		out := c.Conv2D(a, b, 1, 1, 0, 0, 1, 1)
		if short == 0 {
			require.NoError(t, out.Err())
			require.Equal(t, []int64{int64(ow), int64(oh), oc}, out.Shape())
		} else if err := out.Err(); err != nil {
			require.ErrorIs(t, err, ggml.ErrNoMemory, "MemSize %d", need-short)
			failed = true
		}
		c.Close()
	}
	require.True(t, failed, "320 bytes short must not fit")

	// In NoAlloc contexts only the tensor count matters.
	ops := []struct {
		name    string
		tensors int // made by the op
		op      func(c *ggml.Context) *ggml.Tensor
	}{
		{"conv_1d", 5, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv1D(c.NewTensor(ggml.TypeF16, 3, 2, 4), c.NewTensor(ggml.TypeF32, 10, 2), 1, 0, 1)
		}},
		{"conv_1d batch", 8, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv1D(c.NewTensor(ggml.TypeF16, 3, 2, 4), c.NewTensor(ggml.TypeF32, 10, 2, 3), 1, 0, 1)
		}},
		{"conv_transpose_2d batch", 3*5 - 1, func(c *ggml.Context) *ggml.Tensor {
			return c.ConvTranspose2D(c.NewTensor(ggml.TypeF16, 3, 3, 2, 4), c.NewTensor(ggml.TypeF32, 6, 5, 4, 5), 2)
		}},
		{"conv_1d_dw", 4, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv1DDW(c.NewTensor(ggml.TypeF16, 3, 1, 4), c.NewTensor(ggml.TypeF32, 10, 4), 1, 0, 1)
		}},
		{"conv_2d", 7, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2D(c.NewTensor(ggml.TypeF16, 3, 3, 2, 4), c.NewTensor(ggml.TypeF32, 8, 8, 2, 2), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d_dw", 7, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDW(c.NewTensor(ggml.TypeF16, 3, 3, 1, 2), c.NewTensor(ggml.TypeF32, 8, 8, 2, 2), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_3d", 8, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv3D(c.NewTensor(ggml.TypeF32, 2, 2, 2, 6), c.NewTensor(ggml.TypeF32, 5, 5, 5, 4), 2, 1, 1, 1, 0, 0, 0, 1, 1, 1)
		}},
	}
	for _, o := range ops {
		for n := 2; n <= 2+o.tensors+1; n++ {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: n, NoAlloc: true})
			require.NoError(t, err)
			out := o.op(c)
			if n >= 2+o.tensors {
				require.NoError(t, out.Err(), "%s with room for %d tensors", o.name, n)
				require.Len(t, c.Tensors(), 2+o.tensors)
			} else {
				require.ErrorIs(t, out.Err(), ggml.ErrNoMemory, "%s with room for %d tensors", o.name, n)
			}
			c.Close()
		}
	}
}

func TestConvMisuse(t *testing.T) {
	f32 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF32, ne...) }
	f16 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF16, ne...) }
	tr := func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.Transpose(x) }
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		// im2col
		{"im2col i32 result", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2Col(f32(c, 3, 3, 2), f32(c, 8, 8, 2), 1, 1, 0, 0, 1, 1, true, ggml.TypeI32)
		}},
		{"im2col f16 result, f32 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2Col(f32(c, 3, 3, 2), f32(c, 8, 8, 2), 1, 1, 0, 0, 1, 1, true, ggml.TypeF16)
		}},
		{"im2col f16 input", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2Col(f32(c, 3, 3, 2), f16(c, 8, 8, 2), 1, 1, 0, 0, 1, 1, true, ggml.TypeF32)
		}},
		{"im2col 2-D channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2Col(f32(c, 3, 3, 2), f32(c, 8, 8, 3), 1, 1, 0, 0, 1, 1, true, ggml.TypeF32)
		}},
		{"im2col 1-D 4-D input", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2Col(f32(c, 3, 2), f32(c, 8, 2, 2, 2), 1, 0, 0, 0, 1, 0, false, ggml.TypeF32)
		}},
		{"im2col rows not adjacent", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			x := f32(c, 64)
			return c.Im2Col(f32(c, 3, 3), c.View2D(x, 8, 8, 4, 0), 1, 1, 0, 0, 1, 1, true, ggml.TypeF32) // overlapping rows
		}},
		{"im2col input transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2Col(f32(c, 3, 3), tr(c, f32(c, 8, 8)), 1, 1, 0, 0, 1, 1, true, ggml.TypeF32)
		}},
		{"im2col dilation 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2Col(f32(c, 3, 3), f32(c, 8, 8), 1, 1, 0, 0, 0, 1, true, ggml.TypeF32)
		}},
		{"im2col kernel taller than input", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2Col(f32(c, 3, 9), f32(c, 8, 8), 1, 1, 0, 0, 1, 1, true, ggml.TypeF32)
		}},
		// conv_1d
		{"conv_1d f32 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Conv1D(f32(c, 3, 2, 4), f32(c, 10, 2), 1, 0, 1) }},
		{"conv_1d f16 input", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Conv1D(f16(c, 3, 2, 4), f16(c, 10, 2), 1, 0, 1) }},
		{"conv_1d channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Conv1D(f16(c, 3, 2, 4), f32(c, 10, 3), 1, 0, 1) }},
		{"conv_1d stride 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Conv1D(f16(c, 3, 2, 4), f32(c, 10, 2), 0, 0, 1) }},
		{"conv_1d negative padding", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Conv1D(f16(c, 3, 2, 4), f32(c, 10, 2), 1, -1, 1) }},
		{"conv_1d padding overflows int", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv1D(f16(c, 3, 2, 4), f32(c, 10, 2), 1, math.MaxInt32, 1)
		}},
		{"conv_1d kernel longer than input", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Conv1D(f16(c, 5, 2, 4), f32(c, 4, 2), 2, 0, 1) }},
		{"conv_1d dilated kernel longer than input", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Conv1D(f16(c, 3, 2, 4), f32(c, 10, 2), 1, 0, 5) }},
		{"conv_1d kernel not contiguous", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			x := f16(c, 4, 2, 4)
			return c.Conv1D(c.View3D(x, 3, 2, 4, 8, 16, 0), f32(c, 10, 2), 1, 0, 1)
		}},
		{"conv_1d input transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Conv1D(f16(c, 3, 2, 1), tr(c, f32(c, 2, 10)), 1, 0, 1) }},
		// conv_1d_dw
		{"conv_1d_dw kernel [K, 2, C]", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Conv1DDW(f16(c, 3, 2, 4), f32(c, 10, 4), 1, 0, 1) }},
		{"conv_1d_dw batch", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Conv1DDW(f16(c, 3, 1, 4), f32(c, 10, 4, 2), 1, 0, 1) }},
		{"conv_1d_dw f32 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Conv1DDW(f32(c, 3, 1, 4), f32(c, 10, 4), 1, 0, 1) }},
		// conv_2d
		{"conv_2d bf16 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2D(c.NewTensor(ggml.TypeBF16, 3, 3, 2, 4), f32(c, 8, 8, 2), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d stride1 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2D(f32(c, 3, 3, 2, 4), f32(c, 8, 8, 2), 1, 0, 0, 0, 1, 1)
		}},
		{"conv_2d kernel taller than input", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2D(f32(c, 3, 9, 2, 4), f32(c, 8, 8, 2), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2D(f32(c, 3, 3, 3, 4), f32(c, 8, 8, 2), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d kernel transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2D(tr(c, f32(c, 3, 3)), f32(c, 8, 8), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d empty input", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2D(f32(c, 3, 3, 2, 4), f32(c, 8, 8, 2, 0), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d pool full", ggml.ErrNoMemory, func(c *ggml.Context) *ggml.Tensor {
			f32(c, 1)
			f32(c, 1)
			return c.Conv2D(f32(c, 3, 3, 2, 4), f32(c, 8, 8, 2), 1, 1, 0, 0, 1, 1) // 4 + 7 tensors > 8
		}},
		// conv_2d_dw
		{"conv_2d_dw f32 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDW(f32(c, 3, 3, 1, 2), f32(c, 8, 8, 2), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d_dw channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDW(f16(c, 3, 3, 1, 3), f32(c, 8, 8, 2), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d_dw input not contiguous", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDW(f16(c, 3, 3, 1, 1), tr(c, f32(c, 8, 8)), 1, 1, 0, 0, 1, 1)
		}},
		// conv_2d_direct
		{"conv_2d_direct kernel not contiguous", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDirect(tr(c, f32(c, 3, 3)), f32(c, 8, 8), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d_direct kernel larger than scratch", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDirect(f32(c, 64, 64, 1100), f32(c, 64, 64, 1100), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d_direct f16 input", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDirect(f32(c, 3, 3), f16(c, 8, 8), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d_direct q8_0 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDirect(c.NewTensor(ggml.TypeQ8_0, 32, 3), f32(c, 40, 8), 1, 1, 0, 0, 1, 1)
		}},
		// conv_2d_dw_direct
		{"conv_2d_dw_direct input permuted", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDWDirect(f32(c, 3, 3, 1, 8), c.Permute(f32(c, 8, 8, 8), 1, 2, 0, 3), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d_dw_direct channels-last input, contiguous kernel", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDWDirect(f32(c, 3, 3, 1, 4), c.Permute(f32(c, 4, 8, 8), 2, 0, 1, 3), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d_dw_direct f16 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDWDirect(f16(c, 3, 3, 1, 2), f32(c, 8, 8, 2), 1, 1, 0, 0, 1, 1)
		}},
		{"conv_2d_dw_direct kernel ne2", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv2DDWDirect(f32(c, 3, 3, 2, 2), f32(c, 8, 8, 2), 1, 1, 0, 0, 1, 1)
		}},
		// conv_transpose_1d
		{"conv_transpose_1d padding", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.ConvTranspose1D(f32(c, 3, 2, 4), f32(c, 10, 4), 1, 1, 1) }},
		{"conv_transpose_1d dilation", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.ConvTranspose1D(f32(c, 3, 2, 4), f32(c, 10, 4), 1, 0, 2) }},
		{"conv_transpose_1d bf16 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.ConvTranspose1D(c.NewTensor(ggml.TypeBF16, 3, 2, 4), f32(c, 10, 4), 1, 0, 1)
		}},
		{"conv_transpose_1d 3-D input", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.ConvTranspose1D(f32(c, 3, 2, 4), f32(c, 10, 4, 2), 1, 0, 1)
		}},
		{"conv_transpose_1d channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.ConvTranspose1D(f32(c, 3, 2, 4), f32(c, 10, 3), 1, 0, 1) }},
		{"conv_transpose_1d stride 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.ConvTranspose1D(f32(c, 3, 2, 4), f32(c, 10, 4), 0, 0, 1) }},
		{"conv_transpose_1d kernel transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.ConvTranspose1D(tr(c, f32(c, 2, 3)), f32(c, 10, 1), 1, 0, 1)
		}},
		// conv_transpose_2d
		{"conv_transpose_2d f32 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.ConvTranspose2D(f32(c, 3, 3, 2, 4), f32(c, 8, 8, 4), 2) }},
		{"conv_transpose_2d batch of overlapping elements", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// Channels share memory (nb2 = 0): a dense view of the last
			// item runs past the data, which ggml_view_3d asserts.
			b := c.View4D(f32(c, 8*8*4*2), 8, 8, 4, 2, 32, 0, 1792, 0)
			return c.ConvTranspose2D(f16(c, 3, 3, 2, 4), b, 2)
		}},
		{"conv_transpose_2d channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.ConvTranspose2D(f16(c, 3, 3, 2, 4), f32(c, 8, 8, 3), 2) }},
		{"conv_transpose_2d stride 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.ConvTranspose2D(f16(c, 3, 3, 2, 4), f32(c, 8, 8, 4), 0) }},
		{"conv_transpose_2d kernel rows apart", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.ConvTranspose2D(c.View4D(f16(c, 4, 3, 2, 4), 3, 3, 2, 4, 8, 24, 48, 0), f32(c, 8, 8, 4), 2)
		}},
		// 3-D
		{"conv_3d input channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv3D(f32(c, 2, 2, 2, 6), f32(c, 5, 5, 5, 2), 3, 1, 1, 1, 0, 0, 0, 1, 1, 1) // b.ne3 < ic: N would be 0
		}},
		{"conv_3d kernel channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv3D(f32(c, 2, 2, 2, 5), f32(c, 5, 5, 5, 6), 3, 1, 1, 1, 0, 0, 0, 1, 1, 1)
		}},
		{"conv_3d_direct kernel channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv3DDirect(f32(c, 2, 2, 2, 5), f32(c, 5, 5, 5, 6), 1, 1, 1, 0, 0, 0, 1, 1, 1, 3, 2, 2)
		}},
		{"conv_3d_direct batch 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Conv3DDirect(f32(c, 2, 2, 2, 6), f32(c, 5, 5, 5, 6), 1, 1, 1, 0, 0, 0, 1, 1, 1, 3, 0, 2)
		}},
		{"im2col_3d f16 result, f32 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2Col3D(f32(c, 2, 2, 2, 2), f32(c, 5, 5, 5, 2), 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, ggml.TypeF16)
		}},
		{"im2col_3d ic 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2Col3D(f32(c, 2, 2, 2, 2), f32(c, 5, 5, 5, 2), 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, ggml.TypeF32)
		}},
		// pooling
		{"pool_1d stride != window", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Pool1D(f32(c, 8), ggml.PoolMax, 2, 1, 0) }},
		{"pool_1d padding", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Pool1D(f32(c, 8), ggml.PoolAvg, 2, 2, 1) }},
		{"pool_1d i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Pool1D(c.NewTensor(ggml.TypeI32, 8), ggml.PoolMax, 2, 2, 0)
		}},
		{"pool_1d op count", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Pool1D(f32(c, 8), 2, 2, 2, 0) }},
		{"pool_1d window longer than rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Pool1D(f32(c, 3), ggml.PoolMax, 4, 4, 0) }},
		{"pool_2d transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Pool2D(tr(c, f32(c, 8, 6)), ggml.PoolMax, 2, 2, 2, 2, 0, 0)
		}},
		{"pool_2d window larger than input", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Pool2D(f32(c, 8, 6), ggml.PoolMax, 2, 9, 2, 2, 0, 1) }},
		{"pool_2d stride 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Pool2D(f32(c, 8, 6), ggml.PoolAvg, 2, 2, 0, 2, 0, 0) }},
		{"pool_2d_back af f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Pool2DBack(f32(c, 4, 3), f16(c, 8, 6), ggml.PoolMax, 2, 2, 2, 2, 0, 0)
		}},
		{"pool_2d_back grad shape", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Pool2DBack(f32(c, 4, 4), f32(c, 8, 6), ggml.PoolMax, 2, 2, 2, 2, 0, 0)
		}},
		{"im2col_back f16 kernel", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2ColBack(f32(c, 18, 6, 6), f16(c, 3, 3, 2), [4]int64{8, 8, 2, 1}, 1, 1, 0, 0, 1, 1, true)
		}},
		{"im2col_back stride 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2ColBack(f32(c, 18, 6, 6), f32(c, 3, 3, 2), [4]int64{8, 8, 2, 1}, 0, 1, 0, 0, 1, 1, true)
		}},
		{"im2col_back grad shape", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Im2ColBack(f32(c, 18, 6, 5), f32(c, 3, 3, 2), [4]int64{8, 8, 2, 1}, 1, 1, 0, 0, 1, 1, true)
		}},
		// interpolation
		{"upscale factor 1", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Upscale(f32(c, 4, 4), 1, ggml.ScaleNearest) }},
		{"upscale f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Upscale(f16(c, 4, 4), 2, ggml.ScaleNearest) }},
		{"interpolate mode 3", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Interpolate(f32(c, 4, 4), 8, 8, 1, 1, 3) }},
		{"interpolate antialias nearest", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Interpolate(f32(c, 4, 4), 2, 2, 1, 1, ggml.ScaleNearest|ggml.ScaleAntialias)
		}},
		{"interpolate unknown flag", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Interpolate(f32(c, 4, 4), 8, 8, 1, 1, 1<<12) }},
		{"interpolate size 0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Interpolate(f32(c, 4, 4), 8, 0, 1, 1, ggml.ScaleBilinear) }},
		{"interpolate from empty", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Interpolate(f32(c, 4, 0), 8, 8, 1, 1, ggml.ScaleBilinear) }},
		{"interpolate channels beyond float32 indices", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Interpolate(f32(c, 4, 4, 3), 4, 4, 1<<23, 1, ggml.ScaleBilinear)
		}},
		{"upscale_ext negative size", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.UpscaleExt(f32(c, 4, 4), -8, 8, 1, 1, ggml.ScaleNearest) }},
		// padding, embeddings
		{"pad_reflect_1d padding as long as rows", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.PadReflect1D(f32(c, 4, 2), 4, 0) }},
		{"pad_reflect_1d negative", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.PadReflect1D(f32(c, 4, 2), 0, -1) }},
		{"pad_reflect_1d f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.PadReflect1D(f16(c, 4, 2), 1, 1) }},
		{"pad_reflect_1d transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.PadReflect1D(tr(c, f32(c, 4, 4)), 1, 1) }},
		{"timestep_embedding f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.TimestepEmbedding(f16(c, 4), 8, 10000) }},
		{"timestep_embedding strided", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.TimestepEmbedding(tr(c, c.View2D(f32(c, 3, 4), 1, 4, 12, 0)), 8, 10000) // [4] with nb0 12
		}},
		{"timestep_embedding matrix", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.TimestepEmbedding(f32(c, 4, 2), 8, 10000) }},
		{"timestep_embedding max period 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.TimestepEmbedding(f32(c, 4), 8, 0) }},
		{"timestep_embedding dim 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.TimestepEmbedding(f32(c, 4), 0, 10000) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
			require.NoError(t, err)
			defer c.Close()
			out := tc.op(c)
			require.ErrorIs(t, out.Err(), tc.want)
			var ae *ggml.AssertError
			require.NotErrorAs(t, out.Err(), &ae, "the rule must be checked in Go, before ggml asserts")
			t.Log(out.Err())
		})
	}
	require.GreaterOrEqual(t, len(cases), 35)
}

// TestCol2Im1D checks Col2Im1D's scatter-add against a float64 sum, for f32
// and f16 columns, strides below, at and above the tap count, cropping.
func TestCol2Im1D(t *testing.T) {
	rng := newRNG(t)
	cases := []struct{ k, oc, tIn, s, p int }{
		{3, 2, 5, 1, 0},
		{4, 3, 4, 2, 1},
		{2, 1, 6, 3, 0}, // stride > taps: gaps of zeros
		{5, 2, 3, 2, 2},
		{4, 2, 0, 1, 1}, // no columns: zeros
	}
	for _, cs := range cases {
		for _, ty := range []ggml.Type{ggml.TypeF32, ggml.TypeF16} {
			t.Run(fmt.Sprintf("%+v/%v", cs, ty), func(t *testing.T) {
				e := newEnv(t)
				a := convInput(e, rng, ty, cs.k*cs.oc, cs.tIn)
				out := e.ctx.Col2Im1D(a.t, cs.s, cs.oc, cs.p)
				if !ggml.HaveUpstream {
					require.ErrorIs(t, out.Err(), ggml.ErrUnsupported)
					require.ErrorContains(t, out.Err(), "-tags ggml_system")
					return
				}
				require.NoError(t, out.Err())
				n := (cs.tIn-1)*cs.s + cs.k - 2*cs.p
				require.Equal(t, [4]int64{int64(n), int64(cs.oc), 1, 1}, out.Ne())
				require.Equal(t, ty, out.Type())
				res, tol := out, convTolF32
				if ty != ggml.TypeF32 {
					res, tol = e.ctx.Cast(out, ggml.TypeF32), convTolF16
				}
				e.compute(res)
				ref, mag := newND(n, cs.oc), newND(n, cs.oc)
				for c := range cs.oc {
					for ti := range cs.tIn {
						for j := range cs.k {
							if i := ti*cs.s + j - cs.p; i >= 0 && i < n {
								v := a.v.at(c*cs.k+j, ti, 0, 0)
								ref.v[ref.idx(i, c, 0, 0)] += v
								mag.v[mag.idx(i, c, 0, 0)] += math.Abs(v)
							}
						}
					}
				}
				requireClose(t, ref, convData(t, res), convTol(mag, tol))
			})
		}
	}
}

// TestCol2Im1DMisuse checks Col2Im1D's rules by error kind.
func TestCol2Im1DMisuse(t *testing.T) {
	build := func(t *testing.T, ty ggml.Type, ne []int64, s0, oc, p0 int, view bool) error {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
		require.NoError(t, err)
		defer c.Close()
		a := c.NewTensor(ty, ne...)
		if view {
			a = c.Transpose(a)
		}
		return c.Col2Im1D(a, s0, oc, p0).Err()
	}
	if !ggml.HaveUpstream {
		require.ErrorIs(t, build(t, ggml.TypeF32, []int64{6, 4}, 1, 2, 0, false), ggml.ErrUnsupported)
		return
	}
	require.NoError(t, build(t, ggml.TypeF32, []int64{6, 4}, 1, 2, 0, false))
	require.NoError(t, build(t, ggml.TypeBF16, []int64{6, 4}, 1, 2, 0, false))
	for _, c := range []struct {
		name       string
		want       error
		ty         ggml.Type
		ne         []int64
		s0, oc, p0 int
		view       bool
	}{
		{"i32", ggml.ErrType, ggml.TypeI32, []int64{6, 4}, 1, 2, 0, false},
		{"q8_0", ggml.ErrType, ggml.TypeQ8_0, []int64{64, 4}, 1, 2, 0, false},
		{"stride 0", ggml.ErrInvalid, ggml.TypeF32, []int64{6, 4}, 0, 2, 0, false},
		{"stride past int32", ggml.ErrInvalid, ggml.TypeF32, []int64{6, 4}, math.MaxInt32 + 1, 2, 0, false},
		{"oc 0", ggml.ErrInvalid, ggml.TypeF32, []int64{6, 4}, 1, 0, 0, false},
		{"negative padding", ggml.ErrInvalid, ggml.TypeF32, []int64{6, 4}, 1, 2, -1, false},
		{"3-d", ggml.ErrShape, ggml.TypeF32, []int64{6, 4, 2}, 1, 2, 0, false},
		{"not contiguous", ggml.ErrShape, ggml.TypeF32, []int64{4, 6}, 1, 2, 0, true},
		{"rows not a multiple of oc", ggml.ErrShape, ggml.TypeF32, []int64{7, 4}, 1, 2, 0, false},
		{"fewer rows than oc", ggml.ErrShape, ggml.TypeF32, []int64{1, 4}, 1, 2, 0, false},
		{"cropped to nothing", ggml.ErrShape, ggml.TypeF32, []int64{6, 2}, 1, 2, 2, false},
		{"length overflows", ggml.ErrShape, ggml.TypeF32, []int64{2, 1 << 40}, math.MaxInt32, 1, 0, false},
	} {
		require.ErrorIs(t, build(t, c.ty, c.ne, c.s0, c.oc, c.p0, c.view), c.want, c.name)
	}
}
