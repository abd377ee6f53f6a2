package ggml_test

import (
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

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
	gotInf, _ := ggml.Data[float32](inf)
	gotZero, _ := ggml.Data[float32](zero)
	gotLeaky, _ := ggml.Data[float32](leaky)
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

	gotAsc, _ := ggml.Data[int32](asc)
	gotDesc, _ := ggml.Data[int32](desc)
	gotCum, _ := ggml.Data[float32](cum)
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

	gotPad, _ := ggml.Data[float32](pad)
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

func TestArange(t *testing.T) {
	rng := newRNG(t)
	for range 5 {
		start := float32(rng.NormFloat64() * 10)
		stop := start + float32(1+rng.Float64()*50)
		step := float32(0.1 + rng.Float64()*3)
		e := newEnv(t)
		out := e.ctx.Arange(start, stop, step)
		require.NoError(t, out.Err())
		e.compute(out)
		got, err := ggml.Data[float32](out)
		require.NoError(t, err)
		want := int(math.Ceil(float64(stop-start) / float64(step)))
		require.InDelta(t, want, len(got), 1, "count of %g..%g by %g", start, stop, step) // f32 rounding of the quotient
		for i, v := range got {
			ref := float64(start) + float64(step)*float64(i)
			assert.InDelta(t, ref, float64(v), 2.4e-7*(math.Abs(ref)+math.Abs(float64(step)*float64(i)))+1e-30, "element %d", i)
			assert.Less(t, float64(v), float64(stop)+float64(step)/2, "element %d is before stop (within f32 rounding of the count)", i)
		}
	}
}

func TestAdd1(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	av := randF32(rng, 5*3*2)
	bv := randF32(rng, 1)
	a := e.input(ggml.TypeF32, av, 5, 3, 2)
	b := e.input(ggml.TypeF32, bv, 1)
	ah := e.input(ggml.TypeF16, toF16(av), 5, 3, 2)
	out, outh := e.ctx.Add1(a, b), e.ctx.Add1(ah, b)
	e.compute(out, outh)
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	goth, err := ggml.Data[uint16](outh)
	require.NoError(t, err)
	ahv := fromF16Slice(toF16(av))
	for i := range av {
		ref := float64(av[i]) + float64(bv[0])
		assert.InDelta(t, ref, float64(got[i]), 1.2e-7*math.Abs(ref)+1e-30, "f32 element %d", i)
		// f16: a rounded to f16 on input, the sum rounded to f16 on output.
		refh := ahv[i] + float64(bv[0])
		assert.InDelta(t, refh, f16ToF64(goth[i]), math.Abs(refh)/2048+6e-8, "f16 element %d", i)
	}
}

func TestMoreMisuse(t *testing.T) {
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		{"diag_mask f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.DiagMaskInf(c.NewTensor(ggml.TypeF16, 4, 4), 0) }},
		{"diag_mask negative past", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.DiagMaskZero(c.NewTensor(ggml.TypeF32, 4, 4), -1) }},
		{"diag_mask transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.DiagMaskInf(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3)), 0)
		}},
		{"diag_mask transposed column", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// ggml_is_contiguous passes [1 3] with nb0 = 12; the kernel asserts nb0 = 4.
			return c.DiagMaskInf(c.Transpose(c.NewTensor(ggml.TypeF32, 3)), 0)
		}},
		{"leaky_relu i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.LeakyRelu(c.NewTensor(ggml.TypeI32, 4), 0.1) }},
		{"argsort f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Argsort(c.NewTensor(ggml.TypeF16, 4), ggml.SortAsc) }},
		{"argsort order", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Argsort(c.NewTensor(ggml.TypeF32, 4), 7) }},
		{"cumsum transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Cumsum(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3))) }},
		{"count_equal f32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.CountEqual(c.NewTensor(ggml.TypeF32, 4), c.NewTensor(ggml.TypeF32, 4))
		}},
		{"count_equal shapes", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.CountEqual(c.NewTensor(ggml.TypeI32, 4), c.NewTensor(ggml.TypeI32, 5))
		}},
		{"pad negative", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Pad(c.NewTensor(ggml.TypeF32, 4), -1, 0, 0, 0) }},
		{"add1 b not scalar", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Add1(c.NewTensor(ggml.TypeF32, 4), c.NewTensor(ggml.TypeF32, 2))
		}},
		{"add1 i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Add1(c.NewTensor(ggml.TypeI32, 4), c.NewTensor(ggml.TypeI32, 1))
		}},
		{"add1 f32 + f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Add1(c.NewTensor(ggml.TypeF32, 4), c.NewTensor(ggml.TypeF16, 1))
		}},
		{"add1 transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Add1(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3)), c.NewTensor(ggml.TypeF32, 1))
		}},
		{"add1 transposed row", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// contiguous by ggml_is_contiguous, not padded 1-d: ggml asserts
			return c.Add1(c.Transpose(c.NewTensor(ggml.TypeF32, 1, 2, 2)), c.NewTensor(ggml.TypeF32, 1))
		}},
		{"scale transposed row", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// found by FuzzOps: a [1 2] transposed to [2 1] with nb2 of the original
			return c.Scale(c.Transpose(c.NewTensor(ggml.TypeF32, 1, 2, 2)), 2)
		}},
		{"gelu transposed row batch", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// ggml_is_contiguous_1 passes it; gelu's kernel would read the wrong rows
			return c.Gelu(c.Transpose(c.NewTensor(ggml.TypeF32, 1, 2, 2)))
		}},
		{"argsort transposed row batch", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Argsort(c.Transpose(c.NewTensor(ggml.TypeF32, 1, 2, 2)), ggml.SortAsc)
		}},
		{"arange stop <= start", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Arange(3, 3, 1) }},
		{"arange step 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Arange(0, 3, 0) }},
		{"arange negative step", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Arange(0, 3, -1) }},
		{"arange nan", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Arange(float32(math.NaN()), 3, 1) }},
		{"arange huge", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Arange(0, 1e30, 1e-10) }},
		{"pad i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Pad(c.NewTensor(ggml.TypeI32, 4), 1, 0, 0, 0) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
			require.NoError(t, err)
			defer c.Close()
			require.ErrorIs(t, tc.op(c).Err(), tc.want)
		})
	}
}
