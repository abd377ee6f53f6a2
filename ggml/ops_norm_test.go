package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/require"
)

func TestNorms(t *testing.T) {
	rng := newRNG(t)
	const n0, n1 = 64, 6
	for _, rms := range []bool{false, true} {
		t.Run(fmt.Sprintf("rms=%v", rms), func(t *testing.T) {
			e := newEnv(t)
			av := randF32(rng, n0*n1)
			for i := range av {
				av[i] = av[i]*3 + 1 // a mean and a scale to take out
			}
			a := e.input(ggml.TypeF32, av, n0, n1)
			const eps = 1e-5
			var out *ggml.Tensor
			if rms {
				out = e.ctx.RMSNorm(a, eps)
			} else {
				out = e.ctx.Norm(a, eps)
			}
			e.compute(out)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			ref := fromF32(av, n0, n1)
			for r := range n1 {
				row := ref.v[r*n0 : (r+1)*n0]
				mean := 0.0
				if !rms {
					for _, v := range row {
						mean += v / n0
					}
				}
				ss := 0.0
				for _, v := range row {
					ss += (v - mean) * (v - mean) / n0
				}
				for i := range row {
					row[i] = (row[i] - mean) / math.Sqrt(ss+eps)
				}
			}
			// Sums of n0 squares in f32: relative error ~n0 eps.
			requireClose(t, ref, got, func(i int) float64 { return 64 * 1.2e-7 * math.Max(1, math.Abs(ref.v[i])) })
		})
	}
}

func TestL2Norm(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1 = 48, 5
	av := randF32(rng, n0*n1)
	for i := range n0 { // a row of zeros: the length falls below eps
		av[2*n0+i] = 0
	}
	av[2*n0+3] = 1e-9
	const eps = 1e-6
	out := e.ctx.L2Norm(e.input(ggml.TypeF32, av, n0, n1), eps)
	e.compute(out)
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	ref := fromF32(av, n0, n1)
	for r := range n1 {
		row := ref.v[r*n0 : (r+1)*n0]
		ss := 0.0
		for _, v := range row {
			ss += v * v
		}
		for i := range row {
			row[i] /= math.Max(math.Sqrt(ss), eps)
		}
	}
	requireClose(t, ref, got, func(i int) float64 { return n0 * 1.2e-7 * math.Max(1e-3, math.Abs(ref.v[i])) })
}

func TestGroupNorm(t *testing.T) {
	rng := newRNG(t)
	for _, tc := range []struct{ n0, n1, n2, n3, groups int }{
		{4, 3, 6, 2, 3}, {5, 2, 5, 1, 2}, {3, 3, 4, 1, 4}, {8, 1, 3, 2, 1},
	} {
		e := newEnv(t)
		n := tc.n0 * tc.n1 * tc.n2 * tc.n3
		av := randF32(rng, n)
		for i := range av {
			av[i] = av[i]*2 + 0.5
		}
		a := e.input(ggml.TypeF32, av, int64(tc.n0), int64(tc.n1), int64(tc.n2), int64(tc.n3))
		const eps = 1e-5
		g := e.ctx.GroupNorm(a, tc.groups, eps)
		e.compute(g)
		A := fromF32(av, tc.n0, tc.n1, tc.n2, tc.n3)
		R := newND(tc.n0, tc.n1, tc.n2, tc.n3)
		per := (tc.n2 + tc.groups - 1) / tc.groups
		for i3 := range tc.n3 {
			for start := 0; start < tc.n2; start += per {
				end := min(start+per, tc.n2)
				sum, cnt := 0.0, 0.0
				for i2 := start; i2 < end; i2++ {
					for i1 := range tc.n1 {
						for i0 := range tc.n0 {
							sum += A.at(i0, i1, i2, i3)
							cnt++
						}
					}
				}
				mean := sum / cnt
				v := 0.0
				for i2 := start; i2 < end; i2++ {
					for i1 := range tc.n1 {
						for i0 := range tc.n0 {
							d := A.at(i0, i1, i2, i3) - mean
							v += d * d
						}
					}
				}
				s := 1 / math.Sqrt(v/cnt+eps)
				for i2 := start; i2 < end; i2++ {
					for i1 := range tc.n1 {
						for i0 := range tc.n0 {
							R.v[R.idx(i0, i1, i2, i3)] = (A.at(i0, i1, i2, i3) - mean) * s
						}
					}
				}
			}
		}
		got, err := ggml.Data[float32](g)
		require.NoError(t, err)
		requireClose(t, R, got, relTol(R, 1e-5))
	}
}
