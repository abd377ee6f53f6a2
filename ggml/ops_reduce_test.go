package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

func TestSumMeanArgmax(t *testing.T) {
	rng := newRNG(t)
	const n0, n1, n2 = 37, 5, 2
	e := newEnv(t)
	av := randF32(rng, n0*n1*n2)
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	sum := e.ctx.Sum(a)
	mean := e.ctx.Mean(a)
	m2 := e.input(ggml.TypeF32, av[:n0*n1], n0, n1)
	amax := e.ctx.Argmax(m2)
	e.compute(sum, mean, amax)

	A := fromF32(av, n0, n1, n2)
	total, abs := 0.0, 0.0
	for _, v := range A.v {
		total += v
		abs += math.Abs(v)
	}
	got, err := ggml.Data[float32](sum)
	require.NoError(t, err)
	require.InDelta(t, total, float64(got[0]), float64(len(av))*1.2e-7*abs, "sum")

	means, err := ggml.Data[float32](mean)
	require.NoError(t, err)
	require.Equal(t, [4]int64{1, n1, n2, 1}, mean.Ne())
	for r := range n1 * n2 {
		s, sa := 0.0, 0.0
		for i := range n0 {
			s += A.v[r*n0+i]
			sa += math.Abs(A.v[r*n0+i])
		}
		require.InDelta(t, s/n0, float64(means[r]), n0*1.2e-7*sa/n0+1e-7, "mean of row %d", r)
	}

	idx, err := ggml.Data[int32](amax)
	require.NoError(t, err)
	require.Len(t, idx, n1)
	for r := range n1 {
		best := 0
		for i := range n0 {
			if A.v[r*n0+i] > A.v[r*n0+best] {
				best = i
			}
		}
		require.Equal(t, int32(best), idx[r], "argmax of row %d", r)
	}
}

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

func TestRepeatConcat(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	av := randF32(rng, 3*2)
	a := e.input(ggml.TypeF32, av, 3, 2)
	shape := e.ctx.NewTensor(ggml.TypeF32, 6, 4, 2)
	rep := e.ctx.Repeat(a, shape)
	bv := randF32(rng, 3*5)
	b := e.input(ggml.TypeF32, bv, 3, 5)
	cat := e.ctx.Concat(a, b, 1)
	e.compute(rep, cat)

	A, B := fromF32(av, 3, 2), fromF32(bv, 3, 5)
	R := newND(6, 4, 2)
	R.each(func(i0, i1, i2, _ int) { R.v[R.idx(i0, i1, i2, 0)] = A.at(i0%3, i1%2, 0, 0) })
	got, err := ggml.Data[float32](rep)
	require.NoError(t, err)
	requireClose(t, R, got, func(int) float64 { return 0 })

	C := newND(3, 7)
	C.each(func(i0, i1, _, _ int) {
		if i1 < 2 {
			C.v[C.idx(i0, i1, 0, 0)] = A.at(i0, i1, 0, 0)
		} else {
			C.v[C.idx(i0, i1, 0, 0)] = B.at(i0, i1-2, 0, 0)
		}
	})
	got, err = ggml.Data[float32](cat)
	require.NoError(t, err)
	requireClose(t, C, got, func(int) float64 { return 0 })
}

func TestReduceMisuse(t *testing.T) {
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		{"sum i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Sum(c.NewTensor(ggml.TypeI32, 4)) }},
		{"sum transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Sum(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3))) }},
		{"mean f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Mean(c.NewTensor(ggml.TypeF16, 4)) }},
		{"argmax 3-d", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Argmax(c.NewTensor(ggml.TypeF32, 4, 3, 2)) }},
		{"norm f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Norm(c.NewTensor(ggml.TypeF16, 4), 1e-5) }},
		{"l2_norm f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.L2Norm(c.NewTensor(ggml.TypeF16, 4), 1e-6) }},
		{"l2_norm negative eps", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.L2Norm(c.NewTensor(ggml.TypeF32, 4), -1) }},
		{"l2_norm transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.L2Norm(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3)), 1e-6)
		}},
		{"rms_norm negative eps", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.RMSNorm(c.NewTensor(ggml.TypeF32, 4), -1) }},
		{"rms_norm NaN eps", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.RMSNorm(c.NewTensor(ggml.TypeF32, 4), float32(math.NaN()))
		}},
		{"repeat not a multiple", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Repeat(c.NewTensor(ggml.TypeF32, 3), c.NewTensor(ggml.TypeF32, 4))
		}},
		{"repeat q8_0", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Repeat(c.NewTensor(ggml.TypeQ8_0, 32), c.NewTensor(ggml.TypeQ8_0, 64))
		}},
		{"concat dim", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Concat(c.NewTensor(ggml.TypeF32, 3), c.NewTensor(ggml.TypeF32, 3), 4)
		}},
		{"concat types", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Concat(c.NewTensor(ggml.TypeF32, 3), c.NewTensor(ggml.TypeF16, 3), 0)
		}},
		{"concat shapes", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Concat(c.NewTensor(ggml.TypeF32, 3, 2), c.NewTensor(ggml.TypeF32, 4, 2), 1)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
			require.NoError(t, err)
			defer c.Close()
			require.ErrorIs(t, tc.op(c).Err(), tc.want)
			_, err = c.BuildGraph()
			require.ErrorIs(t, err, tc.want)
		})
	}
}
