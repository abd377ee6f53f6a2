package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

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

func TestMulMatPrec(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	av, bv := randF32(rng, 16*3), randF32(rng, 16*5)
	a := e.input(ggml.TypeF32, av, 16, 3)
	b := e.input(ggml.TypeF32, bv, 16, 5)
	plain := e.ctx.MulMat(a, b)
	prec := e.ctx.MulMatPrec(a, b, ggml.PrecF32)
	e.compute(plain, prec)
	g1, _ := ggml.Data[float32](plain)
	g2, _ := ggml.Data[float32](prec)
	A, B := fromF32(av, 16, 3), fromF32(bv, 16, 5)
	ref := newND(3, 5)
	ref.each(func(i, j, _, _ int) {
		for k := range 16 {
			ref.v[ref.idx(i, j, 0, 0)] += A.at(k, i, 0, 0) * B.at(k, j, 0, 0)
		}
	})
	requireClose(t, ref, g2, func(int) float64 { return 1e-5 })
	require.Equal(t, g1, g2, "the CPU accumulates in f32 either way")
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
