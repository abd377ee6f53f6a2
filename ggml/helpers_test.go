package ggml_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/stretchr/testify/require"
)

// newRNG is the shared replayable generator (GOGGML_SEED).
func newRNG(t testing.TB) *rand.Rand { return testutil.NewRNG(t) }

func randF32(rng *rand.Rand, n int) []float32 { return testutil.RandF32(rng, n) }

func cpuBackend(t testing.TB) *backend.Backend {
	return backendtest.CPU(t)
}

// env builds and runs one graph on the CPU backend: inputs are created in a
// NoAlloc context and get their data after allocation.
type env struct {
	t      testing.TB
	be     *backend.Backend
	ctx    *ggml.Context
	inputs []func() error
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 256, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	t.Cleanup(func() { ctx.Close() })
	return &env{t: t, be: cpuBackend(t), ctx: ctx}
}

// input creates an input tensor holding data ([]float32, []int32, []int64
// or []uint16).
func (e *env) input(ty ggml.Type, data any, ne ...int64) *ggml.Tensor {
	x := e.ctx.NewTensor(ty, ne...).SetInput()
	e.inputs = append(e.inputs, func() error {
		switch d := data.(type) {
		case []float32:
			return ggml.SetData(x, d)
		case []int32:
			return ggml.SetData(x, d)
		case []uint16:
			return ggml.SetData(x, d)
		case []int64:
			return ggml.SetData(x, d)
		case []byte: // a quantized type's blocks
			return ggml.SetBytes(x, d)
		}
		return fmt.Errorf("unsupported input %T", data)
	})
	return x
}

// compute builds the graph of outs, allocates, sets the inputs and runs it.
func (e *env) compute(outs ...*ggml.Tensor) {
	e.t.Helper()
	for _, o := range outs {
		o.SetOutput()
	}
	g, err := e.ctx.BuildGraph(outs...)
	require.NoError(e.t, err)
	buf, err := backend.AllocContextTensors(e.ctx, e.be)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { buf.Close() })
	for _, set := range e.inputs {
		require.NoError(e.t, set())
	}
	require.NoError(e.t, e.be.Compute(context.Background(), g))
}

// nd is a float64 reference tensor in ggml's layout: ne[0] innermost.
type nd struct {
	ne [4]int
	v  []float64
}

func newND(ne ...int) nd {
	a := nd{ne: [4]int{1, 1, 1, 1}}
	copy(a.ne[:], ne)
	a.v = make([]float64, a.ne[0]*a.ne[1]*a.ne[2]*a.ne[3])
	return a
}

func fromF32(v []float32, ne ...int) nd {
	a := newND(ne...)
	for i := range a.v {
		a.v[i] = float64(v[i])
	}
	return a
}

func (a nd) idx(i0, i1, i2, i3 int) int {
	return i0 + a.ne[0]*(i1+a.ne[1]*(i2+a.ne[2]*i3))
}

func (a nd) at(i0, i1, i2, i3 int) float64 { return a.v[a.idx(i0, i1, i2, i3)] }

// each calls f with every index in layout order.
func (a nd) each(f func(i0, i1, i2, i3 int)) {
	for i3 := range a.ne[3] {
		for i2 := range a.ne[2] {
			for i1 := range a.ne[1] {
				for i0 := range a.ne[0] {
					f(i0, i1, i2, i3)
				}
			}
		}
	}
}

// requireClose compares got with ref element by element: |got-ref| <= tol(i).
func requireClose(t testing.TB, ref nd, got []float32, tol func(i int) float64) {
	t.Helper()
	require.Len(t, got, len(ref.v))
	worst, at := 0.0, -1
	for i, r := range ref.v {
		d := math.Abs(float64(got[i]) - r)
		if math.IsNaN(float64(got[i])) || d > tol(i) {
			require.Failf(t, "mismatch", "element %d: got %g, want %g (|diff| %g > tol %g)", i, got[i], r, d, tol(i))
		}
		if d > worst {
			worst, at = d, i
		}
	}
	t.Logf("largest |diff| %.3g at element %d", worst, at)
}

// relTol is a tolerance relative to the reference's magnitude.
func relTol(ref nd, rel float64) func(int) float64 {
	return func(i int) float64 { return rel * math.Max(math.Abs(ref.v[i]), 1) }
}

// f32 results of single element-wise ops: a few ulps of float32.
const f32Rel = 1e-6

func prod(ne [4]int) int { return ne[0] * ne[1] * ne[2] * ne[3] }

func i64(ne [4]int) []int64 { return []int64{int64(ne[0]), int64(ne[1]), int64(ne[2]), int64(ne[3])} }

func i64s(ne []int) []int64 {
	out := make([]int64, len(ne))
	for i, v := range ne {
		out[i] = int64(v)
	}
	return out
}

// toF16 rounds f32 values to f16 bits (round to nearest even).
func toF16(v []float32) []uint16 {
	out := make([]uint16, len(v))
	for i, f := range v {
		out[i] = f32ToF16(f)
	}
	return out
}

func fromF16Slice(h []uint16) []float64 {
	out := make([]float64, len(h))
	for i, b := range h {
		out[i] = f16ToF64(b)
	}
	return out
}

func f16ToF64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	man := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * man * math.Pow(2, -24)
	case 31:
		if man == 0 {
			return sign * math.Inf(1)
		}
		return math.NaN()
	}
	return sign * (1 + man/1024) * math.Pow(2, float64(exp-15))
}

// f16Overflow is the magnitude from which a value rounds to an f16
// infinity: halfway between the largest f16, 65504, and the next step.
const f16Overflow = 65520

func f32ToF16(f float32) uint16 {
	x := float64(f)
	sign := uint16(0)
	if x < 0 {
		sign, x = 0x8000, -x
	}
	if x == 0 {
		return sign
	}
	if x >= f16Overflow {
		return sign | 0x7c00
	}
	e := math.Floor(math.Log2(x))
	if e < -14 { // subnormal
		return sign | uint16(math.RoundToEven(x/math.Pow(2, -24)))
	}
	m := math.RoundToEven((x/math.Pow(2, e) - 1) * 1024)
	if m == 1024 {
		m, e = 0, e+1
	}
	return sign | uint16(e+15)<<10 | uint16(m)
}

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
