package ggml_test

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/require"
)

func TestMulMat(t *testing.T) {
	rng := newRNG(t)
	cases := []struct{ a, b [4]int }{
		{[4]int{8, 5, 1, 1}, [4]int{8, 3, 1, 1}},
		{[4]int{64, 33, 1, 1}, [4]int{64, 17, 1, 1}},
		{[4]int{32, 7, 2, 1}, [4]int{32, 5, 4, 3}},  // a broadcast over b's dims 2 and 3
		{[4]int{16, 16, 1, 1}, [4]int{16, 1, 1, 1}}, // matrix-vector
	}
	for _, cs := range cases {
		t.Run(fmt.Sprintf("%v x %v", cs.a, cs.b), func(t *testing.T) {
			e := newEnv(t)
			av, bv := randF32(rng, prod(cs.a)), randF32(rng, prod(cs.b))
			a := e.input(ggml.TypeF32, av, i64(cs.a)...)
			b := e.input(ggml.TypeF32, bv, i64(cs.b)...)
			out := e.ctx.MulMat(a, b)
			e.compute(out)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			A, B := fromF32(av, cs.a[:]...), fromF32(bv, cs.b[:]...)
			ref, bound := mulMatRef(A, B)
			k := float64(cs.a[0])
			requireClose(t, ref, got, func(i int) float64 { return 2*k*6e-8*bound.v[i] + 1e-7 })
		})
	}
}

// mulMatRef is ggml's mul_mat in float64: out[i,j,k,l] = sum_x a[x,i,k/rk,l/rl] * b[x,j,k,l],
// and the sum of |products| for an error bound.
func mulMatRef(a, b nd) (nd, nd) {
	ref := newND(a.ne[1], b.ne[1], b.ne[2], b.ne[3])
	bound := newND(a.ne[1], b.ne[1], b.ne[2], b.ne[3])
	r2, r3 := b.ne[2]/a.ne[2], b.ne[3]/a.ne[3]
	ref.each(func(i, j, k, l int) {
		s, abs := 0.0, 0.0
		for x := range a.ne[0] {
			p := a.at(x, i, k/r2, l/r3) * b.at(x, j, k, l)
			s += p
			abs += math.Abs(p)
		}
		ref.v[ref.idx(i, j, k, l)] = s
		bound.v[bound.idx(i, j, k, l)] = abs
	})
	return ref, bound
}

func TestMulMatPrec(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	av, bv := randF32(rng, 16*3), randF32(rng, 16*5)
	a := e.input(ggml.TypeF32, av, 16, 3)
	b := e.input(ggml.TypeF32, bv, 16, 5)
	plain := e.ctx.MulMat(a, b)
	prec := e.ctx.MulMatPrec(a, b, ggml.PrecF32)
	e.compute(plain, prec)
	g1, err := ggml.Data[float32](plain)
	require.NoError(t, err)
	g2, err := ggml.Data[float32](prec)
	require.NoError(t, err)
	A, B := fromF32(av, 16, 3), fromF32(bv, 16, 5)
	ref := newND(3, 5)
	ref.each(func(i, j, _, _ int) {
		for k := range 16 {
			ref.v[ref.idx(i, j, 0, 0)] += A.at(k, i, 0, 0) * B.at(k, j, 0, 0)
		}
	})
	requireClose(t, ref, g2, func(int) float64 { return 1e-5 })
	require.Equal(t, g1, g2, "the CPU accumulates in f32 either way")
}

// seqVecDotBlock is the block of the format the CPU quantizes b to for
// MulMatID's quantized as (q8_0 or q8_K): each element of b is off by at
// most its block's largest magnitude / 127 / 2 (plus the f16 rounding of
// q8_0's scale).
var seqVecDotBlock = map[ggml.Type]int{
	ggml.TypeQ8_0: 32, ggml.TypeQ4_0: 32, ggml.TypeIQ4_NL: 32, ggml.TypeQ4_K: 256, ggml.TypeQ6_K: 256,
}

func TestMulMatID(t *testing.T) {
	rng := newRNG(t)
	type shape struct{ k, m, nExp, nB1, nUsed, nTok int }
	shapes := []shape{
		{256, 5, 4, 1, 2, 3}, // one row of b for all used experts
		{256, 3, 6, 2, 2, 4}, // a row of b per used expert
		{256, 4, 5, 2, 4, 2}, // b's rows broadcast: expert e reads row e % 2
	}
	for _, ty := range []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeBF16, ggml.TypeQ8_0, ggml.TypeQ4_0, ggml.TypeQ4_K, ggml.TypeQ6_K, ggml.TypeIQ4_NL} {
		for si, sh := range shapes {
			for _, mode := range []string{"input", "strided-b", "argsort"} {
				t.Run(fmt.Sprintf("%v/%d/%s", ty, si, mode), func(t *testing.T) {
					e := newEnv(t)
					raw, asv := seqWeights(t, rng, ty, sh.k, sh.m*sh.nExp)
					as := e.seqRaw(ty, raw, int64(sh.k), int64(sh.m), int64(sh.nExp))
					bv := randF32(rng, sh.k*sh.nB1*2*sh.nTok)
					B := newND(sh.k, sh.nB1, sh.nTok)
					var b *ggml.Tensor
					if mode == "strided-b" { // every other row of a larger input
						big := e.input(ggml.TypeF32, bv, int64(sh.k), int64(2*sh.nB1), int64(sh.nTok))
						b = e.ctx.View3D(big, int64(sh.k), int64(sh.nB1), int64(sh.nTok), 2*big.Nb()[1], big.Nb()[2], 0)
						BIG := fromF32(bv, sh.k, 2*sh.nB1, sh.nTok)
						B.each(func(x, r, tok, _ int) { B.v[B.idx(x, r, tok, 0)] = BIG.at(x, 2*r, tok, 0) })
						require.False(t, b.IsContiguous())
					} else {
						bv = bv[:sh.k*sh.nB1*sh.nTok]
						b = e.input(ggml.TypeF32, bv, int64(sh.k), int64(sh.nB1), int64(sh.nTok))
						B = fromF32(bv, sh.k, sh.nB1, sh.nTok)
					}
					idv := make([]int32, sh.nUsed*sh.nTok)
					var ids *ggml.Tensor
					if mode == "argsort" { // the router: the top nUsed of each token's logits
						lv := randF32(rng, sh.nExp*sh.nTok)
						logits := e.input(ggml.TypeF32, lv, int64(sh.nExp), int64(sh.nTok))
						sorted := e.ctx.Argsort(logits, ggml.SortDesc)
						ids = e.ctx.View2D(sorted, int64(sh.nUsed), int64(sh.nTok), sorted.Nb()[1], 0)
						for tok := range sh.nTok {
							order := make([]int, sh.nExp)
							for i := range order {
								order[i] = i
							}
							row := lv[tok*sh.nExp : (tok+1)*sh.nExp]
							sort.Slice(order, func(x, y int) bool { return row[order[x]] > row[order[y]] })
							for u := range sh.nUsed {
								idv[tok*sh.nUsed+u] = int32(order[u])
							}
						}
					} else {
						for i := range idv {
							idv[i] = int32(rng.IntN(sh.nExp))
						}
						ids = e.input(ggml.TypeI32, idv, int64(sh.nUsed), int64(sh.nTok))
					}
					out := e.ctx.MulMatID(as, b, ids)
					require.NoError(t, out.Err())
					e.compute(out)
					got := seqOutF32(t, out, int64(sh.m), int64(sh.nUsed), int64(sh.nTok))

					AS := fromF32(asv, sh.k, sh.m, sh.nExp)
					ref, tol := newND(sh.m, sh.nUsed, sh.nTok), newND(sh.m, sh.nUsed, sh.nTok)
					ref.each(func(i, u, tok, _ int) {
						ex, r := int(idv[tok*sh.nUsed+u]), u%sh.nB1
						s, mag, qerr := 0.0, 0.0, 0.0
						for x := range sh.k {
							av, bx := AS.at(x, i, ex, 0), B.at(x, r, tok, 0)
							s += av * bx
							mag += math.Abs(av * bx)
							if blk := seqVecDotBlock[ty]; blk > 0 {
								amax := 0.0
								for y := x / blk * blk; y < (x/blk+1)*blk; y++ {
									amax = math.Max(amax, math.Abs(B.at(y, r, tok, 0)))
								}
								qerr += math.Abs(av) * (amax/127/2 + math.Abs(bx)/1024)
							}
						}
						k := ref.idx(i, u, tok, 0)
						ref.v[k] = s
						// The dot product's own f32 rounding, plus the
						// rounding of b to the type the CPU multiplies as by.
						tol.v[k] = 2*float64(sh.k)*seqU*mag + qerr + 1e-6
						switch ty {
						case ggml.TypeF16:
							tol.v[k] += mag / 2048
						case ggml.TypeBF16:
							tol.v[k] += mag / 256
						}
					})
					requireClose(t, ref, got, func(i int) float64 { return tol.v[i] })
				})
			}
		}
	}
}

// A q4_0 as takes b already in q8_0, the CPU's format for it.
func TestMulMatIDQ8B(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const k, m, nExp, nTok = 64, 3, 2, 2
	raw, asv := seqWeights(t, rng, ggml.TypeQ4_0, k, m*nExp)
	as := e.seqRaw(ggml.TypeQ4_0, raw, k, m, nExp)
	braw, bv := seqWeights(t, rng, ggml.TypeQ8_0, k, nTok)
	b := e.seqRaw(ggml.TypeQ8_0, braw, k, 1, nTok)
	idv := []int32{1, 0}
	ids := e.input(ggml.TypeI32, idv, 1, nTok)
	out := e.ctx.MulMatID(as, b, ids)
	require.NoError(t, out.Err())
	e.compute(out)
	got := seqOutF32(t, out, m, 1, nTok)
	AS, B := fromF32(asv, k, m, nExp), fromF32(bv, k, nTok)
	ref, mag := newND(m, 1, nTok), newND(m, 1, nTok)
	ref.each(func(i, _, tok, _ int) {
		for x := range k {
			p := AS.at(x, i, int(idv[tok]), 0) * B.at(x, tok, 0, 0)
			ref.v[ref.idx(i, 0, tok, 0)] += p
			mag.v[mag.idx(i, 0, tok, 0)] += math.Abs(p)
		}
	})
	// Both sides exact (block values times f16 scales): f32 rounding only.
	requireClose(t, ref, got, seqMagTol(mag, 2*k*seqU, 1e-6))
}

func TestOutProd(t *testing.T) {
	rng := newRNG(t)
	cases := []struct {
		ty         ggml.Type
		a, b       [4]int // a [m k A2 A3], b [n k B2 B3]
		transposeB bool
	}{
		{ggml.TypeF32, [4]int{5, 7, 1, 1}, [4]int{3, 7, 1, 1}, false},
		{ggml.TypeF32, [4]int{8, 6, 2, 1}, [4]int{4, 6, 4, 3}, false}, // a broadcast over b's dims 2, 3
		{ggml.TypeF32, [4]int{33, 40, 1, 1}, [4]int{9, 40, 1, 1}, true},
		{ggml.TypeF32, [4]int{6, 5, 1, 2}, [4]int{70, 5, 3, 2}, true},
		// Rows of 16-float vectors with a tail, blocks of 8 and 32 of k
		// with remainders, more than 16 result rows a thread: the shapes
		// of go-ggml's AVX-512 path (embedded/cpu/outprod.c).
		{ggml.TypeF32, [4]int{100, 45, 1, 2}, [4]int{37, 45, 2, 2}, false},
		{ggml.TypeF32, [4]int{64, 70, 1, 1}, [4]int{40, 70, 1, 1}, true},
		{ggml.TypeF32, [4]int{17, 9, 1, 1}, [4]int{20, 9, 1, 1}, false},
		{ggml.TypeQ8_0, [4]int{64, 5, 2, 1}, [4]int{6, 5, 2, 1}, false},
		{ggml.TypeQ4_0, [4]int{32, 9, 1, 1}, [4]int{4, 9, 1, 1}, true},
		{ggml.TypeQ4_K, [4]int{256, 3, 2, 1}, [4]int{5, 3, 2, 1}, false},
		{ggml.TypeQ6_K, [4]int{256, 4, 1, 1}, [4]int{3, 4, 1, 1}, false},
		{ggml.TypeIQ4_NL, [4]int{64, 6, 1, 1}, [4]int{5, 6, 1, 1}, true},
	}
	for _, cs := range cases {
		t.Run(fmt.Sprintf("%v/%v/%v/T%v", cs.ty, cs.a, cs.b, cs.transposeB), func(t *testing.T) {
			e := newEnv(t)
			raw, av := seqWeights(t, rng, cs.ty, cs.a[0], prod(cs.a)/cs.a[0])
			a := e.seqRaw(cs.ty, raw, i64(cs.a)...)
			B := newND(cs.b[:]...)
			var b *ggml.Tensor
			if cs.transposeB { // b is the transpose of a [k n B2 B3] input, read in place
				bt := randF32(rng, prod(cs.b))
				in := e.input(ggml.TypeF32, bt, int64(cs.b[1]), int64(cs.b[0]), int64(cs.b[2]), int64(cs.b[3]))
				b = e.ctx.Transpose(in)
				BT := fromF32(bt, cs.b[1], cs.b[0], cs.b[2], cs.b[3])
				B.each(func(j, x, k, l int) { B.v[B.idx(j, x, k, l)] = BT.at(x, j, k, l) })
				require.False(t, b.IsContiguous())
			} else {
				bv := randF32(rng, prod(cs.b))
				b = e.input(ggml.TypeF32, bv, i64(cs.b)...)
				B = fromF32(bv, cs.b[:]...)
			}
			out := e.ctx.OutProd(a, b)
			require.NoError(t, out.Err())
			e.compute(out)
			got := seqOutF32(t, out, int64(cs.a[0]), int64(cs.b[0]), int64(cs.b[2]), int64(cs.b[3]))

			A := fromF32(av, cs.a[:]...)
			ref := newND(cs.a[0], cs.b[0], cs.b[2], cs.b[3])
			mag := newND(cs.a[0], cs.b[0], cs.b[2], cs.b[3])
			r2, r3 := cs.b[2]/cs.a[2], cs.b[3]/cs.a[3]
			ref.each(func(i, j, k, l int) {
				s, m := 0.0, 0.0
				for x := range cs.a[1] {
					p := A.at(i, x, k/r2, l/r3) * B.at(j, x, k, l)
					s += p
					m += math.Abs(p)
				}
				ref.v[ref.idx(i, j, k, l)], mag.v[mag.idx(i, j, k, l)] = s, m
			})
			// a is dequantized exactly; the sum over k rounds in f32.
			requireClose(t, ref, got, seqMagTol(mag, 2*float64(cs.a[1]+1)*seqU, 1e-7))
		})
	}
}

func TestSolveTri(t *testing.T) {
	rng := newRNG(t)
	for _, sh := range []struct{ n, k, b2, b3 int }{{6, 3, 2, 1}, {1, 1, 1, 1}, {17, 5, 2, 2}} {
		t.Run(fmt.Sprintf("%+v", sh), func(t *testing.T) {
			e := newEnv(t)
			n, k := sh.n, sh.k
			av := randF32(rng, n*n*sh.b2*sh.b3)
			for m := range sh.b2 * sh.b3 {
				for r := range n {
					for c := range n {
						v := &av[m*n*n+r*n+c]
						switch {
						case c == r: // a diagonal away from 0
							*v = float32(math.Copysign(1.5+math.Abs(float64(*v)), float64(*v)))
						case c > r: // above the diagonal: never read
							*v = float32(math.NaN())
						default:
							*v *= float32(0.5 / math.Sqrt(float64(n)))
						}
					}
				}
			}
			bv := randF32(rng, k*n*sh.b2*sh.b3)
			a := e.input(ggml.TypeF32, av, int64(n), int64(n), int64(sh.b2), int64(sh.b3))
			b := e.input(ggml.TypeF32, bv, int64(k), int64(n), int64(sh.b2), int64(sh.b3))
			out := e.ctx.SolveTri(a, b, true, true, false)
			require.NoError(t, out.Err())
			e.compute(out)
			got := seqOutF32(t, out, int64(k), int64(n), int64(sh.b2), int64(sh.b3))
			A, B := fromF32(av, n, n, sh.b2, sh.b3), fromF32(bv, k, n, sh.b2, sh.b3)
			ref, mag := newND(k, n, sh.b2, sh.b3), newND(k, n, sh.b2, sh.b3)
			for b3 := range sh.b3 {
				for b2 := range sh.b2 {
					for c := range k {
						for r := range n { // row r of a x = b: sum over j <= r of a[j, r]*x[c, j] = b[c, r]
							s, m := B.at(c, r, b2, b3), math.Abs(B.at(c, r, b2, b3))
							for j := range r {
								s -= A.at(j, r, b2, b3) * ref.at(c, j, b2, b3)
								m += math.Abs(A.at(j, r, b2, b3)) * mag.at(c, j, b2, b3)
							}
							d := A.at(r, r, b2, b3)
							ref.v[ref.idx(c, r, b2, b3)] = s / d
							mag.v[mag.idx(c, r, b2, b3)] = m / math.Abs(d)
						}
					}
				}
			}
			requireClose(t, ref, got, seqMagTol(mag, float64(4*n+4)*seqU, 1e-7))
		})
	}
}

// TestHyperConnections checks DeepSeek V4's hyper-connection ops against
// float64 references: HCCombine's softmax and Sinkhorn normalization,
// HCPre's and HCPost's weighted sums (on strided views too).
func TestHyperConnections(t *testing.T) {
	rng := newRNG(t)
	const hc, mix = 4, 24
	for _, nIter := range []int{1, 3} {
		for _, nTok := range []int{1, 5} {
			t.Run(fmt.Sprintf("HCCombine/iter %d/tokens %d", nIter, nTok), func(t *testing.T) {
				e := newEnv(t)
				mv, sv, bv := randF32(rng, mix*nTok), randF32(rng, 3), randF32(rng, mix)
				const eps = 1e-3
				out := e.ctx.HCCombine(e.input(ggml.TypeF32, mv, mix, int64(nTok)), e.input(ggml.TypeF32, sv, 3), e.input(ggml.TypeF32, bv, mix), eps, nIter)
				if !ggml.HaveUpstream {
					require.ErrorIs(t, out.Err(), ggml.ErrUnsupported)
					require.ErrorContains(t, out.Err(), "-tags ggml_system")
					return
				}
				require.NoError(t, out.Err())
				require.Equal(t, [4]int64{hc, hc, int64(nTok), 1}, out.Ne())
				e.compute(out)
				got, err := ggml.Data[float32](out)
				require.NoError(t, err)
				ref := newND(hc, hc, nTok)
				for tok := range nTok {
					var m [hc][hc]float64 // m[d][s]
					for s := range hc {
						var z float64
						for d := range hc {
							i := 2*hc + d + hc*s
							m[d][s] = math.Exp(float64(mv[tok*mix+i])*float64(sv[2]) + float64(bv[i]))
							z += m[d][s]
						}
						for d := range hc {
							m[d][s] = m[d][s]/z + eps
						}
					}
					overS := func() {
						for d := range hc {
							z := eps
							for s := range hc {
								z += m[d][s]
							}
							for s := range hc {
								m[d][s] /= z
							}
						}
					}
					overD := func() {
						for s := range hc {
							z := eps
							for d := range hc {
								z += m[d][s]
							}
							for d := range hc {
								m[d][s] /= z
							}
						}
					}
					overS()
					for range nIter - 1 {
						overD()
						overS()
					}
					for d := range hc {
						for s := range hc {
							ref.v[ref.idx(d, s, tok, 0)] = m[d][s]
						}
					}
				}
				// Values in [0, 1], each through a few dozen f32 roundings.
				requireClose(t, ref, got, func(int) float64 { return float64(40*nIter) * seqU })
			})
		}
	}
	t.Run("HCPre and HCPost", func(t *testing.T) {
		e := newEnv(t)
		const n, nTok = 6, 3
		// x of HCPre as a strided view: every other stream of 2*hc.
		bigX := randF32(rng, n*2*hc*nTok)
		big := e.input(ggml.TypeF32, bigX, n, 2*hc, nTok)
		x := e.ctx.View3D(big, n, hc, nTok, 2*big.Nb()[1], big.Nb()[2], 0)
		wv := randF32(rng, hc*nTok)
		pre := e.ctx.HCPre(x, e.input(ggml.TypeF32, wv, hc, nTok))
		lv, rv, pv, cv := randF32(rng, n*nTok), randF32(rng, n*hc*nTok), randF32(rng, hc*nTok), randF32(rng, hc*hc*nTok)
		post := e.ctx.HCPost(e.input(ggml.TypeF32, lv, n, nTok), e.input(ggml.TypeF32, rv, n, hc, nTok),
			e.input(ggml.TypeF32, pv, hc, nTok), e.input(ggml.TypeF32, cv, hc, hc, nTok))
		if !ggml.HaveUpstream {
			require.ErrorIs(t, pre.Err(), ggml.ErrUnsupported)
			return
		}
		require.NoError(t, e.ctx.Err())
		e.compute(pre, post)
		refPre, magPre := newND(n, nTok), newND(n, nTok)
		refPre.each(func(i, tok, _, _ int) {
			for h := range hc {
				p := float64(bigX[(tok*2*hc+2*h)*n+i]) * float64(wv[tok*hc+h])
				refPre.v[refPre.idx(i, tok, 0, 0)] += p
				magPre.v[magPre.idx(i, tok, 0, 0)] += math.Abs(p)
			}
		})
		got, err := ggml.Data[float32](pre)
		require.NoError(t, err)
		requireClose(t, refPre, got, seqMagTol(magPre, 2*hc*seqU, 1e-7))

		refPost, magPost := newND(n, hc, nTok), newND(n, hc, nTok)
		refPost.each(func(i, d, tok, _ int) {
			p := float64(lv[tok*n+i]) * float64(pv[tok*hc+d])
			sum, sm := p, math.Abs(p)
			for s := range hc {
				p := float64(rv[(tok*hc+s)*n+i]) * float64(cv[(tok*hc+s)*hc+d])
				sum += p
				sm += math.Abs(p)
			}
			refPost.v[refPost.idx(i, d, tok, 0)], magPost.v[magPost.idx(i, d, tok, 0)] = sum, sm
		})
		got, err = ggml.Data[float32](post)
		require.NoError(t, err)
		requireClose(t, refPost, got, seqMagTol(magPost, 2*(hc+1)*seqU, 1e-7))
	})
}

// TestHyperConnectionsMisuse checks the hyper-connection ops' rules by
// error kind.
func TestHyperConnectionsMisuse(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 64, NoAlloc: true})
	require.NoError(t, err)
	defer func() { c.Close() }()
	f := func(ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF32, ne...) }
	// comb builds HCCombine on mixes of type ty and tensors of shapes ne:
	// mixes, scale, base.
	comb := func(nIter int, ty ggml.Type, ne ...[]int64) func() *ggml.Tensor {
		return func() *ggml.Tensor {
			return c.HCCombine(c.NewTensor(ty, ne[0]...), f(ne[1]...), f(ne[2]...), 1e-6, nIter)
		}
	}
	type s = []int64
	cases := []struct {
		name string
		want error
		op   func() *ggml.Tensor
	}{
		{"comb ok", nil, comb(2, ggml.TypeF32, s{24, 3}, s{3}, s{24})},
		{"comb nIter 0", ggml.ErrInvalid, comb(0, ggml.TypeF32, s{24, 3}, s{3}, s{24})},
		{"comb hc 3", ggml.ErrShape, comb(1, ggml.TypeF32, s{15, 3}, s{3}, s{15})},
		{"comb 3-d mixes", ggml.ErrShape, comb(1, ggml.TypeF32, s{24, 3, 2}, s{3}, s{24})},
		{"comb short scale", ggml.ErrShape, comb(1, ggml.TypeF32, s{24, 3}, s{2}, s{24})},
		{"comb base", ggml.ErrShape, comb(1, ggml.TypeF32, s{24, 3}, s{3}, s{24, 2})},
		{"comb f16", ggml.ErrType, comb(1, ggml.TypeF16, s{24, 3}, s{3}, s{24})},
		{"pre ok", nil, func() *ggml.Tensor { return c.HCPre(f(6, 4, 3), f(4, 3)) }},
		{"pre no streams", ggml.ErrShape, func() *ggml.Tensor { return c.HCPre(f(6, 0, 3), f(0, 3)) }},
		{"pre 4-d x", ggml.ErrShape, func() *ggml.Tensor { return c.HCPre(f(6, 4, 3, 2), f(4, 3)) }},
		{"pre weights", ggml.ErrShape, func() *ggml.Tensor { return c.HCPre(f(6, 4, 3), f(4, 2)) }},
		{"post ok", nil, func() *ggml.Tensor { return c.HCPost(f(6, 3), f(6, 4, 3), f(4, 3), f(4, 4, 3)) }},
		{"post 3-d x", ggml.ErrShape, func() *ggml.Tensor { return c.HCPost(f(6, 3, 2), f(6, 4, 3), f(4, 3), f(4, 4, 3)) }},
		{"post residual", ggml.ErrShape, func() *ggml.Tensor { return c.HCPost(f(6, 3), f(5, 4, 3), f(4, 3), f(4, 4, 3)) }},
		{"post post", ggml.ErrShape, func() *ggml.Tensor { return c.HCPost(f(6, 3), f(6, 4, 3), f(3, 3), f(4, 4, 3)) }},
		{"post comb", ggml.ErrShape, func() *ggml.Tensor { return c.HCPost(f(6, 3), f(6, 4, 3), f(4, 3), f(4, 3, 3)) }},
	}
	for _, cs := range cases {
		require.NoError(t, c.Err(), "a clean context before %s", cs.name)
		err := cs.op().Err()
		switch {
		case !ggml.HaveUpstream:
			require.ErrorIs(t, err, ggml.ErrUnsupported, cs.name)
		case cs.want == nil:
			require.NoError(t, err, cs.name)
		default:
			require.ErrorIs(t, err, cs.want, cs.name)
		}
		if err != nil { // the error is sticky: a fresh context for the next case
			c.Close()
			c, _ = ggml.NewContext(ggml.ContextParams{MaxTensors: 64, NoAlloc: true})
		}
	}
}
