package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	yv, err := ggml.Data[float32](y)
	require.NoError(t, err)
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
	got, err := ggml.Data[float32](smb)
	require.NoError(t, err)
	requireClose(t, ref, got, func(int) float64 { return 1e-6 })
	got, err = ggml.Data[float32](smbIn)
	require.NoError(t, err)
	requireClose(t, ref, got, func(int) float64 { return 1e-6 })

	for i, xi := range X.v {
		s := 1 / (1 + math.Exp(-xi))
		ref.v[i] = DY.v[i] * s * (1 + xi*(1-s))
	}
	got, err = ggml.Data[float32](sib)
	require.NoError(t, err)
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
	got, err = ggml.Data[float32](rnb)
	require.NoError(t, err)
	requireClose(t, ref, got, relTol(ref, 1e-5))

	got, err = ggml.Data[float32](grb)
	require.NoError(t, err)
	G := newND(n0, 6)
	for i, r := range idx {
		for j := range n0 {
			G.v[int(r)*n0+j] += float64(xv[i*n0+j])
		}
	}
	requireClose(t, G, got, func(int) float64 { return 1e-6 })

	got, err = ggml.Data[float32](roundTrip)
	require.NoError(t, err)
	requireClose(t, X, got, func(int) float64 { return 1e-5 })
}

func TestConvIm2ColBack(t *testing.T) {
	rng := newRNG(t)
	for _, c := range []struct {
		w, h, ic, n, kw, kh, s0, s1, p0, p1, d0, d1 int
		is2D                                        bool
	}{
		{6, 5, 2, 2, 3, 2, 1, 2, 1, 0, 1, 2, true},
		{7, 7, 3, 1, 2, 3, 2, 1, 2, 3, 2, 1, true},
		{9, 1, 3, 2, 3, 1, 2, 0, 1, 0, 2, 0, false},
	} {
		e := newEnv(t)
		var ker *ggml.Tensor
		var g convGeom
		var ne [4]int
		kh := 1
		if c.is2D {
			ker = e.ctx.NewTensor(ggml.TypeF32, int64(c.kw), int64(c.kh), int64(c.ic), 2)
			g = convGeom2(c.w, c.h, c.kw, c.kh, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
			ne, kh = [4]int{c.w, c.h, c.ic, c.n}, c.kh
		} else {
			ker = e.ctx.NewTensor(ggml.TypeF32, int64(c.kw), int64(c.ic), 2)
			g = convGeom1(c.w, c.kw, c.s0, c.p0, c.d0)
			ne = [4]int{c.w, c.ic, c.n, 1}
		}
		ow, oh := g.out(0), g.out(1)
		var grad convIn
		if c.is2D {
			grad = convInput(e, rng, ggml.TypeF32, c.ic*kh*c.kw, ow, oh, c.n)
		} else {
			grad = convInput(e, rng, ggml.TypeF32, c.ic*c.kw, ow, c.n)
		}
		out := e.ctx.Im2ColBack(grad.t, ker, [4]int64{int64(ne[0]), int64(ne[1]), int64(ne[2]), int64(ne[3])}, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1, c.is2D)
		require.NoError(t, out.Err())
		e.compute(out)
		// The adjoint of im2col: scatter each gradient element back to
		// the input element it was copied from.
		ref, mag := newND(ne[:]...), newND(ne[:]...)
		grad.v.each(func(i0, i1, i2, i3 int) {
			kw, khi, ic := i0%c.kw, i0/c.kw%kh, i0/(c.kw*kh)
			x := i1*g.s[0] + kw*g.d[0] - g.p[0]
			y, n := 0, i2
			if c.is2D {
				y, n = i2*g.s[1]+khi*g.d[1]-g.p[1], i3
			}
			if x < 0 || x >= g.in[0] || y < 0 || y >= g.in[1] {
				return
			}
			var i int
			if c.is2D {
				i = ref.idx(x, y, ic, n)
			} else {
				i = ref.idx(x, ic, n, 0)
			}
			v := grad.v.at(i0, i1, i2, i3)
			ref.v[i] += v
			mag.v[i] += math.Abs(v)
		})
		requireClose(t, ref, convData(t, out), convTol(mag, convTolF32))
	}
}

func TestConvPool2DBack(t *testing.T) {
	rng := newRNG(t)
	for _, op := range []ggml.PoolOp{ggml.PoolMax, ggml.PoolAvg} {
		for _, c := range []struct{ w, h, k0, k1, s0, s1, p0, p1 int }{
			{6, 4, 2, 2, 2, 2, 0, 0}, {7, 5, 3, 3, 1, 1, 1, 1}, {7, 6, 3, 2, 2, 1, 1, 0},
		} {
			e := newEnv(t)
			af := convInput(e, rng, ggml.TypeF32, c.w, c.h, 2)
			ow, oh := (c.w+2*c.p0-c.k0)/c.s0+1, (c.h+2*c.p1-c.k1)/c.s1+1
			grad := convInput(e, rng, ggml.TypeF32, ow, oh, 2)
			out := e.ctx.Pool2DBack(grad.t, af.t, op, c.k0, c.k1, c.s0, c.s1, c.p0, c.p1)
			require.NoError(t, out.Err())
			e.compute(out)
			ref, mag := newND(c.w, c.h, 2), newND(c.w, c.h, 2)
			grad.v.each(func(ox, oy, p, _ int) {
				gv := grad.v.at(ox, oy, p, 0)
				bx, by, best := -1, -1, -float64(math.MaxFloat32)
				for ky := range c.k1 {
					for kx := range c.k0 {
						x, y := ox*c.s0-c.p0+kx, oy*c.s1-c.p1+ky
						if x < 0 || x >= c.w || y < 0 || y >= c.h {
							continue
						}
						if op == ggml.PoolAvg {
							i := ref.idx(x, y, p, 0)
							ref.v[i] += gv / float64(c.k0*c.k1)
							mag.v[i] += math.Abs(gv) / float64(c.k0*c.k1)
						} else if v := af.v.at(x, y, p, 0); v > best {
							bx, by, best = x, y, v
						}
					}
				}
				if op == ggml.PoolMax && bx >= 0 {
					i := ref.idx(bx, by, p, 0)
					ref.v[i] += gv
					mag.v[i] += math.Abs(gv)
				}
			})
			require.Equal(t, af.t.Ne(), out.Ne())
			requireClose(t, ref, convData(t, out), convTol(mag, convTolF32))
		}
	}
}

func TestCrossEntropyLoss(t *testing.T) {
	rng := newRNG(t)
	for _, sh := range []struct {
		ne     [4]int
		padRow int // extra elements after each row: rows not adjacent
	}{{[4]int{10, 3, 2, 1}, 0}, {[4]int{10, 3, 2, 1}, 6}, {[4]int{37, 5, 1, 1}, 0}, {[4]int{5, 2, 2, 2}, 3}, {[4]int{1, 4, 1, 1}, 0}} {
		t.Run(fmt.Sprintf("%v/pad%d", sh.ne, sh.padRow), func(t *testing.T) {
			e := newEnv(t)
			nc, rows := sh.ne[0], sh.ne[1]*sh.ne[2]*sh.ne[3]
			stride := nc + sh.padRow
			logits, target := make([]float32, stride*rows), make([]float32, stride*rows)
			for r := range rows {
				z, sum := randF32(rng, nc), 0.0
				for i := range nc {
					logits[r*stride+i] = 2 * float32(rng.NormFloat64())
					sum += math.Exp(float64(z[i]))
				}
				for i := range nc { // targets: a distribution per row
					target[r*stride+i] = float32(math.Exp(float64(z[i])) / sum)
				}
			}
			view := func(v []float32) *ggml.Tensor {
				in := e.input(ggml.TypeF32, v, int64(stride), int64(sh.ne[1]), int64(sh.ne[2]), int64(sh.ne[3]))
				if sh.padRow == 0 {
					return in
				}
				nb := in.Nb()
				return e.ctx.View4D(in, int64(nc), int64(sh.ne[1]), int64(sh.ne[2]), int64(sh.ne[3]), nb[1], nb[2], nb[3], 0)
			}
			a, b := view(logits), view(target)
			loss := e.ctx.CrossEntropyLoss(a, b)
			grad := e.input(ggml.TypeF32, []float32{1.7}, 1)
			var back *ggml.Tensor
			outs := []*ggml.Tensor{loss}
			if sh.padRow == 0 {
				back = e.ctx.CrossEntropyLossBack(grad, a, b)
				outs = append(outs, back)
			}
			require.NoError(t, e.ctx.Err())
			e.compute(outs...)
			got := seqOutF32(t, loss, 1)

			ref, mag := newND(1), newND(1)
			gref, gmag := newND(sh.ne[:]...), newND(sh.ne[:]...)
			for r := range rows {
				row, tgt := logits[r*stride:r*stride+nc], target[r*stride:r*stride+nc]
				mx := math.Inf(-1)
				for _, v := range row {
					mx = math.Max(mx, float64(v))
				}
				se := 0.0
				for _, v := range row {
					se += math.Exp(float64(v) - mx)
				}
				lse := math.Log(se)
				for i := range nc {
					ls := float64(row[i]) - mx - lse
					ref.v[0] -= float64(tgt[i]) * ls / float64(rows)
					mag.v[0] += math.Abs(float64(tgt[i])) * (math.Abs(float64(row[i])-mx) + lse) / float64(rows)
					p := math.Exp(ls)
					gref.v[r*nc+i] = (p - float64(tgt[i])) * 1.7 / float64(rows)
					gmag.v[r*nc+i] = (p + float64(tgt[i])) * 1.7 / float64(rows)
				}
			}
			// Row sums of nc terms and a sum over rows, in f32.
			requireClose(t, ref, got, seqMagTol(mag, float64(2*(nc+rows)+8)*seqU, 1e-7))
			if back != nil {
				requireClose(t, gref, seqOutF32(t, back, i64(sh.ne)...), seqMagTol(gmag, 2e-6, 1e-9))
			}
		})
	}
}

// Valid but odd: no rows (the loss is NaN) and rows of no elements (0).
func TestCrossEntropyLossEmpty(t *testing.T) {
	e := newEnv(t)
	noRows := e.ctx.CrossEntropyLoss(e.input(ggml.TypeF32, []float32{}, 5, 0), e.input(ggml.TypeF32, []float32{}, 5, 0))
	emptyRows := e.ctx.CrossEntropyLoss(e.input(ggml.TypeF32, []float32{}, 0, 3), e.input(ggml.TypeF32, []float32{}, 0, 3))
	require.NoError(t, e.ctx.Err())
	e.compute(noRows, emptyRows)
	assert.True(t, math.IsNaN(float64(seqOutF32(t, noRows, 1)[0])))
	assert.Zero(t, seqOutF32(t, emptyRows, 1)[0])
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
	gotW, err := ggml.Data[float32](w)
	require.NoError(t, err)
	gotM, err := ggml.Data[float32](m)
	require.NoError(t, err)
	gotV, err := ggml.Data[float32](v)
	require.NoError(t, err)
	gotS, err := ggml.Data[float32](w2)
	require.NoError(t, err)
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
