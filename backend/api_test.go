package backend_test

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	cpupkg "github.com/go-ggml/ggml/cpu"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// newRNG is the shared replayable generator (GOGGML_SEED).
func newRNG(t *testing.T) *rand.Rand { return testutil.NewRNG(t) }

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func noAllocCtx(t *testing.T, n int) *ggml.Context {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: n, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestBufferTypes(t *testing.T) {
	be := cpu(t)
	bt := be.DefaultBufferType()
	require.NotNil(t, bt)
	assert.NotEmpty(t, bt.Name())
	assert.True(t, bt.IsHost())
	assert.Positive(t, bt.Alignment())
	assert.Zero(t, bt.Alignment()&(bt.Alignment()-1), "a power of two")
	assert.Positive(t, bt.MaxSize())
	assert.Equal(t, be.Alignment(), bt.Alignment())
	assert.Equal(t, be.MaxSize(), bt.MaxSize())
	if d := bt.Device(); assert.NotNil(t, d, "ggml's CPU buffer type names no device; the binding fills it in") {
		assert.Equal(t, backend.DeviceCPU, d.Type())
	}
	assert.True(t, be.SupportsBufferType(bt))
	assert.True(t, be.Device().SupportsBufferType(backend.CPUBufferType()))
	// ggml leaves the CPU buffer type's device unset; the binding fills it.
	if d := backend.CPUBufferType().Device(); assert.NotNil(t, d) {
		assert.Equal(t, backend.DeviceCPU, d.Type())
		assert.Equal(t, be.Device().Name(), d.Name())
	}

	c := noAllocCtx(t, 2)
	x := c.NewTensor(ggml.TypeF32, 10)
	n, err := bt.AllocSize(x)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, x.Bytes())

	buf, err := bt.AllocBuffer(1000)
	require.NoError(t, err)
	defer buf.Close()
	assert.GreaterOrEqual(t, buf.Size(), uint64(1000))
	assert.Equal(t, bt.Name(), buf.Type().Name())
	assert.Equal(t, bt.Alignment(), buf.Alignment())
	base, err := buf.Base()
	require.NoError(t, err)
	assert.NotNil(t, base)
	assert.Zero(t, uintptr(base)%uintptr(buf.Alignment()), "the base is aligned")

	require.NoError(t, buf.Clear(0xab))
	mem := unsafe.Slice((*byte)(base), buf.Size())
	for _, v := range mem {
		require.Equal(t, byte(0xab), v)
	}
	assert.Equal(t, backend.UsageAny, buf.Usage())
	require.NoError(t, buf.SetUsage(backend.UsageWeights))
	assert.Equal(t, backend.UsageWeights, buf.Usage())
	require.NoError(t, buf.Reset())
	require.ErrorIs(t, buf.SetUsage(backend.BufferUsage(9)), ggml.ErrInvalid)

	// ggml's empty buffer for size 0 is never freed by the embedded
	// provider: refused.
	empty, err := bt.AllocBuffer(0)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	assert.Nil(t, empty)
}

func TestTensorSetGetMemsetCopy(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	c := noAllocCtx(t, 4)
	a := c.NewTensor(ggml.TypeF32, 16)
	b := c.NewTensor(ggml.TypeF32, 16)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()

	data := randBytes(rng, 64)
	require.NoError(t, backend.TensorSet(a, data, 0))
	part := randBytes(rng, 8)
	require.NoError(t, backend.TensorSet(a, part, 20))
	copy(data[20:], part)
	got := make([]byte, 64)
	require.NoError(t, backend.TensorGet(a, got, 0))
	assert.Equal(t, data, got)
	mid := make([]byte, 10)
	require.NoError(t, backend.TensorGet(a, mid, 30))
	assert.Equal(t, data[30:40], mid)

	require.NoError(t, backend.TensorMemset(a, 7, 4, 6))
	for i := 4; i < 10; i++ {
		data[i] = 7
	}
	require.NoError(t, backend.TensorGet(a, got, 0))
	assert.Equal(t, data, got)

	require.NoError(t, backend.TensorCopy(a, b))
	require.NoError(t, backend.TensorGet(b, got, 0))
	assert.Equal(t, data, got)

	// Into and out of a context's own memory.
	pool, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 256})
	require.NoError(t, err)
	defer pool.Close()
	p := pool.NewTensor(ggml.TypeF32, 16)
	require.NoError(t, backend.TensorCopy(b, p))
	pb, err := ggml.Bytes(p)
	require.NoError(t, err)
	assert.Equal(t, data, pb)
	require.NoError(t, backend.TensorMemset(p, 0, 0, 64))
	require.NoError(t, backend.TensorCopy(p, a))
	require.NoError(t, backend.TensorGet(a, got, 0))
	assert.Equal(t, make([]byte, 64), got)
}

func TestAsyncTransfers(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	be2 := cpu(t)
	c := noAllocCtx(t, 4)
	a := c.NewTensor(ggml.TypeI32, 32)
	b := c.NewTensor(ggml.TypeI32, 32)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()

	data := randBytes(rng, 128)
	require.NoError(t, be.SetTensorAsync(a, data, 0))
	require.NoError(t, be.CopyTensorAsync(be2, a, b))
	got := make([]byte, 128)
	require.NoError(t, be2.GetTensorAsync(b, got, 0))
	require.NoError(t, be.Synchronize())
	require.NoError(t, be2.Synchronize())
	assert.Equal(t, data, got)
}

// halfPlan is y = a/2 (64 elements) allocated on be, with a plan of it.
func halfPlan(t *testing.T, be *backend.Backend) (g *ggml.Graph, p *backend.Plan, check func()) {
	rng := newRNG(t)
	c := noAllocCtx(t, 4)
	a := c.NewTensor(ggml.TypeF32, 64)
	y := c.Scale(a, 0.5)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	t.Cleanup(func() { buf.Close() })
	p, err = be.NewPlan(g)
	require.NoError(t, err)
	// check computes the plan with new inputs and checks the result.
	check = func() {
		av := testutil.RandF32(rng, 64)
		require.NoError(t, ggml.SetData(a, av))
		require.NoError(t, p.Compute(context.Background()))
		got, err := ggml.Data[float32](y)
		require.NoError(t, err)
		for i := range av {
			require.Equal(t, av[i]/2, got[i]) // exact: a power-of-two scale
		}
	}
	return g, p, check
}

func TestPlan(t *testing.T) {
	be := cpu(t)
	g, p, check := halfPlan(t, be)
	for range 3 { // a plan computes the graph again with new inputs
		check()
	}
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Compute(context.Background()), ggml.ErrClosed)

	// Closing the backend frees its plans; the plan then reports ErrClosed.
	be2, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	p2, err := be2.NewPlan(g)
	require.NoError(t, err)
	require.NoError(t, be2.Close())
	require.ErrorIs(t, p2.Compute(context.Background()), ggml.ErrClosed)
	require.NoError(t, p2.Close())
}

func TestPlanCancel(t *testing.T) {
	be := cpu(t)
	g, done := chain(t, be, 2000)
	defer done()
	p, err := be.NewPlan(g)
	require.NoError(t, err)
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	require.ErrorIs(t, p.Compute(ctx), context.Canceled)
}

func TestComputeAsync(t *testing.T) {
	be := cpu(t)
	c := noAllocCtx(t, 4)
	a := c.NewTensor(ggml.TypeF32, 8)
	y := c.Add(a, a)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	av := []float32{1, -2, 3.5, 0, 8, 1e-3, -7, 2}
	require.NoError(t, ggml.SetData(a, av))
	require.NoError(t, be.ComputeAsync(g))
	require.NoError(t, be.Synchronize())
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	for i := range av {
		require.Equal(t, 2*av[i], got[i])
	}
}

func TestEventsUnsupportedOnCPU(t *testing.T) {
	be := cpu(t)
	p, err := be.Device().Props()
	require.NoError(t, err)
	if p.Caps.Events {
		t.Skip("this CPU device has events")
	}
	_, err = be.Device().NewEvent()
	require.ErrorIs(t, err, backend.ErrUnsupported)
}

func TestDeviceProps(t *testing.T) {
	be := cpu(t)
	d := be.Device()
	p, err := d.Props()
	require.NoError(t, err)
	assert.Equal(t, d.Name(), p.Name)
	assert.Equal(t, d.Description(), p.Description)
	assert.Equal(t, backend.DeviceCPU, p.Type)
	assert.Positive(t, p.MemoryTotal)
	// Upstream's CPU device loads from mapped files; the embedded provider
	// does not report the capability (false).
	assert.Equal(t, backend.HaveUpstream, p.Caps.Mmap)
	assert.NotNil(t, d.BufferType())
	_, err = d.HostBufferType()
	if !p.Caps.HostBuffer {
		require.ErrorIs(t, err, backend.ErrUnsupported)
	}
	be2, err := d.Init("")
	require.NoError(t, err)
	assert.Equal(t, be.GUID(), be2.GUID(), "two CPU backends share the implementation's GUID")
	require.NoError(t, be2.Close())
	assert.Equal(t, [16]byte{}, be2.GUID(), "a closed backend has none")
	assert.NotEqual(t, [16]byte{}, be.GUID())
}

func TestRegistry(t *testing.T) {
	n := 0
	var cpuReg *backend.Reg
	for r := range backend.Regs() {
		n++
		assert.NotEmpty(t, r.Name())
		if r.Name() == "CPU" {
			cpuReg = r
		}
	}
	require.Equal(t, backend.RegCount(), n)
	require.NotNil(t, cpuReg)
	byName, err := backend.RegByName("cpu")
	require.NoError(t, err)
	assert.Same(t, cpuReg, byName, "one *Reg per registry entry")
	require.Positive(t, cpuReg.DeviceCount())
	d := cpuReg.Device(0)
	assert.Same(t, cpuReg, d.Reg())
	for d := range cpuReg.Devices() {
		assert.Same(t, cpuReg, d.Reg())
	}
	assert.Nil(t, cpuReg.Device(cpuReg.DeviceCount()))
	assert.NotNil(t, cpuReg.ProcAddress("ggml_backend_set_n_threads"))
	assert.Nil(t, cpuReg.ProcAddress("no_such_function"))
	feats, err := cpuReg.Features()
	require.NoError(t, err)
	names := map[string]string{}
	for _, f := range feats {
		names[f.Name] = f.Value
	}
	// The CPU backend lists what it was compiled with; it agrees with ggml.
	if ggml.CPUFeatures()["AVX2"] {
		assert.Equal(t, "1", names["AVX2"])
	}
	_, err = backend.RegByName("no-such-backend")
	require.ErrorIs(t, err, backend.ErrNotFound)
	require.ErrorIs(t, backend.Unload(cpuReg), ggml.ErrInvalid, "built-in backends cannot be unloaded")
	_, err = backend.Load("/no/such/libggml-x.so")
	require.ErrorIs(t, err, backend.ErrNotFound)
	require.NoError(t, backend.LoadAllFromPath(t.TempDir())) // an empty directory: nothing to load
	assert.Equal(t, n, backend.RegCount())
	require.ErrorIs(t, backend.LoadAllFromPath("/no/such/dir"), backend.ErrNotFound)
	f := t.TempDir() + "/file"
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	require.ErrorIs(t, backend.LoadAllFromPath(f), ggml.ErrInvalid, "ggml aborts on a file")
}

func TestTensorAllocAndViewInit(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	buf, err := be.AllocBuffer(4096)
	require.NoError(t, err)
	defer buf.Close()
	c := noAllocCtx(t, 8)
	a := c.NewTensor(ggml.TypeF32, 16)
	b := c.NewTensor(ggml.TypeF32, 16)
	require.NoError(t, backend.TensorAlloc(buf, a, 0))
	require.NoError(t, backend.TensorAlloc(buf, b, 256))
	v := c.View1D(a, 4, 8)
	require.NoError(t, backend.ViewInit(v))
	av := make([]float32, 16)
	for i := range av {
		av[i] = float32(rng.NormFloat64())
	}
	require.NoError(t, ggml.SetData(a, av))
	got, err := ggml.Data[float32](v)
	require.NoError(t, err)
	assert.Equal(t, av[2:6], got)
	require.ErrorIs(t, backend.ViewInit(v), ggml.ErrInvalid, "already initialized")
	require.ErrorIs(t, backend.TensorAlloc(buf, a, 512), ggml.ErrInvalid, "already allocated")
	d := c.NewTensor(ggml.TypeF32, 16)
	require.ErrorIs(t, backend.TensorAlloc(buf, d, 4096-16), ggml.ErrNoMemory)
	require.ErrorIs(t, backend.TensorAlloc(buf, d, 1), ggml.ErrInvalid, "misaligned")
}

func TestTallocr(t *testing.T) {
	be := cpu(t)
	buf, err := be.AllocBuffer(3 * 64)
	require.NoError(t, err)
	defer buf.Close()
	ta, err := backend.NewTallocr(buf)
	require.NoError(t, err)
	c := noAllocCtx(t, 8)
	var ts []*ggml.Tensor
	for range 3 {
		x := c.NewTensor(ggml.TypeF32, 16) // 64 bytes each
		require.NoError(t, ta.Alloc(x))
		ts = append(ts, x)
	}
	require.ErrorIs(t, ta.Alloc(c.NewTensor(ggml.TypeF32, 16)), ggml.ErrNoMemory)
	for i, x := range ts { // distinct, non-overlapping memory
		require.NoError(t, ggml.SetData(x, []float32{float32(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}))
	}
	for i, x := range ts {
		got, err := ggml.Data[float32](x)
		require.NoError(t, err)
		require.Equal(t, float32(i), got[0])
	}
}

func TestGallocr(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	ga, err := backend.NewGallocr(be.DefaultBufferType())
	require.NoError(t, err)
	defer ga.Close()

	build := func(n int64) (*ggml.Graph, *ggml.Tensor, *ggml.Tensor) {
		c := noAllocCtx(t, 8)
		x := c.NewTensor(ggml.TypeF32, n).SetInput()
		y := c.Scale(c.Relu(c.Scale(x, 2)), 0.25).SetOutput()
		g, err := c.BuildGraph(y)
		require.NoError(t, err)
		return g, x, y
	}
	g, x, y := build(64)
	require.NoError(t, ga.Reserve(g))
	size, err := ga.BufferSize(0)
	require.NoError(t, err)
	require.Positive(t, size)
	run := func(g *ggml.Graph, x, y *ggml.Tensor, n int) {
		xv := make([]float32, n)
		for i := range xv {
			xv[i] = float32(rng.NormFloat64())
		}
		require.NoError(t, ga.AllocGraph(g))
		require.NoError(t, ggml.SetData(x, xv))
		require.NoError(t, be.Compute(context.Background(), g))
		got, err := ggml.Data[float32](y)
		require.NoError(t, err)
		for i, v := range xv {
			require.Equal(t, max(2*v, 0)*0.25, got[i]) // exact: powers of two
		}
	}
	run(g, x, y, 64)
	run(g, x, y, 64) // the same graph again

	// A larger graph makes the allocator grow its buffer: the first
	// graph's tensors lose their memory and say so.
	g2, x2, y2 := build(4096)
	run(g2, x2, y2, 4096)
	bigger, err := ga.BufferSize(0)
	require.NoError(t, err)
	require.Greater(t, bigger, size)
	_, err = ggml.Data[float32](y)
	require.ErrorIs(t, err, ggml.ErrClosed)
	require.ErrorIs(t, be.Compute(context.Background(), g), ggml.ErrClosed)
	run(g, x, y, 64) // allocated again, it works

	require.NoError(t, ga.Close())
	_, err = ggml.Data[float32](y)
	require.ErrorIs(t, err, ggml.ErrClosed)
	require.ErrorIs(t, ga.AllocGraph(g), ggml.ErrClosed)
	_, err = ga.BufferSize(0)
	require.ErrorIs(t, err, ggml.ErrClosed)
}

func TestGallocrSeveralBufferTypes(t *testing.T) {
	be := cpu(t)
	bt := be.DefaultBufferType()
	ga, err := backend.NewGallocr(bt, backend.CPUBufferType())
	require.NoError(t, err)
	defer ga.Close()
	c := noAllocCtx(t, 8)
	x := c.NewTensor(ggml.TypeF32, 32)
	y := c.Relu(c.Relu(x))
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	require.ErrorIs(t, ga.ReserveN(g, []int{0}, nil), ggml.ErrInvalid, "one id per node")
	require.ErrorIs(t, ga.ReserveN(g, []int{0, 2}, []int{0}), ggml.ErrInvalid, "id out of range")
	require.NoError(t, ga.ReserveN(g, []int{0, 1}, []int{1}))
	require.NoError(t, ga.AllocGraph(g))
	// Both types are the CPU's here, and ggml then shares one buffer
	// between them (reporting its size once).
	s0, _ := ga.BufferSize(0)
	s1, _ := ga.BufferSize(1)
	assert.Positive(t, s0+s1)
	_, err = ga.BufferSize(2)
	require.ErrorIs(t, err, ggml.ErrInvalid)
}

func TestMultiBuffer(t *testing.T) {
	be := cpu(t)
	b1, err := be.AllocBuffer(256)
	require.NoError(t, err)
	b2, err := be.AllocBuffer(512)
	require.NoError(t, err)
	c := noAllocCtx(t, 4)
	x := c.NewTensor(ggml.TypeF32, 8)
	require.NoError(t, backend.TensorAlloc(b2, x, 0))
	m, err := backend.NewMultiBuffer(b1, b2)
	require.NoError(t, err)
	assert.True(t, m.IsMulti())
	assert.False(t, b1.IsMulti())
	assert.Equal(t, b1.Size()+b2.Size(), m.Size())
	require.NoError(t, m.SetUsage(backend.UsageWeights))
	assert.Equal(t, backend.UsageWeights, b1.Usage(), "usage reaches the parts")
	require.NoError(t, m.Clear(0))
	require.ErrorIs(t, b1.Close(), ggml.ErrInvalid, "the multi-buffer owns its parts")
	_, err = backend.NewMultiBuffer(b1)
	require.ErrorIs(t, err, ggml.ErrInvalid, "a part cannot join twice")
	require.NoError(t, ggml.SetData(x, []float32{1, 2, 3, 4, 5, 6, 7, 8}))
	require.NoError(t, m.Close())
	require.NoError(t, b1.Close())
	_, err = ggml.Data[float32](x)
	require.ErrorIs(t, err, ggml.ErrClosed)
}

func TestGraphCopyAndCompare(t *testing.T) {
	rng := newRNG(t)
	be1 := cpu(t)
	be2 := cpu(t)
	c := noAllocCtx(t, 16)
	a := c.NewTensor(ggml.TypeF32, 8, 4).SetName("a")
	w := c.NewTensor(ggml.TypeF32, 8, 3).SetName("w")
	h := c.MulMat(w, a).SetName("h")
	y := c.Scale(c.Relu(h), 3).SetName("y")
	tr := c.Cont(c.Transpose(y)).SetName("yt")
	g, err := c.BuildGraph(tr)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be1)
	require.NoError(t, err)
	defer buf.Close()
	rand32 := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	require.NoError(t, ggml.SetData(a, rand32(32)))
	require.NoError(t, ggml.SetData(w, rand32(24)))

	gc, err := be2.CopyGraph(g)
	require.NoError(t, err)
	cg := gc.Graph()
	require.Equal(t, g.NumNodes(), cg.NumNodes())
	for i, n := range g.Nodes() {
		cn := cg.Node(i)
		assert.Equal(t, n.Op(), cn.Op())
		assert.Equal(t, n.Ne(), cn.Ne())
		assert.Equal(t, n.Name(), cn.Name())
	}
	// The copy carries the inputs' data and computes the same result.
	require.NoError(t, be1.Compute(context.Background(), g))
	require.NoError(t, be2.Compute(context.Background(), cg))
	want, err := ggml.Data[float32](tr)
	require.NoError(t, err)
	last := cg.Node(-1)
	got, err := ggml.Data[float32](last)
	require.NoError(t, err)
	assert.Equal(t, want, got, "same backend kind, same kernels: identical")
	// Ops cannot be built in the copy's contexts, but its tensors are inputs.
	bad := cg.Node(0).Context().Relu(cg.Node(0))
	require.ErrorIs(t, bad.Err(), ggml.ErrInvalid)
	require.NoError(t, gc.Close())
	require.NoError(t, gc.Close())
	_, err = ggml.Data[float32](last)
	require.ErrorIs(t, err, ggml.ErrClosed)

	var seen []string
	err = backend.CompareGraphBackend(be1, be2, g, func(i int, t1, t2 *ggml.Tensor) bool {
		v1, err := ggml.Data[float32](t1)
		require.NoError(t, err)
		v2, err := ggml.Data[float32](t2)
		require.NoError(t, err)
		assert.Equal(t, v1, v2, "node %d %s", i, t1.Name())
		seen = append(seen, t1.Name())
		return true
	}, nil)
	require.NoError(t, err)
	// Every node but the view (transpose) is compared, in order.
	assert.Equal(t, []string{"h", "node_1", "y", "yt"}, seen)

	calls := 0
	require.NoError(t, backend.CompareGraphBackend(be1, be2, g, func(i int, t1, t2 *ggml.Tensor) bool {
		calls++
		assert.Same(t, y, t1)
		return true
	}, y))
	assert.Equal(t, 1, calls)
	require.ErrorIs(t, backend.CompareGraphBackend(be1, be2, g, func(int, *ggml.Tensor, *ggml.Tensor) bool { return true }, a), ggml.ErrInvalid, "a leaf is not a node")
}

func TestGallocrSizesAndMisc(t *testing.T) {
	be := cpu(t)
	c := noAllocCtx(t, 8)
	x := c.NewTensor(ggml.TypeF32, 1000)
	y := c.Relu(c.Scale(x, 2))
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	ga, err := backend.NewGallocr(be.DefaultBufferType())
	require.NoError(t, err)
	defer ga.Close()
	sizes, err := ga.ReserveSizes(g, nil, nil)
	require.NoError(t, err)
	require.Len(t, sizes, 1)
	require.False(t, x.IsAllocated(), "measuring allocates nothing")
	require.NoError(t, ga.Reserve(g))
	got, err := ga.BufferSize(0)
	require.NoError(t, err)
	assert.Equal(t, sizes[0], got, "the measure is what reserving takes")
	att, err := ga.AttemptedBufferSize(0)
	if backend.HaveOllamaExtras {
		require.NoError(t, err)
		assert.GreaterOrEqual(t, att, got)
	} else {
		require.ErrorIs(t, err, backend.ErrUnsupported, "only the embedded provider has it")
	}
	require.NoError(t, ga.AllocGraph(g))
	require.NoError(t, be.Compute(context.Background(), g))

	// InitTensor on the buffer a tensor lives in, and on another.
	buf, err := be.AllocBuffer(4096)
	require.NoError(t, err)
	defer buf.Close()
	w := noAllocCtx(t, 2)
	z := w.NewTensor(ggml.TypeF32, 4)
	require.NoError(t, backend.TensorAlloc(buf, z, 0))
	require.NoError(t, buf.InitTensor(z))
	other, err := be.AllocBuffer(64)
	require.NoError(t, err)
	defer other.Close()
	require.ErrorIs(t, other.InitTensor(z), ggml.ErrInvalid)
	if backend.HaveOllamaExtras {
		require.NoError(t, be.Device().Reset())
	} else {
		require.ErrorIs(t, be.Device().Reset(), backend.ErrUnsupported, "only the embedded provider has it")
	}
}

// deviceWithEvents returns a device that has events, or skips.
func deviceWithEvents(t *testing.T) *backend.Device {
	for d := range backend.Devices() {
		if p, err := d.Props(); err == nil && p.Caps.Events {
			return d
		}
	}
	t.Skip("needs a device with events (a GPU backend, -tags vulkan or cuda); the CPU has none")
	return nil
}

func TestEventsOnADeviceWithEvents(t *testing.T) {
	d := deviceWithEvents(t)
	be, err := d.Init("")
	require.NoError(t, err)
	defer be.Close()
	e, err := d.NewEvent()
	require.NoError(t, err)
	defer e.Close()
	// The device's registry entry counts the event: Unload would take
	// the code that frees it.
	require.ErrorContains(t, backend.Unload(d.Reg()), " 1 event(s)")
	c := noAllocCtx(t, 4)
	x := c.NewTensor(ggml.TypeF32, 256)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	data := randBytes(newRNG(t), 1024)
	require.NoError(t, be.SetTensorAsync(x, data, 0))
	require.NoError(t, e.Record(be))
	require.NoError(t, e.Synchronize())
	require.NoError(t, e.Wait(be))
	got := make([]byte, 1024)
	require.NoError(t, backend.TensorGet(x, got, 0))
	require.Equal(t, data, got)
	// A CPU backend is no backend of the event's kind.
	cpuBe := cpu(t)
	require.ErrorIs(t, e.Record(cpuBe), ggml.ErrInvalid)
	require.ErrorIs(t, e.Wait(cpuBe), ggml.ErrInvalid)
	// be's queued work still waits on the event (upstream's Vulkan queues
	// a wait on the VkEvent): Close synchronizes be first. Freeing the
	// event before that hung be's Close (its synchronize) on lavapipe.
	require.NoError(t, e.Close())
	require.ErrorIs(t, e.Synchronize(), ggml.ErrClosed)
	require.ErrorContains(t, backend.Unload(d.Reg()), " 0 event(s)", "the event's handle is freed")
}

// Copies between two devices: the CPU and another one, when there is one.
func TestAsyncCopyBetweenDevices(t *testing.T) {
	var other *backend.Device
	for d := range backend.Devices() {
		if d.Type() != backend.DeviceCPU {
			other = d
			break
		}
	}
	if other == nil {
		t.Skip("needs a second device (a GPU backend, -tags vulkan or cuda)")
	}
	gpu, err := other.Init("")
	require.NoError(t, err)
	defer gpu.Close()
	host := cpu(t)
	hc := noAllocCtx(t, 2)
	hx := hc.NewTensor(ggml.TypeF32, 64)
	hb, err := backend.AllocContextTensors(hc, host)
	require.NoError(t, err)
	defer hb.Close()
	dc := noAllocCtx(t, 2)
	dx := dc.NewTensor(ggml.TypeF32, 64)
	db, err := backend.AllocContextTensors(dc, gpu)
	require.NoError(t, err)
	defer db.Close()
	data := randBytes(newRNG(t), 256)
	require.NoError(t, backend.TensorSet(hx, data, 0))
	require.NoError(t, host.CopyTensorAsync(gpu, hx, dx))
	require.NoError(t, gpu.Synchronize())
	got := make([]byte, 256)
	require.NoError(t, gpu.GetTensorAsync(dx, got, 0))
	require.NoError(t, gpu.Synchronize())
	require.Equal(t, data, got)
}

// An event and the backends whose queued work uses it (one records it and
// waits on it, one waits on it), dropped together: the garbage collector finds them at
// once and runs their cleanups in any order. The event must outlive the
// queued work (a backend's last synchronize reads it; on lavapipe, a wait
// on a destroyed event hung it), so each backend holds a reference to the
// event until it has synchronized or been freed. Every backend's cleanup
// must finish: the count of live backends returns to where it was.
func TestEventDroppedWithItsWaiter(t *testing.T) {
	d := deviceWithEvents(t)
	before := settledLiveBackends()
	for range 8 {
		func() {
			rec, err := d.Init("")
			require.NoError(t, err)
			wait, err := d.Init("")
			require.NoError(t, err)
			e, err := d.NewEvent()
			require.NoError(t, err)
			require.NoError(t, e.Record(rec))
			require.NoError(t, e.Wait(rec))
			require.NoError(t, e.Wait(wait))
			require.NoError(t, e.Wait(wait)) // one reference per backend however often
		}()
		runtime.GC()
	}
	deadline := time.Now().Add(time.Minute)
	for backend.LiveBackends() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, backend.LiveBackends(), before, "a dropped backend was never freed: its cleanup hangs")
}

// settledLiveBackends collects what earlier tests dropped, until the count
// of live backends stops falling, and returns it: a count taken before is
// not lowered later by their cleanups.
func settledLiveBackends() int {
	n := backend.LiveBackends()
	for range 20 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		m := backend.LiveBackends()
		if m == n {
			break
		}
		n = m
	}
	return n
}

// An event that lives on keeps no backend that queued work on it alive: a
// dropped backend is collected (and synchronizes in its cleanup) while its
// event is still in use.
func TestEventKeepsNoDroppedWaiter(t *testing.T) {
	d := deviceWithEvents(t)
	e, err := d.NewEvent()
	require.NoError(t, err)
	defer e.Close()
	before := settledLiveBackends()
	func() {
		b, err := d.Init("")
		require.NoError(t, err)
		require.NoError(t, e.Record(b))
		require.NoError(t, e.Wait(b))
		// The recorded work finishes while b lives: upstream's Vulkan
		// event, synchronized after its backend was freed with the
		// record still queued, aborted the process once in three CI runs
		// (lavapipe, in ggml_backend_event_synchronize); what this test
		// asks is only that the event holds b weakly.
		require.NoError(t, b.Synchronize())
	}()
	deadline := time.Now().Add(20 * time.Second)
	for backend.LiveBackends() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, backend.LiveBackends(), before, "the event kept a dropped backend alive")
	require.NoError(t, e.Synchronize())
	require.NoError(t, e.Close())
}

// An event whose recording backend was closed can still be synchronized
// and recorded on another backend: a backend synchronizes the events it
// recorded when it synchronizes (Close does too), while it lives.
// Upstream's Vulkan event otherwise kept a pointer to the closed
// backend's command buffer, which its next synchronize used (a CI run
// aborted in ggml_backend_event_synchronize, lavapipe).
func TestEventOutlivesItsRecorder(t *testing.T) {
	d := deviceWithEvents(t)
	e, err := d.NewEvent()
	require.NoError(t, err)
	defer e.Close()
	for range 3 {
		b, err := d.Init("")
		require.NoError(t, err)
		require.NoError(t, e.Record(b))
		before := backend.RecorderSyncs()
		require.NoError(t, b.Close())
		// The crash was not certain on lavapipe; what prevents it is.
		require.Equal(t, before+1, backend.RecorderSyncs(), "the recorder synchronized the event before it was freed")
		require.NoError(t, e.Synchronize())
	}
	b, err := d.Init("")
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, e.Record(b))
	require.NoError(t, e.Wait(b))
	require.NoError(t, e.Synchronize())
	require.NoError(t, b.Synchronize())
}

// A CPU backend computes on a thread pool of its own (its threads stay
// from compute to compute), started by its first compute and sized to its
// thread count: the pool follows SetThreads, outlives it while a plan that
// captured it lives, gives way to a pool the user attaches (and is not
// brought back when that one is detached), and is freed with the backend.
func TestOwnThreadPool(t *testing.T) {
	be, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	require.Nil(t, backend.OwnPool(be), "no threads before the first compute")
	assert.Equal(t, runtime.NumCPU(), be.Threads())
	requireAddWorks(t, be)
	first := backend.OwnPool(be)
	require.NotNil(t, first, "the first compute started the backend's own pool")

	require.NoError(t, be.SetThreads(3))
	assert.True(t, backend.OwnPoolFreed(first), "the pool of the old count is freed")
	assert.Equal(t, 3, be.Threads(), "no cap from the old pool")
	requireAddWorks(t, be)
	second := backend.OwnPool(be)
	require.NotNil(t, second, "the next compute started a pool of 3")
	assert.NotSame(t, first, second)

	// A plan captures the pool; it outlives the next SetThreads until the
	// plan is closed, and the plan still computes on it.
	_, p, check := halfPlan(t, be)
	require.NoError(t, be.SetThreads(2))
	assert.False(t, backend.OwnPoolFreed(second), "the plan holds it")
	check()
	require.NoError(t, p.Close())
	assert.True(t, backend.OwnPoolFreed(second), "freed with its last plan")
	requireAddWorks(t, be)

	// A pool the user attaches replaces it; once that one is detached, the
	// backend starts threads per compute, as the user asked, even after
	// SetThreads.
	third := backend.OwnPool(be)
	require.NotNil(t, third)
	tp, err := cpupkg.NewThreadPool(cpupkg.DefaultThreadPoolParams(1))
	require.NoError(t, err)
	require.NoError(t, cpupkg.SetThreadPool(be, tp))
	assert.Nil(t, backend.OwnPool(be))
	assert.True(t, backend.OwnPoolFreed(third))
	require.NoError(t, be.SetThreads(2))
	assert.Equal(t, 1, be.Threads(), "capped by the user's pool of 1")
	require.NoError(t, cpupkg.SetThreadPool(be, nil))
	require.NoError(t, tp.Close())
	require.NoError(t, be.SetThreads(3))
	assert.Nil(t, backend.OwnPool(be))
	assert.Equal(t, 3, be.Threads())
	requireAddWorks(t, be)

	// Closing the backend frees its own pool.
	be2, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	requireAddWorks(t, be2)
	own := backend.OwnPool(be2)
	require.NotNil(t, own)
	require.NoError(t, be2.Close())
	assert.True(t, backend.OwnPoolFreed(own))
	require.NoError(t, be.Close())
}
