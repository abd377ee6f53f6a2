package ggml_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// newRNG is the shared replayable generator (GGML_TEST_SEED).
func newRNG(t testing.TB) *rand.Rand { return testutil.NewRNG(t) }

func randF32(rng *rand.Rand, n int) []float32 { return testutil.RandF32(rng, n) }

func cpuBackend(t testing.TB) *backend.Backend {
	return testutil.CPU(t)
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
