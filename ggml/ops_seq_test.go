package ggml_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// f32 unit roundoff.
const seqU = 6e-8

// seqRaw creates an input tensor set from raw bytes (quantized data).
func (e *env) seqRaw(ty ggml.Type, data []byte, ne ...int64) *ggml.Tensor {
	x := e.ctx.NewTensor(ty, ne...).SetInput()
	e.inputs = append(e.inputs, func() error { return ggml.SetBytes(x, data) })
	return x
}

// seqWeights makes rows of n0 random values stored as ty: the raw bytes
// and the values ggml reads back (ggml.Dequantize).
func seqWeights(t *testing.T, rng *rand.Rand, ty ggml.Type, n0, rows int) ([]byte, []float32) {
	t.Helper()
	raw, err := ggml.Quantize(ty, randF32(rng, n0*rows), int64(n0), nil)
	require.NoError(t, err)
	deq, err := ggml.Dequantize(ty, raw)
	require.NoError(t, err)
	return raw, deq
}

// seqOutF32 reads an f32 result and checks its shape.
func seqOutF32(t *testing.T, out *ggml.Tensor, ne ...int64) []float32 {
	t.Helper()
	want := [4]int64{1, 1, 1, 1}
	copy(want[:], ne)
	require.Equal(t, want, out.Ne())
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	return got
}

// seqMagTol is a tolerance of rel times a magnitude (the sum of |terms|
// that made each value), plus an absolute floor.
func seqMagTol(mag nd, rel, abs float64) func(int) float64 {
	return func(i int) float64 { return rel*mag.v[i] + abs }
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

func TestSSMConv(t *testing.T) {
	rng := newRNG(t)
	cases := []struct {
		dConv, dInner, nT, nS int
		padSeq                bool // sx's sequences apart in memory (nb2 > ne0*ne1*4)
	}{
		{4, 5, 3, 2, false},
		{4, 16, 1, 3, true},
		{1, 7, 5, 1, false},
		{3, 6, 8, 2, true},
		{4, 5, 0, 2, false}, // no new tokens: an empty result
	}
	for _, cs := range cases {
		t.Run(fmt.Sprintf("%+v", cs), func(t *testing.T) {
			e := newEnv(t)
			n0 := cs.dConv - 1 + cs.nT
			seq := n0 * cs.dInner
			stride := seq
			if cs.padSeq {
				stride += 3 * n0
			}
			xv := randF32(rng, stride*cs.nS)
			var sx *ggml.Tensor
			if cs.padSeq {
				in := e.input(ggml.TypeF32, xv, int64(stride*cs.nS))
				sx = e.ctx.View3D(in, int64(n0), int64(cs.dInner), int64(cs.nS), uint64(4*n0), uint64(4*stride), 0)
			} else {
				sx = e.input(ggml.TypeF32, xv, int64(n0), int64(cs.dInner), int64(cs.nS))
			}
			cv := randF32(rng, cs.dConv*cs.dInner)
			cw := e.input(ggml.TypeF32, cv, int64(cs.dConv), int64(cs.dInner))
			out := e.ctx.SSMConv(sx, cw)
			require.NoError(t, out.Err())
			e.compute(out)
			got := seqOutF32(t, out, int64(cs.dInner), int64(cs.nT), int64(cs.nS))
			ref, mag := newND(cs.dInner, cs.nT, cs.nS), newND(cs.dInner, cs.nT, cs.nS)
			ref.each(func(ch, tok, s, _ int) {
				for i := range cs.dConv {
					p := float64(xv[s*stride+ch*n0+tok+i]) * float64(cv[ch*cs.dConv+i])
					ref.v[ref.idx(ch, tok, s, 0)] += p
					mag.v[mag.idx(ch, tok, s, 0)] += math.Abs(p)
				}
			})
			requireClose(t, ref, got, seqMagTol(mag, 2*float64(cs.dConv+1)*seqU, 1e-7))
		})
	}
}

func seqSoftplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

func TestSSMScan(t *testing.T) {
	rng := newRNG(t)
	cases := []struct {
		name                                   string
		dState, headDim, nHead, nGroup, nT, nS int
		mamba1                                 bool
		nStates                                int
		stridedX                               bool
	}{
		{"mamba1", 16, 4, 3, 1, 3, 2, true, 3, false},
		{"mamba1 strided x", 16, 5, 2, 2, 4, 1, true, 2, true},
		{"mamba2", 16, 4, 4, 2, 3, 2, false, 2, false},
		{"mamba2 simd+tail", 72, 3, 4, 1, 3, 2, false, 3, true},
		{"mamba2 simd", 128, 2, 2, 2, 2, 3, false, 3, false},
		{"dState 1", 1, 3, 2, 1, 2, 2, false, 1, false}, // A [1 nHead] is both forms
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			e := newEnv(t)
			S := newND(cs.dState, cs.headDim, cs.nHead, cs.nStates)
			sv := randF32(rng, len(S.v))
			S = fromF32(sv, cs.dState, cs.headDim, cs.nHead, cs.nStates)
			s := e.input(ggml.TypeF32, sv, int64(cs.dState), int64(cs.headDim), int64(cs.nHead), int64(cs.nStates))

			X := newND(cs.headDim, cs.nHead, cs.nT, cs.nS)
			var x *ggml.Tensor
			if cs.stridedX { // every other token of a larger input
				xv := randF32(rng, cs.headDim*cs.nHead*2*cs.nT*cs.nS)
				big := e.input(ggml.TypeF32, xv, int64(cs.headDim), int64(cs.nHead), int64(2*cs.nT), int64(cs.nS))
				x = e.ctx.View4D(big, int64(cs.headDim), int64(cs.nHead), int64(cs.nT), int64(cs.nS), big.Nb()[1], 2*big.Nb()[2], big.Nb()[3], 0)
				BIG := fromF32(xv, cs.headDim, cs.nHead, 2*cs.nT, cs.nS)
				X.each(func(d, h, tok, q int) { X.v[X.idx(d, h, tok, q)] = BIG.at(d, h, 2*tok, q) })
			} else {
				xv := randF32(rng, len(X.v))
				X = fromF32(xv, cs.headDim, cs.nHead, cs.nT, cs.nS)
				x = e.input(ggml.TypeF32, xv, int64(cs.headDim), int64(cs.nHead), int64(cs.nT), int64(cs.nS))
			}
			dtv := randF32(rng, cs.nHead*cs.nT*cs.nS)
			for i := range dtv {
				dtv[i] = 0.5*dtv[i] + 0.5 // ggml's logf(1+expf(x)) loses accuracy for very negative x
			}
			dtv[0] = 25 // softplus's x > 20 branch
			dt := e.input(ggml.TypeF32, dtv, int64(cs.nHead), int64(cs.nT), int64(cs.nS))
			aN0 := 1
			if cs.mamba1 {
				aN0 = cs.dState
			}
			av := randF32(rng, aN0*cs.nHead)
			for i := range av {
				av[i] = -float32(math.Exp(float64(av[i]) / 2)) // decays: A < 0
			}
			a := e.input(ggml.TypeF32, av, int64(aN0), int64(cs.nHead))
			bv, cv := randF32(rng, cs.dState*cs.nGroup*cs.nT*cs.nS), randF32(rng, cs.dState*cs.nGroup*cs.nT*cs.nS)
			b := e.input(ggml.TypeF32, bv, int64(cs.dState), int64(cs.nGroup), int64(cs.nT), int64(cs.nS))
			cm := e.input(ggml.TypeF32, cv, int64(cs.dState), int64(cs.nGroup), int64(cs.nT), int64(cs.nS))
			idv := make([]int32, cs.nS)
			for i := range idv {
				idv[i] = int32(rng.IntN(cs.nStates)) // repeats allowed: sequences may start from one state
			}
			ids := e.input(ggml.TypeI32, idv, int64(cs.nS))
			out := e.ctx.SSMScan(s, x, dt, a, b, cm, ids)
			require.NoError(t, out.Err())
			e.compute(out)
			ny := len(X.v)
			nst := cs.dState * cs.headDim * cs.nHead
			got := seqOutF32(t, out, int64(ny+nst*cs.nS))

			A := fromF32(av, aN0, cs.nHead)
			B := fromF32(bv, cs.dState, cs.nGroup, cs.nT, cs.nS)
			C := fromF32(cv, cs.dState, cs.nGroup, cs.nT, cs.nS)
			DT := fromF32(dtv, cs.nHead, cs.nT, cs.nS)
			ref, mag := newND(ny+nst*cs.nS), newND(ny+nst*cs.nS)
			for q := range cs.nS {
				st := make([]float64, nst)
				sm := make([]float64, nst) // |terms| shadow of the state
				for i := range st {
					st[i] = S.v[int(idv[q])*nst+i]
					sm[i] = math.Abs(st[i])
				}
				for tok := range cs.nT {
					for h := range cs.nHead {
						dts := seqSoftplus(DT.at(h, tok, q, 0))
						g := h / (cs.nHead / cs.nGroup)
						for d := range cs.headDim {
							xdt := X.at(d, h, tok, q) * dts
							y, ym := 0.0, 0.0
							for i := range cs.dState {
								ai := 0
								if cs.mamba1 {
									ai = i
								}
								dA := math.Exp(dts * A.at(ai, h, 0, 0))
								k := i + cs.dState*(d+cs.headDim*h)
								st[k] = st[k]*dA + B.at(i, g, tok, q)*xdt
								sm[k] = sm[k]*dA + math.Abs(B.at(i, g, tok, q)*xdt)
								y += st[k] * C.at(i, g, tok, q)
								ym += sm[k] * math.Abs(C.at(i, g, tok, q))
							}
							yi := X.idx(d, h, tok, q)
							ref.v[yi], mag.v[yi] = y, ym
						}
					}
				}
				copy(ref.v[ny+q*nst:], st)
				copy(mag.v[ny+q*nst:], sm)
			}
			// f32 rounding of the dot over states and of each token's update.
			rel := float64(2*cs.dState+12*cs.nT) * seqU
			requireClose(t, ref, got, seqMagTol(mag, rel, 1e-6))
		})
	}
}

// seqRecurrence runs a linear-attention recurrence in float64 for tokens
// grouped by sequence: step(t, h, st, sm) updates the state of head h (S*S
// values, index i*S + j) and its |terms| shadow for token t and returns
// that token's outputs for the head and their magnitudes. The result is
// laid out as ggml's: outputs [S*H, nTok], then the final states.
func seqRecurrence(S, H, nTok, nSeq int, state []float32,
	step func(t, h int, st, sm []float64) (out, mag []float64)) (nd, nd) {
	C := S * H
	ref, mag := newND(C, nTok+S*nSeq), newND(C, nTok+S*nSeq)
	per := nTok / nSeq
	for q := range nSeq {
		for h := range H {
			st, sm := make([]float64, S*S), make([]float64, S*S)
			base := q*S*S*H + h*S*S
			for i := range st {
				st[i] = float64(state[base+i])
				sm[i] = math.Abs(st[i])
			}
			for t := q * per; t < (q+1)*per; t++ {
				o, m := step(t, h, st, sm)
				copy(ref.v[t*C+h*S:], o)
				copy(mag.v[t*C+h*S:], m)
			}
			copy(ref.v[nTok*C+base:], st)
			copy(mag.v[nTok*C+base:], sm)
		}
	}
	return ref, mag
}

// seqThreads sets the CPU backend's threads: RWKVWKV6, GatedLinearAttn and
// RWKVWKV7 need at least as many heads as threads (see their docs).
func seqThreads(t *testing.T, e *env, n int) {
	t.Helper()
	require.NoError(t, e.be.SetThreads(n))
}

func TestRWKVWKV6(t *testing.T) {
	rng := newRNG(t)
	for _, sh := range []struct{ S, H, T, nSeq int }{{20, 3, 4, 2}, {32, 2, 3, 1}, {4, 2, 6, 3}} {
		t.Run(fmt.Sprintf("%+v", sh), func(t *testing.T) {
			e := newEnv(t)
			seqThreads(t, e, 2)
			S, H, T := sh.S, sh.H, sh.T
			n := S * H * T
			kv, vv, rv := randF32(rng, n), randF32(rng, n), randF32(rng, n)
			tfv, tdv := randF32(rng, S*H), randF32(rng, n)
			for i := range tdv {
				tdv[i] = float32(math.Exp(-math.Exp(float64(tdv[i]) / 2))) // decays in (0, 1)
			}
			sv := randF32(rng, S*S*H*sh.nSeq)
			shp := []int64{int64(S), int64(H), int64(T)}
			k, v, r := e.input(ggml.TypeF32, kv, shp...), e.input(ggml.TypeF32, vv, shp...), e.input(ggml.TypeF32, rv, shp...)
			tf, td := e.input(ggml.TypeF32, tfv, int64(S), int64(H)), e.input(ggml.TypeF32, tdv, shp...)
			state := e.input(ggml.TypeF32, sv, int64(S*S*H), int64(sh.nSeq))
			out := e.ctx.RWKVWKV6(k, v, r, tf, td, state)
			require.NoError(t, out.Err())
			e.compute(out)
			got := seqOutF32(t, out, int64(S*H), int64(T+S*sh.nSeq))
			C := S * H
			ref, mag := seqRecurrence(S, H, T, sh.nSeq, sv, func(tok, h int, st, sm []float64) ([]float64, []float64) {
				o, m := make([]float64, S), make([]float64, S)
				for i := range S {
					at := tok*C + h*S + i
					kk, rr, u, w := float64(kv[at]), float64(rv[at]), float64(tfv[h*S+i]), float64(tdv[at])
					for j := range S {
						kvp := kk * float64(vv[tok*C+h*S+j])
						o[j] += rr * (u*kvp + st[i*S+j])
						m[j] += math.Abs(rr) * (math.Abs(u*kvp) + sm[i*S+j])
						st[i*S+j] = st[i*S+j]*w + kvp
						sm[i*S+j] = sm[i*S+j]*w + math.Abs(kvp)
					}
				}
				return o, m
			})
			requireClose(t, ref, got, seqMagTol(mag, float64(2*S+12*T)*seqU, 1e-6))
		})
	}
}

func TestGatedLinearAttn(t *testing.T) {
	rng := newRNG(t)
	for _, sh := range []struct{ S, H, T, nSeq int }{{20, 3, 4, 2}, {32, 2, 3, 1}, {5, 4, 2, 2}} {
		t.Run(fmt.Sprintf("%+v", sh), func(t *testing.T) {
			e := newEnv(t)
			seqThreads(t, e, 2)
			S, H, T := sh.S, sh.H, sh.T
			n := S * H * T
			kv, vv, qv, gv := randF32(rng, n), randF32(rng, n), randF32(rng, n), randF32(rng, n)
			for i := range gv {
				gv[i] = float32(math.Exp(-math.Exp(float64(gv[i]) / 2)))
			}
			sv := randF32(rng, S*S*H*sh.nSeq)
			shp := []int64{int64(S), int64(H), int64(T)}
			k, v := e.input(ggml.TypeF32, kv, shp...), e.input(ggml.TypeF32, vv, shp...)
			q, g := e.input(ggml.TypeF32, qv, shp...), e.input(ggml.TypeF32, gv, shp...)
			state := e.input(ggml.TypeF32, sv, int64(S*S*H), int64(sh.nSeq))
			scale := float32(1 / math.Sqrt(float64(S)))
			out := e.ctx.GatedLinearAttn(k, v, q, g, state, scale)
			require.NoError(t, out.Err())
			e.compute(out)
			got := seqOutF32(t, out, int64(S*H), int64(T+S*sh.nSeq))
			C := S * H
			ref, mag := seqRecurrence(S, H, T, sh.nSeq, sv, func(tok, h int, st, sm []float64) ([]float64, []float64) {
				o, m := make([]float64, S), make([]float64, S)
				for i := range S {
					at := tok*C + h*S + i
					kk, qq, gg := float64(kv[at]), float64(qv[at])*float64(scale), float64(gv[at])
					for j := range S {
						kvp := kk * float64(vv[tok*C+h*S+j])
						st[i*S+j] = st[i*S+j]*gg + kvp
						sm[i*S+j] = sm[i*S+j]*gg + math.Abs(kvp)
						o[j] += qq * st[i*S+j]
						m[j] += math.Abs(qq) * sm[i*S+j]
					}
				}
				return o, m
			})
			requireClose(t, ref, got, seqMagTol(mag, float64(2*S+12*T)*seqU, 1e-6))
		})
	}
}

func TestRWKVWKV7(t *testing.T) {
	rng := newRNG(t)
	// Head sizes that are not multiples of 64 run padded with zeros.
	shapes := []struct{ S, H, T, nSeq int }{{64, 2, 4, 2}, {64, 1, 3, 1}, {128, 3, 2, 2},
		{20, 3, 4, 2}, {1, 2, 3, 3}, {33, 4, 6, 3}, {100, 2, 2, 1}, {7, 1, 5, 1}}
	for _, sh := range shapes {
		t.Run(fmt.Sprintf("%+v", sh), func(t *testing.T) {
			e := newEnv(t)
			seqThreads(t, e, min(sh.H, 2))
			S, H, T := sh.S, sh.H, sh.T
			n := S * H * T
			rv, wv, kv, vv := randF32(rng, n), randF32(rng, n), randF32(rng, n), randF32(rng, n)
			av, bv := randF32(rng, n), randF32(rng, n)
			for i := range wv {
				wv[i] = float32(math.Exp(-math.Exp(float64(wv[i]) / 2)))
				kv[i] /= float32(math.Sqrt(float64(S)))
				av[i] /= float32(S)
				bv[i] /= float32(math.Sqrt(float64(S)))
			}
			sv := randF32(rng, S*S*H*sh.nSeq)
			shp := []int64{int64(S), int64(H), int64(T)}
			in := func(v []float32) *ggml.Tensor { return e.input(ggml.TypeF32, v, shp...) }
			state := e.input(ggml.TypeF32, sv, int64(S*S*H), int64(sh.nSeq))
			out := e.ctx.RWKVWKV7(in(rv), in(wv), in(kv), in(vv), in(av), in(bv), state)
			require.NoError(t, out.Err())
			e.compute(out)
			got := seqOutF32(t, out, int64(S*H), int64(T+S*sh.nSeq))
			C := S * H
			ref, mag := seqRecurrence(S, H, T, sh.nSeq, sv, func(tok, h int, st, sm []float64) ([]float64, []float64) {
				o, m := make([]float64, S), make([]float64, S)
				at := func(j int) int { return tok*C + h*S + j }
				for i := range S {
					sa, sam := 0.0, 0.0
					for j := range S {
						sa += float64(av[at(j)]) * st[i*S+j]
						sam += math.Abs(float64(av[at(j)])) * sm[i*S+j]
					}
					for j := range S {
						w, kvp, b := float64(wv[at(j)]), float64(kv[at(j)])*float64(vv[at(i)]), float64(bv[at(j)])
						st[i*S+j] = st[i*S+j]*w + kvp + sa*b
						sm[i*S+j] = sm[i*S+j]*w + math.Abs(kvp) + sam*math.Abs(b)
						o[i] += st[i*S+j] * float64(rv[at(j)])
						m[i] += sm[i*S+j] * math.Abs(float64(rv[at(j)]))
					}
				}
				return o, m
			})
			requireClose(t, ref, got, seqMagTol(mag, float64(4*S+12*T)*seqU, 1e-6))
		})
	}
}

// TestRWKVWKV7Room checks that a padded RWKVWKV7 (S not a multiple of 64)
// asks for room for all the tensors it makes before making any.
func TestRWKVWKV7Room(t *testing.T) {
	for _, c := range []struct{ s, tensors int64 }{{64, 1}, {20, 15}} {
		for n := max(7, c.tensors+5); n <= c.tensors+8; n++ {
			ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: int(n), NoAlloc: true})
			require.NoError(t, err)
			var in []*ggml.Tensor
			for range 6 {
				in = append(in, ctx.NewTensor(ggml.TypeF32, c.s, 2, 4))
			}
			in = append(in, ctx.NewTensor(ggml.TypeF32, c.s*c.s*2, 2))
			out := ctx.RWKVWKV7(in[0], in[1], in[2], in[3], in[4], in[5], in[6])
			if n >= 7+c.tensors {
				require.NoError(t, out.Err(), "S %d with room for %d tensors", c.s, n)
				require.Len(t, ctx.Tensors(), int(7+c.tensors))
				require.Equal(t, []int64{c.s * 2, 4 + c.s*2}, out.Shape())
			} else {
				require.ErrorIs(t, out.Err(), ggml.ErrNoMemory, "S %d with room for %d tensors", c.s, n)
				require.Len(t, ctx.Tensors(), 7, "nothing made")
			}
			ctx.Close()
		}
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

func TestWinPartUnpart(t *testing.T) {
	rng := newRNG(t)
	for _, sh := range []struct{ C, W, H, w int }{{3, 5, 4, 3}, {2, 6, 4, 2}, {4, 3, 2, 5}, {1, 7, 1, 7}} {
		t.Run(fmt.Sprintf("%+v", sh), func(t *testing.T) {
			e := newEnv(t)
			xv := randF32(rng, sh.C*sh.W*sh.H)
			x := e.input(ggml.TypeF32, xv, int64(sh.C), int64(sh.W), int64(sh.H))
			part := e.ctx.WinPart(x, sh.w)
			back := e.ctx.WinUnpart(part, sh.W, sh.H, sh.w)
			require.NoError(t, back.Err())
			e.compute(part, back)
			nx, ny := (sh.W+sh.w-1)/sh.w, (sh.H+sh.w-1)/sh.w
			gotPart := seqOutF32(t, part, int64(sh.C), int64(sh.w), int64(sh.w), int64(nx*ny))
			X := fromF32(xv, sh.C, sh.W, sh.H)
			ref := newND(sh.C, sh.w, sh.w, nx*ny)
			ref.each(func(c, i1, i2, win int) {
				px, py := win%nx, win/nx
				if x, y := px*sh.w+i1, py*sh.w+i2; x < sh.W && y < sh.H {
					ref.v[ref.idx(c, i1, i2, win)] = X.at(c, x, y, 0)
				}
			})
			requireClose(t, ref, gotPart, func(int) float64 { return 0 })
			requireClose(t, X, seqOutF32(t, back, int64(sh.C), int64(sh.W), int64(sh.H)), func(int) float64 { return 0 })
		})
	}
}

func TestRelPos(t *testing.T) {
	rng := newRNG(t)
	t.Run("get", func(t *testing.T) {
		e := newEnv(t)
		const c, n = 4, 3
		av := toF16(randF32(rng, c*(2*n-1)))
		a := e.input(ggml.TypeF16, av, c, 2*n-1)
		out := e.ctx.GetRelPos(a, n, n)
		require.NoError(t, out.Err())
		e.compute(out)
		require.Equal(t, [4]int64{c, n, n, 1}, out.Ne())
		require.Equal(t, ggml.TypeF16, out.Type())
		got, err := ggml.Data[uint16](out)
		require.NoError(t, err)
		for q := range n {
			for k := range n {
				for i := range c {
					require.Equal(t, av[(n-1-k+q)*c+i], got[(q*n+k)*c+i], "[%d %d %d]", i, k, q)
				}
			}
		}
	})
	t.Run("add", func(t *testing.T) {
		e := newEnv(t)
		const W, P1, P2, R2 = 3, 2, 2, 2
		av, pwv, phv := randF32(rng, W*W*P1*P2*R2), randF32(rng, W*P1*P2*R2), randF32(rng, W*P1*P2*R2)
		a := e.input(ggml.TypeF32, av, W*W, P1*P2, R2)
		pw := e.input(ggml.TypeF32, pwv, W, P1, P2, R2)
		ph := e.input(ggml.TypeF32, phv, W, P1, P2, R2)
		out := e.ctx.AddRelPos(a, pw, ph)
		require.NoError(t, out.Err())
		e.compute(out)
		got := seqOutF32(t, out, W*W, P1*P2, R2)
		ref, mag := newND(W*W, P1*P2*R2), newND(W*W, P1*P2*R2)
		ref.each(func(xy, r, _, _ int) {
			x, y := xy%W, xy/W
			terms := []float64{float64(av[r*W*W+xy]), float64(pwv[r*W+x]), float64(phv[r*W+y])}
			ref.v[ref.idx(xy, r, 0, 0)] = terms[0] + terms[1] + terms[2]
			mag.v[mag.idx(xy, r, 0, 0)] = math.Abs(terms[0]) + math.Abs(terms[1]) + math.Abs(terms[2])
		})
		requireClose(t, ref, got, seqMagTol(mag, 3*seqU, 0))
	})
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

func TestSeqMisuse(t *testing.T) {
	f32 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF32, ne...) }
	i32 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeI32, ne...) }
	f16 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF16, ne...) }
	// a [2 3 4] with dimension 0 strided but not transposed: nb [8 24 4].
	strided := func(c *ggml.Context) *ggml.Tensor { return c.Permute(f32(c, 2, 3, 4), 2, 0, 1, 3) }
	wkv6 := func(c *ggml.Context, k, tf, state *ggml.Tensor) *ggml.Tensor {
		kn := k.Ne()
		sh := []int64{kn[0], kn[1], kn[2]}
		return c.RWKVWKV6(k, f32(c, sh...), f32(c, sh...), tf, f32(c, sh...), state)
	}
	recur := func(c *ggml.Context, ty ggml.Type, s, h, tok int64) []*ggml.Tensor {
		var ts []*ggml.Tensor
		for range 6 {
			ts = append(ts, c.NewTensor(ty, s, h, tok))
		}
		return ts
	}
	scan := func(c *ggml.Context, xType ggml.Type, aN0, nGroup, nIDs int64) *ggml.Tensor {
		// dState 16, headDim 4, nHead 2, 3 tokens, 2 sequences.
		return c.SSMScan(f32(c, 16, 4, 2, 2), c.NewTensor(xType, 4, 2, 3, 2), f32(c, 2, 3, 2), f32(c, aN0, 2),
			f32(c, 16, nGroup, 3, 2), f32(c, 16, nGroup, 3, 2), i32(c, nIDs))
	}
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		// out_prod: the constructor asserts shapes and divides by a.ne2; the
		// kernel aborts on f16 a and asserts b f32, nb00, no quantized broadcast.
		{"out_prod f16 a", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(f16(c, 4, 3), f32(c, 5, 3)) }},
		{"out_prod f16 b", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(f32(c, 4, 3), f16(c, 5, 3)) }},
		{"out_prod ne1", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(f32(c, 4, 3), f32(c, 5, 2)) }},
		{"out_prod a.ne2 0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(f32(c, 4, 3, 0), f32(c, 5, 3, 2)) }},
		{"out_prod broadcast", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(f32(c, 4, 3, 2), f32(c, 5, 3, 3)) }},
		{"out_prod transposed a", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.OutProd(c.Transpose(f32(c, 3, 4)), f32(c, 5, 3))
		}},
		{"out_prod strided a", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(strided(c), f32(c, 5, 4, 2)) }},
		{"out_prod quantized broadcast", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.OutProd(c.NewTensor(ggml.TypeQ8_0, 32, 3, 1), f32(c, 5, 3, 2))
		}},
		// mul_mat_id
		{"mul_mat_id f32 ids", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 1, 2), f32(c, 2, 2)) }},
		{"mul_mat_id i32 as", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(i32(c, 8, 4, 3), f32(c, 8, 1, 2), i32(c, 2, 2)) }},
		{"mul_mat_id f16 b for f32 as", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(f32(c, 8, 4, 3), f16(c, 8, 1, 2), i32(c, 2, 2))
		}},
		{"mul_mat_id 4-d as", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(f32(c, 8, 4, 3, 2), f32(c, 8, 1, 2), i32(c, 2, 2))
		}},
		{"mul_mat_id ids per token", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 1, 2), i32(c, 2, 3)) }},
		{"mul_mat_id b rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 2, 2), i32(c, 3, 2)) }},
		{"mul_mat_id b.ne1 0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 0, 2), i32(c, 3, 2)) }},
		{"mul_mat_id k", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 7, 1, 2), i32(c, 2, 2)) }},
		{"mul_mat_id transposed b", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(f32(c, 2, 4, 3), c.Transpose(f32(c, 3, 2)), i32(c, 3, 1))
		}},
		{"mul_mat_id transposed as", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(c.Permute(f32(c, 4, 8, 3), 1, 0, 2, 3), f32(c, 8, 1, 2), i32(c, 2, 2))
		}},
		{"mul_mat_id ids from a wide argsort", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 1, 2), c.Argsort(f32(c, 5, 2), ggml.SortDesc))
		}},
		{"mul_mat_id computed ids", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 1, 2), c.Transpose(i32(c, 2, 2)))
		}},
		{"mul_mat_id nil ids", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 1, 2), nil) }},
		// add_id: the kernel aborts on non-f32 a and asserts nb0 of b.
		{"add_id f16 a", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.AddID(f16(c, 4, 3, 2), f32(c, 4, 5), i32(c, 3, 2)) }},
		{"add_id f32 ids", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.AddID(f32(c, 4, 3, 2), f32(c, 4, 5), f32(c, 3, 2)) }},
		{"add_id ids rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.AddID(f32(c, 4, 3, 2), f32(c, 4, 5), i32(c, 2, 2)) }},
		{"add_id transposed b", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.AddID(f32(c, 4, 3, 2), c.Transpose(f32(c, 5, 4)), i32(c, 3, 2))
		}},
		{"add_id 3-d b", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.AddID(f32(c, 4, 3, 2), f32(c, 4, 5, 2), i32(c, 3, 2)) }},
		{"add_id computed ids", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.AddID(f32(c, 4, 3, 2), f32(c, 4, 5), c.Cont(i32(c, 3, 2)))
		}},
		// ssm_conv
		{"ssm_conv f16 sx", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.SSMConv(f16(c, 6, 5, 2), f32(c, 4, 5)) }},
		{"ssm_conv 4-d sx", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SSMConv(f32(c, 6, 5, 2, 2), f32(c, 4, 5)) }},
		{"ssm_conv short sx", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SSMConv(f32(c, 2, 5, 2), f32(c, 4, 5)) }},
		{"ssm_conv channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SSMConv(f32(c, 6, 4, 2), f32(c, 4, 5)) }},
		{"ssm_conv width 0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SSMConv(f32(c, 6, 5, 2), f32(c, 0, 5)) }},
		{"ssm_conv strided rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SSMConv(c.Permute(f32(c, 5, 6, 2), 1, 0, 2, 3), f32(c, 4, 5))
		}},
		// ssm_scan: the kernel divides by B.ne1 and asserts nHead % nGroup.
		{"ssm_scan f16 x", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return scan(c, ggml.TypeF16, 1, 1, 2) }},
		{"ssm_scan A.ne0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return scan(c, ggml.TypeF32, 3, 1, 2) }},
		{"ssm_scan no group", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return scan(c, ggml.TypeF32, 1, 0, 2) }},
		{"ssm_scan groups", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return scan(c, ggml.TypeF32, 16, 3, 2) }},
		{"ssm_scan ids", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return scan(c, ggml.TypeF32, 1, 1, 3) }},
		{"ssm_scan strided ids", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// A column of an argsort: bounded, but ggml's kernel asserts nb0 = 4.
			col := c.View2D(c.Argsort(f32(c, 2, 2), ggml.SortAsc), 1, 2, 8, 0)
			ids := c.Permute(col, 1, 0, 2, 3)
			return c.SSMScan(f32(c, 16, 4, 2, 2), f32(c, 4, 2, 3, 2), f32(c, 2, 3, 2), f32(c, 1, 2),
				f32(c, 16, 1, 3, 2), f32(c, 16, 1, 3, 2), ids)
		}},
		{"ssm_scan transposed s", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SSMScan(c.Transpose(f32(c, 4, 16, 2, 2)), f32(c, 4, 2, 3, 2), f32(c, 2, 3, 2), f32(c, 1, 2),
				f32(c, 16, 1, 3, 2), f32(c, 16, 1, 3, 2), i32(c, 2))
		}},
		// rwkv_wkv6 / gla / wkv7: the kernels divide by H and by
		// nTokens/nSeqs, and index tf, r and the states unchecked.
		{"wkv6 no head", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return wkv6(c, f32(c, 4, 0, 2), f32(c, 0), f32(c, 0, 1)) }},
		{"wkv6 tokens per sequence", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return wkv6(c, f32(c, 4, 2, 3), f32(c, 4, 2), f32(c, 32, 2))
		}},
		{"wkv6 fewer tokens than sequences", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return wkv6(c, f32(c, 4, 2, 1), f32(c, 4, 2), f32(c, 32, 2))
		}},
		{"wkv6 tf", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return wkv6(c, f32(c, 4, 2, 2), f32(c, 4), f32(c, 32, 1)) }},
		{"wkv6 state", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return wkv6(c, f32(c, 4, 2, 2), f32(c, 4, 2), f32(c, 31, 1)) }},
		{"wkv6 i32 v", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.RWKVWKV6(f32(c, 4, 2, 2), i32(c, 4, 2, 2), f32(c, 4, 2, 2), f32(c, 4, 2), f32(c, 4, 2, 2), f32(c, 32, 1))
		}},
		{"wkv7 head size 32 state", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			ts := recur(c, ggml.TypeF32, 32, 2, 2)
			return c.RWKVWKV7(ts[0], ts[1], ts[2], ts[3], ts[4], ts[5], f32(c, 64*64*2, 1))
		}},
		{"wkv7 r shape", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			ts := recur(c, ggml.TypeF32, 64, 1, 2)
			return c.RWKVWKV7(f32(c, 64, 1, 1), ts[1], ts[2], ts[3], ts[4], ts[5], f32(c, 64*64, 1))
		}},
		{"gla f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			ts := recur(c, ggml.TypeF16, 4, 2, 2)
			return c.GatedLinearAttn(ts[0], ts[1], ts[2], ts[3], f32(c, 32, 1), 1)
		}},
		{"gla strided k", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			k := c.Permute(f32(c, 2, 4, 2), 1, 0, 2, 3)
			return c.GatedLinearAttn(k, f32(c, 4, 2, 2), f32(c, 4, 2, 2), f32(c, 4, 2, 2), f32(c, 32, 1), 1)
		}},
		{"gla no tokens", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			ts := recur(c, ggml.TypeF32, 4, 2, 0)
			return c.GatedLinearAttn(ts[0], ts[1], ts[2], ts[3], f32(c, 32, 1), 1)
		}},
		// solve_tri
		{"solve_tri upper", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.SolveTri(f32(c, 3, 3), f32(c, 2, 3), true, false, false) }},
		{"solve_tri unit", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.SolveTri(f32(c, 3, 3), f32(c, 2, 3), true, true, true) }},
		{"solve_tri not square", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SolveTri(f32(c, 3, 4), f32(c, 2, 4), true, true, false) }},
		{"solve_tri f16 b", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.SolveTri(f32(c, 3, 3), f16(c, 2, 3), true, true, false) }},
		{"solve_tri batch", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SolveTri(f32(c, 3, 3, 2), f32(c, 2, 3, 1), true, true, false)
		}},
		{"solve_tri transposed b", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SolveTri(f32(c, 3, 3), c.Transpose(f32(c, 3, 2)), true, true, false)
		}},
		// win_part / win_unpart: the constructor divides by w.
		{"win_part w 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.WinPart(f32(c, 3, 5, 4), 0) }},
		{"win_part f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.WinPart(f16(c, 3, 5, 4), 2) }},
		{"win_part 4-d", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.WinPart(f32(c, 3, 5, 4, 2), 2) }},
		{"win_part transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.WinPart(c.Transpose(f32(c, 5, 3)), 2) }},
		{"win_unpart windows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.WinUnpart(f32(c, 3, 2, 2, 4), 5, 5, 2) }},
		{"win_unpart negative", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.WinUnpart(f32(c, 3, 2, 2, 4), -1, 4, 2) }},
		// get_rel_pos / add_rel_pos
		{"get_rel_pos qh != kh", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.GetRelPos(f16(c, 4, 5), 3, 2) }},
		{"get_rel_pos ne1", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.GetRelPos(f16(c, 4, 4), 3, 3) }},
		{"get_rel_pos f32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.GetRelPos(f32(c, 4, 5), 3, 3) }},
		{"get_rel_pos 3-d", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.GetRelPos(f16(c, 4, 5, 2), 3, 3) }},
		{"get_rel_pos bf16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.GetRelPos(c.NewTensor(ggml.TypeBF16, 4, 5), 3, 3)
		}},
		{"add_rel_pos W²", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.AddRelPos(f32(c, 8, 4, 2), f32(c, 3, 2, 2, 2), f32(c, 3, 2, 2, 2))
		}},
		{"add_rel_pos f16 pw", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.AddRelPos(f32(c, 9, 4, 2), f16(c, 3, 2, 2, 2), f32(c, 3, 2, 2, 2))
		}},
		{"add_rel_pos 4-d a", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.AddRelPos(f32(c, 9, 4, 2, 2), f32(c, 3, 2, 2, 2), f32(c, 3, 2, 2, 2))
		}},
		// cross_entropy_loss(_back)
		{"cel shapes", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.CrossEntropyLoss(f32(c, 5, 3), f32(c, 5, 2)) }},
		{"cel f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.CrossEntropyLoss(f16(c, 5, 3), f16(c, 5, 3)) }},
		{"cel transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.CrossEntropyLoss(c.Transpose(f32(c, 3, 5)), f32(c, 5, 3))
		}},
		{"cel uneven rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			p := c.Permute(f32(c, 4, 3, 2), 0, 2, 1, 3) // [4 2 3], nb [4 48 16]
			return c.CrossEntropyLoss(p, f32(c, 4, 2, 3))
		}},
		{"celb grad not scalar", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.CrossEntropyLossBack(f32(c, 2), f32(c, 5, 3), f32(c, 5, 3))
		}},
		{"celb f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.CrossEntropyLossBack(f32(c, 1), f16(c, 5, 3), f16(c, 5, 3))
		}},
		{"celb view", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			a := c.View2D(f32(c, 8, 3), 5, 3, 32, 0)
			return c.CrossEntropyLossBack(f32(c, 1), a, f32(c, 5, 3))
		}},
	}
	require.GreaterOrEqual(t, len(cases), 35)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true})
			require.NoError(t, err)
			defer c.Close()
			out := tc.op(c)
			t.Log(out.Err())
			require.ErrorIs(t, out.Err(), tc.want)
			assert.ErrorIs(t, c.Err(), tc.want, "the context records the error")
		})
	}
}
