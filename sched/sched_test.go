package sched_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/sched"
)

func cpu(t *testing.T) *backend.Backend {
	return backendtest.CPU(t)
}

// newRNG is the shared replayable generator (GOGGML_SEED).
func newRNG(t *testing.T) *rand.Rand { return testutil.NewRNG(t) }

func randF32(rng *rand.Rand, n int) []float32 { return testutil.RandF32(rng, n) }

// mlp is a small network: weights in a buffer of their own, and a graph
// y = w2 · relu(w1 · x) built in a compute context.
type mlp struct {
	w1, w2     *ggml.Tensor
	w1v, w2v   []float32
	nIn, nHid  int
	nOut       int
	weightsBuf *backend.Buffer
}

func newMLP(t *testing.T, rng *rand.Rand, be *backend.Backend) *mlp {
	m := &mlp{nIn: 8, nHid: 16, nOut: 4}
	wc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	t.Cleanup(func() { wc.Close() })
	m.w1 = wc.NewTensor(ggml.TypeF32, int64(m.nIn), int64(m.nHid)).SetName("w1")
	m.w2 = wc.NewTensor(ggml.TypeF32, int64(m.nHid), int64(m.nOut)).SetName("w2")
	m.weightsBuf, err = backend.AllocContextTensors(wc, be)
	require.NoError(t, err)
	t.Cleanup(func() { m.weightsBuf.Close() })
	require.NoError(t, m.weightsBuf.SetUsage(backend.UsageWeights))
	m.w1v, m.w2v = randF32(rng, m.nIn*m.nHid), randF32(rng, m.nHid*m.nOut)
	require.NoError(t, ggml.SetData(m.w1, m.w1v))
	require.NoError(t, ggml.SetData(m.w2, m.w2v))
	return m
}

// graph builds the forward graph for a batch in a new context.
func (m *mlp) graph(t *testing.T, batch int) (g *ggml.Graph, x, h, y *ggml.Tensor) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	x = c.NewTensor(ggml.TypeF32, int64(m.nIn), int64(batch)).SetName("x").SetInput()
	h = c.Relu(c.MulMat(m.w1, x)).SetName("h")
	y = c.MulMat(m.w2, h).SetName("y").SetOutput()
	g, err = c.BuildGraph(y)
	require.NoError(t, err)
	return g, x, h, y
}

// ref computes h and y in float64.
func (m *mlp) ref(xv []float32, batch int) (h, y []float64) {
	h = make([]float64, m.nHid*batch)
	y = make([]float64, m.nOut*batch)
	for n := range batch {
		for j := range m.nHid {
			s := 0.0
			for i := range m.nIn {
				s += float64(m.w1v[j*m.nIn+i]) * float64(xv[n*m.nIn+i])
			}
			h[n*m.nHid+j] = math.Max(s, 0)
		}
		for k := range m.nOut {
			s := 0.0
			for j := range m.nHid {
				s += float64(m.w2v[k*m.nHid+j]) * h[n*m.nHid+j]
			}
			y[n*m.nOut+k] = s
		}
	}
	return h, y
}

func requireNear(t *testing.T, want []float64, got []float32) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], float64(got[i]), 1e-5*math.Max(1, math.Abs(want[i])), "element %d", i)
	}
}

func TestReserveAllocComputeReset(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	m := newMLP(t, rng, be)
	s, err := sched.New([]*backend.Backend{be}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, 1, s.NumBackends())
	assert.Same(t, be, s.Backend(0))
	assert.Nil(t, s.Backend(1))

	// Reserve with the largest graph.
	measure, _, _, _ := m.graph(t, 32)
	require.NoError(t, s.Reserve(measure))
	reserved, err := s.BufferSize(be)
	require.NoError(t, err)
	require.Positive(t, reserved)
	sizes, err := s.ReserveSizes(measure)
	require.NoError(t, err)
	assert.Equal(t, []uint64{reserved}, sizes)

	for _, batch := range []int{4, 32, 7} {
		g, x, _, y := m.graph(t, batch)
		require.NoError(t, s.Reset())
		require.NoError(t, s.AllocGraph(g))
		assert.Equal(t, 1, s.NumSplits(), "one backend, one split")
		assert.Equal(t, 1, s.NumCopies(), "one copy of the inputs without Parallel")
		assert.Same(t, be, s.TensorBackend(y))
		for range 3 { // compute again with new inputs
			xv := randF32(rng, m.nIn*batch)
			require.NoError(t, ggml.SetData(x, xv))
			require.NoError(t, s.Compute(context.Background(), g))
			got, err := ggml.Data[float32](y)
			require.NoError(t, err)
			_, want := m.ref(xv, batch)
			requireNear(t, want, got)
		}
		size, err := s.BufferSize(be)
		require.NoError(t, err)
		assert.Equal(t, reserved, size, "no graph is larger than the reserved one")
	}

	// After Reset the compute tensors are gone, and say so.
	g, x, _, y := m.graph(t, 2)
	require.NoError(t, s.Reset())
	require.NoError(t, s.AllocGraph(g))
	require.NoError(t, ggml.SetData(x, randF32(rng, m.nIn*2)))
	require.NoError(t, s.Compute(context.Background(), g))
	require.NoError(t, s.Reset())
	_, err = ggml.Data[float32](y)
	require.ErrorIs(t, err, ggml.ErrNotAllocated)
	require.ErrorIs(t, ggml.SetData(x, randF32(rng, m.nIn*2)), ggml.ErrNotAllocated)
	// The weights are the caller's: they live on.
	w, err := ggml.Data[float32](m.w1)
	require.NoError(t, err)
	assert.Equal(t, m.w1v, w)

	// The same graph can be allocated again after the reset.
	require.NoError(t, s.AllocGraph(g))
	xv := randF32(rng, m.nIn*2)
	require.NoError(t, ggml.SetData(x, xv))
	require.NoError(t, s.Compute(context.Background(), g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	_, want := m.ref(xv, 2)
	requireNear(t, want, got)
	var attempted uint64
	attempted, err = s.AttemptedBufferSize(be)
	if sched.HaveOllamaExtras {
		require.NoError(t, err)
		assert.GreaterOrEqual(t, attempted, reserved)
	} else {
		require.ErrorIs(t, err, backend.ErrUnsupported, "only the embedded provider has it")
	}
	bt, err := s.BufferType(be)
	require.NoError(t, err)
	assert.Equal(t, be.DefaultBufferType().Name(), bt.Name())
}

func TestComputeAllocatesAndAsync(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	m := newMLP(t, rng, be)
	s, err := sched.New([]*backend.Backend{be}, sched.Options{GraphSize: 64})
	require.NoError(t, err)
	defer s.Close()
	g, x, _, y := m.graph(t, 3)
	// Compute allocates a graph that is not allocated yet; inputs are set
	// after an explicit AllocGraph, so allocate first here.
	require.NoError(t, s.AllocGraph(g))
	xv := randF32(rng, m.nIn*3)
	require.NoError(t, ggml.SetData(x, xv))
	require.NoError(t, s.ComputeAsync(g))
	require.NoError(t, s.Synchronize())
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	_, want := m.ref(xv, 3)
	requireNear(t, want, got)
	if sched.HaveOllamaExtras {
		require.NoError(t, s.SetBatchSize(3))
	} else {
		require.ErrorIs(t, s.SetBatchSize(3), backend.ErrUnsupported, "only the embedded provider has it")
	}

	p, err := sched.New([]*backend.Backend{be}, sched.Options{Parallel: true})
	require.NoError(t, err)
	defer p.Close()
	assert.Equal(t, 4, p.NumCopies(), "GGML_SCHED_MAX_COPIES with Parallel")
	g2, x2, _, y2 := m.graph(t, 3)
	require.NoError(t, p.AllocGraph(g2))
	require.NoError(t, ggml.SetData(x2, xv))
	require.Zero(t, p.ComputeTime(), "no compute yet")
	t0 := time.Now()
	require.NoError(t, p.Compute(context.Background(), g2))
	wall := time.Since(t0)
	assert.Positive(t, p.ComputeTime(), "the time inside ggml's compute call")
	assert.LessOrEqual(t, p.ComputeTime(), wall, "a part of Compute's time")
	got2, err := ggml.Data[float32](y2)
	require.NoError(t, err)
	requireNear(t, want, got2)
}

func TestEvalCallbackObservesEveryNode(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	m := newMLP(t, rng, be)
	s, err := sched.New([]*backend.Backend{be}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	g, x, h, y := m.graph(t, 5)
	require.NoError(t, s.AllocGraph(g))
	xv := randF32(rng, m.nIn*5)
	require.NoError(t, ggml.SetData(x, xv))
	wantH, wantY := m.ref(xv, 5)

	var asked, seen []string
	require.NoError(t, s.SetEvalCallback(func(t2 *ggml.Tensor, ask bool) bool {
		if ask {
			asked = append(asked, t2.Name())
			return true // observe every node
		}
		seen = append(seen, t2.Name())
		got, err := ggml.Data[float32](t2)
		require.NoError(t, err)
		switch t2 {
		case h:
			requireNear(t, wantH, got)
		case y:
			requireNear(t, wantY, got)
		}
		return true
	}))
	require.NoError(t, s.Compute(context.Background(), g))
	var names []string
	for _, n := range g.Nodes() {
		names = append(names, n.Name())
	}
	assert.Equal(t, names, asked)
	assert.Equal(t, names, seen)

	// Returning false stops the compute: the last node is not reached.
	seen = nil
	require.NoError(t, s.SetEvalCallback(func(t2 *ggml.Tensor, ask bool) bool {
		if ask {
			return true
		}
		seen = append(seen, t2.Name())
		return false
	}))
	require.ErrorIs(t, s.Compute(context.Background(), g), sched.ErrStopped)
	assert.Equal(t, []string{names[0]}, seen)

	// A panic in the callback stops the compute and comes back to the caller.
	require.NoError(t, s.SetEvalCallback(func(*ggml.Tensor, bool) bool { panic("boom") }))
	require.PanicsWithValue(t, "boom", func() { _ = s.Compute(context.Background(), g) })
	require.NoError(t, s.SetEvalCallback(nil))
	require.NoError(t, s.Compute(context.Background(), g))
}

func TestComputeCancel(t *testing.T) {
	be := cpu(t)
	s, err := sched.New([]*backend.Backend{be}, sched.Options{GraphSize: 4096})
	require.NoError(t, err)
	defer s.Close()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2100, NoAlloc: true, Graph: true, GraphSize: 4096})
	require.NoError(t, err)
	defer c.Close()
	w := c.NewTensor(ggml.TypeF32, 256, 256)
	y := c.NewTensor(ggml.TypeF32, 256, 256)
	for range 2000 {
		y = c.MulMat(w, y)
	}
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	require.ErrorIs(t, s.Compute(ctx, g), context.Canceled)
	// It computes again afterwards.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	small, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer small.Close()
	a := small.NewTensor(ggml.TypeF32, 4)
	sum := small.Add(a, a)
	g2, err := small.BuildGraph(sum)
	require.NoError(t, err)
	require.NoError(t, s.Reset())
	require.NoError(t, s.AllocGraph(g2))
	require.NoError(t, ggml.SetData(a, []float32{1, 2, 3, 4}))
	require.NoError(t, s.Compute(ctx2, g2))
	got, err := ggml.Data[float32](sum)
	require.NoError(t, err)
	assert.Equal(t, []float32{2, 4, 6, 8}, got)
}

func TestSplitAndPin(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	m := newMLP(t, rng, be)
	s, err := sched.New([]*backend.Backend{be}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	g, _, h, y := m.graph(t, 2)
	require.NoError(t, s.SetTensorBackend(h, be))
	assert.Same(t, be, s.TensorBackend(h))
	require.NoError(t, s.SplitGraph(g))
	assert.Equal(t, 1, s.NumSplits())
	assert.Same(t, be, s.TensorBackend(y))
	other := cpu(t)
	require.ErrorIs(t, s.SetTensorBackend(h, other), ggml.ErrInvalid, "not one of the scheduler's backends")
}

// Two backends: the graph split across a GPU and the CPU gives the CPU's
// result.
func TestTwoBackends(t *testing.T) {
	var gpuDev *backend.Device
	for d := range backend.Devices() {
		if d.Type() == backend.DeviceGPU || d.Type() == backend.DeviceIGPU {
			gpuDev = d
			break
		}
	}
	if gpuDev == nil {
		t.Skip("needs a GPU backend (-tags vulkan or cuda) beside the CPU")
	}
	rng := newRNG(t)
	gpu, err := gpuDev.Init("")
	require.NoError(t, err)
	defer gpu.Close()
	host := cpu(t)
	m := newMLP(t, rng, host) // weights on the CPU
	s, err := sched.New([]*backend.Backend{gpu, host}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	g, x, h, y := m.graph(t, 4)
	require.NoError(t, s.SetTensorBackend(h, gpu))
	require.NoError(t, s.AllocGraph(g))
	assert.Greater(t, s.NumSplits(), 1)
	assert.Positive(t, s.NumCopies())
	xv := randF32(rng, m.nIn*4)
	require.NoError(t, ggml.SetData(x, xv))
	require.NoError(t, s.Compute(context.Background(), g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	_, want := m.ref(xv, 4)
	for i := range want {
		require.InDelta(t, want[i], float64(got[i]), 1e-3*math.Max(1, math.Abs(want[i])))
	}
}

func TestMisuse(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	m := newMLP(t, rng, be)
	newSched := func(t *testing.T) *sched.Scheduler {
		s, err := sched.New([]*backend.Backend{be}, sched.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	closedBackend := func(t *testing.T) *backend.Backend {
		b, err := backend.InitByName("CPU", "")
		require.NoError(t, err)
		b.Close()
		return b
	}
	cases := []struct {
		name string
		want error
		call func(t *testing.T) error
	}{
		{"no backends", ggml.ErrInvalid, func(*testing.T) error { _, err := sched.New(nil, sched.Options{}); return err }},
		{"too many backends", ggml.ErrInvalid, func(*testing.T) error {
			bs := make([]*backend.Backend, sched.MaxBackends+1)
			_, err := sched.New(bs, sched.Options{})
			return err
		}},
		{"nil backend", ggml.ErrInvalid, func(*testing.T) error {
			_, err := sched.New([]*backend.Backend{nil}, sched.Options{})
			return err
		}},
		{"closed backend", ggml.ErrClosed, func(t *testing.T) error {
			_, err := sched.New([]*backend.Backend{closedBackend(t)}, sched.Options{})
			return err
		}},
		{"duplicate backend", ggml.ErrInvalid, func(*testing.T) error {
			_, err := sched.New([]*backend.Backend{be, be}, sched.Options{})
			return err
		}},
		{"buffer types count", ggml.ErrInvalid, func(*testing.T) error {
			_, err := sched.New([]*backend.Backend{be}, sched.Options{BufferTypes: []*backend.BufferType{nil, nil}})
			return err
		}},
		{"nil buffer type", ggml.ErrInvalid, func(*testing.T) error {
			_, err := sched.New([]*backend.Backend{be}, sched.Options{BufferTypes: []*backend.BufferType{nil}})
			return err
		}},
		{"negative graph size", ggml.ErrInvalid, func(*testing.T) error {
			_, err := sched.New([]*backend.Backend{be}, sched.Options{GraphSize: -1})
			return err
		}},
		// ggml_backend_sched_new sizes its tables from GraphSize (about
		// 21 KB a node): 1<<40 aborted in ggml_malloc, 1<<31 touched 17 GB
		// before the process was killed.
		{"graph size 1<<40", ggml.ErrInvalid, func(*testing.T) error {
			_, err := sched.New([]*backend.Backend{be}, sched.Options{GraphSize: 1 << 40})
			return err
		}},
		{"graph size 1<<31", ggml.ErrInvalid, func(*testing.T) error {
			_, err := sched.New([]*backend.Backend{be}, sched.Options{GraphSize: 1 << 31})
			return err
		}},
		{"graph size MaxGraphSize (22 TB of tables)", ggml.ErrNoMemory, func(*testing.T) error {
			_, err := sched.New([]*backend.Backend{be}, sched.Options{GraphSize: sched.MaxGraphSize, Parallel: true})
			return err
		}},
		{"graph size beyond the memory available", ggml.ErrNoMemory, func(t *testing.T) error {
			sched.SetAvailableMemory(t, 40<<20) // the default graph size needs about 43 MB
			_, err := sched.New([]*backend.Backend{be}, sched.Options{})
			return err
		}},
		{"batch size beyond int32", ggml.ErrInvalid, func(t *testing.T) error {
			return newSched(t).SetBatchSize(1 << 32)
		}},
		{"batch size below -1", ggml.ErrInvalid, func(t *testing.T) error {
			return newSched(t).SetBatchSize(-2)
		}},
		{"graph too large", ggml.ErrGraphFull, func(t *testing.T) error {
			s, err := sched.New([]*backend.Backend{be}, sched.Options{GraphSize: 4})
			require.NoError(t, err)
			defer s.Close()
			g, _, _, _ := m.graph(t, 2)
			return s.AllocGraph(g)
		}},
		{"alloc twice", ggml.ErrInvalid, func(t *testing.T) error {
			s := newSched(t)
			g, _, _, _ := m.graph(t, 2)
			require.NoError(t, s.AllocGraph(g))
			return s.AllocGraph(g)
		}},
		{"compute another graph while one is allocated", ggml.ErrInvalid, func(t *testing.T) error {
			s := newSched(t)
			g, _, _, _ := m.graph(t, 2)
			g2, _, _, _ := m.graph(t, 2)
			require.NoError(t, s.AllocGraph(g))
			return s.Compute(context.Background(), g2)
		}},
		{"graph of a closed context", ggml.ErrClosed, func(t *testing.T) error {
			g, _, _, _ := m.graph(t, 2)
			g.Context().Close()
			return newSched(t).AllocGraph(g)
		}},
		{"graph with a failed op", ggml.ErrShape, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
			defer c.Close()
			g, _ := c.BuildGraph()
			c.MulMat(c.NewTensor(ggml.TypeF32, 3), c.NewTensor(ggml.TypeF32, 4))
			return newSched(t).AllocGraph(g)
		}},
		{"weights buffer closed", ggml.ErrClosed, func(t *testing.T) error {
			m2 := newMLP(t, rng, be)
			g, _, _, _ := m2.graph(t, 2)
			m2.weightsBuf.Close()
			return newSched(t).AllocGraph(g)
		}},
		{"tensors in context memory", backend.ErrUnsupported, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, MemSize: 1024, Graph: true})
			defer c.Close()
			g, _ := c.BuildGraph(c.Relu(c.NewTensor(ggml.TypeF32, 4)))
			return newSched(t).AllocGraph(g)
		}},
		// ("no backend runs the op" cannot happen: the last backend is the
		// CPU, and ops the CPU cannot run are refused when built.)
		{"pin to a backend not in the scheduler", ggml.ErrInvalid, func(t *testing.T) error {
			g, _, h, _ := m.graph(t, 2)
			_ = g
			return newSched(t).SetTensorBackend(h, cpu(t))
		}},
		{"pin to a closed backend", ggml.ErrClosed, func(t *testing.T) error {
			_, _, h, _ := m.graph(t, 2)
			return newSched(t).SetTensorBackend(h, closedBackend(t))
		}},
		{"buffer size of a foreign backend", ggml.ErrInvalid, func(t *testing.T) error {
			_, err := newSched(t).BufferSize(cpu(t))
			return err
		}},
		{"use after close", ggml.ErrClosed, func(t *testing.T) error {
			s := newSched(t)
			s.Close()
			g, _, _, _ := m.graph(t, 2)
			return s.AllocGraph(g)
		}},
		{"backend closed under the scheduler", ggml.ErrClosed, func(t *testing.T) error {
			b, err := backend.InitByName("CPU", "")
			require.NoError(t, err)
			s, err := sched.New([]*backend.Backend{b}, sched.Options{})
			require.NoError(t, err)
			defer s.Close()
			b.Close()
			return s.Reset()
		}},
		{"nil scheduler", ggml.ErrInvalid, func(*testing.T) error {
			var s *sched.Scheduler
			return s.Reset()
		}},
		{"cancelled before compute", context.Canceled, func(t *testing.T) error {
			g, _, _, _ := m.graph(t, 2)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return newSched(t).Compute(ctx, g)
		}},
		{"graph held by another scheduler", ggml.ErrInvalid, func(t *testing.T) error {
			// With one backend nothing is redirected, so use the
			// allocation hold: a second scheduler may not take a graph
			// the first holds while the first has it allocated.
			s1 := newSched(t)
			g, _, _, _ := m.graph(t, 2)
			require.NoError(t, s1.AllocGraph(g))
			g2, _, _, _ := m.graph(t, 2)
			return s1.AllocGraph(g2)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(t)
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.want), "got %v, want %v", err, tc.want)
		})
	}
}

// Closing a backend before the scheduler over it, or a graph's weights
// before the scheduler lets go of the graph, is safe.
func TestCloseOrders(t *testing.T) {
	rng := newRNG(t)
	b, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	s, err := sched.New([]*backend.Backend{b}, sched.Options{})
	require.NoError(t, err)
	m := newMLP(t, rng, cpu(t))
	g, _, _, _ := m.graph(t, 2)
	require.NoError(t, s.AllocGraph(g))
	require.NoError(t, b.Close()) // the scheduler still frees through it
	require.ErrorIs(t, s.Reset(), ggml.ErrClosed)
	require.NoError(t, s.Close())

	// Weights closed while a scheduler holds the graph.
	s2, err := sched.New([]*backend.Backend{cpu(t)}, sched.Options{})
	require.NoError(t, err)
	defer s2.Close()
	wc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(t, err)
	w := wc.NewTensor(ggml.TypeF32, 4)
	wb, err := backend.AllocContextTensors(wc, s2.Backend(0))
	require.NoError(t, err)
	defer wb.Close()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	g2, err := c.BuildGraph(c.Add(c.NewTensor(ggml.TypeF32, 4), w))
	require.NoError(t, err)
	require.NoError(t, s2.AllocGraph(g2))
	wc.Close()
	require.ErrorIs(t, s2.Compute(context.Background(), g2), ggml.ErrClosed)
	require.NoError(t, s2.Reset())
}

// A graph that changed after its allocation is not computed from the old
// splits.
func TestChangedGraphRefused(t *testing.T) {
	s, err := sched.New([]*backend.Backend{cpu(t)}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 4)
	g, err := c.BuildGraph(c.Relu(a))
	require.NoError(t, err)
	require.NoError(t, s.AllocGraph(g))
	require.NoError(t, g.Expand(c.Silu(a)))
	require.ErrorIs(t, s.Compute(context.Background(), g), ggml.ErrInvalid)
}

// Pins fill ggml's tensor set, which aborts when full: past GraphSize they
// are refused, and a Reset empties the set.
func TestPinsBoundedByGraphSize(t *testing.T) {
	be := cpu(t)
	s, err := sched.New([]*backend.Backend{be}, sched.Options{GraphSize: 4})
	require.NoError(t, err)
	defer s.Close()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	var ts []*ggml.Tensor
	for range 6 {
		ts = append(ts, c.Relu(c.NewTensor(ggml.TypeF32, 4)))
	}
	for _, x := range ts[:4] {
		require.NoError(t, s.SetTensorBackend(x, be))
	}
	require.ErrorIs(t, s.SetTensorBackend(ts[4], be), ggml.ErrGraphFull)
	assert.Nil(t, s.TensorBackend(ts[5]), "asking would insert it too")
	assert.Same(t, be, s.TensorBackend(ts[0]))
	require.NoError(t, s.Reset())
	require.NoError(t, s.SetTensorBackend(ts[4], be))
}

// The scheduler's tables grow about 21 KB a node; the default graph size
// fits in the memory New is given, and one byte less than the tables is
// refused.
func TestNewBoundedByMemory(t *testing.T) {
	be := cpu(t)
	need, ok := sched.TablesSize(ggml.DefaultGraphSize, 1, 1)
	require.True(t, ok)
	t.Logf("tables of the default graph size: %d bytes", need)
	require.InDelta(t, 21<<10*ggml.DefaultGraphSize, float64(need), float64(need)/10)
	sched.SetAvailableMemory(t, need)
	s, err := sched.New([]*backend.Backend{be}, sched.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	sched.SetAvailableMemory(t, need-1)
	_, err = sched.New([]*backend.Backend{be}, sched.Options{})
	require.ErrorIs(t, err, ggml.ErrNoMemory)
	_, ok = sched.TablesSize(sched.MaxGraphSize, sched.MaxBackends, 4)
	require.True(t, ok, "the largest scheduler's size fits in 64 bits")
}
