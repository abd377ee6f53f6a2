package ggml_test

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBinaryOpsMatchReference(t *testing.T) {
	rng := newRNG(t)
	ops := []struct {
		name  string
		build func(c *ggml.Context, a, b *ggml.Tensor) *ggml.Tensor
		ref   func(a, b float64) float64
	}{
		{"add", (*ggml.Context).Add, func(a, b float64) float64 { return a + b }},
		{"sub", (*ggml.Context).Sub, func(a, b float64) float64 { return a - b }},
		{"mul", (*ggml.Context).Mul, func(a, b float64) float64 { return a * b }},
		{"div", (*ggml.Context).Div, func(a, b float64) float64 { return a / b }},
	}
	shapes := []struct{ a, b [4]int }{
		{[4]int{5, 4, 3, 2}, [4]int{5, 4, 3, 2}}, // same shape
		{[4]int{5, 4, 3, 2}, [4]int{5, 1, 1, 1}}, // one row, broadcast
		{[4]int{5, 4, 3, 2}, [4]int{1, 4, 1, 2}}, // broadcast in dims 0 and 2
		{[4]int{7, 3, 1, 1}, [4]int{7, 3, 1, 1}},
		{[4]int{16, 2, 2, 1}, [4]int{16, 2, 1, 1}},
	}
	for _, op := range ops {
		for _, sh := range shapes {
			t.Run(fmt.Sprintf("%s/%v/%v", op.name, sh.a, sh.b), func(t *testing.T) {
				e := newEnv(t)
				na, nb := prod(sh.a), prod(sh.b)
				av, bv := randF32(rng, na), randF32(rng, nb)
				if op.name == "div" { // keep divisors away from 0
					for i := range bv {
						bv[i] = float32(0.5 + math.Abs(float64(bv[i])))
					}
				}
				a := e.input(ggml.TypeF32, av, i64(sh.a)...)
				b := e.input(ggml.TypeF32, bv, i64(sh.b)...)
				out := op.build(e.ctx, a, b)
				e.compute(out)
				got, err := ggml.Data[float32](out)
				require.NoError(t, err)
				require.Equal(t, a.Ne(), out.Ne())

				A, B := fromF32(av, sh.a[:]...), fromF32(bv, sh.b[:]...)
				ref := newND(sh.a[:]...)
				ref.each(func(i0, i1, i2, i3 int) {
					ref.v[ref.idx(i0, i1, i2, i3)] = op.ref(A.at(i0, i1, i2, i3),
						B.at(i0%B.ne[0], i1%B.ne[1], i2%B.ne[2], i3%B.ne[3]))
				})
				requireClose(t, ref, got, relTol(ref, f32Rel))
			})
		}
	}
}

// A strided (non-contiguous) b and a row-sliced view a, both read in place.
func TestBinaryOpOnViews(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1 = 6, 5
	xv, yv := randF32(rng, n0*n1), randF32(rng, 3*n0)
	x := e.input(ggml.TypeF32, xv, n0, n1)
	y := e.input(ggml.TypeF32, yv, 3, n0)
	// a: rows 1..3 of x, a view; b: y transposed, strided in dim 0.
	a := e.ctx.View2D(x, n0, 3, x.Nb()[1], x.Nb()[1])
	b := e.ctx.Transpose(y)
	out := e.ctx.Add(a, b)
	require.NoError(t, e.ctx.Err())
	require.False(t, b.IsContiguous())
	e.compute(out)
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	X, Y := fromF32(xv, n0, n1), fromF32(yv, 3, n0)
	ref := newND(n0, 3)
	ref.each(func(i0, i1, _, _ int) {
		ref.v[ref.idx(i0, i1, 0, 0)] = X.at(i0, i1+1, 0, 0) + Y.at(i1, i0, 0, 0)
	})
	requireClose(t, ref, got, relTol(ref, f32Rel))
}

func TestAddCastQuantized(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	av, bv := randF32(rng, 64*2), randF32(rng, 64*2)
	q, err := ggml.Quantize(ggml.TypeQ8_0, av, 64, nil)
	require.NoError(t, err)
	deq, err := ggml.Dequantize(ggml.TypeQ8_0, q)
	require.NoError(t, err)
	a := e.ctx.NewTensor(ggml.TypeQ8_0, 64, 2).SetInput()
	e.inputs = append(e.inputs, func() error { return ggml.SetBytes(a, q) })
	b := e.input(ggml.TypeF32, bv, 64, 2)
	sum := e.ctx.AddCast(a, b, ggml.TypeF32)
	e.compute(sum)
	got, err := ggml.Data[float32](sum)
	require.NoError(t, err)
	for i := range got {
		require.InDelta(t, float64(deq[i])+float64(bv[i]), float64(got[i]), 1e-6, "element %d", i)
	}
}

func TestAddID(t *testing.T) {
	rng := newRNG(t)
	for _, strided := range []bool{false, true} {
		t.Run(fmt.Sprintf("strided=%v", strided), func(t *testing.T) {
			e := newEnv(t)
			const n0, n1, n2, n3, nB = 5, 3, 4, 2, 6
			av := randF32(rng, 2*n0*n1*n2*n3)
			A := newND(n0, n1, n2, n3)
			var a *ggml.Tensor
			if strided { // rows of 5 in rows of 10
				big := e.input(ggml.TypeF32, av, 2*n0, n1, n2, n3)
				a = e.ctx.View4D(big, n0, n1, n2, n3, big.Nb()[1], big.Nb()[2], big.Nb()[3], 4*n0)
				BIG := fromF32(av, 2*n0, n1, n2, n3)
				A.each(func(i0, i1, i2, i3 int) { A.v[A.idx(i0, i1, i2, i3)] = BIG.at(n0+i0, i1, i2, i3) })
			} else {
				av = av[:n0*n1*n2*n3]
				a = e.input(ggml.TypeF32, av, n0, n1, n2, n3)
				A = fromF32(av, n0, n1, n2, n3)
			}
			bv := randF32(rng, n0*nB)
			b := e.input(ggml.TypeF32, bv, n0, nB)
			idv := make([]int32, n1*n2)
			for i := range idv {
				idv[i] = int32(rng.IntN(nB))
			}
			ids := e.input(ggml.TypeI32, idv, n1, n2)
			out := e.ctx.AddID(a, b, ids)
			require.NoError(t, out.Err())
			e.compute(out)
			got := seqOutF32(t, out, n0, n1, n2, n3)
			B := fromF32(bv, n0, nB)
			ref := newND(n0, n1, n2, n3)
			ref.each(func(i0, i1, i2, i3 int) {
				ref.v[ref.idx(i0, i1, i2, i3)] = A.at(i0, i1, i2, i3) + B.at(i0, int(idv[i2*n1+i1]), 0, 0)
			})
			requireClose(t, ref, got, relTol(ref, 2*seqU))
		})
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

func TestAccAddCastRepeatBackDiagTriFill(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	c := e.ctx
	const n0, n1, n2 = 6, 4, 2
	av, bv := randF32(rng, n0*n1*n2), randF32(rng, 3*2*2)
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	b := e.input(ggml.TypeF32, bv, 3, 2, 2)
	nb := a.Nb()
	acc := c.Acc(a, b, nb[1], nb[2], nb[3], 4)
	accIn := c.AccInPlace(c.Cont(a), b, 2*nb[1], nb[2], nb[3], 0)
	ah := toF16(av)
	a16 := e.input(ggml.TypeF16, ah, n0, n1, n2)
	row := e.input(ggml.TypeF32, bv[:n0], n0)
	cast := c.AddCast(a16, row, ggml.TypeF32)
	rb := c.RepeatBack(a, c.NewTensor(ggml.TypeF32, 3, 2, 1))
	d := c.Diag(e.input(ggml.TypeF32, bv[:4], 4, 1, 1))
	sq := e.input(ggml.TypeF32, av[:n1*n1*n2], n1, n1, n2)
	tris := map[ggml.TriType]*ggml.Tensor{}
	for _, k := range []ggml.TriType{ggml.TriLower, ggml.TriLowerDiag, ggml.TriUpper, ggml.TriUpperDiag} {
		tris[k] = c.Tri(sq, k)
	}
	fill := c.Fill(a, 2.5)
	fillIn := c.FillInPlace(c.Cont(a), -1)
	cont := c.ContND(c.Transpose(c.Reshape(a, n0, n1*n2)), n1*n2*n0)
	outs := []*ggml.Tensor{acc, accIn, cast, rb, d, fill, fillIn, cont}
	for _, x := range tris {
		outs = append(outs, x)
	}
	require.NoError(t, c.Err())
	e.compute(outs...)

	accRef := func(nb1, nb2, off uint64) []float32 {
		out := append([]float32(nil), av...)
		for i2 := range 2 {
			for i1 := range 2 {
				for i0 := range 3 {
					out[(off+uint64(i0)*4+uint64(i1)*nb1+uint64(i2)*nb2)/4] += bv[i0+3*(i1+2*i2)]
				}
			}
		}
		return out
	}
	got, err := ggml.Data[float32](acc)
	require.NoError(t, err)
	require.Equal(t, accRef(nb[1], nb[2], 4), got)
	got, err = ggml.Data[float32](accIn)
	require.NoError(t, err)
	require.Equal(t, accRef(2*nb[1], nb[2], 0), got)

	got, err = ggml.Data[float32](cast)
	require.NoError(t, err)
	require.Equal(t, []int64{n0, n1, n2}, cast.Shape())
	for i := range got {
		want := float32(f16ToF64(ah[i])) + bv[i%n0]
		require.Equal(t, want, got[i], "add_cast element %d", i)
	}

	got, err = ggml.Data[float32](rb)
	require.NoError(t, err)
	A := fromF32(av, n0, n1, n2)
	RB := newND(3, 2)
	A.each(func(i0, i1, i2, _ int) { RB.v[RB.idx(i0%3, i1%2, 0, 0)] += A.at(i0, i1, i2, 0) })
	requireClose(t, RB, got, func(int) float64 { return 1e-5 })

	got, err = ggml.Data[float32](d)
	require.NoError(t, err)
	for i := range 4 {
		for j := range 4 {
			want := float32(0)
			if i == j {
				want = bv[i]
			}
			require.Equal(t, want, got[j*4+i])
		}
	}
	keep := map[ggml.TriType]func(i0, i1 int) bool{
		ggml.TriLower: func(i0, i1 int) bool { return i0 < i1 }, ggml.TriLowerDiag: func(i0, i1 int) bool { return i0 <= i1 },
		ggml.TriUpper: func(i0, i1 int) bool { return i0 > i1 }, ggml.TriUpperDiag: func(i0, i1 int) bool { return i0 >= i1 },
	}
	for k, x := range tris {
		got, err = ggml.Data[float32](x)
		require.NoError(t, err)
		for i2 := range n2 {
			for i1 := range n1 {
				for i0 := range n1 {
					idx := i0 + n1*(i1+n1*i2)
					want := float32(0)
					if keep[k](i0, i1) {
						want = av[idx]
					}
					require.Equal(t, want, got[idx], "tri %d (%d,%d)", k, i0, i1)
				}
			}
		}
	}
	got, err = ggml.Data[float32](fill)
	require.NoError(t, err)
	for _, v := range got {
		require.Equal(t, float32(2.5), v)
	}
	got, err = ggml.Data[float32](fillIn)
	require.NoError(t, err)
	for _, v := range got {
		require.Equal(t, float32(-1), v)
	}
	got, err = ggml.Data[float32](cont)
	require.NoError(t, err)
	require.Equal(t, []int64{n0 * n1 * n2}, cont.Shape())
	for r := range n1 * n2 {
		for i0 := range n0 {
			require.Equal(t, av[r*n0+i0], got[i0*n1*n2+r])
		}
	}
}

func TestScale(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	av := randF32(rng, 30)
	s := float32(rng.NormFloat64())
	a := e.input(ggml.TypeF32, av, 5, 6)
	out := e.ctx.Scale(a, s)
	e.compute(out)
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	ref := fromF32(av, 5, 6)
	for i := range ref.v {
		ref.v[i] *= float64(s)
	}
	requireClose(t, ref, got, relTol(ref, f32Rel))
}

func TestScaleBias(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	av := randF32(rng, 4*7*2)
	s, b := float32(rng.NormFloat64()), float32(rng.NormFloat64())
	out := e.ctx.ScaleBias(e.input(ggml.TypeF32, av, 4, 7, 2), s, b)
	e.compute(out)
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	ref := fromF32(av, 4, 7, 2)
	for i := range ref.v {
		ref.v[i] = ref.v[i]*float64(s) + float64(b)
	}
	// a*s rounds once and +b once: absolute error within f32 eps of |a*s| + |result|.
	requireClose(t, ref, got, func(i int) float64 {
		return 1.2e-7 * (math.Abs(float64(av[i])*float64(s)) + math.Abs(ref.v[i]) + 1e-30)
	})
}

func TestClampTopKRepeat4D(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1, n2 = 9, 4, 3
	av := randF32(rng, n0*n1*n2)
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	ah := toF16(av)
	a16 := e.input(ggml.TypeF16, ah, n0, n1, n2)
	cl := e.ctx.Clamp(a, -0.5, 0.75)
	cl16 := e.ctx.Clamp(a16, -0.5, 0.75)
	// In place on a copy, so a itself stays as given.
	b := e.ctx.Cont(a)
	clIn := e.ctx.ClampInPlace(b, -0.25, 0.25)
	const k = 4
	top := e.ctx.TopK(a, k)
	sorted := e.ctx.Cont(e.ctx.ArgsortTopK(a, k)) // a view: its rows keep a.ne0 apart
	rep := e.ctx.Repeat4D(a, 2*n0, n1, 2*n2, 3)
	e.compute(cl, cl16, clIn, top, sorted, rep, a)

	A := fromF32(av, n0, n1, n2)
	clamp := func(x, lo, hi float64) float64 { return math.Max(math.Min(x, hi), lo) }
	gotCl, err := ggml.Data[float32](cl)
	require.NoError(t, err)
	gotCl16, err := ggml.Data[uint16](cl16)
	require.NoError(t, err)
	gotIn, err := ggml.Data[float32](clIn)
	require.NoError(t, err)
	gotB, err := ggml.Data[float32](b)
	require.NoError(t, err)
	gotA, err := ggml.Data[float32](a)
	require.NoError(t, err)
	for i, x := range A.v {
		require.Equal(t, float32(clamp(x, -0.5, 0.75)), gotCl[i])
		require.Equal(t, clamp(f16ToF64(ah[i]), -0.5, 0.75), f16ToF64(gotCl16[i]))
		require.Equal(t, float32(clamp(x, -0.25, 0.25)), gotIn[i])
		require.Equal(t, gotIn[i], gotB[i], "ClampInPlace writes into its input")
		require.Equal(t, av[i], gotA[i], "Clamp leaves its input alone")
	}

	gotTop, err := ggml.Data[int32](top)
	require.NoError(t, err)
	gotSorted, err := ggml.Data[int32](sorted)
	require.NoError(t, err)
	for r := range n1 * n2 {
		row := A.v[r*n0 : (r+1)*n0]
		idx := make([]int, n0)
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(x, y int) bool { return row[idx[x]] > row[idx[y]] })
		want := make([]int, k)
		got := make([]int, k)
		for i := range k {
			want[i] = idx[i]
			got[i] = int(gotTop[r*k+i])
			require.Equal(t, int32(idx[i]), gotSorted[r*k+i], "argsort_top_k row %d", r)
		}
		sort.Ints(want)
		sort.Ints(got)
		require.Equal(t, want, got, "top_k row %d (any order)", r)
	}

	gotRep, err := ggml.Data[float32](rep)
	require.NoError(t, err)
	R := newND(2*n0, n1, 2*n2, 3)
	R.each(func(i0, i1, i2, i3 int) { R.v[R.idx(i0, i1, i2, i3)] = A.at(i0%n0, i1, i2%n2, 0) })
	requireClose(t, R, gotRep, func(int) float64 { return 0 })
}
