package ggml_test

import (
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

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
	gotCl, _ := ggml.Data[float32](cl)
	gotCl16, _ := ggml.Data[uint16](cl16)
	gotIn, _ := ggml.Data[float32](clIn)
	gotB, _ := ggml.Data[float32](b)
	gotA, _ := ggml.Data[float32](a)
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

	gotRep, _ := ggml.Data[float32](rep)
	R := newND(2*n0, n1, 2*n2, 3)
	R.each(func(i0, i1, i2, i3 int) { R.v[R.idx(i0, i1, i2, i3)] = A.at(i0%n0, i1, i2%n2, 0) })
	requireClose(t, R, gotRep, func(int) float64 { return 0 })
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
	got, _ := ggml.Data[float32](pe)
	requireClose(t, P, got, func(int) float64 { return 0 })

	mod := func(i, n int) int { return ((i % n) + n) % n }
	PC := newND(n0+5, n1+1, n2+2, 1)
	PC.each(func(i0, i1, i2, _ int) {
		PC.v[PC.idx(i0, i1, i2, 0)] = A.at(mod(i0-2, n0), mod(i1-1, n1), mod(i2, n2), 0)
	})
	got, _ = ggml.Data[float32](pc)
	requireClose(t, PC, got, func(int) float64 { return 0 })

	RO := newND(n0, n1, n2)
	RO.each(func(i0, i1, i2, _ int) {
		RO.v[RO.idx(i0, i1, i2, 0)] = A.at(mod(i0-2, n0), mod(i1+1, n1), mod(i2-1, n2), 0)
	})
	got, _ = ggml.Data[float32](ro)
	requireClose(t, RO, got, func(int) float64 { return 0 })

	RS := newND(n0, 2, n2)
	RS.each(func(i0, i1, i2, _ int) {
		RS.v[RS.idx(i0, i1, i2, 0)] = A.at(mod(i0+4, n0), 2*mod(i1-1, 2), mod(i2+2, n2), 0)
	})
	got, _ = ggml.Data[float32](roSub)
	requireClose(t, RS, got, func(int) float64 { return 0 })
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
	gotInt, _ := ggml.Data[int32](toInt)
	for i, x := range av {
		require.Equal(t, int32(x), gotInt[i], "f32 -> i32 truncates toward zero")
	}
	gotFromInt, _ := ggml.Data[float32](fromInt)
	for i, x := range iv {
		require.Equal(t, float32(x), gotFromInt[i])
	}
	gotHQ, _ := ggml.Data[float32](halfToQ)
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

	gotH, _ := ggml.Data[uint16](toHalf)
	gotF, _ := ggml.Data[float32](toFloat)
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
	gotBack, _ := ggml.Data[float32](back)
	for b := range n0 * n1 / 32 {
		amax := 0.0
		for i := b * 32; i < (b+1)*32; i++ {
			amax = math.Max(amax, math.Abs(float64(av[i])))
		}
		for i := b * 32; i < (b+1)*32; i++ { // q4_0: step amax/8; a full step where +8 clips to 7
			require.InDelta(t, float64(av[i]), float64(gotBack[i]), amax/8*1.01, "q4_0 element %d", i)
		}
	}
	gotDup, _ := ggml.Data[float32](dup)
	require.Equal(t, []int64{n1, n0}, dup.Shape())
	for i0 := range n0 {
		for i1 := range n1 {
			require.Equal(t, av[i1*n0+i0], gotDup[i0*n1+i1])
		}
	}
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
	got, _ := ggml.Data[float32](set)
	require.Equal(t, ref(nb[1], nb[2], nb[3], 4*(2+n0), [3]int{3, 2, 2}, bv), got)
	got, _ = ggml.Data[float32](set1)
	require.Equal(t, ref(nb[1], nb[2], nb[3], 4*27, [3]int{5, 1, 1}, bv[:5]), got)
	got, _ = ggml.Data[float32](set2)
	require.Equal(t, ref(2*nb[1], nb[2], nb[3], 4, [3]int{3, 2, 2}, bv), got)
	got, _ = ggml.Data[float32](inPlace)
	require.Equal(t, ref(nb[1], nb[2], nb[3], 0, [3]int{5, 1, 1}, bv[:5]), got)
	gotA, _ := ggml.Data[float32](a)
	require.Equal(t, av, gotA, "Set leaves a alone")
	gotI, _ := ggml.Data[int32](seti)
	require.Equal(t, []int32{1, 2, 3, 4, 5, -1, -2, 8}, gotI)
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
	got, _ := ggml.Data[float32](s)
	require.Equal(t, want, got)
	gotA, _ := ggml.Data[float32](a)
	require.Equal(t, want, gotA, "set_rows writes into a")
	got16, _ := ggml.Data[uint16](s16)
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
		got, _ := ggml.Data[float32](g)
		requireClose(t, R, got, relTol(R, 1e-5))
	}
}

func TestSetMisuse(t *testing.T) {
	f32 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF32, ne...) }
	tr := func(c *ggml.Context) *ggml.Tensor { return c.Transpose(f32(c, 4, 3)) }
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		{"clamp i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Clamp(c.NewTensor(ggml.TypeI32, 4), 0, 1) }},
		{"clamp bf16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Clamp(c.NewTensor(ggml.TypeBF16, 4), 0, 1) }},
		{"clamp transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Clamp(tr(c), 0, 1) }},
		{"clamp NaN bound", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Clamp(f32(c, 4), float32(math.NaN()), 1) }},
		{"clamp in place transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.ClampInPlace(tr(c), 0, 1) }},
		{"top_k k 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.TopK(f32(c, 4), 0) }},
		{"top_k k > ne0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.TopK(f32(c, 4), 5) }},
		{"top_k f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.TopK(c.NewTensor(ggml.TypeF16, 4), 2) }},
		{"top_k transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.TopK(tr(c), 2) }},
		{"top_k rows not contiguous", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			a := f32(c, 4, 3, 2)
			return c.TopK(c.View3D(a, 4, 2, 2, a.Nb()[1], a.Nb()[2], 0), 2)
		}},
		{"argsort_top_k k > ne0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.ArgsortTopK(f32(c, 4), 9) }},
		{"repeat_4d not a multiple", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Repeat4D(f32(c, 4, 3), 6, 3, 1, 1) }},
		{"repeat_4d negative", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Repeat4D(f32(c, 4), -4, 1, 1, 1) }},
		{"repeat_4d q4_0", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Repeat4D(c.NewTensor(ggml.TypeQ4_0, 32), 64, 1, 1, 1) }},
		{"repeat_4d transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Repeat4D(tr(c), 6, 4, 1, 1) }},
		{"repeat_4d empty to non-empty", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Repeat4D(f32(c, 0, 2), 4, 2, 1, 1) }},
		{"pad_ext negative", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.PadExt(f32(c, 4), ggml.Padding{{0, 0}, {-1, 0}}) }},
		{"pad_ext f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.PadExt(c.NewTensor(ggml.TypeF16, 4), ggml.Padding{{1, 1}})
		}},
		{"pad_ext transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.PadExt(tr(c), ggml.Padding{{1, 1}}) }},
		{"pad_circular empty", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.PadCircular(f32(c, 0, 2), ggml.Padding{{1, 1}}) }},
		{"pad_ext too large", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.PadExt(f32(c, 4), ggml.Padding{{1 << 31, 0}}) }},
		{"roll shift = ne0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Roll(f32(c, 4, 3), 4, 0, 0, 0) }},
		{"roll shift -ne1", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Roll(f32(c, 4, 3), 0, -3, 0, 0) }},
		{"roll shift in size-1 dim", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Roll(f32(c, 4, 3), 0, 0, 1, 0) }},
		{"roll f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Roll(c.NewTensor(ggml.TypeF16, 4), 1, 0, 0, 0) }},
		{"roll transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Roll(tr(c), 1, 0, 0, 0) }},
		{"cast to invalid type", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Cast(f32(c, 4), ggml.Type(4)) }},
		{"cast i32 to f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Cast(c.NewTensor(ggml.TypeI32, 4), ggml.TypeF16) }},
		{"cast to q4_0 partial block", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Cast(f32(c, 48), ggml.TypeQ4_0) }},
		{"cast transposed to q8_0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Cast(c.Transpose(f32(c, 32, 32)), ggml.TypeQ8_0) }},
		{"cast to iq1_s", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Cast(f32(c, 256), ggml.TypeIQ1_S) }},
		{"cast q4_0 to f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Cast(c.NewTensor(ggml.TypeQ4_0, 32), ggml.TypeF16) }},
		{"dup nil", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Dup(nil) }},
		{"set f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Set1D(c.NewTensor(ggml.TypeF16, 4), c.NewTensor(ggml.TypeF16, 2), 0)
		}},
		{"set b of another type", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Set1D(f32(c, 4), c.NewTensor(ggml.TypeI32, 2), 0)
		}},
		{"set b larger", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(f32(c, 4), f32(c, 5), 0) }},
		{"set past the end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(f32(c, 4), f32(c, 2), 12) }},
		{"set last element at the end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// ggml checks where the last element starts, not where it ends.
			return c.Set1D(f32(c, 4), f32(c, 1), 16)
		}},
		{"set rows past the end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Set2D(f32(c, 4, 4), f32(c, 2, 3), 32, 0) }},
		{"set empty b past the end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// found by FuzzOpsMore: ggml checks an empty b's position too.
			return c.Set1D(f32(c, 4), f32(c, 0, 2), 32)
		}},
		{"set huge b rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Set2D(f32(c, 1<<20), f32(c, 1, 1<<19), 1<<20, 0)
		}},
		{"set misaligned offset", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(f32(c, 4), f32(c, 2), 2) }},
		{"set offset 2^30", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(f32(c, 4), f32(c, 2), 1<<30) }},
		{"set a transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(tr(c), f32(c, 2), 0) }},
		{"set b transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(f32(c, 16), tr(c), 0) }},
		{"set_rows b f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8), c.NewTensor(ggml.TypeF16, 4, 2), c.NewTensor(ggml.TypeI32, 2))
		}},
		{"set_rows idx f32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8), f32(c, 4, 2), f32(c, 2))
		}},
		{"set_rows into iq2_xxs", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(c.NewTensor(ggml.TypeIQ2_XXS, 256, 8), f32(c, 256, 2), c.NewTensor(ggml.TypeI32, 2))
		}},
		{"set_rows row length", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8), f32(c, 5, 2), c.NewTensor(ggml.TypeI32, 2))
		}},
		{"set_rows one index per row", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8), f32(c, 4, 2), c.NewTensor(ggml.TypeI32, 3))
		}},
		{"set_rows ne2", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8, 2), f32(c, 4, 2, 3), c.NewTensor(ggml.TypeI32, 2))
		}},
		{"set_rows idx broadcast", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8, 3), f32(c, 4, 2, 3), c.NewTensor(ggml.TypeI32, 2, 2))
		}},
		{"set_rows idx ne3", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8), f32(c, 4, 2), c.NewTensor(ggml.TypeI32, 2, 1, 1, 2))
		}},
		{"set_rows a transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(c.Transpose(f32(c, 8, 4)), f32(c, 4, 2), c.NewTensor(ggml.TypeI32, 2))
		}},
		{"set_rows computed idx", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			idx := c.Cast(f32(c, 2), ggml.TypeI32)
			return c.SetRows(f32(c, 4, 8), f32(c, 4, 2), idx)
		}},
		{"set_rows argsort idx past rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 3), f32(c, 4, 5), c.Argsort(f32(c, 5), ggml.SortAsc))
		}},
		{"group_norm 0 groups", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.GroupNorm(f32(c, 4, 4, 4), 0, 1e-5) }},
		{"group_norm groups > channels", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.GroupNorm(f32(c, 4, 4, 4), 5, 1e-5) }},
		{"group_norm f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.GroupNorm(c.NewTensor(ggml.TypeF16, 4, 4, 4), 2, 1e-5)
		}},
		{"group_norm negative eps", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.GroupNorm(f32(c, 4, 4, 4), 2, -1) }},
		{"group_norm transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.GroupNorm(tr(c), 1, 1e-5) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
			require.NoError(t, err)
			defer c.Close()
			require.ErrorIs(t, tc.op(c).Err(), tc.want)
			require.ErrorIs(t, c.Err(), tc.want)
		})
	}
}
