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
