package backend_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// rows2DModel applies a 2-D transfer to Go byte slices, the reference the
// binding's results are compared with: row i between
// tensor[r.Offset+i*r.TensorStride:] and data[i*r.DataStride:].
func rows2DModel(tensor, data []byte, r backend.Rows2D, write bool) {
	if r.Size == 0 {
		return
	}
	for i := range r.Count {
		tp := tensor[r.Offset+i*r.TensorStride:][:r.Size]
		dp := data[i*r.DataStride:][:r.Size]
		if write {
			copy(tp, dp)
		} else {
			copy(dp, tp)
		}
	}
}

// randRows2D draws a transfer that fits a tensor of n bytes: rows that do
// not overlap, with gaps in the tensor and in the data.
func randRows2D(rng *rand.Rand, n uint64) backend.Rows2D {
	size := 1 + rng.Uint64N(n/4)
	stride := size + rng.Uint64N(size+1)
	count := 1 + rng.Uint64N((n-size)/stride+1)
	span := (count-1)*stride + size
	return backend.Rows2D{
		Offset:       rng.Uint64N(n - span + 1),
		Size:         size,
		Count:        count,
		TensorStride: stride,
		DataStride:   size + rng.Uint64N(8),
	}
}

// dataLen is the bytes a Go slice needs for r.
func dataLen(r backend.Rows2D) int {
	if r.Count == 0 || r.Size == 0 {
		return 0
	}
	return int((r.Count-1)*r.DataStride + r.Size)
}

// TestTensor2D checks the 2-D transfers, synchronous and queued, against a
// byte model, on tensors in a CPU buffer, in a context's own memory and on
// a view, with random geometries and the edge ones.
func TestTensor2D(t *testing.T) {
	be := cpu(t)
	if !backend.HaveUpstream {
		c := noAllocCtx(t, 2)
		x := c.NewTensor(ggml.TypeF32, 16)
		buf, err := backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		defer buf.Close()
		r := backend.Rows2D{Size: 4, Count: 2, TensorStride: 8, DataStride: 4}
		for _, err := range []error{
			backend.TensorSet2D(x, make([]byte, 8), r),
			backend.TensorGet2D(x, make([]byte, 8), r),
			be.SetTensor2DAsync(x, make([]byte, 8), r),
			be.GetTensor2DAsync(x, make([]byte, 8), r),
		} {
			require.ErrorIs(t, err, backend.ErrUnsupported)
			require.ErrorContains(t, err, "-tags ggml_system")
			require.ErrorContains(t, err, "upstream ggml "+bridge.UpstreamVersion, "the release of the pin")
		}
		return
	}
	rng := newRNG(t)
	const n = 96 * 4 // bytes of each tensor
	c := noAllocCtx(t, 4)
	inBuf := c.NewTensor(ggml.TypeF32, 96)
	big := c.NewTensor(ggml.TypeF32, 130)
	view := c.View1D(big, 96, 4*17) // a view 68 bytes into its source
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	pool, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 1024})
	require.NoError(t, err)
	defer pool.Close()
	inPool := pool.NewTensor(ggml.TypeF32, 96)

	edges := []backend.Rows2D{
		{Offset: 0, Size: n, Count: 1},                                  // the whole tensor in one row
		{Offset: 8, Size: 4, Count: 94, TensorStride: 4, DataStride: 4}, // contiguous rows up to the end
		{Offset: n - 3, Size: 3, Count: 1, TensorStride: 0, DataStride: 0},
		{Offset: n, Size: 5, Count: 0, TensorStride: 7, DataStride: 1}, // no rows: nothing, even past the end
		{Offset: n, Size: 0, Count: 9, TensorStride: 1, DataStride: 0}, // empty rows
		{Offset: 1, Size: 7, Count: 3, TensorStride: 100, DataStride: 9},
	}
	type mode struct {
		name     string
		set, get func(x *ggml.Tensor, data []byte, r backend.Rows2D) error
	}
	modes := []mode{
		{"sync", backend.TensorSet2D, backend.TensorGet2D},
		{"async", func(x *ggml.Tensor, data []byte, r backend.Rows2D) error {
			if err := be.SetTensor2DAsync(x, data, r); err != nil {
				return err
			}
			return be.Synchronize()
		}, func(x *ggml.Tensor, data []byte, r backend.Rows2D) error {
			if err := be.GetTensor2DAsync(x, data, r); err != nil {
				return err
			}
			return be.Synchronize()
		}},
	}
	targets := []struct {
		name  string
		x     *ggml.Tensor
		async bool
	}{{"buffer", inBuf, true}, {"view", view, true}, {"context memory", inPool, false}}
	for _, tg := range targets {
		for _, m := range modes {
			if m.name == "async" && !tg.async {
				continue // a context's memory is not a backend's (misuse below)
			}
			geoms := append([]backend.Rows2D(nil), edges...)
			for range 20 {
				geoms = append(geoms, randRows2D(rng, n))
			}
			for i, r := range geoms {
				t.Run(fmt.Sprintf("%s/%s/%d", tg.name, m.name, i), func(t *testing.T) {
					model := randBytes(rng, n)
					require.NoError(t, backend.TensorSet(tg.x, model, 0))
					data := randBytes(rng, dataLen(r))
					require.NoError(t, m.set(tg.x, data, r), "%+v", r)
					rows2DModel(model, data, r, true)
					got := make([]byte, n)
					require.NoError(t, backend.TensorGet(tg.x, got, 0))
					require.Equal(t, model, got, "set %+v", r)

					dst := randBytes(rng, dataLen(r)+3)
					want := append([]byte(nil), dst...)
					require.NoError(t, m.get(tg.x, dst, r), "%+v", r)
					rows2DModel(model, want, r, false)
					require.Equal(t, want, dst, "get %+v", r)
				})
			}
		}
	}
}

// TestTensor2DMisuse checks that every 2-D transfer a caller can get wrong
// returns an error of the documented kind before ggml sees it.
func TestTensor2DMisuse(t *testing.T) {
	if !backend.HaveUpstream {
		t.Skip("2-D transfers need upstream ggml (-tags ggml_system); TestTensor2D checks the ErrUnsupported")
	}
	be := cpu(t)
	// alloc returns an f32 tensor of 16 elements (64 bytes) in a fresh CPU buffer.
	alloc := func(t *testing.T) *ggml.Tensor {
		c := noAllocCtx(t, 2)
		x := c.NewTensor(ggml.TypeF32, 16)
		buf, err := backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		t.Cleanup(func() { buf.Close() })
		return x
	}
	ok := backend.Rows2D{Offset: 4, Size: 8, Count: 3, TensorStride: 16, DataStride: 8}
	const huge = ^uint64(0)
	geoms := []struct {
		name string
		want error
		r    backend.Rows2D
		data int
	}{
		{"last row past the end", ggml.ErrShape, backend.Rows2D{Offset: 9, Size: 8, Count: 4, TensorStride: 16, DataStride: 8}, 32},
		{"offset past the end", ggml.ErrShape, backend.Rows2D{Offset: 65, Size: 1, Count: 1}, 1},
		{"offset overflows", ggml.ErrShape, backend.Rows2D{Offset: huge, Size: 2, Count: 1}, 2},
		{"count times stride overflows", ggml.ErrShape, backend.Rows2D{Size: 4, Count: huge, TensorStride: 4, DataStride: 4}, 16},
		{"stride times count wraps to a small extent", ggml.ErrShape, backend.Rows2D{Size: 4, Count: 1<<62 + 1, TensorStride: 4, DataStride: 4}, 16},
		{"data stride overflows", ggml.ErrShape, backend.Rows2D{Size: 4, Count: 2, TensorStride: 4, DataStride: huge}, 16},
		{"data too short", ggml.ErrShape, ok, 23},
		{"nil data", ggml.ErrShape, ok, 0},
		{"rows overlap in the tensor", ggml.ErrInvalid, backend.Rows2D{Size: 8, Count: 2, TensorStride: 4, DataStride: 8}, 16},
		{"rows overlap in the data", ggml.ErrInvalid, backend.Rows2D{Size: 8, Count: 2, TensorStride: 8, DataStride: 0}, 16},
	}
	calls := []struct {
		name string
		call func(x *ggml.Tensor, data []byte, r backend.Rows2D) error
	}{
		{"TensorSet2D", backend.TensorSet2D},
		{"TensorGet2D", backend.TensorGet2D},
		{"SetTensor2DAsync", be.SetTensor2DAsync},
		{"GetTensor2DAsync", be.GetTensor2DAsync},
	}
	for _, cl := range calls {
		for _, g := range geoms {
			t.Run(cl.name+"/"+g.name, func(t *testing.T) {
				x := alloc(t)
				before := randBytes(newRNG(t), 64)
				require.NoError(t, backend.TensorSet(x, before, 0))
				var data []byte
				if g.data > 0 {
					data = make([]byte, g.data)
				}
				require.ErrorIs(t, cl.call(x, data, g.r), g.want)
				require.NoError(t, be.Synchronize())
				got := make([]byte, 64)
				require.NoError(t, backend.TensorGet(x, got, 0))
				require.Equal(t, before, got, "a refused transfer wrote")
			})
		}
		t.Run(cl.name+"/unallocated", func(t *testing.T) {
			x := noAllocCtx(t, 2).NewTensor(ggml.TypeF32, 16)
			require.ErrorIs(t, cl.call(x, make([]byte, 40), ok), ggml.ErrNotAllocated)
		})
		t.Run(cl.name+"/closed buffer", func(t *testing.T) {
			c := noAllocCtx(t, 2)
			x := c.NewTensor(ggml.TypeF32, 16)
			buf, err := backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			require.NoError(t, buf.Close())
			require.ErrorIs(t, cl.call(x, make([]byte, 40), ok), ggml.ErrClosed)
		})
		t.Run(cl.name+"/closed context", func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 256})
			require.NoError(t, err)
			x := c.NewTensor(ggml.TypeF32, 16)
			require.NoError(t, c.Close())
			require.ErrorIs(t, cl.call(x, make([]byte, 40), ok), ggml.ErrClosed)
		})
	}
	closed, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	x := alloc(t)
	require.ErrorIs(t, closed.SetTensor2DAsync(x, make([]byte, 40), ok), ggml.ErrClosed)
	require.ErrorIs(t, closed.GetTensor2DAsync(x, make([]byte, 40), ok), ggml.ErrClosed)
	pool, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 256})
	require.NoError(t, err)
	defer pool.Close()
	p := pool.NewTensor(ggml.TypeF32, 16)
	require.ErrorIs(t, be.SetTensor2DAsync(p, make([]byte, 40), ok), backend.ErrUnsupported)
	require.ErrorIs(t, be.GetTensor2DAsync(p, make([]byte, 40), ok), backend.ErrUnsupported)
}

// TestMetaTensor2D: ggml's meta buffer has no 2-D copy, so ggml moves each
// row as a 1-D transfer, which the meta buffer takes only in whole slices
// of a split tensor (any rows of a mirrored one): the binding checks each
// row first and refuses the rest with ErrUnsupported, never an abort.
func TestMetaTensor2D(t *testing.T) {
	needMeta(t)
	rng := newRNG(t)
	r := newMetaRig(t, 2, splitsByName(map[string]backend.Split{
		"a1": backend.SplitSizes(backend.SplitAxis1, 1, 3),
	}))
	ws, _, err := weights(t, r.meta.DefaultBufferType(), spec("a1", 3, 4), spec("m", 3, 4))
	require.NoError(t, err)
	whole := backend.Rows2D{Size: 48, Count: 1}
	rows := backend.Rows2D{Offset: 4, Size: 8, Count: 4, TensorStride: 12, DataStride: 8} // columns 1, 2 of each row
	for _, name := range []string{"a1", "m"} {
		x := ws[name]
		model := randBytes(rng, 48)
		require.NoError(t, backend.TensorSet2D(x, model, whole), name)
		data := randBytes(rng, 32)
		err := backend.TensorSet2D(x, data, rows)
		if name == "a1" { // rows of a tensor split along its rows: not whole slices
			require.ErrorIs(t, err, backend.ErrUnsupported)
			require.ErrorIs(t, r.meta.SetTensor2DAsync(x, data, rows), backend.ErrUnsupported)
		} else {
			require.NoError(t, err)
			rows2DModel(model, data, rows, true)
		}
		got := make([]byte, 48)
		require.NoError(t, backend.TensorGet2D(x, got, whole), name)
		require.Equal(t, model, got, name)
		require.NoError(t, r.meta.GetTensor2DAsync(x, got, whole), name)
		require.NoError(t, r.meta.Synchronize())
		require.Equal(t, model, got, name)
	}
}

// TestTensor2DDuringCompute: the 2-D writes follow the 1-D ones while a
// compute runs. Indices the compute reads (checked before it started) are
// ErrBusy to TensorSet2D, and the queued transfers are ErrBusy on the
// computing backend; the compute reads the rows the check saw.
func TestTensor2DDuringCompute(t *testing.T) {
	if !backend.HaveUpstream {
		t.Skip("2-D transfers need upstream ggml (-tags ggml_system)")
	}
	rng := newRNG(t)
	be := cpu(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	a := c.NewTensor(ggml.TypeF32, 8, 4)
	idx := c.NewTensor(ggml.TypeI32, 4)
	other := c.NewTensor(ggml.TypeF32, 4)
	var setErr, otherErr, setAsyncErr, getAsyncErr error
	bad := make([]byte, 16)
	for i := range 4 { // row 1<<20 of 4
		bad[4*i+2] = 0x10
	}
	write := backend.Rows2D{Size: 4, Count: 4, TensorStride: 4, DataStride: 4}
	first := c.MapCustom1(c.NewTensor(ggml.TypeF32, 4), func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
		setErr = backend.TensorSet2D(idx, bad, write)
		setAsyncErr = be.SetTensor2DAsync(idx, bad, write)
		getAsyncErr = be.GetTensor2DAsync(idx, make([]byte, 16), write)
		otherErr = backend.TensorSet2D(other, bad, write) // not indices: written
	}, 1)
	rows := c.GetRows(a, idx)
	g, err := c.BuildGraph(first, rows)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	t.Cleanup(func() { buf.Close() })
	av := make([]float32, 32)
	for i := range av {
		av[i] = rng.Float32()
	}
	good := []int32{3, 0, 1, 2}
	require.NoError(t, ggml.SetData(a, av))
	require.NoError(t, ggml.SetData(idx, good))
	require.NoError(t, be.Compute(context.Background(), g))
	require.ErrorIs(t, setErr, ggml.ErrBusy)
	require.ErrorIs(t, setAsyncErr, ggml.ErrBusy)
	require.ErrorIs(t, getAsyncErr, ggml.ErrBusy)
	require.NoError(t, otherErr)
	got, err := ggml.Data[float32](rows)
	require.NoError(t, err)
	for i, r := range good {
		require.Equal(t, av[int(r)*8:int(r)*8+8], got[i*8:i*8+8])
	}
	gotIdx, err := ggml.Data[int32](idx)
	require.NoError(t, err)
	require.Equal(t, good, gotIdx, "a refused write wrote")
	ob := make([]byte, 16)
	require.NoError(t, backend.TensorGet(other, ob, 0))
	require.Equal(t, bad, ob)
}
