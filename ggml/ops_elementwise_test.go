package ggml_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// f32 results of single element-wise ops: a few ulps of float32.
const f32Rel = 1e-6

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

func TestUnaryOps(t *testing.T) {
	rng := newRNG(t)
	// gelu on f32 goes through ggml's f16 table: x and the result are
	// rounded to f16 (relative error 2^-11 each), and gelu' <= 1.13.
	const f16Eps = 1.0 / 2048
	geluTol := func(x, r float64) float64 { return 1.13*math.Abs(x)*f16Eps + math.Abs(r)*f16Eps + 1e-6 }
	ops := []struct {
		name  string
		build func(c *ggml.Context, a *ggml.Tensor) *ggml.Tensor
		ref   func(x float64) float64
		tol   func(x, r float64) float64
	}{
		{"relu", (*ggml.Context).Relu, func(x float64) float64 { return math.Max(x, 0) }, nil},
		{"silu", (*ggml.Context).Silu, func(x float64) float64 { return x / (1 + math.Exp(-x)) }, nil},
		{"gelu", (*ggml.Context).Gelu, func(x float64) float64 {
			return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		}, geluTol},
	}
	for _, op := range ops {
		for _, ne := range [][]int{{17}, {8, 3}, {4, 3, 2, 2}} {
			t.Run(fmt.Sprintf("%s/%v", op.name, ne), func(t *testing.T) {
				e := newEnv(t)
				n := 1
				for _, v := range ne {
					n *= v
				}
				av := randF32(rng, n)
				for i := range av {
					av[i] *= 3
				}
				a := e.input(ggml.TypeF32, av, i64s(ne)...)
				out := op.build(e.ctx, a)
				e.compute(out)
				got, err := ggml.Data[float32](out)
				require.NoError(t, err)
				ref := fromF32(av, ne...)
				for i := range ref.v {
					ref.v[i] = op.ref(ref.v[i])
				}
				tol := relTol(ref, 4*f32Rel)
				if op.tol != nil {
					tol = func(i int) float64 { return op.tol(float64(av[i]), ref.v[i]) }
				}
				requireClose(t, ref, got, tol)
			})
		}
	}
}

func TestSoftMax(t *testing.T) {
	rng := newRNG(t)
	for _, withMask := range []bool{false, true} {
		t.Run(fmt.Sprintf("mask=%v", withMask), func(t *testing.T) {
			e := newEnv(t)
			const n0, n1, n2 = 9, 4, 3
			av := randF32(rng, n0*n1*n2)
			a := e.input(ggml.TypeF32, av, n0, n1, n2)
			scale := float32(0.5 + rng.Float64())
			var out *ggml.Tensor
			var mv []float32
			if withMask {
				mv = randF32(rng, n0*n1)
				mask := e.input(ggml.TypeF32, mv, n0, n1)
				out = e.ctx.SoftMaxExt(a, mask, scale, 0)
			} else {
				scale = 1
				out = e.ctx.SoftMax(a)
			}
			e.compute(out)
			got, err := ggml.Data[float32](out)
			require.NoError(t, err)
			ref := fromF32(av, n0, n1, n2)
			for i2 := range n2 {
				for i1 := range n1 {
					row := ref.v[ref.idx(0, i1, i2, 0):][:n0]
					m := math.Inf(-1)
					for i0 := range row {
						row[i0] *= float64(scale)
						if withMask {
							row[i0] += float64(mv[i1*n0+i0])
						}
						m = math.Max(m, row[i0])
					}
					sum := 0.0
					for i0 := range row {
						row[i0] = math.Exp(row[i0] - m)
						sum += row[i0]
					}
					for i0 := range row {
						row[i0] /= sum
					}
				}
			}
			requireClose(t, ref, got, func(int) float64 { return 1e-6 })
		})
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

func prod(ne [4]int) int { return ne[0] * ne[1] * ne[2] * ne[3] }

func i64(ne [4]int) []int64 { return []int64{int64(ne[0]), int64(ne[1]), int64(ne[2]), int64(ne[3])} }

func i64s(ne []int) []int64 {
	out := make([]int64, len(ne))
	for i, v := range ne {
		out[i] = int64(v)
	}
	return out
}
