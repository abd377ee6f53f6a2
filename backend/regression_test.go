package backend_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// A graph whose weights' context was closed is refused by the allocator.
func TestGallocrGraphWithClosedWeights(t *testing.T) {
	be := cpu(t)
	w, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(t, err)
	wt := w.NewTensor(ggml.TypeF32, 8)
	c := noAllocCtx(t, 4)
	g, err := c.BuildGraph(c.Relu(c.Add(c.NewTensor(ggml.TypeF32, 8), wt)))
	require.NoError(t, err)
	w.Close()
	ga, err := backend.NewGallocr(be.DefaultBufferType())
	require.NoError(t, err)
	defer ga.Close()
	require.ErrorIs(t, ga.AllocGraph(g), ggml.ErrClosed)
	require.ErrorIs(t, ga.Reserve(g), ggml.ErrClosed)
}

// A failed allocation can be retried: ggml leaves a NULL buffer behind it
// that a plain retry would write through.
func TestGallocrRetryAfterFailure(t *testing.T) {
	be := cpu(t)
	ga, err := backend.NewGallocr(be.DefaultBufferType())
	require.NoError(t, err)
	defer ga.Close()
	huge := noAllocCtx(t, 4)
	// 2^46 floats: 256 TiB, more than a 47-bit address space holds, so the
	// allocation fails even where the kernel overcommits memory (a 16 TiB
	// one succeeded on a GPU machine with vm.overcommit_memory=1).
	g, err := huge.BuildGraph(huge.Relu(huge.NewTensor(ggml.TypeF32, 1<<23, 1<<23)))
	require.NoError(t, err)
	require.ErrorIs(t, ga.AllocGraph(g), ggml.ErrNoMemory)
	require.ErrorIs(t, ga.AllocGraph(g), ggml.ErrNoMemory, "the retry fails again, it does not crash")
	small := noAllocCtx(t, 4)
	x := small.NewTensor(ggml.TypeF32, 4)
	y := small.Relu(x)
	g2, err := small.BuildGraph(y)
	require.NoError(t, err)
	require.NoError(t, ga.AllocGraph(g2))
	require.NoError(t, ggml.SetData(x, []float32{-1, 2, -3, 4}))
	require.NoError(t, be.Compute(context.Background(), g2))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 2, 0, 4}, got)
}

// A plan is refused once its graph changed: its work memory fits the old one.
func TestPlanOfAChangedGraph(t *testing.T) {
	be := cpu(t)
	c := noAllocCtx(t, 8)
	a := c.NewTensor(ggml.TypeF32, 4)
	g, err := c.BuildGraph(c.Relu(a))
	require.NoError(t, err)
	_, err = backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	p, err := be.NewPlan(g)
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.Compute(context.Background()))
	require.NoError(t, g.Clear())
	require.ErrorIs(t, p.Compute(context.Background()), ggml.ErrInvalid)
}

// A backend dropped with memory still pinned by an async transfer is freed
// by its cleanup without the runtime's "leaking pinned pointer" panic.
func TestDroppedBackendWithPendingTransfer(t *testing.T) {
	func() {
		be, err := backend.InitByName("CPU", "")
		require.NoError(t, err)
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
		require.NoError(t, err)
		x := c.NewTensor(ggml.TypeF32, 16)
		buf, err := backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		require.NoError(t, be.SetTensorAsync(x, make([]byte, 64), 0))
		_ = buf
	}()
	for range 5 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}

// Tensors whose buffer was closed are placed anew by the next allocation
// of their context, views included.
func TestReallocateAfterBufferClose(t *testing.T) {
	be := cpu(t)
	c := noAllocCtx(t, 4)
	x := c.NewTensor(ggml.TypeF32, 8)
	v := c.View1D(x, 4, 16)
	b1, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	require.NoError(t, b1.Close())
	b2, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer b2.Close()
	require.NoError(t, ggml.SetData(x, []float32{0, 1, 2, 3, 4, 5, 6, 7}))
	got, err := ggml.Data[float32](v)
	require.NoError(t, err)
	assert.Equal(t, []float32{4, 5, 6, 7}, got)
}

func TestNestedMultiBufferRefused(t *testing.T) {
	be := cpu(t)
	b1, _ := be.AllocBuffer(64)
	inner, err := backend.NewMultiBuffer(b1)
	require.NoError(t, err)
	defer inner.Close()
	b2, _ := be.AllocBuffer(64)
	defer b2.Close()
	_, err = backend.NewMultiBuffer(inner, b2)
	require.ErrorIs(t, err, ggml.ErrInvalid)
}

// A graph of nodes added alone is checked down to its sources' sources,
// which a graph copy follows.
func TestCopyGraphChecksAncestors(t *testing.T) {
	be := cpu(t)
	c := noAllocCtx(t, 8)
	a := c.NewTensor(ggml.TypeF32, 4)
	mid := c.Relu(a)
	top := c.Silu(mid)
	g, err := c.NewGraph(4)
	require.NoError(t, err)
	require.NoError(t, g.AddNode(top))
	// Only top and mid get memory; a stays unallocated.
	buf, err := be.AllocBuffer(1024)
	require.NoError(t, err)
	defer buf.Close()
	require.NoError(t, backend.TensorAlloc(buf, top, 0))
	require.NoError(t, backend.TensorAlloc(buf, mid, 256))
	_, err = be.CopyGraph(g)
	require.ErrorIs(t, err, ggml.ErrNotAllocated)
}

// ggml_backend_graph_copy sizes its tables from the graph's capacity, some
// 37 times the graph itself: a graph of 2^26 nodes (2.7 GB, lazily touched)
// needs about 100 GB to copy, and ggml asserted when its malloc failed. The
// copy is ErrNoMemory before ggml is asked.
func TestCopyGraphBoundedByMemory(t *testing.T) {
	be := cpu(t)
	copyOf := func(t *testing.T, size int) error {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true, GraphSize: size})
		require.NoError(t, err)
		defer c.Close()
		g, err := c.BuildGraph(c.Relu(c.NewTensor(ggml.TypeF32, 4)))
		require.NoError(t, err)
		buf, err := backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		defer buf.Close()
		gc, err := be.CopyGraph(g)
		if err == nil {
			gc.Close()
		}
		return err
	}
	t.Run("default size, little memory", func(t *testing.T) {
		require.NoError(t, copyOf(t, 0))
		backend.SetAvailableMemory(t, 1<<20) // the copy's tables take 3 MB
		require.ErrorIs(t, copyOf(t, 0), ggml.ErrNoMemory)
	})
	t.Run("2^26 nodes", func(t *testing.T) {
		if testing.Short() {
			t.Skip("maps a 2.7 GB graph")
		}
		err := copyOf(t, 1<<26)
		var ae *ggml.AssertError
		require.False(t, errors.As(err, &ae), "ggml asserted: %v", err)
		if err == nil {
			t.Skip("this machine has the 100 GB the copy takes")
		}
		require.ErrorIs(t, err, ggml.ErrNoMemory)
	})
}

// bssPointer is a global that holds a pointer: it lives in the test
// binary's .bss, where cgo's pointer check refuses any unsafe.Pointer
// argument.
var bssPointer *int

// A tensor placed in a GPU buffer at an offset where the buffer's
// placeholder base (Vulkan's is 0x1000) plus the offset is an address in the
// Go binary's data: TensorAlloc made that address in Go and passed it to C
// as an unsafe.Pointer, and cgo's check panicked ("Go pointer to unpinned Go
// pointer"), on lavapipe loading a 1b model's 40 MiB-in weights.
func TestTensorAllocAtAnOffsetInGoData(t *testing.T) {
	target := uintptr(unsafe.Pointer(&bssPointer))
	ran := false
	for d := range backend.Devices() {
		bt := d.BufferType()
		if d.Type() == backend.DeviceCPU || bt == nil || bt.IsHost() {
			continue
		}
		t.Run(d.Name(), func(t *testing.T) {
			probe := noAllocCtx(t, 1)
			p := probe.NewTensor(ggml.TypeF32, 16)
			_, err := backend.AllocContextTensorsFromType(probe, bt)
			require.NoError(t, err)
			base := backend.DataAddr(p)
			if base > target || target-base > 1<<30 {
				t.Skipf("%s's buffers are at %#x, far from the binary's data at %#x", d.Name(), base, target)
			}
			align := bt.Alignment()
			offset := uint64(target-base) / align * align
			buf, err := bt.AllocBuffer(offset + 4096)
			require.NoError(t, err)
			defer buf.Close()
			c := noAllocCtx(t, 1)
			x := c.NewTensor(ggml.TypeF32, 16)
			require.NoError(t, backend.TensorAlloc(buf, x, offset))
			if backend.DataAddr(x) > target || uint64(target-backend.DataAddr(x)) >= align {
				t.Logf("the buffer's base moved: the tensor is at %#x, the data at %#x", backend.DataAddr(x), target)
			}
			want := make([]float32, 16)
			for i := range want {
				want[i] = float32(i) - 7.5
			}
			require.NoError(t, backend.TensorSet(x, unsafe.Slice((*byte)(unsafe.Pointer(&want[0])), 4*len(want)), 0))
			got := make([]float32, len(want))
			require.NoError(t, backend.TensorGet(x, unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), 4*len(got)), 0))
			assert.Equal(t, want, got)
			ran = true
		})
	}
	if !ran {
		t.Skip("no GPU buffer here: make test-vulkan runs this on lavapipe")
	}
}
