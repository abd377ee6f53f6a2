package sched_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/sched"
)

// Cases from hostile testing (issue #17).

// A panic in the eval callback stops the compute: no node after it is
// offered to the callback, and Compute raises the panic again.
func TestEvalCallbackPanicStopsCompute(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	m := newMLP(t, rng, be)
	s, err := sched.New([]*backend.Backend{be}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	g, x, _, _ := m.graph(t, 3)
	require.NoError(t, s.AllocGraph(g))
	require.NoError(t, ggml.SetData(x, randF32(rng, m.nIn*3)))
	require.Greater(t, g.NumNodes(), 1)
	calls := 0
	require.NoError(t, s.SetEvalCallback(func(*ggml.Tensor, bool) bool {
		calls++
		panic("boom")
	}))
	require.PanicsWithValue(t, "boom", func() { _ = s.Compute(context.Background(), g) })
	assert.Equal(t, 1, calls, "the callback was called again after it panicked")
}

// Close, Reset and a backend's Close from the eval callback are refused
// while the compute runs (they would free what it uses); the compute ends
// with right results, and the handles close afterwards.
func TestCloseFromEvalCallback(t *testing.T) {
	rng := newRNG(t)
	be, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	m := newMLP(t, rng, be)
	s, err := sched.New([]*backend.Backend{be}, sched.Options{})
	require.NoError(t, err)
	g, x, _, y := m.graph(t, 4)
	require.NoError(t, s.AllocGraph(g))
	xv := randF32(rng, m.nIn*4)
	require.NoError(t, ggml.SetData(x, xv))
	var closeErr, resetErr, beErr, computeErr error
	require.NoError(t, s.SetEvalCallback(func(t2 *ggml.Tensor, ask bool) bool {
		if ask {
			return true
		}
		if closeErr == nil {
			closeErr, resetErr, beErr = s.Close(), s.Reset(), be.Close()
			computeErr = s.Compute(context.Background(), g)
		}
		return true
	}))
	require.NoError(t, s.Compute(context.Background(), g))
	require.ErrorIs(t, closeErr, ggml.ErrBusy)
	require.ErrorIs(t, resetErr, ggml.ErrBusy)
	require.ErrorIs(t, beErr, ggml.ErrBusy)
	require.ErrorIs(t, computeErr, ggml.ErrBusy)
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	_, want := m.ref(xv, 4)
	requireNear(t, want, got)
	require.NoError(t, s.Close())
	require.NoError(t, be.Close())
}

// A graph that a scheduler allocated is free again once that scheduler is
// reset or closed: another scheduler or a graph allocator may place it.
func TestGraphFreeAfterResetOrClose(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	m := newMLP(t, rng, be)
	g, x, _, y := m.graph(t, 3)
	check := func(compute func() error) {
		t.Helper()
		xv := randF32(rng, m.nIn*3)
		require.NoError(t, ggml.SetData(x, xv))
		require.NoError(t, compute())
		got, err := ggml.Data[float32](y)
		require.NoError(t, err)
		_, want := m.ref(xv, 3)
		requireNear(t, want, got)
	}
	s1, err := sched.New([]*backend.Backend{be}, sched.Options{})
	require.NoError(t, err)
	require.NoError(t, s1.AllocGraph(g))
	check(func() error { return s1.Compute(context.Background(), g) })

	// Reset: a graph allocator takes the graph.
	require.NoError(t, s1.Reset())
	ga, err := backend.NewGallocr(be.DefaultBufferType())
	require.NoError(t, err)
	defer ga.Close()
	require.NoError(t, ga.AllocGraph(g))
	check(func() error { return be.Compute(context.Background(), g) })

	// Then a second scheduler, after the first is closed and the
	// allocator reset by its own Close.
	require.NoError(t, s1.Close())
	require.NoError(t, ga.Close())
	s2, err := sched.New([]*backend.Backend{be}, sched.Options{})
	require.NoError(t, err)
	defer s2.Close()
	require.NoError(t, s2.AllocGraph(g))
	check(func() error { return s2.Compute(context.Background(), g) })
}

// newGraphCtx is a NoAlloc context with room for one graph.
func newGraphCtx(t *testing.T) *ggml.Context {
	t.Helper()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 32, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// Scheduler.Compute range-checks the indices nodes read, as
// Backend.Compute does: before, get_rows with an index out of range reached
// ggml's assert, on a worker thread ending the process.
func TestSchedulerChecksIndices(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	s, err := sched.New([]*backend.Backend{be}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	c := newGraphCtx(t)
	const rows, cols = 64, 8
	a := c.NewTensor(ggml.TypeF32, cols, rows).SetInput()
	idx := c.NewTensor(ggml.TypeI32, rows).SetInput()
	out := c.GetRows(a, idx)
	g, err := c.BuildGraph(out)
	require.NoError(t, err)
	require.NoError(t, s.AllocGraph(g))
	av := randF32(rng, cols*rows)
	require.NoError(t, ggml.SetData(a, av))
	iv := make([]int32, rows)
	for i := range iv {
		iv[i] = 1 << 20
	}
	require.NoError(t, ggml.SetData(idx, iv))
	err = s.Compute(context.Background(), g)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	assert.Contains(t, err.Error(), "outside")
	// Good indices compute the rows.
	for i := range iv {
		iv[i] = int32(rows - 1 - i)
	}
	require.NoError(t, ggml.SetData(idx, iv))
	require.NoError(t, s.Compute(context.Background(), g))
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	for i, r := range iv {
		assert.Equal(t, av[int(r)*cols:int(r+1)*cols], got[i*cols:(i+1)*cols])
	}
	// The next compute of the same graph still checks the values.
	iv[rows/2] = rows
	require.NoError(t, ggml.SetData(idx, iv))
	require.ErrorIs(t, s.Compute(context.Background(), g), ggml.ErrInvalid)
}

// Reset, Reserve and AllocGraph replace the memory of the tensors the
// scheduler placed: while a compute on a backend of its own (here from a
// custom op of that compute) uses them, they are ErrBusy. Before, Reset
// then AllocGraph of a larger graph freed the buffers the compute was
// using (heap-use-after-free under -asan).
func TestSchedulerResetWhileItsTensorsComputeIsBusy(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	s, err := sched.New([]*backend.Backend{cpu(t)}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	big := newGraphCtx(t)
	y := big.NewTensor(ggml.TypeF32, 1<<20).SetInput()
	g2, err := big.BuildGraph(big.Exp(big.Exp(y)))
	require.NoError(t, err)

	c := newGraphCtx(t)
	const n = 64
	x := c.NewTensor(ggml.TypeF32, n).SetInput()
	var errs []error
	cu := c.MapCustom1(x, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
		if ith == 0 {
			copy(dst.Float32s(), src[0].Float32s())
			errs = append(errs, s.Reset(), s.Reserve(g2), s.SplitGraph(g2))
		}
	}, 1)
	out := c.Neg(cu)
	g, err := c.BuildGraph(out)
	require.NoError(t, err)
	require.NoError(t, s.AllocGraph(g))
	xv := randF32(rng, n)
	require.NoError(t, ggml.SetData(x, xv))
	require.NoError(t, be.Compute(context.Background(), g))
	require.Len(t, errs, 3)
	for _, err := range errs {
		require.ErrorIs(t, err, ggml.ErrBusy)
	}
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	for i := range xv {
		assert.Equal(t, -xv[i], got[i])
	}
	// Afterwards the reset goes through.
	require.NoError(t, s.Reset())
	_, err = ggml.Data[float32](out)
	require.ErrorIs(t, err, ggml.ErrNotAllocated)
}
