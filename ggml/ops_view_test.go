package ggml_test

import (
	"math"
	"testing"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShapeOps(t *testing.T) {
	rng := newRNG(t)
	const n0, n1, n2, n3 = 5, 4, 3, 2
	xv := randF32(rng, n0*n1*n2*n3)
	X := fromF32(xv, n0, n1, n2, n3)
	cases := []struct {
		name  string
		build func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor
		ref   func() nd
	}{
		{"reshape", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.Cont(c.Reshape(x, n0*n1, n2*n3)) },
			func() nd { r := newND(n0*n1, n2*n3); copy(r.v, X.v); return r }},
		{"permute", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.Cont(c.Permute(x, 2, 0, 3, 1)) },
			func() nd {
				// dimension i of x goes to axis[i]: result ne = [n1, n3, n0, n2]
				r := newND(n1, n3, n0, n2)
				X.each(func(i0, i1, i2, i3 int) { r.v[r.idx(i1, i3, i0, i2)] = X.at(i0, i1, i2, i3) })
				return r
			}},
		{"transpose", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.Cont(c.Transpose(x)) },
			func() nd {
				r := newND(n1, n0, n2, n3)
				X.each(func(i0, i1, i2, i3 int) { r.v[r.idx(i1, i0, i2, i3)] = X.at(i0, i1, i2, i3) })
				return r
			}},
		{"view2d", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor {
			// columns 1..3 of rows 0..2 of the second matrix
			nb := x.Nb()
			return c.Cont(c.View2D(x, 3, 3, nb[1], nb[2]+nb[0]))
		}, func() nd {
			r := newND(3, 3)
			r.each(func(i0, i1, _, _ int) { r.v[r.idx(i0, i1, 0, 0)] = X.at(i0+1, i1, 1, 0) })
			return r
		}},
		{"view1d", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.Cont(c.View1D(x, 7, 4*x.Nb()[0])) },
			func() nd { r := newND(7); copy(r.v, X.v[4:11]); return r }},
		{"view3d", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor {
			nb := x.Nb()
			return c.Cont(c.View3D(x, 2, 2, 2, nb[1], nb[2], nb[3]))
		}, func() nd {
			r := newND(2, 2, 2)
			r.each(func(i0, i1, i2, _ int) { r.v[r.idx(i0, i1, i2, 0)] = X.at(i0, i1, i2, 1) })
			return r
		}},
		{"view4d", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor {
			nb := x.Nb()
			// every other row: row stride 2*nb1
			return c.Cont(c.View4D(x, n0, 2, n2, n3, 2*nb[1], nb[2], nb[3], 0))
		}, func() nd {
			r := newND(n0, 2, n2, n3)
			r.each(func(i0, i1, i2, i3 int) { r.v[r.idx(i0, i1, i2, i3)] = X.at(i0, 2*i1, i2, i3) })
			return r
		}},
		{"cpy f32->f32", func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor {
			dst := c.NewTensor(ggml.TypeF32, n0*n1*n2*n3)
			return c.Cpy(c.Transpose(x), dst)
		}, func() nd {
			r := newND(n0 * n1 * n2 * n3)
			T := newND(n1, n0, n2, n3)
			X.each(func(i0, i1, i2, i3 int) { T.v[T.idx(i1, i0, i2, i3)] = X.at(i0, i1, i2, i3) })
			copy(r.v, T.v)
			return r
		}},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			e := newEnv(t)
			x := e.input(ggml.TypeF32, xv, n0, n1, n2, n3)
			out := cs.build(e.ctx, x)
			require.NoError(t, e.ctx.Err())
			e.compute(out)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			ref := cs.ref()
			require.Equal(t, ref.ne, [4]int{int(out.Ne()[0]), int(out.Ne()[1]), int(out.Ne()[2]), int(out.Ne()[3])})
			requireClose(t, ref, got, func(int) float64 { return 0 }) // moves are exact
		})
	}
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

func TestSet(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1, n2 = 6, 5, 2
	av := randF32(rng, n0*n1*n2)
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	bv := randF32(rng, 3*2*2)
	b := e.input(ggml.TypeF32, bv, 3, 2, 2)
	nb := a.Nb()
	// b's rows at column 2 of rows 1.. of both matrices.
	set := e.ctx.Set(a, b, nb[1], nb[2], nb[3], 4*(2+n0))
	b1 := e.input(ggml.TypeF32, bv[:5], 5)
	set1 := e.ctx.Set1D(a, b1, 4*27) // crosses rows: a's data is flat
	set2 := e.ctx.Set2D(a, b, 2*nb[1], 4)
	iv := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	ai := e.input(ggml.TypeI32, iv, 4, 2)
	bi := e.input(ggml.TypeI32, []int32{-1, -2}, 2)
	seti := e.ctx.Set1D(ai, bi, 4*5)
	inPlace := e.ctx.SetInPlace(e.ctx.Cont(a), b1, nb[1], nb[2], nb[3], 0)
	e.compute(set, set1, set2, seti, inPlace, a)

	ref := func(nb1, nb2, nb3, off uint64, bne [3]int, bsrc []float32) []float32 {
		out := append([]float32(nil), av...)
		for i2 := range bne[2] {
			for i1 := range bne[1] {
				for i0 := range bne[0] {
					pos := (off + uint64(i0)*4 + uint64(i1)*nb1 + uint64(i2)*nb2) / 4
					out[pos] = bsrc[i0+bne[0]*(i1+bne[1]*i2)]
				}
			}
		}
		return out
	}
	got, err := ggml.Data[float32](set)
	require.NoError(t, err)
	require.Equal(t, ref(nb[1], nb[2], nb[3], 4*(2+n0), [3]int{3, 2, 2}, bv), got)
	got, err = ggml.Data[float32](set1)
	require.NoError(t, err)
	require.Equal(t, ref(nb[1], nb[2], nb[3], 4*27, [3]int{5, 1, 1}, bv[:5]), got)
	got, err = ggml.Data[float32](set2)
	require.NoError(t, err)
	require.Equal(t, ref(2*nb[1], nb[2], nb[3], 4, [3]int{3, 2, 2}, bv), got)
	got, err = ggml.Data[float32](inPlace)
	require.NoError(t, err)
	require.Equal(t, ref(nb[1], nb[2], nb[3], 0, [3]int{5, 1, 1}, bv[:5]), got)
	gotA, err := ggml.Data[float32](a)
	require.NoError(t, err)
	require.Equal(t, av, gotA, "Set leaves a alone")
	gotI, err := ggml.Data[int32](seti)
	require.NoError(t, err)
	require.Equal(t, []int32{1, 2, 3, 4, 5, -1, -2, 8}, gotI)
}

func TestCpyToF16(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	xv := randF32(rng, 24)
	x := e.input(ggml.TypeF32, xv, 6, 4)
	h := e.ctx.NewTensor(ggml.TypeF16, 6, 4)
	back := e.ctx.Cpy(e.ctx.Cpy(x, h), e.ctx.NewTensor(ggml.TypeF32, 6, 4))
	e.compute(back)
	got, err := ggml.Data[float32](back)
	require.NoError(t, err)
	ref := fromF32(xv, 6, 4)
	// f16 keeps 11 significant bits: relative error <= 2^-11.
	requireClose(t, ref, got, func(i int) float64 { return math.Abs(ref.v[i])/2048 + 1e-7 })
}

func TestCastDup(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1 = 64, 3
	av := randF32(rng, n0*n1)
	a := e.input(ggml.TypeF32, av, n0, n1)
	ah := toF16(av)
	a16 := e.input(ggml.TypeF16, ah, n0, n1)
	toHalf := e.ctx.Cast(a, ggml.TypeF16)
	toFloat := e.ctx.Cast(a16, ggml.TypeF32)
	toQ := e.ctx.Cast(a, ggml.TypeQ8_0)
	back := e.ctx.Cast(e.ctx.Cast(a, ggml.TypeQ4_0), ggml.TypeF32)
	dup := e.ctx.Dup(e.ctx.Transpose(a))
	toInt := e.ctx.Cast(a, ggml.TypeI32)
	iv := make([]int32, n0)
	for i := range iv {
		iv[i] = int32(rng.IntN(2000) - 1000)
	}
	fromInt := e.ctx.Cast(e.input(ggml.TypeI32, iv, n0), ggml.TypeF32)
	halfToQ := e.ctx.Cast(e.ctx.Cast(a16, ggml.TypeQ8_0), ggml.TypeF32)
	e.compute(toHalf, toFloat, toQ, back, dup, toInt, fromInt, halfToQ)
	gotInt, err := ggml.Data[int32](toInt)
	require.NoError(t, err)
	for i, x := range av {
		require.Equal(t, int32(x), gotInt[i], "f32 -> i32 truncates toward zero")
	}
	gotFromInt, err := ggml.Data[float32](fromInt)
	require.NoError(t, err)
	for i, x := range iv {
		require.Equal(t, float32(x), gotFromInt[i])
	}
	gotHQ, err := ggml.Data[float32](halfToQ)
	require.NoError(t, err)
	for b := range n0 * n1 / 32 {
		amax := 0.0
		for i := b * 32; i < (b+1)*32; i++ {
			amax = math.Max(amax, f16ToF64(ah[i]))
			amax = math.Max(amax, -f16ToF64(ah[i]))
		}
		for i := b * 32; i < (b+1)*32; i++ { // q8_0 of the f16 values; its scale is stored as f16
			require.InDelta(t, f16ToF64(ah[i]), float64(gotHQ[i]), amax/254+amax/2048+1e-7, "f16 -> q8_0 element %d", i)
		}
	}

	gotH, err := ggml.Data[uint16](toHalf)
	require.NoError(t, err)
	gotF, err := ggml.Data[float32](toFloat)
	require.NoError(t, err)
	require.Equal(t, ah, gotH, "f32 -> f16 rounds to nearest even")
	for i := range ah {
		require.Equal(t, float32(f16ToF64(ah[i])), gotF[i])
	}
	require.Equal(t, ggml.TypeQ8_0, toQ.Type())
	gotQ, err := ggml.Bytes(toQ)
	require.NoError(t, err)
	deq, err := ggml.Dequantize(ggml.TypeQ8_0, gotQ)
	require.NoError(t, err)
	// q8_0: each value within half a step of its block's scale d = max|x|/127,
	// plus the rounding of d to f16 (up to 127·d·2^-11 = max|x|·2^-11).
	for b := range n0 * n1 / 32 {
		amax := 0.0
		for i := b * 32; i < (b+1)*32; i++ {
			amax = math.Max(amax, math.Abs(float64(av[i])))
		}
		for i := b * 32; i < (b+1)*32; i++ {
			require.InDelta(t, float64(av[i]), float64(deq[i]), amax/254+amax/2048+1e-7, "q8_0 element %d", i)
		}
	}
	gotBack, err := ggml.Data[float32](back)
	require.NoError(t, err)
	for b := range n0 * n1 / 32 {
		amax := 0.0
		for i := b * 32; i < (b+1)*32; i++ {
			amax = math.Max(amax, math.Abs(float64(av[i])))
		}
		for i := b * 32; i < (b+1)*32; i++ { // q4_0: step amax/8; a full step where +8 clips to 7
			require.InDelta(t, float64(av[i]), float64(gotBack[i]), amax/8*1.01, "q4_0 element %d", i)
		}
	}
	gotDup, err := ggml.Data[float32](dup)
	require.NoError(t, err)
	require.Equal(t, []int64{n1, n0}, dup.Shape())
	for i0 := range n0 {
		for i1 := range n1 {
			require.Equal(t, av[i1*n0+i0], gotDup[i0*n1+i1])
		}
	}
}

func TestGetRows(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1, n2 = 4, 6, 2 // a: n2 matrices of n1 rows
	av := randF32(rng, n0*n1*n2)
	idx := make([]int32, 3*n2)
	for i := range idx {
		idx[i] = int32(rng.IntN(n1))
	}
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	b := e.input(ggml.TypeI32, idx, 3, n2)
	out := e.ctx.GetRows(a, b)
	e.compute(out)
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	A := fromF32(av, n0, n1, n2)
	ref := newND(n0, 3, n2)
	ref.each(func(i0, i1, i2, _ int) { ref.v[ref.idx(i0, i1, i2, 0)] = A.at(i0, int(idx[i2*3+i1]), i2, 0) })
	requireClose(t, ref, got, func(int) float64 { return 0 })
}

func TestSetRows(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, rows, n2 = 32, 7, 2
	av := randF32(rng, n0*rows*n2)
	a := e.input(ggml.TypeF32, av, n0, rows, n2)
	a16 := e.input(ggml.TypeF16, toF16(av), n0, rows, n2)
	aq := e.ctx.NewTensor(ggml.TypeQ8_0, n0, rows, n2).SetInput()
	const nb = 3
	bv := randF32(rng, n0*nb*n2)
	b := e.input(ggml.TypeF32, bv, n0, nb, n2)
	// One set of indices per matrix (i32), and one shared by both (i64).
	iv := make([]int32, nb*n2)
	perm := rng.Perm(rows)
	perm2 := rng.Perm(rows)
	for i := range nb {
		iv[i], iv[nb+i] = int32(perm[i]), int32(perm2[i])
	}
	i64 := []int64{int64(perm2[0]), int64(perm2[1]), int64(perm2[2])}
	idx := e.input(ggml.TypeI32, iv, nb, n2)
	idx64 := e.input(ggml.TypeI64, i64, nb)
	s := e.ctx.SetRows(a, b, idx)
	s16 := e.ctx.SetRows(a16, b, idx64)
	sq := e.ctx.SetRows(aq, b, idx)
	e.compute(s, s16, sq, a)

	want := append([]float32(nil), av...)
	want16 := fromF16Slice(toF16(av))
	for k := range n2 {
		for i := range nb {
			src := bv[(k*nb+i)*n0 : (k*nb+i+1)*n0]
			r := int(iv[k*nb+i])
			copy(want[(k*rows+r)*n0:], src)
			r64 := int(i64[i])
			for j := range n0 {
				want16[(k*rows+r64)*n0+j] = f16ToF64(f32ToF16(src[j]))
			}
		}
	}
	got, err := ggml.Data[float32](s)
	require.NoError(t, err)
	require.Equal(t, want, got)
	gotA, err := ggml.Data[float32](a)
	require.NoError(t, err)
	require.Equal(t, want, gotA, "set_rows writes into a")
	got16, err := ggml.Data[uint16](s16)
	require.NoError(t, err)
	require.Equal(t, want16, fromF16Slice(got16))
	// The quantized destination: the rows written dequantize to b's rows
	// within q8_0's half step and its f16 scale's rounding.
	raw, err := ggml.Bytes(sq)
	require.NoError(t, err)
	row, err := ggml.TypeQ8_0.RowSize(n0)
	require.NoError(t, err)
	for k := range n2 {
		for i := range nb {
			r := int(iv[k*nb+i])
			off := uint64(k*rows+r) * row
			deq, err := ggml.Dequantize(ggml.TypeQ8_0, raw[off:off+row])
			require.NoError(t, err)
			src := bv[(k*nb+i)*n0 : (k*nb+i+1)*n0]
			amax := 0.0
			for _, x := range src {
				amax = math.Max(amax, math.Abs(float64(x)))
			}
			for j := range n0 {
				require.InDelta(t, float64(src[j]), float64(deq[j]), amax/254+amax/2048+1e-7) // as in TestCastDup
			}
		}
	}
}

func TestSetRowsIndexOutOfRange(t *testing.T) {
	for _, bad := range []int64{-1, 7} {
		e := newEnv(t)
		a := e.input(ggml.TypeF32, make([]float32, 4*7), 4, 7)
		b := e.input(ggml.TypeF32, make([]float32, 8), 4, 2)
		idx := e.input(ggml.TypeI64, []int64{0, bad}, 2)
		s := e.ctx.SetRows(a, b, idx).SetOutput()
		g, err := e.ctx.BuildGraph(s)
		require.NoError(t, err)
		buf, err := backend.AllocContextTensors(e.ctx, e.be)
		require.NoError(t, err)
		defer buf.Close()
		for _, set := range e.inputs {
			require.NoError(t, set())
		}
		err = e.be.Compute(t.Context(), g)
		require.ErrorIs(t, err, ggml.ErrInvalid, "index %d", bad)
		require.ErrorContains(t, err, "outside 0..6")
	}
}

func TestPadExtRoll(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1, n2 = 5, 4, 3
	av := randF32(rng, n0*n1*n2)
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	pads := ggml.Padding{{2, 1}, {0, 3}, {1, 1}, {0, 1}}
	pe := e.ctx.PadExt(a, pads)
	pc := e.ctx.PadCircular(a, ggml.Padding{{2, 3}, {1, 0}, {0, 2}, {0, 0}})
	// A strided input: the transpose of a, rows are not adjacent... roll
	// needs adjacent elements, so use a view that skips rows instead.
	sub := e.ctx.View3D(a, n0, 2, n2, a.Nb()[1]*2, a.Nb()[2], 0)
	ro := e.ctx.Roll(a, 2, -1, 1, 0)
	roSub := e.ctx.Roll(sub, -4, 1, -2, 0)
	e.compute(pe, pc, ro, roSub)

	A := fromF32(av, n0, n1, n2)
	P := newND(n0+3, n1+3, n2+2, 2)
	P.each(func(i0, i1, i2, i3 int) {
		j0, j1, j2, j3 := i0-pads[0][0], i1-pads[1][0], i2-pads[2][0], i3-pads[3][0]
		if j0 >= 0 && j0 < n0 && j1 >= 0 && j1 < n1 && j2 >= 0 && j2 < n2 && j3 == 0 {
			P.v[P.idx(i0, i1, i2, i3)] = A.at(j0, j1, j2, 0)
		}
	})
	got, err := ggml.Data[float32](pe)
	require.NoError(t, err)
	requireClose(t, P, got, func(int) float64 { return 0 })

	mod := func(i, n int) int { return ((i % n) + n) % n }
	PC := newND(n0+5, n1+1, n2+2, 1)
	PC.each(func(i0, i1, i2, _ int) {
		PC.v[PC.idx(i0, i1, i2, 0)] = A.at(mod(i0-2, n0), mod(i1-1, n1), mod(i2, n2), 0)
	})
	got, err = ggml.Data[float32](pc)
	require.NoError(t, err)
	requireClose(t, PC, got, func(int) float64 { return 0 })

	RO := newND(n0, n1, n2)
	RO.each(func(i0, i1, i2, _ int) {
		RO.v[RO.idx(i0, i1, i2, 0)] = A.at(mod(i0-2, n0), mod(i1+1, n1), mod(i2-1, n2), 0)
	})
	got, err = ggml.Data[float32](ro)
	require.NoError(t, err)
	requireClose(t, RO, got, func(int) float64 { return 0 })

	RS := newND(n0, 2, n2)
	RS.each(func(i0, i1, i2, _ int) {
		RS.v[RS.idx(i0, i1, i2, 0)] = A.at(mod(i0+4, n0), 2*mod(i1-1, 2), mod(i2+2, n2), 0)
	})
	got, err = ggml.Data[float32](roSub)
	require.NoError(t, err)
	requireClose(t, RS, got, func(int) float64 { return 0 })
}

func TestConvPadReflect1D(t *testing.T) {
	rng := newRNG(t)
	for _, c := range []struct{ n, p0, p1 int }{{5, 2, 1}, {4, 3, 3}, {6, 0, 2}, {3, 0, 0}, {1, 0, 0}} {
		e := newEnv(t)
		a := convInput(e, rng, ggml.TypeF32, c.n, 3, 2)
		out := e.ctx.PadReflect1D(a.t, c.p0, c.p1)
		require.NoError(t, out.Err())
		e.compute(out)
		ref := newND(c.n+c.p0+c.p1, 3, 2)
		ref.each(func(i0, i1, i2, _ int) {
			j := i0 - c.p0
			if j < 0 {
				j = -j
			} else if j >= c.n {
				j = 2*(c.n-1) - j
			}
			ref.v[ref.idx(i0, i1, i2, 0)] = a.v.at(j, i1, i2, 0)
		})
		requireClose(t, ref, convData(t, out), func(int) float64 { return 0 })
	}
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
