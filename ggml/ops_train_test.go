package ggml_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

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
	got, _ := ggml.Data[float32](acc)
	require.Equal(t, accRef(nb[1], nb[2], 4), got)
	got, _ = ggml.Data[float32](accIn)
	require.Equal(t, accRef(2*nb[1], nb[2], 0), got)

	got, _ = ggml.Data[float32](cast)
	require.Equal(t, []int64{n0, n1, n2}, cast.Shape())
	for i := range got {
		want := float32(f16ToF64(ah[i])) + bv[i%n0]
		require.Equal(t, want, got[i], "add_cast element %d", i)
	}

	got, _ = ggml.Data[float32](rb)
	A := fromF32(av, n0, n1, n2)
	RB := newND(3, 2)
	A.each(func(i0, i1, i2, _ int) { RB.v[RB.idx(i0%3, i1%2, 0, 0)] += A.at(i0, i1, i2, 0) })
	requireClose(t, RB, got, func(int) float64 { return 1e-5 })

	got, _ = ggml.Data[float32](d)
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
		got, _ = ggml.Data[float32](x)
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
	got, _ = ggml.Data[float32](fill)
	for _, v := range got {
		require.Equal(t, float32(2.5), v)
	}
	got, _ = ggml.Data[float32](fillIn)
	for _, v := range got {
		require.Equal(t, float32(-1), v)
	}
	got, _ = ggml.Data[float32](cont)
	require.Equal(t, []int64{n0 * n1 * n2}, cont.Shape())
	for r := range n1 * n2 {
		for i0 := range n0 {
			require.Equal(t, av[r*n0+i0], got[i0*n1*n2+r])
		}
	}
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
	got, _ := ggml.Data[float32](sum)
	for i := range got {
		require.InDelta(t, float64(deq[i])+float64(bv[i]), float64(got[i]), 1e-6, "element %d", i)
	}
}

func TestSwigluOAIAndSinks(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1, n2 = 7, 3, 2
	av, bv := randF32(rng, n0*n1*n2), randF32(rng, n0*n1*n2)
	for i := range av {
		av[i] *= 3
		bv[i] *= 3
	}
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	b := e.input(ggml.TypeF32, bv, n0, n1, n2)
	const alpha, limit = 1.702, 2.5
	oai := e.ctx.SwigluOAI(a, b, alpha, limit)
	sv := randF32(rng, n2)
	sinks := e.input(ggml.TypeF32, sv, n2)
	sm := e.ctx.SoftMaxExtSinks(a, nil, sinks, 0.7, 0)
	e.compute(oai, sm)
	got, _ := ggml.Data[float32](oai)
	ref := newND(n0, n1, n2)
	for i := range av {
		x := math.Min(float64(av[i]), limit)
		y := math.Max(math.Min(float64(bv[i]), limit), -limit)
		ref.v[i] = x / (1 + math.Exp(-alpha*x)) * (y + 1)
	}
	requireClose(t, ref, got, relTol(ref, 2e-6))

	got, _ = ggml.Data[float32](sm)
	for r := range n1 * n2 {
		h := r / n1
		m := float64(sv[h])
		for i := range n0 {
			m = math.Max(m, 0.7*float64(av[r*n0+i]))
		}
		den := math.Exp(float64(sv[h]) - m)
		for i := range n0 {
			den += math.Exp(0.7*float64(av[r*n0+i]) - m)
		}
		for i := range n0 {
			ref.v[r*n0+i] = math.Exp(0.7*float64(av[r*n0+i])-m) / den
		}
	}
	requireClose(t, ref, got, relTol(ref, 1e-6))
}

func TestBackwardOps(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	c := e.ctx
	const n0, n1, n2 = 8, 5, 3
	xv, dyv := randF32(rng, n0*n1*n2), randF32(rng, n0*n1*n2)
	x := e.input(ggml.TypeF32, xv, n0, n1, n2)
	dy := e.input(ggml.TypeF32, dyv, n0, n1, n2)
	y := c.SoftMax(x)
	smb := c.SoftMaxExtBack(dy, y, 0.5, 0)
	smbIn := c.SoftMaxExtBackInPlace(c.Cont(dy), y, 0.5, 0)
	sib := c.SiluBack(dy, x)
	const eps = 1e-5
	rnb := c.RMSNormBack(dy, x, eps)
	// get_rows_back: rows of a [n0, 4] added into a zero [n0, 6].
	idx := []int32{2, 5, 2, 0}
	ga := e.input(ggml.TypeF32, xv[:n0*4], n0, 4)
	gi := e.input(ggml.TypeI32, idx, 4)
	grb := c.GetRowsBack(ga, gi, c.NewTensor(ggml.TypeF32, n0, 6))
	// rope_back undoes rope.
	pos := make([]int32, n2)
	for i := range pos {
		pos[i] = int32(rng.IntN(50))
	}
	p := e.input(ggml.TypeI32, pos, n2)
	rp := ggml.RopeParams{Dims: n0, Mode: ggml.RopeNeoX, CtxOrig: 4096, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
	roundTrip := c.RopeBack(c.Rope(x, p, rp), p, rp)
	e.compute(smb, smbIn, sib, rnb, grb, roundTrip, y)

	X := fromF32(xv, n0, n1, n2)
	DY := fromF32(dyv, n0, n1, n2)
	yv, _ := ggml.Data[float32](y)
	ref := newND(n0, n1, n2)
	for r := range n1 * n2 {
		dot := 0.0
		for i := range n0 {
			dot += float64(yv[r*n0+i]) * DY.v[r*n0+i]
		}
		for i := range n0 {
			ref.v[r*n0+i] = 0.5 * float64(yv[r*n0+i]) * (DY.v[r*n0+i] - dot)
		}
	}
	got, _ := ggml.Data[float32](smb)
	requireClose(t, ref, got, func(int) float64 { return 1e-6 })
	got, _ = ggml.Data[float32](smbIn)
	requireClose(t, ref, got, func(int) float64 { return 1e-6 })

	for i, xi := range X.v {
		s := 1 / (1 + math.Exp(-xi))
		ref.v[i] = DY.v[i] * s * (1 + xi*(1-s))
	}
	got, _ = ggml.Data[float32](sib)
	requireClose(t, ref, got, relTol(ref, 1e-5))

	for r := range n1 * n2 {
		sxx, sxd := 0.0, 0.0
		for i := range n0 {
			sxx += X.v[r*n0+i] * X.v[r*n0+i]
			sxd += X.v[r*n0+i] * DY.v[r*n0+i]
		}
		r2 := sxx/n0 + eps
		for i := range n0 {
			ref.v[r*n0+i] = (DY.v[r*n0+i] - X.v[r*n0+i]*sxd/(n0*r2)) / math.Sqrt(r2)
		}
	}
	got, _ = ggml.Data[float32](rnb)
	requireClose(t, ref, got, relTol(ref, 1e-5))

	got, _ = ggml.Data[float32](grb)
	G := newND(n0, 6)
	for i, r := range idx {
		for j := range n0 {
			G.v[int(r)*n0+j] += float64(xv[i*n0+j])
		}
	}
	requireClose(t, G, got, func(int) float64 { return 1e-6 })

	got, _ = ggml.Data[float32](roundTrip)
	requireClose(t, X, got, func(int) float64 { return 1e-5 })
}

func TestOptimizerSteps(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n = 40
	wv, gv, mv, vv := randF32(rng, n), randF32(rng, n), randF32(rng, n), randF32(rng, n)
	for i := range vv {
		vv[i] = vv[i] * vv[i]
	}
	w := e.input(ggml.TypeF32, wv, 8, 5).SetParam()
	w2 := e.input(ggml.TypeF32, wv, 8, 5).SetParam()
	g := e.input(ggml.TypeF32, gv, 8, 5)
	m := e.input(ggml.TypeF32, mv, 8, 5)
	v := e.input(ggml.TypeF32, vv, 8, 5)
	ap := []float32{1e-2, 0.9, 0.999, 1e-8, 0.1, 1 / (1 - 0.9), 1 / (1 - 0.999)}
	adamParams := e.input(ggml.TypeF32, ap, 7)
	sp := []float32{0.05, 0.01}
	sgdParams := e.input(ggml.TypeF32, sp, 2)
	adam := e.ctx.OptStepAdamW(w, g, m, v, adamParams)
	sgd := e.ctx.OptStepSGD(w2, g, sgdParams)
	e.compute(adam, sgd)
	gotW, _ := ggml.Data[float32](w)
	gotM, _ := ggml.Data[float32](m)
	gotV, _ := ggml.Data[float32](v)
	gotS, _ := ggml.Data[float32](w2)
	for i := range n {
		mi := float64(mv[i])*float64(ap[1]) + float64(gv[i])*(1-float64(ap[1]))
		vi := float64(vv[i])*float64(ap[2]) + float64(gv[i])*float64(gv[i])*(1-float64(ap[2]))
		wi := float64(wv[i])*(1-float64(ap[0])*float64(ap[4])) - float64(ap[0])*mi*float64(ap[5])/(math.Sqrt(vi*float64(ap[6]))+float64(ap[3]))
		require.InDelta(t, mi, float64(gotM[i]), 1e-6)
		require.InDelta(t, vi, float64(gotV[i]), 1e-6)
		require.InDelta(t, wi, float64(gotW[i]), 1e-5)
		si := float64(wv[i])*(1-float64(sp[0])*float64(sp[1])) - float64(sp[0])*float64(gv[i])
		require.InDelta(t, si, float64(gotS[i]), 1e-6)
	}
}
