package ggml_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// Cases from hostile testing (issue #17): each of these crashed the process
// or computed garbage before.

// computeGraph allocates ctx's tensors on be, sets inputs with set and
// computes g, returning Compute's error.
func computeGraph(t *testing.T, be *backend.Backend, ctx *ggml.Context, g *ggml.Graph, set func()) error {
	t.Helper()
	buf, err := backend.AllocContextTensors(ctx, be)
	require.NoError(t, err)
	t.Cleanup(func() { buf.Close() })
	set()
	return be.Compute(context.Background(), g)
}

// An index tensor that a node of the same graph overwrites cannot be
// trusted by a check made before compute: such graphs are refused.
func TestIndicesWrittenByTheGraphAreRefused(t *testing.T) {
	rng := newRNG(t)
	be := cpuBackend(t)
	newCtx := func() *ggml.Context {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 32, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	av := randF32(rng, 8*4)
	bad := []int32{1 << 20, 0, 1, 2}
	good := []int32{3, 0, 1, 2}

	t.Run("cpy into get_rows indices", func(t *testing.T) {
		c := newCtx()
		a := c.NewTensor(ggml.TypeF32, 8, 4)
		idx := c.NewTensor(ggml.TypeI32, 4).SetInput()
		b := c.NewTensor(ggml.TypeI32, 4).SetInput()
		g, err := c.BuildGraph(c.Cpy(b, idx), c.GetRows(a, idx))
		require.NoError(t, err)
		err = computeGraph(t, be, c, g, func() {
			require.NoError(t, ggml.SetData(a, av))
			require.NoError(t, ggml.SetData(idx, good))
			require.NoError(t, ggml.SetData(b, bad))
		})
		require.ErrorIs(t, err, ggml.ErrInvalid)
		assert.Contains(t, err.Error(), "writes into the memory of the index tensor")
	})

	t.Run("in-place op on mul_mat_id ids", func(t *testing.T) {
		c := newCtx()
		as := c.NewTensor(ggml.TypeF32, 8, 3, 4) // 4 experts
		x := c.NewTensor(ggml.TypeF32, 8, 1, 2)
		ids := c.NewTensor(ggml.TypeI32, 1, 2).SetInput()
		one := c.NewTensor(ggml.TypeI32, 1, 2).SetInput()
		g, err := c.BuildGraph(c.Cpy(one, ids), c.MulMatID(as, x, ids))
		require.NoError(t, err)
		err = computeGraph(t, be, c, g, func() {
			require.NoError(t, ggml.SetData(as, randF32(rng, 8*3*4)))
			require.NoError(t, ggml.SetData(x, randF32(rng, 16)))
			require.NoError(t, ggml.SetData(ids, []int32{0, 1}))
			require.NoError(t, ggml.SetData(one, []int32{1 << 20, 1}))
		})
		require.ErrorIs(t, err, ggml.ErrInvalid)
	})

	t.Run("cpy over an argsort's indices", func(t *testing.T) {
		c := newCtx()
		a := c.NewTensor(ggml.TypeF32, 8, 4)
		keys := c.NewTensor(ggml.TypeF32, 4).SetInput()
		b := c.NewTensor(ggml.TypeI32, 4).SetInput()
		idx := c.Argsort(keys, ggml.SortAsc)
		g, err := c.BuildGraph(idx, c.Cpy(b, idx), c.GetRows(a, idx))
		require.NoError(t, err)
		err = computeGraph(t, be, c, g, func() {
			require.NoError(t, ggml.SetData(a, av))
			require.NoError(t, ggml.SetData(keys, randF32(rng, 4)))
			require.NoError(t, ggml.SetData(b, bad))
		})
		require.ErrorIs(t, err, ggml.ErrInvalid)
	})

	t.Run("argsort result set by hand, graph of the get_rows node alone", func(t *testing.T) {
		c := newCtx()
		a := c.NewTensor(ggml.TypeF32, 8, 4)
		keys := c.NewTensor(ggml.TypeF32, 4).SetInput()
		idx := c.Argsort(keys, ggml.SortAsc)
		rows := c.GetRows(a, idx)
		full, err := c.BuildGraph(rows)
		require.NoError(t, err)
		require.NoError(t, computeGraph(t, be, c, full, func() {
			require.NoError(t, ggml.SetData(a, av))
			require.NoError(t, ggml.SetData(keys, randF32(rng, 4)))
		}))
		// Now the indices are data that nothing in the next graph computes.
		require.NoError(t, ggml.SetData(idx, bad))
		part, err := c.NewGraph(4)
		require.NoError(t, err)
		require.NoError(t, part.AddNode(rows))
		err = be.Compute(context.Background(), part)
		require.ErrorIs(t, err, ggml.ErrInvalid)
		assert.Contains(t, err.Error(), "outside")
		// With good data the same partial graph computes the right rows.
		require.NoError(t, ggml.SetData(idx, good))
		require.NoError(t, be.Compute(context.Background(), part))
		got, err := ggml.Data[float32](rows)
		require.NoError(t, err)
		for i, r := range good {
			assert.Equal(t, av[int(r)*8:int(r)*8+8], got[i*8:i*8+8])
		}
	})
}

// runtime.Goexit in a custom op (t.FailNow does it) on ggml's calling
// thread or on a worker thread is an error from Compute, not a hang or the
// end of the process.
func TestCustomOpGoexit(t *testing.T) {
	for _, thread := range []int{0, 1} {
		be := cpuBackend(t)
		require.NoError(t, be.SetThreads(2))
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		x := c.NewTensor(ggml.TypeF32, 64).SetInput()
		y := c.MapCustom1(x, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
			if ith == thread {
				runtime.Goexit()
			}
		}, 0)
		g, err := c.BuildGraph(y)
		require.NoError(t, err)
		err = computeGraph(t, be, c, g, func() { require.NoError(t, ggml.SetData(x, make([]float32, 64))) })
		require.ErrorIs(t, err, ggml.ErrCustomOp, "Goexit on thread %d", thread)
		var pe *ggml.CustomPanicError
		require.True(t, errors.As(err, &pe))
		assert.Contains(t, pe.Error(), "Goexit")
		require.NoError(t, c.Close())
	}
}

// Closing, from a custom op, the context that holds the running graph is
// refused; closing a buffer the graph reads takes effect after the compute,
// which reads live memory to the end.
func TestCloseFromCustomOp(t *testing.T) {
	rng := newRNG(t)
	be := cpuBackend(t)
	w, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	defer w.Close()
	a := w.NewTensor(ggml.TypeF32, 64)
	wbuf, err := backend.AllocContextTensors(w, be)
	require.NoError(t, err)
	av := randF32(rng, 64)
	require.NoError(t, ggml.SetData(a, av))

	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	var ctxErr, bufErr, beErr error
	first := c.MapCustom1(a, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
		if ith == 0 {
			ctxErr = c.Close()
			bufErr = wbuf.Close()
			beErr = be.Close()
			copy(dst.Float32s(), src[0].Float32s())
		}
	}, 1)
	y := c.Add(first, a) // reads a after the buffer's Close
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	cbuf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer cbuf.Close()
	require.NoError(t, be.Compute(context.Background(), g))
	require.ErrorIs(t, ctxErr, ggml.ErrBusy)
	require.NoError(t, bufErr)
	require.ErrorIs(t, beErr, ggml.ErrBusy)
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	for i := range av {
		require.Equal(t, 2*av[i], got[i]) // exact: x+x
	}
	// The buffer is closed now: its tensor reports it.
	_, err = ggml.Data[float32](a)
	require.ErrorIs(t, err, ggml.ErrClosed)
	require.NoError(t, c.Close())
}

// A graph copy whose custom op's Go function belongs to a context closed
// since is an error, not a compute that skips the op.
func TestGraphCopyCustomOpAfterClose(t *testing.T) {
	be := cpuBackend(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	x := c.NewTensor(ggml.TypeF32, 16).SetInput()
	y := c.MapCustom1(x, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
		if ith == 0 {
			for i, v := range src[0].Float32s() {
				dst.Float32s()[i] = 2 * v
			}
		}
	}, 1)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	require.NoError(t, ggml.SetData(x, make([]float32, 16)))
	cp, err := be.CopyGraph(g)
	require.NoError(t, err)
	defer cp.Close()
	require.NoError(t, be.Compute(context.Background(), cp.Graph()))
	require.NoError(t, c.Close())
	err = be.Compute(context.Background(), cp.Graph())
	require.ErrorIs(t, err, ggml.ErrClosed)
	assert.Contains(t, err.Error(), "custom op")
}

// A custom op that waits can see its compute's cancellation and return:
// ggml itself checks only between nodes.
func TestCustomOpSeesCancel(t *testing.T) {
	be := cpuBackend(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 16).SetInput()
	var sawCancel atomic.Bool
	y := c.MapCustom1(x, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
		deadline := time.Now().Add(time.Minute) // a bound, should Cancelled never turn true
		for !dst.Cancelled() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Microsecond)
		}
		sawCancel.Store(dst.Cancelled())
	}, 0)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	require.NoError(t, ggml.SetData(x, make([]float32, 16)))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	require.ErrorIs(t, be.Compute(ctx, g), context.Canceled)
	require.True(t, sawCancel.Load(), "the op returned before it saw the cancel")
}

// Placing tensors anew (AllocContextTensors, a graph allocator) while a
// compute reads them would move memory under the compute's feet: refused
// with ErrBusy, here from a custom op of that compute.
func TestReallocateDuringCompute(t *testing.T) {
	rng := newRNG(t)
	be := cpuBackend(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 16).SetInput()
	ga, err := backend.NewGallocr(be.DefaultBufferType())
	require.NoError(t, err)
	defer ga.Close()
	var g *ggml.Graph
	var allocErr, gallocErr error
	y := c.MapCustom1(x, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
		if ith == 0 {
			_, allocErr = backend.AllocContextTensors(c, be)
			gallocErr = ga.AllocGraph(g)
			copy(dst.Float32s(), src[0].Float32s())
		}
	}, 1)
	g, err = c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	xv := randF32(rng, 16)
	require.NoError(t, ggml.SetData(x, xv))
	require.NoError(t, buf.Close()) // the next allocation would place x anew
	_, err = ggml.Data[float32](x)
	require.ErrorIs(t, err, ggml.ErrClosed)
	buf2, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf2.Close()
	require.NoError(t, ggml.SetData(x, xv))
	require.NoError(t, be.Compute(context.Background(), g))
	require.ErrorIs(t, allocErr, ggml.ErrBusy)
	require.ErrorIs(t, gallocErr, ggml.ErrBusy)
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	assert.Equal(t, xv, got)
}

// Expand, AddNode and Clear of a graph while it computes (here from a
// custom op of that compute) are ErrBusy: ggml walks the node list. Before,
// Expand added an unallocated node that the running compute then ran
// (SIGSEGV), and Clear silently ended the compute early with nil.
func TestGraphChangeDuringItsComputeIsBusy(t *testing.T) {
	rng := newRNG(t)
	be := cpuBackend(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 32, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	const n = 64
	x := c.NewTensor(ggml.TypeF32, n).SetInput()
	extra := c.Exp(c.NewTensor(ggml.TypeF32, 1<<20))
	var g *ggml.Graph
	var errs []error
	cu := c.MapCustom1(x, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
		if ith == 0 {
			copy(dst.Float32s(), src[0].Float32s())
			errs = append(errs, g.Expand(extra), g.AddNode(extra), g.Clear())
		}
	}, 1)
	out := c.Neg(cu)
	g, err = c.BuildGraph(out)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
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
	assert.Equal(t, 2, g.NumNodes())
	// After the compute the graph changes again.
	require.NoError(t, g.Clear())
}

// A custom op may write into its inputs (CustomView.Bytes of src) or set
// tensors with SetData, and another goroutine may SetData at any time: an
// index tensor that a later node reads would then change after the check
// made before compute. A custom op given the indices is a writer of them
// (the graph is refused); SetData of indices a running compute reads is
// ErrBusy; and a compute never reads unchecked indices.
func TestIndicesChangedDuringComputeAreRefused(t *testing.T) {
	rng := newRNG(t)
	be := cpuBackend(t)
	av := randF32(rng, 8*4)
	good, bad := []int32{3, 0, 1, 2}, []int32{1 << 20, 0, 1, 2}
	build := func(t *testing.T, op func(c *ggml.Context, idx *ggml.Tensor) *ggml.Tensor) (*ggml.Graph, *ggml.Tensor, *ggml.Tensor) {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		a := c.NewTensor(ggml.TypeF32, 8, 4).SetInput()
		idx := c.NewTensor(ggml.TypeI32, 4).SetInput()
		x := c.NewTensor(ggml.TypeF32, 4).SetInput()
		first := op(c, idx)
		if first == nil {
			first = c.MapCustom1(x, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {}, 1)
		}
		rows := c.GetRows(a, idx)
		g, err := c.BuildGraph(first, rows)
		require.NoError(t, err)
		buf, err := backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		t.Cleanup(func() { buf.Close() })
		require.NoError(t, ggml.SetData(a, av))
		require.NoError(t, ggml.SetData(idx, good))
		require.NoError(t, ggml.SetData(x, make([]float32, 4)))
		return g, idx, rows
	}
	checkRows := func(t *testing.T, rows *ggml.Tensor) {
		got, err := ggml.Data[float32](rows)
		require.NoError(t, err)
		for i, r := range good {
			require.Equal(t, av[int(r)*8:int(r)*8+8], got[i*8:i*8+8])
		}
	}

	t.Run("custom op writes the indices it is given", func(t *testing.T) {
		g, _, _ := build(t, func(c *ggml.Context, idx *ggml.Tensor) *ggml.Tensor {
			return c.MapCustom1(idx, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
				copy(src[0].Int32s(), bad)
			}, 1)
		})
		require.ErrorIs(t, be.Compute(context.Background(), g), ggml.ErrInvalid)
	})

	t.Run("custom op sets the indices with SetData", func(t *testing.T) {
		var setErr error
		var idxT *ggml.Tensor
		g, idx, rows := build(t, func(c *ggml.Context, idx *ggml.Tensor) *ggml.Tensor {
			idxT = idx
			return c.MapCustom1(c.NewTensor(ggml.TypeF32, 4).SetInput(), func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
				setErr = ggml.SetData(idxT, bad)
			}, 1)
		})
		_ = idx
		require.NoError(t, be.Compute(context.Background(), g))
		require.ErrorIs(t, setErr, ggml.ErrBusy)
		checkRows(t, rows)
	})

	t.Run("another goroutine sets the indices", func(t *testing.T) {
		g, idx, rows := build(t, func(*ggml.Context, *ggml.Tensor) *ggml.Tensor { return nil })
		stop := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := ggml.SetData(idx, bad); err != nil && !errors.Is(err, ggml.ErrBusy) {
					done <- err
					return
				}
				if err := ggml.SetData(idx, good); err != nil && !errors.Is(err, ggml.ErrBusy) {
					done <- err
					return
				}
			}
		}()
		ok := 0
		for range 300 {
			err := be.Compute(context.Background(), g)
			if err == nil {
				ok++
				continue
			}
			require.True(t, errors.Is(err, ggml.ErrInvalid) || errors.Is(err, ggml.ErrBusy), "compute: %v", err)
		}
		close(stop)
		require.NoError(t, <-done)
		require.NoError(t, ggml.SetData(idx, good))
		require.NoError(t, be.Compute(context.Background(), g))
		checkRows(t, rows)
		t.Logf("%d of 300 computes ran", ok)
	})
}

// A node that writes the index tensor's memory after the node that reads
// the indices does not make the check before compute wrong (an allocator
// reuses an input's memory this way once its last reader is done): the
// graph computes, with the rows the indices named before they were
// overwritten.
func TestIndicesWrittenAfterTheirReaderAreAccepted(t *testing.T) {
	rng := newRNG(t)
	be := cpuBackend(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 32, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 8, 4)
	idx := c.NewTensor(ggml.TypeI32, 4).SetInput()
	b := c.NewTensor(ggml.TypeI32, 4).SetInput()
	rows := c.GetRows(a, idx).SetOutput()
	g, err := c.NewGraph(16)
	require.NoError(t, err)
	require.NoError(t, g.Expand(rows))
	require.NoError(t, g.Expand(c.Cpy(b, idx))) // after the reader
	av := randF32(rng, 8*4)
	want := []int32{3, 0, 2, 1}
	err = computeGraph(t, be, c, g, func() {
		require.NoError(t, ggml.SetData(a, av))
		require.NoError(t, ggml.SetData(idx, want))
		require.NoError(t, ggml.SetData(b, []int32{1 << 20, 0, 1, 2})) // out of range, written after the read
	})
	require.NoError(t, err)
	got, err := ggml.Data[float32](rows)
	require.NoError(t, err)
	for r, i := range want {
		require.Equal(t, av[int(i)*8:int(i)*8+8], got[r*8:r*8+8], "row %d", r)
	}
	after, err := ggml.Data[int32](idx)
	require.NoError(t, err)
	require.Equal(t, []int32{1 << 20, 0, 1, 2}, after, "the copy ran after the read")
}
