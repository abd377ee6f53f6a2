package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/require"
)

func TestSoftMax(t *testing.T) {
	rng := newRNG(t)
	for _, withMask := range []bool{false, true} {
		t.Run(fmt.Sprintf("mask=%v", withMask), func(t *testing.T) {
			e := newEnv(t)
			const n0, n1, n2 = 9, 4, 3
			av := randF32(rng, n0*n1*n2)
			a := e.input(ggml.TypeF32, av, n0, n1, n2)
			scale := float32(0.5 + rng.Float64())
			var out *ggml.Tensor
			var mv []float32
			if withMask {
				mv = randF32(rng, n0*n1)
				mask := e.input(ggml.TypeF32, mv, n0, n1)
				out = e.ctx.SoftMaxExt(a, mask, scale, 0)
			} else {
				scale = 1
				out = e.ctx.SoftMax(a)
			}
			e.compute(out)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			ref := fromF32(av, n0, n1, n2)
			for i2 := range n2 {
				for i1 := range n1 {
					row := ref.v[ref.idx(0, i1, i2, 0):][:n0]
					m := math.Inf(-1)
					for i0 := range row {
						row[i0] *= float64(scale)
						if withMask {
							row[i0] += float64(mv[i1*n0+i0])
						}
						m = math.Max(m, row[i0])
					}
					sum := 0.0
					for i0 := range row {
						row[i0] = math.Exp(row[i0] - m)
						sum += row[i0]
					}
					for i0 := range row {
						row[i0] /= sum
					}
				}
			}
			requireClose(t, ref, got, func(int) float64 { return 1e-6 })
		})
	}
}

// TestSoftMaxExtForms checks SoftMaxExt and SoftMaxExtSinks in every form
// the CPU's kernels take (the embedded build's own AVX-512 first pass,
// softmax.c, and the provider's): rows of whole vectors and of partial
// ones, no mask, f32 and f16 masks with -Inf cells broadcast over heads
// and over ne3, ALiBi slopes over heads on both sides of the largest
// power of two, and sinks, against float64.
func TestSoftMaxExtForms(t *testing.T) {
	rng := newRNG(t)
	const n1, n2, n3 = 3, 6, 2 // 6 heads: ALiBi's n_head_log2 is 4, so heads 4 and 5 take the second slope
	for _, n0 := range []int{9, 16, 37, 300} {
		for _, maskType := range []ggml.Type{-1, ggml.TypeF32, ggml.TypeF16} {
			for _, maxBias := range []float32{0, 8} {
				for _, sinks := range []bool{false, true} {
					if maskType < 0 && maxBias > 0 {
						continue // ALiBi needs a mask
					}
					name := fmt.Sprintf("n0=%d/mask=%v/maxBias=%g/sinks=%v", n0, maskType, maxBias, sinks)
					t.Run(name, func(t *testing.T) {
						e := newEnv(t)
						av := randF32(rng, n0*n1*n2*n3)
						a := e.input(ggml.TypeF32, av, int64(n0), n1, n2, n3)
						scale := float32(0.5 + rng.Float64())
						// The mask: [n0, n1, 2, 1], a.ne2 a multiple of 2.
						const m2 = 2
						mv := make([]float64, n0*n1*m2)
						for i := range mv {
							mv[i] = 2*rng.Float64() - 1
							if i%n0 != 0 && rng.IntN(5) == 0 {
								mv[i] = math.Inf(-1)
							}
						}
						var mask *ggml.Tensor
						switch maskType {
						case ggml.TypeF32:
							m32 := make([]float32, len(mv))
							for i, v := range mv {
								m32[i] = float32(v)
							}
							mask = e.input(ggml.TypeF32, m32, int64(n0), n1, m2)
						case ggml.TypeF16:
							m32 := make([]float32, len(mv))
							for i, v := range mv {
								m32[i] = float32(v)
							}
							h := toF16(m32)
							mask = e.input(ggml.TypeF16, h, int64(n0), n1, m2)
							copy(mv, fromF16Slice(h))
						}
						sv := randF32(rng, n2)
						var out *ggml.Tensor
						if sinks {
							out = e.ctx.SoftMaxExtSinks(a, mask, e.input(ggml.TypeF32, sv, n2), scale, maxBias)
						} else {
							out = e.ctx.SoftMaxExt(a, mask, scale, maxBias)
						}
						e.compute(out)
						got, err := ggml.Data[float32](out)
						require.NoError(t, err)

						ref := fromF32(av, n0, n1, n2, n3)
						log2 := 1 << uint(math.Floor(math.Log2(n2)))
						m0 := math.Pow(2, -float64(maxBias)/float64(log2))
						m1 := math.Pow(2, -float64(maxBias)/2/float64(log2))
						for i3 := range n3 {
							for i2 := range n2 {
								slope := 1.0
								if maxBias > 0 {
									if i2 < log2 {
										slope = math.Pow(m0, float64(i2+1))
									} else {
										slope = math.Pow(m1, float64(2*(i2-log2)+1))
									}
								}
								for i1 := range n1 {
									row := ref.v[ref.idx(0, i1, i2, i3):][:n0]
									m := math.Inf(-1)
									for i0 := range row {
										row[i0] *= float64(scale)
										if mask != nil {
											row[i0] += slope * mv[i0+n0*(i1+n1*(i2%m2))]
										}
										m = math.Max(m, row[i0])
									}
									if sinks {
										m = math.Max(m, float64(sv[i2]))
									}
									sum := 0.0
									for i0 := range row {
										row[i0] = math.Exp(row[i0] - m)
										sum += row[i0]
									}
									if sinks {
										sum += math.Exp(float64(sv[i2]) - m)
									}
									for i0 := range row {
										row[i0] /= sum
									}
								}
							}
						}
						requireClose(t, ref, got, func(int) float64 { return 2e-6 })
					})
				}
			}
		}
	}
}
