package backend_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// Every call a caller can get wrong returns an error of the documented kind
// and the process lives.
func TestBackendMisuse(t *testing.T) {
	be := cpu(t)
	bg := context.Background()
	// alloc returns n f32 tensors of 16 elements in a fresh CPU buffer.
	alloc := func(t *testing.T, n int) []*ggml.Tensor {
		c := noAllocCtx(t, n+4)
		var ts []*ggml.Tensor
		for range n {
			ts = append(ts, c.NewTensor(ggml.TypeF32, 16))
		}
		buf, err := backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		t.Cleanup(func() { buf.Close() })
		return ts
	}
	unallocated := func(t *testing.T) *ggml.Tensor { return noAllocCtx(t, 2).NewTensor(ggml.TypeF32, 16) }
	closedBackend := func(t *testing.T) *backend.Backend {
		b, err := backend.InitByName("CPU", "")
		require.NoError(t, err)
		b.Close()
		return b
	}
	closedBuffer := func(t *testing.T) *backend.Buffer {
		b, err := be.AllocBuffer(64)
		require.NoError(t, err)
		b.Close()
		return b
	}
	graphOf := func(t *testing.T) *ggml.Graph {
		c := noAllocCtx(t, 4)
		g, err := c.BuildGraph(c.Relu(c.NewTensor(ggml.TypeF32, 4)))
		require.NoError(t, err)
		_, err = backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		return g
	}
	cases := []struct {
		name string
		want error
		call func(t *testing.T) error
	}{
		{"set past the end", ggml.ErrShape, func(t *testing.T) error { return backend.TensorSet(alloc(t, 1)[0], make([]byte, 8), 60) }},
		{"set offset past the end", ggml.ErrShape, func(t *testing.T) error { return backend.TensorSet(alloc(t, 1)[0], nil, 65) }},
		{"get past the end", ggml.ErrShape, func(t *testing.T) error { return backend.TensorGet(alloc(t, 1)[0], make([]byte, 65), 0) }},
		{"memset past the end", ggml.ErrShape, func(t *testing.T) error { return backend.TensorMemset(alloc(t, 1)[0], 0, 32, 33) }},
		{"memset huge", ggml.ErrShape, func(t *testing.T) error { return backend.TensorMemset(alloc(t, 1)[0], 0, 1, ^uint64(0)) }},
		{"set unallocated", ggml.ErrNotAllocated, func(t *testing.T) error { return backend.TensorSet(unallocated(t), make([]byte, 4), 0) }},
		{"get unallocated", ggml.ErrNotAllocated, func(t *testing.T) error { return backend.TensorGet(unallocated(t), make([]byte, 4), 0) }},
		{"memset unallocated, size 0", ggml.ErrNotAllocated, func(t *testing.T) error { return backend.TensorMemset(unallocated(t), 0, 0, 0) }},
		{"async set unallocated, size 0", ggml.ErrNotAllocated, func(t *testing.T) error { return be.SetTensorAsync(unallocated(t), nil, 0) }},
		{"async get past the end", ggml.ErrShape, func(t *testing.T) error { return be.GetTensorAsync(alloc(t, 1)[0], make([]byte, 65), 0) }},
		{"async set on closed backend", ggml.ErrClosed, func(t *testing.T) error {
			return closedBackend(t).SetTensorAsync(alloc(t, 1)[0], make([]byte, 4), 0)
		}},
		{"async set on context memory", backend.ErrUnsupported, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 128})
			defer c.Close()
			return be.SetTensorAsync(c.NewTensor(ggml.TypeF32, 4), make([]byte, 4), 0)
		}},
		{"set on closed buffer", ggml.ErrClosed, func(t *testing.T) error {
			c := noAllocCtx(t, 2)
			x := c.NewTensor(ggml.TypeF32, 4)
			buf, err := backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			buf.Close()
			return backend.TensorSet(x, make([]byte, 4), 0)
		}},
		{"copy layouts", ggml.ErrShape, func(t *testing.T) error {
			ts := alloc(t, 1)
			other := noAllocCtx(t, 2)
			y := other.NewTensor(ggml.TypeF32, 8, 2)
			_, err := backend.AllocContextTensors(other, be)
			require.NoError(t, err)
			return backend.TensorCopy(ts[0], y)
		}},
		{"copy types", ggml.ErrShape, func(t *testing.T) error {
			ts := alloc(t, 1)
			other := noAllocCtx(t, 2)
			y := other.NewTensor(ggml.TypeI32, 16)
			_, err := backend.AllocContextTensors(other, be)
			require.NoError(t, err)
			return backend.TensorCopy(ts[0], y)
		}},
		{"copy from unallocated", ggml.ErrNotAllocated, func(t *testing.T) error { return backend.TensorCopy(unallocated(t), alloc(t, 1)[0]) }},
		{"async copy layouts", ggml.ErrShape, func(t *testing.T) error {
			ts := alloc(t, 1)
			c := noAllocCtx(t, 2)
			y := c.NewTensor(ggml.TypeF32, 4)
			_, err := backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			return be.CopyTensorAsync(be, ts[0], y)
		}},
		{"async copy to nil backend", ggml.ErrInvalid, func(t *testing.T) error {
			ts := alloc(t, 2)
			return be.CopyTensorAsync(nil, ts[0], ts[1])
		}},
		{"async copy of an uninitialized view", backend.ErrUnsupported, func(t *testing.T) error {
			c := noAllocCtx(t, 4)
			x := c.NewTensor(ggml.TypeF32, 16)
			y := c.NewTensor(ggml.TypeF32, 8)
			_, err := backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			return be.CopyTensorAsync(be, c.View1D(x, 8, 0), y)
		}},
		{"events on the CPU", backend.ErrUnsupported, func(t *testing.T) error {
			_, err := be.Device().NewEvent()
			return err
		}},
		{"nil event record", ggml.ErrInvalid, func(t *testing.T) error {
			var e *backend.Event
			return e.Record(be)
		}},
		{"plan on closed backend", ggml.ErrClosed, func(t *testing.T) error {
			_, err := closedBackend(t).NewPlan(graphOf(t))
			return err
		}},
		{"plan of unallocated graph", ggml.ErrNotAllocated, func(t *testing.T) error {
			c := noAllocCtx(t, 4)
			g, err := c.BuildGraph(c.Relu(c.NewTensor(ggml.TypeF32, 4)))
			require.NoError(t, err)
			_, err = be.NewPlan(g)
			return err
		}},
		{"nil plan compute", ggml.ErrInvalid, func(t *testing.T) error {
			var p *backend.Plan
			return p.Compute(bg)
		}},
		{"compute async on closed backend", ggml.ErrClosed, func(t *testing.T) error { return closedBackend(t).ComputeAsync(graphOf(t)) }},
		{"synchronize closed backend", ggml.ErrClosed, func(t *testing.T) error { return closedBackend(t).Synchronize() }},
		{"alloc buffer too large", ggml.ErrNoMemory, func(t *testing.T) error {
			_, err := be.AllocBuffer(1 << 62)
			return err
		}},
		{"nil buffer type", ggml.ErrInvalid, func(t *testing.T) error {
			var bt *backend.BufferType
			_, err := bt.AllocBuffer(8)
			return err
		}},
		{"base of closed buffer", ggml.ErrClosed, func(t *testing.T) error {
			_, err := closedBuffer(t).Base()
			return err
		}},
		{"clear closed buffer", ggml.ErrClosed, func(t *testing.T) error { return closedBuffer(t).Clear(0) }},
		{"usage of closed buffer", ggml.ErrClosed, func(t *testing.T) error { return closedBuffer(t).SetUsage(backend.UsageWeights) }},
		{"tensor alloc in closed buffer", ggml.ErrClosed, func(t *testing.T) error { return backend.TensorAlloc(closedBuffer(t), unallocated(t), 0) }},
		{"tensor alloc twice", ggml.ErrInvalid, func(t *testing.T) error {
			b, _ := be.AllocBuffer(256)
			defer b.Close()
			x := unallocated(t)
			require.NoError(t, backend.TensorAlloc(b, x, 0))
			return backend.TensorAlloc(b, x, 128)
		}},
		{"tensor alloc of a view", ggml.ErrInvalid, func(t *testing.T) error {
			b, _ := be.AllocBuffer(256)
			defer b.Close()
			c := noAllocCtx(t, 2)
			return backend.TensorAlloc(b, c.View1D(c.NewTensor(ggml.TypeF32, 8), 4, 0), 0)
		}},
		{"tensor alloc in a multi-buffer", backend.ErrUnsupported, func(t *testing.T) error {
			b, _ := be.AllocBuffer(256)
			m, err := backend.NewMultiBuffer(b)
			require.NoError(t, err)
			defer m.Close()
			return backend.TensorAlloc(m, unallocated(t), 0)
		}},
		{"tallocr over a multi-buffer", backend.ErrUnsupported, func(t *testing.T) error {
			b, _ := be.AllocBuffer(256)
			m, err := backend.NewMultiBuffer(b)
			require.NoError(t, err)
			defer m.Close()
			_, err = backend.NewTallocr(m)
			return err
		}},
		{"tallocr twice", ggml.ErrInvalid, func(t *testing.T) error {
			b, _ := be.AllocBuffer(256)
			defer b.Close()
			ta, _ := backend.NewTallocr(b)
			x := unallocated(t)
			require.NoError(t, ta.Alloc(x))
			return ta.Alloc(x)
		}},
		{"view init of a non-view", ggml.ErrInvalid, func(t *testing.T) error { return backend.ViewInit(alloc(t, 1)[0]) }},
		{"view init of an unallocated source", ggml.ErrNotAllocated, func(t *testing.T) error {
			c := noAllocCtx(t, 2)
			return backend.ViewInit(c.View1D(c.NewTensor(ggml.TypeF32, 8), 4, 0))
		}},
		{"multi-buffer of nothing", ggml.ErrInvalid, func(t *testing.T) error {
			_, err := backend.NewMultiBuffer()
			return err
		}},
		{"multi-buffer with a part twice", ggml.ErrInvalid, func(t *testing.T) error {
			b, _ := be.AllocBuffer(64)
			defer b.Close()
			_, err := backend.NewMultiBuffer(b, b)
			return err
		}},
		{"multi-buffer with a closed part", ggml.ErrClosed, func(t *testing.T) error {
			_, err := backend.NewMultiBuffer(closedBuffer(t))
			return err
		}},
		{"gallocr of nothing", ggml.ErrInvalid, func(t *testing.T) error {
			_, err := backend.NewGallocr()
			return err
		}},
		{"gallocr nil type", ggml.ErrInvalid, func(t *testing.T) error {
			_, err := backend.NewGallocr(nil)
			return err
		}},
		{"gallocr bad id", ggml.ErrInvalid, func(t *testing.T) error {
			ga, _ := backend.NewGallocr(be.DefaultBufferType())
			defer ga.Close()
			c := noAllocCtx(t, 4)
			g, _ := c.BuildGraph(c.Relu(c.NewTensor(ggml.TypeF32, 4)))
			return ga.ReserveN(g, []int{-1}, nil)
		}},
		{"gallocr graph with an error", ggml.ErrShape, func(t *testing.T) error {
			ga, _ := backend.NewGallocr(be.DefaultBufferType())
			defer ga.Close()
			c := noAllocCtx(t, 4)
			g, _ := c.BuildGraph()
			c.Add(c.NewTensor(ggml.TypeF32, 2), c.NewTensor(ggml.TypeF32, 3))
			return ga.AllocGraph(g)
		}},
		{"graph copy of unallocated graph", ggml.ErrNotAllocated, func(t *testing.T) error {
			c := noAllocCtx(t, 4)
			g, _ := c.BuildGraph(c.Relu(c.NewTensor(ggml.TypeF32, 4)))
			_, err := be.CopyGraph(g)
			return err
		}},
		{"graph copy of context memory", backend.ErrUnsupported, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, MemSize: 1024, Graph: true})
			defer c.Close()
			g, _ := c.BuildGraph(c.Relu(c.NewTensor(ggml.TypeF32, 4)))
			_, err := be.CopyGraph(g)
			return err
		}},
		{"compare without callback", ggml.ErrInvalid, func(t *testing.T) error {
			return backend.CompareGraphBackend(be, be, graphOf(t), nil, nil)
		}},
		{"compare with closed backend", ggml.ErrClosed, func(t *testing.T) error {
			return backend.CompareGraphBackend(be, closedBackend(t), graphOf(t), func(int, *ggml.Tensor, *ggml.Tensor) bool { return true }, nil)
		}},
		{"host memory of 0 bytes", ggml.ErrInvalid, func(t *testing.T) error {
			_, err := backend.AllocHostMemory(0)
			return err
		}},
		{"device init on nil device", ggml.ErrInvalid, func(t *testing.T) error {
			var d *backend.Device
			_, err := d.Init("")
			return err
		}},
		{"unload nil reg", ggml.ErrInvalid, func(t *testing.T) error { return backend.Unload(nil) }},
		{"load a file that is no backend", backend.ErrNotFound, func(t *testing.T) error {
			_, err := backend.Load("/etc/hostname")
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.call(t), tc.want)
		})
	}
}
