package backend_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

func TestDevices(t *testing.T) {
	n := 0
	var cpu *backend.Device
	for d := range backend.Devices() {
		n++
		assert.NotEmpty(t, d.Name())
		if d.Type() == backend.DeviceCPU {
			cpu = d
		}
	}
	require.Equal(t, backend.DeviceCount(), n)
	require.NotNil(t, cpu, "the CPU device is always registered")
	free, total := cpu.Memory()
	assert.Positive(t, total)
	assert.LessOrEqual(t, free, total)
	assert.NotEmpty(t, cpu.Description())

	byName, err := backend.DeviceByName("cpu") // case-insensitive, as in ggml
	require.NoError(t, err)
	assert.Equal(t, cpu.Name(), byName.Name())
	byType, err := backend.DeviceByType(backend.DeviceCPU)
	require.NoError(t, err)
	assert.Equal(t, cpu.Name(), byType.Name())
	assert.Nil(t, backend.DeviceAt(-1))
	assert.Nil(t, backend.DeviceAt(n))
	assert.Equal(t, "CPU", backend.DeviceCPU.String())
}

func TestInit(t *testing.T) {
	best, err := backend.InitBest()
	require.NoError(t, err)
	defer best.Close()
	assert.NotEmpty(t, best.Name())
	require.NotNil(t, best.Device())
	if backend.DeviceCount() == 1 {
		assert.True(t, best.IsCPU(), "with only the CPU registered, it is the best")
	}

	be, err := backend.InitByType(backend.DeviceCPU, "")
	require.NoError(t, err)
	assert.True(t, be.IsCPU())
	assert.Equal(t, backend.DeviceCPU, be.Device().Type())
	require.NoError(t, be.Close())
	require.NoError(t, be.Close(), "Close is idempotent")
	assert.Empty(t, be.Name())
	assert.False(t, be.IsCPU())
	var nilBe *backend.Backend
	require.NoError(t, nilBe.Close(), "Close is nil-safe")
	require.ErrorIs(t, be.SetThreads(2), ggml.ErrClosed)
}

func TestBufferFromContext(t *testing.T) {
	be := cpu(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 100)
	b := c.NewTensor(ggml.TypeF16, 64, 2)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, buf.Size(), a.Bytes()+b.Bytes())
	assert.True(t, buf.IsHost())
	assert.NotEmpty(t, buf.Name())
	assert.True(t, a.IsAllocated())
	require.NoError(t, buf.Close())
	require.NoError(t, buf.Close())
	assert.False(t, a.IsAllocated(), "its buffer is gone")
	assert.Zero(t, buf.Size())
}

// chain builds a graph long enough to be cancelled midway: n products of
// 256x256 matrices (~34 MFLOP each).
func chain(t *testing.T, be *backend.Backend, n int) (*ggml.Graph, func()) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: n + 4, NoAlloc: true, Graph: true, GraphSize: n + 4})
	require.NoError(t, err)
	w := c.NewTensor(ggml.TypeF32, 256, 256)
	y := c.NewTensor(ggml.TypeF32, 256, 256)
	for range n {
		y = c.MulMat(w, y)
	}
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	return g, func() { buf.Close(); c.Close() }
}

func TestComputeCancel(t *testing.T) {
	be := cpu(t)
	g, done := chain(t, be, 2000) // ~68 GFLOP: seconds on this machine class
	defer done()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	err := be.Compute(ctx, g)
	require.ErrorIs(t, err, context.Canceled)

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, be.Compute(ctx, g), context.DeadlineExceeded)

	// The backend computes correctly after an abort.
	requireAddWorks(t, be)
}

func requireAddWorks(t *testing.T, be *backend.Backend) {
	rng := testutil.NewRNG(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 33)
	b := c.NewTensor(ggml.TypeF32, 33)
	s := c.Add(a, b)
	g, err := c.BuildGraph(s)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	av, bv := make([]float32, 33), make([]float32, 33)
	for i := range av {
		av[i], bv[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	require.NoError(t, ggml.SetData(a, av))
	require.NoError(t, ggml.SetData(b, bv))
	require.NoError(t, be.Compute(context.Background(), g))
	got, err := ggml.Data[float32](s)
	require.NoError(t, err)
	for i := range av {
		require.Equal(t, av[i]+bv[i], got[i]) // one f32 rounding, as in Go
	}
}

func TestThreads(t *testing.T) {
	be := cpu(t)
	for _, n := range []int{1, 3} {
		require.NoError(t, be.SetThreads(n))
		requireAddWorks(t, be)
	}
}

func TestSupportsOp(t *testing.T) {
	be := cpu(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 4, 4)
	assert.True(t, be.SupportsOp(c.MulMat(a, a)))
	// What the CPU backend cannot run is refused when the op is built (the
	// type rules come from its type traits), so no op reaches it that it
	// does not support; GPU backends' refusals are tested in package
	// vulkan (TestComputeUnsupportedOp).
	bad := c.MulMat(a, c.NewTensor(ggml.TypeI32, 4, 4))
	require.ErrorIs(t, c.Err(), ggml.ErrType)
	assert.False(t, be.SupportsOp(bad))
	var nilT *ggml.Tensor
	assert.False(t, be.SupportsOp(nilT))
}

func cpu(t *testing.T) *backend.Backend {
	return backendtest.CPU(t)
}
