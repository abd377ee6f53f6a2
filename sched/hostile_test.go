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
