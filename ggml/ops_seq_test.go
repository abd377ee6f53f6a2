package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/require"
)

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
		k                                      int // states kept (SSMScanK); 0: SSMScan
	}{
		{"mamba1", 16, 4, 3, 1, 3, 2, true, 3, false, 0},
		{"mamba1 strided x", 16, 5, 2, 2, 4, 1, true, 2, true, 0},
		{"mamba2", 16, 4, 4, 2, 3, 2, false, 2, false, 0},
		{"mamba2 simd+tail", 72, 3, 4, 1, 3, 2, false, 3, true, 0},
		{"mamba2 simd", 128, 2, 2, 2, 2, 3, false, 3, false, 0},
		{"dState 1", 1, 3, 2, 1, 2, 2, false, 1, false, 0}, // A [1 nHead] is both forms
		{"mamba1 K 1", 16, 4, 3, 1, 3, 2, true, 3, false, 1},
		{"mamba2 K 3", 16, 4, 4, 2, 5, 2, false, 2, false, 3},
		{"mamba2 K 4 strided x", 72, 3, 4, 1, 4, 3, false, 3, true, 4},
		{"mamba2 K > nTokens", 16, 2, 2, 1, 2, 2, false, 2, false, 4}, // slots 2, 3 are not written
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			e := newEnv(t)
			K := max(cs.k, 1)
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
			var out *ggml.Tensor
			if cs.k == 0 {
				out = e.ctx.SSMScan(s, x, dt, a, b, cm, ids)
			} else {
				out = e.ctx.SSMScanK(s, x, dt, a, b, cm, ids, int64(cs.k))
			}
			if K > 1 && !ggml.HaveUpstream {
				require.ErrorIs(t, out.Err(), ggml.ErrUnsupported)
				require.ErrorContains(t, out.Err(), "-tags ggml_system")
				return
			}
			require.NoError(t, out.Err())
			e.compute(out)
			ny := len(X.v)
			nst := cs.dState * cs.headDim * cs.nHead
			got := seqOutF32(t, out, int64(ny+K*nst*cs.nS))

			A := fromF32(av, aN0, cs.nHead)
			B := fromF32(bv, cs.dState, cs.nGroup, cs.nT, cs.nS)
			C := fromF32(cv, cs.dState, cs.nGroup, cs.nT, cs.nS)
			DT := fromF32(dtv, cs.nHead, cs.nT, cs.nS)
			ref, mag := newND(ny+K*nst*cs.nS), newND(ny+K*nst*cs.nS)
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
					// Slot j holds the state j tokens before the end.
					if j := cs.nT - 1 - tok; j < K {
						copy(ref.v[ny+(j*cs.nS+q)*nst:], st)
						copy(mag.v[ny+(j*cs.nS+q)*nst:], sm)
					}
				}
			}
			// Slots past nTokens are not written (any value): not compared.
			if K > cs.nT {
				clear(got[ny+cs.nT*cs.nS*nst:])
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

// TestSSMScanKMisuse checks SSMScanK's K by error kind: out of range,
// more than one state with Mamba-1's A, and more than one state on a
// provider whose ggml keeps only the final state.
func TestSSMScanKMisuse(t *testing.T) {
	build := func(t *testing.T, mamba1 bool, k int64) error {
		ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true})
		require.NoError(t, err)
		defer ctx.Close()
		const dState, headDim, nHead, nT, nS = 4, 2, 2, 3, 1
		aN0 := int64(1)
		if mamba1 {
			aN0 = dState
		}
		s := ctx.NewTensor(ggml.TypeF32, dState, headDim, nHead, nS)
		x := ctx.NewTensor(ggml.TypeF32, headDim, nHead, nT, nS)
		dt := ctx.NewTensor(ggml.TypeF32, nHead, nT, nS)
		a := ctx.NewTensor(ggml.TypeF32, aN0, nHead)
		b := ctx.NewTensor(ggml.TypeF32, dState, 1, nT, nS)
		cm := ctx.NewTensor(ggml.TypeF32, dState, 1, nT, nS)
		ids := ctx.NewTensor(ggml.TypeI32, nS)
		out := ctx.SSMScanK(s, x, dt, a, b, cm, ids, k)
		if out.Err() == nil {
			require.Equal(t, [4]int64{headDim*nHead*nT*nS + k*dState*headDim*nHead*nS, 1, 1, 1}, out.Ne())
		}
		return out.Err()
	}
	for _, k := range []int64{0, -1, math.MaxInt32 + 1} {
		require.ErrorIs(t, build(t, false, k), ggml.ErrInvalid, "K %d", k)
	}
	require.NoError(t, build(t, true, 1))
	require.NoError(t, build(t, false, 1))
	if !ggml.HaveUpstream {
		require.ErrorIs(t, build(t, false, 2), ggml.ErrUnsupported)
		require.ErrorIs(t, build(t, true, 2), ggml.ErrUnsupported)
		return
	}
	require.NoError(t, build(t, false, 5))
	require.ErrorIs(t, build(t, true, 2), ggml.ErrInvalid) // Mamba-1 keeps one state
}

// TestGatedDeltaNet checks the gated delta rule against a float64
// recurrence: scalar and per-row (KDA) gates, q and k broadcast over heads
// and sequences, K state snapshots (more than the tokens too).
func TestGatedDeltaNet(t *testing.T) {
	cases := []struct {
		name                  string
		S, H, Hk, nT, nS, nSk int
		kda                   bool
		K                     int
		stridedQ              bool // q a view of every other row of a larger tensor
	}{
		{"scalar gate", 8, 2, 2, 3, 2, 2, false, 1, false},
		{"kda", 16, 3, 3, 4, 1, 1, true, 1, false},
		{"heads and sequences broadcast", 8, 4, 2, 3, 2, 1, false, 1, true},
		{"K 3", 4, 2, 1, 5, 2, 2, true, 3, false},
		{"K > nTokens", 4, 2, 2, 2, 1, 1, false, 4, false},
		{"no tokens", 4, 1, 1, 0, 2, 2, false, 1, false},
	}
	rng := newRNG(t)
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			e := newEnv(t)
			S, H, nT, nS := cs.S, cs.H, cs.nT, cs.nS
			K := cs.K
			kv := randF32(rng, S*cs.Hk*nT*cs.nSk)
			var qv []float32
			var q *ggml.Tensor
			if cs.stridedQ {
				big := randF32(rng, S*2*cs.Hk*nT*cs.nSk)
				bt := e.input(ggml.TypeF32, big, int64(S), int64(2*cs.Hk), int64(nT), int64(cs.nSk))
				q = e.ctx.View4D(bt, int64(S), int64(cs.Hk), int64(nT), int64(cs.nSk), 2*bt.Nb()[1], bt.Nb()[2], bt.Nb()[3], 0)
				qv = make([]float32, len(kv))
				for i := range qv {
					row, col := i/S, i%S // row over (h, t, s) of q
					qv[i] = big[2*row*S+col]
				}
			} else {
				qv = randF32(rng, len(kv))
				q = e.input(ggml.TypeF32, qv, int64(S), int64(cs.Hk), int64(nT), int64(cs.nSk))
			}
			k := e.input(ggml.TypeF32, kv, int64(S), int64(cs.Hk), int64(nT), int64(cs.nSk))
			vv := randF32(rng, S*H*nT*nS)
			v := e.input(ggml.TypeF32, vv, int64(S), int64(H), int64(nT), int64(nS))
			g0 := 1
			if cs.kda {
				g0 = S
			}
			gv := randF32(rng, g0*H*nT*nS)
			for i := range gv {
				gv[i] = -float32(math.Exp(float64(gv[i]))) / 4 // log-decays: g < 0
			}
			g := e.input(ggml.TypeF32, gv, int64(g0), int64(H), int64(nT), int64(nS))
			bv := randF32(rng, H*nT*nS)
			for i := range bv {
				bv[i] = float32(1 / (1 + math.Exp(-float64(bv[i])))) // beta in (0, 1)
			}
			beta := e.input(ggml.TypeF32, bv, 1, int64(H), int64(nT), int64(nS))
			sv := randF32(rng, S*S*H*nS)
			state := e.input(ggml.TypeF32, sv, int64(S), int64(S), int64(H), int64(nS))
			out := e.ctx.GatedDeltaNet(q, k, v, g, beta, state, int64(K))
			if !ggml.HaveUpstream {
				require.ErrorIs(t, out.Err(), ggml.ErrUnsupported)
				require.ErrorContains(t, out.Err(), "-tags ggml_system")
				return
			}
			require.NoError(t, out.Err())
			e.compute(out)
			got := seqOutF32(t, out, int64(S*H), int64(nT*nS+K*S*nS))

			ny, nst := S*H*nT*nS, S*S*H*nS
			ref, mag := newND(ny+K*nst), newND(ny+K*nst)
			scale := 1 / math.Sqrt(float64(S))
			for s := range nS {
				sk := s / (nS / cs.nSk)
				for h := range H {
					hk := h % cs.Hk
					m, ma := make([]float64, S*S), make([]float64, S*S) // m[i+S*j] = M[i][j]
					for i := range m {
						m[i] = float64(sv[(s*H+h)*S*S+i])
						ma[i] = math.Abs(m[i])
					}
					delta, deltaA := make([]float64, S), make([]float64, S)
					for tok := range nT {
						at := func(x []float32, hs, hh, ss int) []float32 { return x[((ss*nT+tok)*hh+hs)*S:][:S] }
						qq, kk, vx := at(qv, hk, cs.Hk, sk), at(kv, hk, cs.Hk, sk), at(vv, h, H, s)
						b := float64(bv[(s*nT+tok)*H+h])
						for i := range S {
							gi := float64(gv[((s*nT+tok)*H+h)*g0])
							if cs.kda {
								gi = float64(gv[((s*nT+tok)*H+h)*S+i])
							}
							for j := range S {
								m[i+S*j] *= math.Exp(gi)
								ma[i+S*j] *= math.Exp(gi)
							}
						}
						for j := range S {
							sum, suma := 0.0, 0.0
							for i := range S {
								sum += m[i+S*j] * float64(kk[i])
								suma += ma[i+S*j] * math.Abs(float64(kk[i]))
							}
							delta[j] = (float64(vx[j]) - sum) * b
							deltaA[j] = (math.Abs(float64(vx[j])) + suma) * math.Abs(b)
						}
						for j := range S {
							for i := range S {
								m[i+S*j] += float64(kk[i]) * delta[j]
								ma[i+S*j] += math.Abs(float64(kk[i])) * deltaA[j]
							}
						}
						for j := range S {
							sum, suma := 0.0, 0.0
							for i := range S {
								sum += m[i+S*j] * float64(qq[i])
								suma += ma[i+S*j] * math.Abs(float64(qq[i]))
							}
							o := ((s*nT+tok)*H+h)*S + j
							ref.v[o], mag.v[o] = sum*scale, suma*scale
						}
						if slot := nT - 1 - tok; slot < K {
							o := ny + slot*nst + (s*H+h)*S*S
							copy(ref.v[o:o+S*S], m)
							copy(mag.v[o:o+S*S], ma)
						}
					}
					if nT == 0 { // K = 1: the state passes through
						copy(ref.v[ny+(s*H+h)*S*S:], m)
						copy(mag.v[ny+(s*H+h)*S*S:], ma)
					}
				}
			}
			// Slots past nTokens are not written (any value): not compared.
			if K > nT && nT > 0 {
				clear(got[ny+nT*nst:])
			}
			rel := float64(4*S+8*nT) * seqU
			requireClose(t, ref, got, seqMagTol(mag, rel, 1e-6))
		})
	}
}

// TestGatedDeltaNetMisuse checks GatedDeltaNet's rules by error kind.
func TestGatedDeltaNetMisuse(t *testing.T) {
	type shapes struct{ q, k, v, g, beta, state []int64 }
	good := func() shapes {
		return shapes{[]int64{4, 2, 3, 1}, []int64{4, 2, 3, 1}, []int64{4, 4, 3, 2}, []int64{1, 4, 3, 2}, []int64{1, 4, 3, 2}, []int64{4, 4, 4, 2}}
	}
	build := func(t *testing.T, sh shapes, K int64, ty ggml.Type) error {
		ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true})
		require.NoError(t, err)
		defer ctx.Close()
		nt := func(ne []int64) *ggml.Tensor { return ctx.NewTensor(ggml.TypeF32, ne...) }
		out := ctx.GatedDeltaNet(ctx.NewTensor(ty, sh.q...), nt(sh.k), nt(sh.v), nt(sh.g), nt(sh.beta), nt(sh.state), K)
		return out.Err()
	}
	if !ggml.HaveUpstream {
		require.ErrorIs(t, build(t, good(), 1, ggml.TypeF32), ggml.ErrUnsupported)
		return
	}
	require.NoError(t, build(t, good(), 1, ggml.TypeF32))
	require.NoError(t, build(t, good(), 7, ggml.TypeF32))
	require.ErrorIs(t, build(t, good(), 0, ggml.TypeF32), ggml.ErrInvalid)
	require.ErrorIs(t, build(t, good(), math.MaxInt32+1, ggml.TypeF32), ggml.ErrInvalid)
	require.ErrorIs(t, build(t, good(), 1, ggml.TypeF16), ggml.ErrType)
	for name, edit := range map[string]func(*shapes){
		"q and k differ":           func(s *shapes) { s.q = []int64{4, 1, 3, 1} },
		"S of q":                   func(s *shapes) { s.q, s.k = []int64{3, 2, 3, 1}, []int64{3, 2, 3, 1} },
		"tokens of q":              func(s *shapes) { s.q, s.k = []int64{4, 2, 2, 1}, []int64{4, 2, 2, 1} },
		"heads not a multiple":     func(s *shapes) { s.q, s.k = []int64{4, 3, 3, 1}, []int64{4, 3, 3, 1} },
		"sequences not a multiple": func(s *shapes) { s.q, s.k = []int64{4, 2, 3, 3}, []int64{4, 2, 3, 3} },
		"more q sequences":         func(s *shapes) { s.q, s.k = []int64{4, 2, 3, 4}, []int64{4, 2, 3, 4} },
		"g rows":                   func(s *shapes) { s.g = []int64{2, 4, 3, 2} },
		"g heads":                  func(s *shapes) { s.g = []int64{1, 3, 3, 2} },
		"beta":                     func(s *shapes) { s.beta = []int64{4, 4, 3, 2} },
		"state":                    func(s *shapes) { s.state = []int64{4, 4, 4, 1} },
		// ggml's kernel divides by q's head and sequence counts (a
		// SIGFPE at 0, even with no sequences to run).
		"no q heads":     func(s *shapes) { s.q, s.k = []int64{4, 0, 3, 1}, []int64{4, 0, 3, 1} },
		"no q sequences": func(s *shapes) { s.q, s.k = []int64{4, 2, 3, 0}, []int64{4, 2, 3, 0} },
		"no sequences at all": func(s *shapes) {
			s.q, s.k, s.v = []int64{4, 2, 3, 0}, []int64{4, 2, 3, 0}, []int64{4, 4, 3, 0}
			s.g, s.beta, s.state = []int64{1, 4, 3, 0}, []int64{1, 4, 3, 0}, []int64{4, 4, 4, 0}
		},
	} {
		sh := good()
		edit(&sh)
		require.ErrorIs(t, build(t, sh, 1, ggml.TypeF32), ggml.ErrShape, name)
	}
}
