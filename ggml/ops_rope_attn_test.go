package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/require"
)

// ropeRef is RoPE in float64, as ggml defines it with ext_factor 0: pair i
// of the first dims dimensions turns by p·base^(-2i/dims)·scale/ff[i], and
// sin and cos are scaled by attn.
func ropeRef(x []float64, n0, n1, n2 int, pos []int32, dims int, neox bool, base, scale, attn float64, ff []float32) []float64 {
	out := append([]float64(nil), x...)
	for i2 := range n2 {
		for i1 := range n1 {
			row := out[(i2*n1+i1)*n0:][:n0]
			src := x[(i2*n1+i1)*n0:][:n0]
			for i := 0; i < dims/2; i++ {
				theta := float64(pos[i2]) * math.Pow(base, -2*float64(i)/float64(dims)) * scale
				if ff != nil {
					theta /= float64(ff[i])
				}
				cs, sn := math.Cos(theta)*attn, math.Sin(theta)*attn
				j0, j1 := 2*i, 2*i+1
				if neox {
					j0, j1 = i, i+dims/2
				}
				row[j0] = src[j0]*cs - src[j1]*sn
				row[j1] = src[j0]*sn + src[j1]*cs
			}
		}
	}
	return out
}

func TestRope(t *testing.T) {
	rng := newRNG(t)
	const n0, n1, n2 = 16, 3, 5 // head dim, heads, tokens
	for _, mode := range []ggml.RopeMode{ggml.RopeNormal, ggml.RopeNeoX} {
		for _, withFF := range []bool{false, true} {
			t.Run(fmt.Sprintf("mode=%d/ff=%v", mode, withFF), func(t *testing.T) {
				e := newEnv(t)
				xv := randF32(rng, n0*n1*n2)
				pos := make([]int32, n2)
				for i := range pos {
					pos[i] = int32(rng.IntN(200))
				}
				a := e.input(ggml.TypeF32, xv, n0, n1, n2)
				p := e.input(ggml.TypeI32, pos, n2)
				params := ggml.RopeParams{Dims: 12, Mode: mode, CtxOrig: 4096, FreqBase: 10000, FreqScale: 0.5,
					AttnFactor: 1.25, BetaFast: 32, BetaSlow: 1}
				var ff []float32
				if withFF {
					ff = make([]float32, 6)
					for i := range ff {
						ff[i] = float32(1 + rng.Float64())
					}
					params.FreqFactors = e.input(ggml.TypeF32, ff, 6)
				}
				out := e.ctx.Rope(a, p, params)
				e.compute(out)
				got, err := ggml.Data[float32](out)
				require.NoError(t, err)
				xs := make([]float64, len(xv))
				for i, v := range xv {
					xs[i] = float64(v)
				}
				ref := newND(n0, n1, n2)
				ref.v = ropeRef(xs, n0, n1, n2, pos, 12, mode == ggml.RopeNeoX, 10000, 0.5, 1.25, ff)
				// Angles up to ~100 rad in f32: cos/sin good to ~1e-5.
				requireClose(t, ref, got, func(int) float64 { return 2e-5 })
			})
		}
	}
}

// mropeRef is multi-section RoPE in float64 (ext_factor 0, attn 1, scale
// 1): pair k of a row takes its angle from the position component of its
// section, component pos[s·n2 + token]; the frequency exponent counts pairs
// from the row's start, or, for RopeVision, from the start of the section.
func mropeRef(x []float64, n0, n1, n2 int, pos []int32, dims int, mode ggml.RopeMode, sec [4]int, base float64) []float64 {
	out := append([]float64(nil), x...)
	sd := sec[0] + sec[1] + sec[2] + sec[3]
	pairs, off := dims/2, dims/2
	if mode == ggml.RopeVision {
		pairs, off = n0/2, dims
	}
	// component of sector s.
	comp := func(s int) int {
		if mode == ggml.RopeIMRope {
			switch {
			case s%3 == 1 && s < 1+3*sec[1]:
				return 1
			case s%3 == 2 && s < 2+3*sec[2]:
				return 2
			}
			return 0
		}
		switch {
		case s < sec[0]:
			return 0
		case s < sec[0]+sec[1]:
			return 1
		case s < sec[0]+sec[1]+sec[2]:
			return 2
		}
		return 3
	}
	starts := [4]int{0, sec[0], sec[0] + sec[1], sec[0] + sec[1] + sec[2]}
	for i2 := range n2 {
		for k := range pairs {
			s := k % sd
			cp := comp(s)
			exp := k
			if mode == ggml.RopeVision { // restart at the last start of this section
				exp = k - (k-starts[cp])/sd*sd - starts[cp]
				if k < starts[cp] {
					exp = k
				}
			}
			theta := float64(pos[cp*n2+i2]) * math.Pow(base, -2*float64(exp)/float64(dims))
			cs, sn := math.Cos(theta), math.Sin(theta)
			for i1 := range n1 {
				row := out[(i2*n1+i1)*n0:][:n0]
				src := x[(i2*n1+i1)*n0:][:n0]
				j0, j1 := k, k+off
				row[j0] = src[j0]*cs - src[j1]*sn
				row[j1] = src[j0]*sn + src[j1]*cs
			}
		}
	}
	return out
}

func TestRopeMulti(t *testing.T) {
	rng := newRNG(t)
	const n0, n1, n2 = 16, 2, 4
	for _, tc := range []struct {
		mode ggml.RopeMode
		dims int
		sec  [4]int
	}{
		{ggml.RopeMRope, 12, [4]int{2, 2, 2, 0}},
		{ggml.RopeMRope, 16, [4]int{3, 2, 2, 1}},
		{ggml.RopeIMRope, 16, [4]int{3, 3, 2, 0}},
		{ggml.RopeVision, 8, [4]int{2, 2, 0, 0}},
	} {
		t.Run(fmt.Sprintf("mode=%d/sec=%v", tc.mode, tc.sec), func(t *testing.T) {
			e := newEnv(t)
			xv := randF32(rng, n0*n1*n2)
			pos := make([]int32, 4*n2)
			for i := range pos {
				pos[i] = int32(rng.IntN(100))
			}
			a := e.input(ggml.TypeF32, xv, n0, n1, n2)
			p := e.input(ggml.TypeI32, pos, 4*n2)
			out := e.ctx.Rope(a, p, ggml.RopeParams{Dims: tc.dims, Mode: tc.mode, Sections: tc.sec, CtxOrig: 4096,
				FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1})
			inPlace := e.ctx.RopeInPlace(e.ctx.Cont(a), p, ggml.RopeParams{Dims: tc.dims, Mode: tc.mode, Sections: tc.sec,
				CtxOrig: 4096, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1})
			e.compute(out, inPlace)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			gotIn, err := ggml.Data[float32](inPlace)
			require.NoError(t, err)
			require.Equal(t, got, gotIn)
			xs := make([]float64, len(xv))
			for i, v := range xv {
				xs[i] = float64(v)
			}
			ref := newND(n0, n1, n2)
			ref.v = mropeRef(xs, n0, n1, n2, pos, tc.dims, tc.mode, tc.sec, 10000)
			requireClose(t, ref, got, func(int) float64 { return 2e-5 })
		})
	}
}

// alibiSlope is ALiBi's slope for head h of nHead with maxBias.
func alibiSlope(h, nHead int, maxBias float64) float64 {
	if maxBias <= 0 {
		return 1
	}
	n2 := 1 << int(math.Floor(math.Log2(float64(nHead))))
	m0 := math.Pow(2, -maxBias/float64(n2))
	m1 := math.Pow(2, -(maxBias/2)/float64(n2))
	if h < n2 {
		return math.Pow(m0, float64(h+1))
	}
	return math.Pow(m1, float64(2*(h-n2)+1))
}

// attnRef is attention in float64: out[:, h, n, b] = Σ_j softmax_j(s_j)
// v[:, j, h/rv, b] with s_j = softcap(scale·q[:, n, h, b]·k[:, j, h/rk, b]) +
// slope_h·mask[j, n, h%mh, b%mb]; a sink adds exp(sink_h) to the
// denominator.
func attnRef(q, k, v nd, mask *nd, sinks []float64, scale, maxBias, softcap float64) nd {
	D, N, H, B := q.ne[0], q.ne[1], q.ne[2], q.ne[3]
	KV, Hk := k.ne[1], k.ne[2]
	Dv, Hv := v.ne[0], v.ne[2]
	out := newND(Dv, H, N, B)
	for b := range B {
		for h := range H {
			slope := alibiSlope(h, H, maxBias)
			for n := range N {
				s := make([]float64, KV)
				m := math.Inf(-1)
				for j := range KV {
					dot := 0.0
					for d := range D {
						dot += q.at(d, n, h, b) * k.at(d, j, h/(H/Hk), b)
					}
					x := dot * scale
					if softcap > 0 {
						x = softcap * math.Tanh(x/softcap)
					}
					if mask != nil {
						x += slope * mask.at(j, n, h%mask.ne[2], b%mask.ne[3])
					}
					s[j] = x
					m = math.Max(m, x)
				}
				if sinks != nil {
					m = math.Max(m, sinks[h])
				}
				den := 0.0
				for j := range KV {
					if !math.IsInf(s[j], -1) {
						s[j] = math.Exp(s[j] - m)
					} else {
						s[j] = 0
					}
					den += s[j]
				}
				if sinks != nil {
					den += math.Exp(sinks[h] - m)
				}
				for d := range Dv {
					acc := 0.0
					for j := range KV {
						acc += s[j] * v.at(d, j, h/(H/Hv), b)
					}
					if den > 0 {
						acc /= den
					}
					out.v[out.idx(d, h, n, b)] = acc
				}
			}
		}
	}
	return out
}

func TestFlashAttnExt(t *testing.T) {
	rng := newRNG(t)
	for _, tc := range []struct {
		name            string
		kvType          ggml.Type
		D, Dv, N, KV, H int
		Hk, B           int
		mask, sinks     bool
		maxBias, cap    float64
	}{
		{"f32 plain", ggml.TypeF32, 16, 16, 3, 7, 2, 2, 1, false, false, 0, 0},
		{"f32 gqa mask", ggml.TypeF32, 8, 12, 4, 9, 4, 2, 2, true, false, 0, 0},
		{"f32 alibi softcap sinks", ggml.TypeF32, 8, 8, 2, 5, 3, 1, 1, true, true, 8, 20},
		{"f16 mask", ggml.TypeF16, 32, 32, 5, 11, 2, 1, 1, true, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			qv := randF32(rng, tc.D*tc.N*tc.H*tc.B)
			kv := randF32(rng, tc.D*tc.KV*tc.Hk*tc.B)
			vv := randF32(rng, tc.Dv*tc.KV*tc.Hk*tc.B)
			q := e.input(ggml.TypeF32, qv, int64(tc.D), int64(tc.N), int64(tc.H), int64(tc.B))
			Q := fromF32(qv, tc.D, tc.N, tc.H, tc.B)
			K := fromF32(kv, tc.D, tc.KV, tc.Hk, tc.B)
			V := fromF32(vv, tc.Dv, tc.KV, tc.Hk, tc.B)
			var k, v *ggml.Tensor
			if tc.kvType == ggml.TypeF16 {
				k = e.input(ggml.TypeF16, toF16(kv), int64(tc.D), int64(tc.KV), int64(tc.Hk), int64(tc.B))
				v = e.input(ggml.TypeF16, toF16(vv), int64(tc.Dv), int64(tc.KV), int64(tc.Hk), int64(tc.B))
				// ggml rounds k and v to f16 on input, and q to f16 for the dot product.
				K.v, V.v = fromF16Slice(toF16(kv)), fromF16Slice(toF16(vv))
				Q.v = fromF16Slice(toF16(qv))
			} else {
				k = e.input(ggml.TypeF32, kv, int64(tc.D), int64(tc.KV), int64(tc.Hk), int64(tc.B))
				v = e.input(ggml.TypeF32, vv, int64(tc.Dv), int64(tc.KV), int64(tc.Hk), int64(tc.B))
			}
			var mask *ggml.Tensor
			var M *nd
			if tc.mask {
				// A causal-style mask with random -Inf holes, padded rows, one per batch.
				mr := tc.N + 2
				mv := make([]float32, tc.KV*mr*tc.B)
				for i := range mv {
					if rng.IntN(4) == 0 {
						mv[i] = float32(math.Inf(-1))
					} else {
						mv[i] = float32(rng.NormFloat64())
					}
				}
				mh := toF16(mv)
				mask = e.input(ggml.TypeF16, mh, int64(tc.KV), int64(mr), 1, int64(tc.B))
				m := fromF32(mv, tc.KV, mr, 1, tc.B)
				m.v = fromF16Slice(mh)
				M = &m
			}
			scale := 1 / math.Sqrt(float64(tc.D))
			p := ggml.FlashAttnParams{Scale: float32(scale), MaxBias: float32(tc.maxBias), LogitSoftcap: float32(tc.cap), Precision: ggml.PrecF32}
			var sinks []float64
			if tc.sinks {
				sv := randF32(rng, tc.H)
				p.Sinks = e.input(ggml.TypeF32, sv, int64(tc.H))
				for _, x := range sv {
					sinks = append(sinks, float64(x))
				}
			}
			out := e.ctx.FlashAttnExt(q, k, v, mask, p)
			require.Equal(t, []int64{int64(tc.Dv), int64(tc.H), int64(tc.N), int64(tc.B)}, padShape(out.Shape()))
			e.compute(out)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			ref := attnRef(Q, K, V, M, sinks, float64(float32(scale)), tc.maxBias, tc.cap)
			tol := 2e-5
			if tc.kvType == ggml.TypeF16 {
				// v accumulates in an f16 vector: each of KV updates rounds to
				// 2^-11 relative, on values bounded by max|v|.
				tol = float64(tc.KV) * 4 * math.Pow(2, -11)
			}
			requireClose(t, ref, got, func(int) float64 { return tol })
		})
	}
}

// padShape pads a Shape to four dimensions.
func padShape(s []int64) []int64 {
	for len(s) < 4 {
		s = append(s, 1)
	}
	return s
}

func TestFlashAttnMisuse(t *testing.T) {
	f32 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF32, ne...) }
	f16 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF16, ne...) }
	fa := func(c *ggml.Context, q, k, v, m *ggml.Tensor) *ggml.Tensor {
		return c.FlashAttnExt(q, k, v, m, ggml.FlashAttnParams{Scale: 1})
	}
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		{"q f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f16(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), nil)
		}},
		{"k i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 2), c.NewTensor(ggml.TypeI32, 8, 4, 2), f16(c, 8, 4, 2), nil)
		}},
		{"v i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 2), f16(c, 8, 4, 2), c.NewTensor(ggml.TypeI32, 8, 4, 2), nil)
		}},
		{"head dim", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 2), f16(c, 4, 4, 2), f16(c, 8, 4, 2), nil)
		}},
		{"v rows != k rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 3, 2), nil)
		}},
		{"heads not a multiple of k's", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 3), f16(c, 8, 4, 2), f16(c, 8, 4, 2), nil)
		}},
		{"heads not a multiple of v's", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 4), f16(c, 8, 4, 2), f16(c, 8, 4, 3), nil)
		}},
		{"batch", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 2, 2), f16(c, 8, 4, 2, 1), f16(c, 8, 4, 2, 1), nil)
		}},
		{"q transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, c.Transpose(f32(c, 2, 8)), f16(c, 8, 4), f16(c, 8, 4), nil)
		}},
		{"mask f32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), f32(c, 4, 2))
		}},
		{"mask too few keys", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), f16(c, 3, 2))
		}},
		{"mask too few queries", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), f16(c, 4, 1))
		}},
		{"mask heads", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), f16(c, 4, 2, 3))
		}},
		{"mask not contiguous", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return fa(c, f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), c.Transpose(f16(c, 2, 4)))
		}},
		{"max_bias without mask", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.FlashAttnExt(f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), nil, ggml.FlashAttnParams{Scale: 1, MaxBias: 8})
		}},
		{"precision", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.FlashAttnExt(f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), nil, ggml.FlashAttnParams{Scale: 1, Precision: 3})
		}},
		{"sinks per head", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.FlashAttnExt(f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), nil, ggml.FlashAttnParams{Scale: 1, Sinks: f32(c, 3)})
		}},
		{"sinks f16", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.FlashAttnExt(f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), nil, ggml.FlashAttnParams{Scale: 1, Sinks: f16(c, 2)})
		}},
		{"negative softcap", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.FlashAttnExt(f32(c, 8, 2, 2), f16(c, 8, 4, 2), f16(c, 8, 4, 2), nil, ggml.FlashAttnParams{Scale: 1, LogitSoftcap: -1})
		}},
		{"mul_mat precision", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.MulMatPrec(f32(c, 4, 2), f32(c, 4, 3), 7) }},
		{"rope odd ne0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(f32(c, 5, 2, 3), c.NewTensor(ggml.TypeI32, 3), ggml.RopeParams{Dims: 2, FreqBase: 1e4, FreqScale: 1})
		}},
		{"rope multi positions", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(f32(c, 8, 2, 3), c.NewTensor(ggml.TypeI32, 3), ggml.RopeParams{Dims: 8, Mode: ggml.RopeMRope, Sections: [4]int{2, 2, 0, 0}})
		}},
		{"rope multi no sections", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(f32(c, 8, 2, 3), c.NewTensor(ggml.TypeI32, 12), ggml.RopeParams{Dims: 8, Mode: ggml.RopeMRope, Sections: [4]int{0, 0, 0, 3}})
		}},
		{"rope multi negative section", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(f32(c, 8, 2, 3), c.NewTensor(ggml.TypeI32, 12), ggml.RopeParams{Dims: 8, Mode: ggml.RopeMRope, Sections: [4]int{4, -2, 0, 0}})
		}},
		{"rope multi sections > ne0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(f32(c, 8, 2, 3), c.NewTensor(ggml.TypeI32, 12), ggml.RopeParams{Dims: 8, Mode: ggml.RopeMRope, Sections: [4]int{4, 4, 4, 0}})
		}},
		{"rope vision dims", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(f32(c, 8, 2, 3), c.NewTensor(ggml.TypeI32, 12), ggml.RopeParams{Dims: 8, Mode: ggml.RopeVision, Sections: [4]int{2, 2, 0, 0}})
		}},
		{"rope sections in normal mode", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(f32(c, 8, 2, 3), c.NewTensor(ggml.TypeI32, 3), ggml.RopeParams{Dims: 8, Sections: [4]int{2, 2, 0, 0}})
		}},
		{"rope in place transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.RopeInPlace(c.Transpose(f32(c, 3, 8)), c.NewTensor(ggml.TypeI32, 1), ggml.RopeParams{Dims: 2})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
			require.NoError(t, err)
			defer c.Close()
			r := tc.op(c)
			require.ErrorIs(t, r.Err(), tc.want, fmt.Sprint(r.Err()))
		})
	}
}

func TestWinPartUnpart(t *testing.T) {
	rng := newRNG(t)
	for _, sh := range []struct{ C, W, H, w int }{{3, 5, 4, 3}, {2, 6, 4, 2}, {4, 3, 2, 5}, {1, 7, 1, 7}} {
		t.Run(fmt.Sprintf("%+v", sh), func(t *testing.T) {
			e := newEnv(t)
			xv := randF32(rng, sh.C*sh.W*sh.H)
			x := e.input(ggml.TypeF32, xv, int64(sh.C), int64(sh.W), int64(sh.H))
			part := e.ctx.WinPart(x, sh.w)
			back := e.ctx.WinUnpart(part, sh.W, sh.H, sh.w)
			require.NoError(t, back.Err())
			e.compute(part, back)
			nx, ny := (sh.W+sh.w-1)/sh.w, (sh.H+sh.w-1)/sh.w
			gotPart := seqOutF32(t, part, int64(sh.C), int64(sh.w), int64(sh.w), int64(nx*ny))
			X := fromF32(xv, sh.C, sh.W, sh.H)
			ref := newND(sh.C, sh.w, sh.w, nx*ny)
			ref.each(func(c, i1, i2, win int) {
				px, py := win%nx, win/nx
				if x, y := px*sh.w+i1, py*sh.w+i2; x < sh.W && y < sh.H {
					ref.v[ref.idx(c, i1, i2, win)] = X.at(c, x, y, 0)
				}
			})
			requireClose(t, ref, gotPart, func(int) float64 { return 0 })
			requireClose(t, X, seqOutF32(t, back, int64(sh.C), int64(sh.W), int64(sh.H)), func(int) float64 { return 0 })
		})
	}
}

func TestRelPos(t *testing.T) {
	rng := newRNG(t)
	t.Run("get", func(t *testing.T) {
		e := newEnv(t)
		const c, n = 4, 3
		av := toF16(randF32(rng, c*(2*n-1)))
		a := e.input(ggml.TypeF16, av, c, 2*n-1)
		out := e.ctx.GetRelPos(a, n, n)
		require.NoError(t, out.Err())
		e.compute(out)
		require.Equal(t, [4]int64{c, n, n, 1}, out.Ne())
		require.Equal(t, ggml.TypeF16, out.Type())
		got, err := ggml.Data[uint16](out)
		require.NoError(t, err)
		for q := range n {
			for k := range n {
				for i := range c {
					require.Equal(t, av[(n-1-k+q)*c+i], got[(q*n+k)*c+i], "[%d %d %d]", i, k, q)
				}
			}
		}
	})
	t.Run("add", func(t *testing.T) {
		e := newEnv(t)
		const W, P1, P2, R2 = 3, 2, 2, 2
		av, pwv, phv := randF32(rng, W*W*P1*P2*R2), randF32(rng, W*P1*P2*R2), randF32(rng, W*P1*P2*R2)
		a := e.input(ggml.TypeF32, av, W*W, P1*P2, R2)
		pw := e.input(ggml.TypeF32, pwv, W, P1, P2, R2)
		ph := e.input(ggml.TypeF32, phv, W, P1, P2, R2)
		out := e.ctx.AddRelPos(a, pw, ph)
		require.NoError(t, out.Err())
		e.compute(out)
		got := seqOutF32(t, out, W*W, P1*P2, R2)
		ref, mag := newND(W*W, P1*P2*R2), newND(W*W, P1*P2*R2)
		ref.each(func(xy, r, _, _ int) {
			x, y := xy%W, xy/W
			terms := []float64{float64(av[r*W*W+xy]), float64(pwv[r*W+x]), float64(phv[r*W+y])}
			ref.v[ref.idx(xy, r, 0, 0)] = terms[0] + terms[1] + terms[2]
			mag.v[mag.idx(xy, r, 0, 0)] = math.Abs(terms[0]) + math.Abs(terms[1]) + math.Abs(terms[2])
		})
		requireClose(t, ref, got, seqMagTol(mag, 3*seqU, 0))
	})
}

// TestLightningIndexer checks the indexer's scores against a float64 sum
// of ReLU'd dot products, for k of f32, f16 and q8_0 and masks broadcast
// over streams.
func TestLightningIndexer(t *testing.T) {
	rng := newRNG(t)
	cases := []struct {
		d, nHead, nTok, nKV, nStream, nMask int
		kt                                  ggml.Type
	}{
		{8, 3, 2, 5, 1, 1, ggml.TypeF32},
		{32, 2, 3, 4, 2, 1, ggml.TypeF16},
		{64, 4, 2, 3, 4, 2, ggml.TypeQ8_0},
		{16, 1, 1, 7, 3, 3, ggml.TypeF32},
	}
	for _, cs := range cases {
		t.Run(fmt.Sprintf("%+v", cs), func(t *testing.T) {
			e := newEnv(t)
			qv := randF32(rng, cs.d*cs.nHead*cs.nTok*cs.nStream)
			q := e.input(ggml.TypeF32, qv, int64(cs.d), int64(cs.nHead), int64(cs.nTok), int64(cs.nStream))
			var kref []float32 // k's values as ggml reads them
			var k *ggml.Tensor
			kne := []int64{int64(cs.d), 1, int64(cs.nKV), int64(cs.nStream)}
			switch cs.kt {
			case ggml.TypeF32:
				kref = randF32(rng, cs.d*cs.nKV*cs.nStream)
				k = e.input(ggml.TypeF32, kref, kne...)
			case ggml.TypeF16:
				h := toF16(randF32(rng, cs.d*cs.nKV*cs.nStream))
				for _, x := range fromF16Slice(h) {
					kref = append(kref, float32(x))
				}
				k = e.input(ggml.TypeF16, h, kne...)
			default:
				var raw []byte
				raw, kref = seqWeights(t, rng, cs.kt, cs.d, cs.nKV*cs.nStream)
				k = e.seqRaw(cs.kt, raw, kne...)
			}
			wv := randF32(rng, cs.nHead*cs.nTok*cs.nStream)
			w := e.input(ggml.TypeF32, wv, int64(cs.nHead), int64(cs.nTok), 1, int64(cs.nStream))
			mh := toF16(randF32(rng, cs.nKV*cs.nTok*cs.nMask))
			mh[0] = f32ToF16(float32(math.Inf(-1))) // a masked key
			mask := e.input(ggml.TypeF16, mh, int64(cs.nKV), int64(cs.nTok), 1, int64(cs.nMask))
			out := e.ctx.LightningIndexer(q, k, w, mask)
			if !ggml.HaveUpstream {
				require.ErrorIs(t, out.Err(), ggml.ErrUnsupported)
				require.ErrorContains(t, out.Err(), "-tags ggml_system")
				return
			}
			require.NoError(t, out.Err())
			require.Equal(t, [4]int64{int64(cs.nKV), int64(cs.nTok), 1, int64(cs.nStream)}, out.Ne())
			e.compute(out)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			ref, mag := newND(cs.nKV, cs.nTok, 1, cs.nStream), newND(cs.nKV, cs.nTok, 1, cs.nStream)
			ref.each(func(j, tok, _, s int) {
				var sum, sm float64
				for h := range cs.nHead {
					var dot, dm float64
					for i := range cs.d {
						p := float64(qv[((s*cs.nTok+tok)*cs.nHead+h)*cs.d+i]) * float64(kref[(s*cs.nKV+j)*cs.d+i])
						dot += p
						dm += math.Abs(p)
					}
					wt := float64(wv[(s*cs.nTok+tok)*cs.nHead+h])
					sum += max(dot, 0) * wt
					sm += dm * math.Abs(wt)
				}
				m := f16ToF64(mh[((s%cs.nMask)*cs.nTok+tok)*cs.nKV+j])
				ref.v[ref.idx(j, tok, 0, s)] = sum + m
				mag.v[mag.idx(j, tok, 0, s)] = sm + math.Abs(sum+m)
			})
			for i, r := range ref.v { // a masked key scores -Inf exactly
				if math.IsInf(r, -1) {
					require.True(t, math.IsInf(float64(got[i]), -1), "element %d: got %g", i, got[i])
					ref.v[i], got[i], mag.v[i] = 0, 0, 0
				}
			}
			requireClose(t, ref, got, seqMagTol(mag, float64(2*cs.d+cs.nHead)*seqU, 1e-6))
		})
	}
}

// TestLightningIndexerMisuse checks LightningIndexer's rules by error kind.
func TestLightningIndexerMisuse(t *testing.T) {
	type in struct {
		qt, kt, wt, mt ggml.Type
		q, k, w, m     []int64
	}
	good := func() in {
		return in{ggml.TypeF32, ggml.TypeF32, ggml.TypeF32, ggml.TypeF16,
			[]int64{8, 2, 3, 2}, []int64{8, 1, 5, 2}, []int64{2, 3, 1, 2}, []int64{5, 3, 1, 1}}
	}
	build := func(t *testing.T, x in) error {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
		require.NoError(t, err)
		defer c.Close()
		return c.LightningIndexer(c.NewTensor(x.qt, x.q...), c.NewTensor(x.kt, x.k...), c.NewTensor(x.wt, x.w...), c.NewTensor(x.mt, x.m...)).Err()
	}
	if !ggml.HaveUpstream {
		require.ErrorIs(t, build(t, good()), ggml.ErrUnsupported)
		return
	}
	require.NoError(t, build(t, good()))
	for name, c := range map[string]struct {
		want error
		edit func(*in)
	}{
		"q f16":           {ggml.ErrType, func(x *in) { x.qt = ggml.TypeF16 }},
		"mask f32":        {ggml.ErrType, func(x *in) { x.mt = ggml.TypeF32 }},
		"k q8_K":          {ggml.ErrType, func(x *in) { x.kt, x.q, x.k = ggml.TypeQ8_K, []int64{256, 2, 3, 2}, []int64{256, 1, 5, 2} }},
		"k's d":           {ggml.ErrShape, func(x *in) { x.k = []int64{4, 1, 5, 2} }},
		"k's heads":       {ggml.ErrShape, func(x *in) { x.k = []int64{8, 2, 5, 2} }},
		"k's streams":     {ggml.ErrShape, func(x *in) { x.k = []int64{8, 1, 5, 1} }},
		"weights' heads":  {ggml.ErrShape, func(x *in) { x.w = []int64{3, 3, 1, 2} }},
		"mask's keys":     {ggml.ErrShape, func(x *in) { x.m = []int64{4, 3, 1, 1} }},
		"mask's tokens":   {ggml.ErrShape, func(x *in) { x.m = []int64{5, 2, 1, 1} }},
		"mask's streams":  {ggml.ErrShape, func(x *in) { x.m = []int64{5, 3, 1, 3} }},
		"no mask streams": {ggml.ErrShape, func(x *in) { x.m = []int64{5, 3, 1, 0} }},
		"huge d": {ggml.ErrShape, func(x *in) {
			x.q, x.k = []int64{1 << 32, 1, 1, 1}, []int64{1 << 32, 1, 5, 1}
			x.w, x.m = []int64{1, 1, 1, 1}, []int64{5, 1, 1, 1}
		}},
	} {
		x := good()
		c.edit(&x)
		require.ErrorIs(t, build(t, x), c.want, name)
	}
}

// cpuRound returns x (rows of n) rounded to typ and back by the CPU
// backend's own quantizer, a Cpy to typ: the row quantizer the CPU's
// kernels use for their dot products. It is not ggml.Quantize's reference
// quantizer: x86's q8_0 multiplies by 127/amax where the reference
// multiplies by 1/(amax/127), and the two round a value that sits within
// an ulp of a half differently.
func cpuRound(t *testing.T, typ ggml.Type, x []float32, n int64) []float32 {
	t.Helper()
	e := newEnv(t)
	rows := int64(len(x)) / n
	src := e.input(ggml.TypeF32, x, n, rows)
	q := e.ctx.Cpy(src, e.ctx.NewTensor(typ, n, rows))
	e.compute(q)
	b, err := ggml.Bytes(q)
	require.NoError(t, err)
	out, err := ggml.Dequantize(typ, b)
	require.NoError(t, err)
	return out
}

// TestFlashAttnExtBatches checks FlashAttnExt on batches of queries over
// f16 K and V, the form of a prompt's attention, which the embedded
// build runs in its own tiled kernel where the CPU has AVX-512
// (internal/provider/embedded/cpu/fattn.c): head sizes of 64 (its
// unrolled path) and 32 and 128, caches of whole and partial blocks of 64
// cells, grouped-query heads, a causal mask (whole blocks hidden) with
// -Inf holes and finite values, and none. The tiled kernel keeps queries
// and sums in f32, so its bound is tight; the provider's kernel rounds
// queries to f16 and sums V in f16, so its bound is that of
// TestFlashAttnExt. K and V of q8_0 and q4_0 (a quantized KV cache) are
// held to the reference over their dequantized values: the tiled kernel
// dequantizes them and keeps the queries in f32; the provider rounds the
// queries to q8_0 and sums V in f32. Gemma 2's soft cap on the scores
// too.
func TestFlashAttnExtBatches(t *testing.T) {
	rng := newRNG(t)
	own := ggml.OwnAVX512Kernels()
	t.Logf("go-ggml's tiled kernel: %v", own)
	for _, tc := range []struct {
		D, N, KV, H, Hk, B int
		mask               bool
		typ                ggml.Type // of K and V
		cap                float64   // the soft cap, or 0
		// seqs > 0: the queries are tokens of that many sequences (query
		// i of sequence i % seqs), the cells pages of 64 taken in turn
		// (cell j of sequence j/64 % seqs), as model's cache lays out a
		// batch of many sequences: a query sees its own sequence's cells.
		seqs int
	}{
		{64, 40, 150, 4, 2, 1, true, ggml.TypeF16, 0, 0},
		{64, 33, 64, 2, 1, 2, true, ggml.TypeF16, 0, 0},
		{64, 16, 100, 2, 2, 1, false, ggml.TypeF16, 0, 0},
		{32, 20, 70, 2, 1, 1, true, ggml.TypeF16, 0, 0},
		{128, 12, 130, 2, 1, 1, true, ggml.TypeF16, 0, 0},
		// Generation: one query, the heads of a KV head in one block
		// (Llama 3.2 1B's 32 over 8, a small model's 12 over 4).
		{64, 1, 700, 32, 8, 1, true, ggml.TypeF16, 0, 0},
		{64, 1, 4160, 32, 8, 1, true, ggml.TypeF16, 0, 0}, // at a depth of 4096
		{64, 1, 77, 12, 4, 1, true, ggml.TypeF16, 0, 0},
		{64, 1, 1, 4, 1, 1, true, ggml.TypeF16, 0, 0},
		{128, 1, 200, 8, 8, 1, false, ggml.TypeF16, 0, 0},
		{32, 1, 129, 6, 2, 2, true, ggml.TypeF16, 0, 0},
		// A few queries: heads and queries together (5 × 6 rows of 32).
		{64, 5, 90, 12, 2, 1, true, ggml.TypeF16, 0, 0},
		{64, 7, 64, 8, 1, 1, true, ggml.TypeF16, 0, 0},
		// A quantized cache: prompts, generation, a few queries.
		{64, 40, 150, 4, 2, 1, true, ggml.TypeQ8_0, 0, 0},
		{64, 1, 700, 32, 8, 1, true, ggml.TypeQ8_0, 0, 0},
		{128, 5, 130, 4, 1, 1, true, ggml.TypeQ8_0, 0, 0},
		{64, 33, 100, 2, 1, 2, true, ggml.TypeQ4_0, 0, 0},
		{32, 1, 129, 6, 2, 2, true, ggml.TypeQ4_0, 0, 0},
		// Gemma 2's soft cap (50, over scores of up to about 5 here; 0.5
		// makes it bite), a prompt and generation.
		{64, 40, 150, 4, 2, 1, true, ggml.TypeF16, 50, 0},
		{64, 40, 150, 4, 2, 1, true, ggml.TypeF16, 0.5, 0},
		{128, 1, 300, 8, 4, 1, true, ggml.TypeF16, 0.5, 0},
		{64, 33, 100, 2, 1, 2, true, ggml.TypeQ8_0, 0.5, 0},
		// Many sequences' tokens in one batch.
		{64, 32, 2048, 32, 8, 1, true, ggml.TypeF16, 0, 32},
		{64, 24, 700, 12, 4, 1, true, ggml.TypeQ8_0, 0, 5},
		{64, 9, 300, 6, 2, 1, true, ggml.TypeF16, 0, 3},
	} {
		typ := tc.typ
		t.Run(fmt.Sprintf("D%d_N%d_KV%d_H%d_Hk%d_B%d_mask%v_%v_cap%g_seqs%d", tc.D, tc.N, tc.KV, tc.H, tc.Hk, tc.B, tc.mask, typ, tc.cap, tc.seqs), func(t *testing.T) {
			e := newEnv(t)
			qv := randF32(rng, tc.D*tc.N*tc.H*tc.B)
			Q := fromF32(qv, tc.D, tc.N, tc.H, tc.B)
			K, V := newND(tc.D, tc.KV, tc.Hk, tc.B), newND(tc.D, tc.KV, tc.Hk, tc.B)
			var k, v *ggml.Tensor
			if typ == ggml.TypeF16 {
				kv := toF16(randF32(rng, tc.D*tc.KV*tc.Hk*tc.B))
				vv := toF16(randF32(rng, tc.D*tc.KV*tc.Hk*tc.B))
				k = e.input(ggml.TypeF16, kv, int64(tc.D), int64(tc.KV), int64(tc.Hk), int64(tc.B))
				v = e.input(ggml.TypeF16, vv, int64(tc.D), int64(tc.KV), int64(tc.Hk), int64(tc.B))
				K.v, V.v = fromF16Slice(kv), fromF16Slice(vv)
				if !own {
					Q.v = fromF16Slice(toF16(qv)) // the provider rounds q to f16
				}
			} else {
				quant := func(n int) ([]byte, []float64) {
					x := randF32(rng, n)
					b, err := ggml.Quantize(typ, x, int64(tc.D), nil)
					require.NoError(t, err)
					deq, err := ggml.Dequantize(typ, b)
					require.NoError(t, err)
					out := make([]float64, len(deq))
					for i, f := range deq {
						out[i] = float64(f)
					}
					return b, out
				}
				kb, kf := quant(tc.D * tc.KV * tc.Hk * tc.B)
				vb, vf := quant(tc.D * tc.KV * tc.Hk * tc.B)
				k = e.input(typ, kb, int64(tc.D), int64(tc.KV), int64(tc.Hk), int64(tc.B))
				v = e.input(typ, vb, int64(tc.D), int64(tc.KV), int64(tc.Hk), int64(tc.B))
				K.v, V.v = kf, vf
				if !own {
					// The provider rounds q to q8_0, the keys' dot type,
					// with the CPU's quantizer (cpuRound).
					Q = fromF32(cpuRound(t, ggml.TypeQ8_0, qv, int64(tc.D)), tc.D, tc.N, tc.H, tc.B)
				}
			}
			q := e.input(ggml.TypeF32, qv, int64(tc.D), int64(tc.N), int64(tc.H), int64(tc.B))
			var mask *ggml.Tensor
			var M *nd
			if tc.mask {
				// Query i sits at cell KV-N+i and sees the cells up to it,
				// less random holes (never cell 0), with finite biases.
				mr := tc.N + 3
				mv := make([]float32, tc.KV*mr*tc.B)
				for b := range tc.B {
					for i := range mr {
						for j := range tc.KV {
							x := float32(0.5 * rng.NormFloat64())
							hide := j > tc.KV-tc.N+i || (j > 0 && rng.IntN(5) == 0)
							if tc.seqs > 0 {
								// Its own sequence's cells, less holes
								// (never the first of its first page).
								own := (j/64)%tc.seqs == i%tc.seqs
								hide = !own || (j >= 64 && rng.IntN(5) == 0)
							}
							if hide {
								x = float32(math.Inf(-1))
							}
							mv[(b*mr+i)*tc.KV+j] = x
						}
					}
				}
				mh := toF16(mv)
				mask = e.input(ggml.TypeF16, mh, int64(tc.KV), int64(mr), 1, int64(tc.B))
				m := newND(tc.KV, mr, 1, tc.B)
				m.v = fromF16Slice(mh)
				M = &m
			}
			scale := 1 / math.Sqrt(float64(tc.D))
			out := e.ctx.FlashAttnExt(q, k, v, mask, ggml.FlashAttnParams{Scale: float32(scale), LogitSoftcap: float32(tc.cap), Precision: ggml.PrecF32})
			e.compute(out)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			ref := attnRef(Q, K, V, M, nil, float64(float32(scale)), 0, float64(float32(tc.cap)))
			tol := 2e-5
			switch {
			case !own && typ == ggml.TypeF16:
				tol = float64(tc.KV) * 4 * math.Pow(2, -11)
			case !own:
				tol = 1e-5 // f32 sums over q8_0 queries
			}
			requireClose(t, ref, got, func(int) float64 { return tol })
		})
	}
}
