package cpu_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/cpu"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// scaleGraph builds y = x*0.5 + x over n floats in a NoAlloc context.
func scaleGraph(t *testing.T, n int64) (*ggml.Graph, *ggml.Tensor, *ggml.Tensor) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	x := c.NewTensor(ggml.TypeF32, n)
	y := c.Add(c.Scale(x, 0.5), x)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	return g, x, y
}

func checkCompute(t *testing.T, run func(*ggml.Graph) error, be *backend.Backend) {
	rng := testutil.NewRNG(t)
	g, x, y := scaleGraph(t, 4099)
	buf, err := backend.AllocContextTensors(g.Context(), be)
	require.NoError(t, err)
	defer buf.Close()
	xv := make([]float32, 4099)
	for i := range xv {
		xv[i] = float32(rng.NormFloat64())
	}
	require.NoError(t, ggml.SetData(x, xv))
	require.NoError(t, run(g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	for i, v := range xv {
		require.Equal(t, v*0.5+v, got[i]) // one rounding, as in Go
	}
}

func TestNew(t *testing.T) {
	be, err := cpu.New(0)
	require.NoError(t, err)
	defer be.Close()
	assert.True(t, be.IsCPU())
	checkCompute(t, func(g *ggml.Graph) error { return be.Compute(context.Background(), g) }, be)
	_, err = cpu.New(-1)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = cpu.New(backend.MaxThreads + 1)
	require.ErrorIs(t, err, ggml.ErrInvalid)
}

func TestThreadPool(t *testing.T) {
	be, err := cpu.New(2)
	require.NoError(t, err)
	defer be.Close()
	p := cpu.DefaultThreadPoolParams(2)
	assert.Equal(t, 2, p.Threads)
	tp, err := cpu.NewThreadPool(p)
	require.NoError(t, err)
	assert.Equal(t, 2, tp.Threads())
	require.NoError(t, cpu.SetThreadPool(be, tp))
	checkCompute(t, func(g *ggml.Graph) error { return be.Compute(context.Background(), g) }, be)
	require.NoError(t, tp.Pause())
	checkCompute(t, func(g *ggml.Graph) error { return be.Compute(context.Background(), g) }, be) // a compute resumes it
	require.NoError(t, tp.Resume())

	require.ErrorIs(t, tp.Close(), ggml.ErrInvalid, "in use by the backend")
	// A plan captures the pool: it stays in use after the backend lets go.
	g, _, _ := scaleGraph(t, 16)
	buf, err := backend.AllocContextTensors(g.Context(), be)
	require.NoError(t, err)
	defer buf.Close()
	plan, err := be.NewPlan(g)
	require.NoError(t, err)
	require.NoError(t, cpu.SetThreadPool(be, nil))
	require.ErrorIs(t, tp.Close(), ggml.ErrInvalid, "in use by the plan")
	require.NoError(t, plan.Compute(context.Background()))
	require.NoError(t, plan.Close())
	require.NoError(t, tp.Close())
	require.NoError(t, tp.Close())
	require.ErrorIs(t, cpu.SetThreadPool(be, tp), ggml.ErrClosed)
	require.ErrorIs(t, tp.Pause(), ggml.ErrClosed)
}

func TestThreadPoolParams(t *testing.T) {
	for _, p := range []cpu.ThreadPoolParams{
		{Threads: 0},
		{Threads: backend.MaxThreads + 1},
		{Threads: 1, Poll: 101},
		{Threads: 1, Priority: 9},
		{Threads: 1, CPUs: []int{-1}},
		{Threads: 1, CPUs: []int{backend.MaxThreads}},
	} {
		_, err := cpu.NewThreadPool(p)
		require.ErrorIs(t, err, ggml.ErrInvalid, "%+v", p)
	}
}

// A pool pinned to CPUs changes the affinity of the thread that computes:
// the compute runs on a thread of its own, and the computing goroutine's
// thread is untouched.
func TestPinnedPoolIsolatesTheCaller(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("affinity is Linux's")
	}
	be, err := cpu.New(1)
	require.NoError(t, err)
	defer be.Close()
	p := cpu.DefaultThreadPoolParams(1)
	p.CPUs = []int{0}
	p.Paused = true // a compute resumes it, applying its affinity to the caller
	tp, err := cpu.NewThreadPool(p)
	require.NoError(t, err)
	require.NoError(t, cpu.SetThreadPool(be, tp))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := affinity(t)
	checkCompute(t, func(g *ggml.Graph) error { return be.Compute(context.Background(), g) }, be)
	require.Equal(t, before, affinity(t))
	require.NoError(t, cpu.SetThreadPool(be, nil))
	require.NoError(t, tp.Close())
}

func TestHostMemoryBuffer(t *testing.T) {
	be, err := cpu.New(1)
	require.NoError(t, err)
	defer be.Close()
	m, err := backend.AllocHostMemory(1 << 12)
	require.NoError(t, err)
	buf, err := cpu.BufferFromHostMemory(m, 64, 1024)
	require.NoError(t, err)
	assert.Equal(t, uint64(1024), buf.Size())
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 4)
	require.NoError(t, backend.TensorAlloc(buf, x, 0))
	require.NoError(t, ggml.SetData(x, []float32{1, 2, 3, 4}))
	// The tensor's data is the caller's memory, 64 bytes in.
	b := m.Bytes()[64:80]
	require.Equal(t, []byte{0, 0, 0x80, 0x3f}, b[:4]) // 1.0f little-endian
	require.ErrorIs(t, m.Close(), ggml.ErrInvalid, "in use by the buffer")
	_, err = cpu.BufferFromHostMemory(m, 1, 64)
	require.ErrorIs(t, err, ggml.ErrInvalid, "misaligned")
	_, err = cpu.BufferFromHostMemory(m, 4096-32, 64)
	require.ErrorIs(t, err, ggml.ErrShape, "past the end")
	require.NoError(t, buf.Close())
	require.NoError(t, m.Close())
	_, err = ggml.Data[float32](x)
	require.ErrorIs(t, err, ggml.ErrClosed)
	_, err = cpu.BufferFromHostMemory(m, 0, 64)
	require.ErrorIs(t, err, ggml.ErrClosed)

	// The device route does the same.
	m2, err := backend.AllocHostMemory(256)
	require.NoError(t, err)
	b2, err := be.Device().BufferFromHostMemory(m2, 0, 256, 256)
	require.NoError(t, err)
	require.NoError(t, b2.Close())
	require.NoError(t, m2.Close())
}

func TestFeaturesAndNUMA(t *testing.T) {
	f, err := cpu.Features()
	require.NoError(t, err)
	require.NotEmpty(t, f)
	for _, x := range f {
		if x.Name == "AVX2" {
			assert.Equal(t, cpu.Has()["AVX2"], x.Value == "1")
		}
	}
	require.NoError(t, cpu.NUMAInit(cpu.NUMADisabled))
	_ = cpu.IsNUMA() // a machine fact; true only with several nodes
	require.ErrorIs(t, cpu.NUMAInit(cpu.NUMAStrategy(42)), ggml.ErrInvalid)
}
