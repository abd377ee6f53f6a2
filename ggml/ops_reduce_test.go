package ggml_test

import (
	"math"
	"sort"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestSumRows(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	av := randF32(rng, 11*3*2)
	a := e.input(ggml.TypeF32, av, 11, 3, 2)
	out := e.ctx.SumRows(a)
	e.compute(out)
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	require.Equal(t, [4]int64{1, 3, 2, 1}, out.Ne())
	A := fromF32(av, 11, 3, 2)
	ref := newND(1, 3, 2)
	abs := newND(1, 3, 2)
	A.each(func(i0, i1, i2, _ int) {
		ref.v[ref.idx(0, i1, i2, 0)] += A.at(i0, i1, i2, 0)
		abs.v[abs.idx(0, i1, i2, 0)] += math.Abs(A.at(i0, i1, i2, 0))
	})
	// Summation error is bounded by n*eps*sum|x|.
	requireClose(t, ref, got, func(i int) float64 { return 11 * 6e-8 * abs.v[i] })
}

func TestMasksSortsAndScans(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1, n2 = 7, 7, 2
	av := randF32(rng, n0*n1*n2)
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	const nPast = 2
	inf := e.ctx.DiagMaskInf(a, nPast)
	zero := e.ctx.DiagMaskZero(a, nPast)
	leaky := e.ctx.LeakyRelu(a, 0.1)
	asc := e.ctx.Argsort(a, ggml.SortAsc)
	desc := e.ctx.Argsort(a, ggml.SortDesc)
	cum := e.ctx.Cumsum(a)
	pad := e.ctx.Pad(a, 2, 1, 0, 1)
	iv := make([]int32, 40)
	jv := make([]int32, 40)
	want := int64(0)
	for i := range iv {
		iv[i], jv[i] = int32(rng.IntN(3)), int32(rng.IntN(3))
		if iv[i] == jv[i] {
			want++
		}
	}
	ci := e.input(ggml.TypeI32, iv, 8, 5)
	cj := e.input(ggml.TypeI32, jv, 8, 5)
	eq := e.ctx.CountEqual(ci, cj)
	e.compute(inf, zero, leaky, asc, desc, cum, pad, eq)

	A := fromF32(av, n0, n1, n2)
	gotInf, err := ggml.Data[float32](inf)
	require.NoError(t, err)
	gotZero, err := ggml.Data[float32](zero)
	require.NoError(t, err)
	gotLeaky, err := ggml.Data[float32](leaky)
	require.NoError(t, err)
	A.each(func(i0, i1, i2, _ int) {
		k := A.idx(i0, i1, i2, 0)
		x := A.v[k]
		if i0 > i1+nPast {
			require.True(t, math.IsInf(float64(gotInf[k]), -1), "masked (%d,%d)", i0, i1)
			require.Zero(t, gotZero[k])
		} else {
			require.Equal(t, float32(x), gotInf[k])
			require.Equal(t, float32(x), gotZero[k])
		}
		l := x
		if x < 0 {
			l = 0.1 * x
		}
		require.InDelta(t, l, float64(gotLeaky[k]), 1e-7)
	})

	gotAsc, err := ggml.Data[int32](asc)
	require.NoError(t, err)
	gotDesc, err := ggml.Data[int32](desc)
	require.NoError(t, err)
	gotCum, err := ggml.Data[float32](cum)
	require.NoError(t, err)
	for r := range n1 * n2 {
		row := A.v[r*n0 : (r+1)*n0]
		idx := make([]int, n0)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(x, y int) bool { return row[idx[x]] < row[idx[y]] })
		for i := range n0 { // random normals: no ties
			require.Equal(t, int32(idx[i]), gotAsc[r*n0+i])
			require.Equal(t, int32(idx[n0-1-i]), gotDesc[r*n0+i])
		}
		s, sa := 0.0, 0.0
		for i := range n0 {
			s += row[i]
			sa += math.Abs(row[i])
			require.InDelta(t, s, float64(gotCum[r*n0+i]), float64(i+1)*1.2e-7*sa+1e-7)
		}
	}

	gotPad, err := ggml.Data[float32](pad)
	require.NoError(t, err)
	require.Equal(t, [4]int64{n0 + 2, n1 + 1, n2, 2}, pad.Ne())
	P := newND(n0+2, n1+1, n2, 2)
	P.each(func(i0, i1, i2, i3 int) {
		if i0 < n0 && i1 < n1 && i3 == 0 {
			P.v[P.idx(i0, i1, i2, i3)] = A.at(i0, i1, i2, 0)
		}
	})
	requireClose(t, P, gotPad, func(int) float64 { return 0 })

	gotEq, err := ggml.Data[int64](eq)
	require.NoError(t, err)
	require.Equal(t, []int64{want}, gotEq)
}

func TestTopKShape(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 10, 3, 2)
	assert.Equal(t, []int64{4, 3, 2}, c.TopK(a, 4).Shape())
	assert.Equal(t, []int64{4, 3, 2}, c.ArgsortTopK(a, 4).Shape())
	assert.Equal(t, ggml.TypeI32, c.TopK(a, 4).Type())
	require.NoError(t, c.Err())
}
