package backend_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/sched"
)

// cpuExtra returns the CPU device and its extra buffer types, skipping
// where there are none.
func cpuExtra(t *testing.T) (*backend.Device, []*backend.BufferType) {
	t.Helper()
	dev, err := backend.DeviceByType(backend.DeviceCPU)
	require.NoError(t, err)
	extra, err := dev.ExtraBufferTypes()
	require.NoError(t, err, "the CPU registry offers ggml_backend_dev_get_extra_bufts on both providers")
	if len(extra) == 0 {
		t.Skip("the CPU device has no extra buffer types in this build")
	}
	for _, bt := range extra {
		assert.True(t, bt.IsCPUExtra(), bt.Name())
		assert.False(t, bt.IsHost(), "%s: its tensors are not laid out as ggml's", bt.Name())
		assert.Equal(t, dev.Name(), bt.Device().Name())
	}
	assert.False(t, backend.CPUBufferType().IsCPUExtra())
	if strings.HasPrefix(ggml.Provider(), "system") && os.Getenv("GOGGML_UPSTREAM_AMX") != "1" {
		for _, bt := range extra {
			assert.NotEqual(t, "AMX", bt.Name(), "upstream's AMX type is listed only with GOGGML_UPSTREAM_AMX=1")
		}
	}
	return dev, extra
}

// extraCase is a weight of type typ, k x n, multiplied by m columns.
type extraCase struct {
	typ     ggml.Type
	k, n, m int64
}

// extraCases: shapes each extra type takes (repack: rows a multiple of 8;
// AMX: k a multiple of 2048, n of 32) and shapes none takes.
var extraCases = []extraCase{
	{ggml.TypeQ4_0, 256, 64, 1}, {ggml.TypeQ4_0, 256, 64, 7}, {ggml.TypeQ4_0, 2048, 64, 1}, {ggml.TypeQ4_0, 2048, 64, 37}, {ggml.TypeQ4_0, 2048, 96, 1}, {ggml.TypeQ4_0, 2048, 128, 16}, {ggml.TypeQ4_0, 2048, 96, 37}, {ggml.TypeQ4_0, 2048, 64, 32}, {ggml.TypeQ4_0, 2048, 64, 64}, {ggml.TypeQ4_0, 4096, 32, 130},
	{ggml.TypeQ4_K, 512, 32, 1}, {ggml.TypeQ4_K, 2048, 64, 19}, {ggml.TypeIQ4_NL, 256, 64, 5},
	{ggml.TypeQ8_0, 2048, 32, 1}, {ggml.TypeQ8_0, 2048, 64, 33}, {ggml.TypeQ6_K, 2048, 32, 3},
	{ggml.TypeF16, 2048, 32, 17}, {ggml.TypeQ4_0, 256, 60, 3}, {ggml.TypeF32, 64, 8, 2},
	{ggml.TypeQ4_0, 768, 96, 1}, {ggml.TypeQ4_0, 768, 256, 70}, {ggml.TypeQ8_0, 96, 64, 40}, {ggml.TypeQ4_K, 768, 32, 33},
	{ggml.TypeQ6_K, 256, 64, 2}, {ggml.TypeQ4_1, 224, 32, 45}, {ggml.TypeQ4_1, 256, 96, 96}, {ggml.TypeQ4_0, 512, 160, 65}, {ggml.TypeF16, 48, 32, 5}, {ggml.TypeF16, 4096, 64, 3}, {ggml.TypeIQ4_XS, 512, 64, 9},
}

// TestExtraBufferTypesMulMat places a weight as llama.cpp's loader does
// (the first extra buffer type that supports its product, else the CPU's
// own) and checks the product against a float64 reference of the
// dequantized weight, and against the same product with the weight in
// the CPU's own buffer type.
func TestExtraBufferTypesMulMat(t *testing.T) {
	dev, extra := cpuExtra(t)
	be := cpu(t)
	rng := testutil.NewRNG(t)
	used := map[string]int{}
	for k, tc := range extraCases {
		// Thread counts that split the kernels' blocks unevenly too.
		require.NoError(t, be.SetThreads(1+k%3))
		w := make([]float32, tc.k*tc.n)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		q, err := ggml.Quantize(tc.typ, w, tc.k, nil) // f16 and f32 too
		require.NoError(t, err)
		deq, err := ggml.Dequantize(tc.typ, q)
		require.NoError(t, err)
		x := testutil.RandF32(rng, int(tc.k*tc.m))

		plain, _ := extraProduct(t, be, dev, nil, tc, q, x)
		got, bt := extraProduct(t, be, dev, extra, tc, q, x)
		used[bt.Name()]++
		t.Logf("%v %dx%d by %d: %s", tc.typ, tc.k, tc.n, tc.m, bt.Name())
		for j := range tc.m {
			for i := range tc.n {
				ref, bound := testutil.Q8Dot(deq[i*tc.k:(i+1)*tc.k], x[j*tc.k:(j+1)*tc.k])
				at := j*tc.n + i
				require.InDelta(t, ref, got[at], bound, "%v %dx%d by %d: [%d, %d] in %s", tc.typ, tc.k, tc.n, tc.m, i, j, bt.Name())
				// The same rounding of x on both paths: the same sums
				// but for their order.
				require.InDelta(t, plain[at], got[at], bound/8, "%v: [%d, %d] in %s against the CPU's own buffer", tc.typ, i, j, bt.Name())
			}
		}
	}
	t.Logf("placements: %v", used)
	for _, bt := range extra {
		assert.NotZero(t, used[bt.Name()], "no case was placed in %s", bt.Name())
	}
}

// extraProduct computes w·x with the weight in the buffer type
// WeightBufferType chooses among extra (none: the CPU's own).
func extraProduct(t *testing.T, be *backend.Backend, dev *backend.Device, extra []*backend.BufferType, tc extraCase, q []byte, x []float32) ([]float32, *backend.BufferType) {
	t.Helper()
	wc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(t, err)
	defer wc.Close()
	w := wc.NewTensor(tc.typ, tc.k, tc.n).SetName("w")
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	xt := c.NewTensor(ggml.TypeF32, tc.k, tc.m).SetName("x")
	y := c.MulMat(w, xt)
	require.NoError(t, c.Err())

	bt := backend.CPUBufferType()
	if extra != nil {
		bt, err = dev.WeightBufferType(0, y)
		require.NoError(t, err)
		if bt.IsCPUExtra() {
			ok, err := dev.SupportsWeightIn(y, 0, bt)
			require.NoError(t, err)
			require.True(t, ok)
		}
	}
	size, err := bt.AllocSize(w)
	require.NoError(t, err)
	wbuf, err := bt.AllocBuffer(size)
	require.NoError(t, err)
	defer wbuf.Close()
	require.NoError(t, backend.TensorAlloc(wbuf, w, 0))
	require.NoError(t, backend.TensorSet(w, q, 0))

	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	require.NoError(t, ggml.SetData(xt, x))
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	require.NoError(t, be.Compute(context.Background(), g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	return got, bt
}

// TestExtraBufferMisuse: what ggml's extra buffers would crash or assert
// on is an ErrUnsupported error: reading a tensor back (they have no
// get_tensor), writing part of one (set_tensor re-lays the whole tensor),
// writing a type the buffer has no layout for (a NULL layout).
func TestExtraBufferMisuse(t *testing.T) {
	_, extra := cpuExtra(t)
	rng := testutil.NewRNG(t)
	for _, bt := range extra {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
		require.NoError(t, err)
		typ := ggml.TypeQ4_0 // a type each has a layout for
		if bt.Name() == "AMX" {
			typ = ggml.TypeQ8_0
		}
		w := c.NewTensor(typ, 2048, 64).SetName("w")
		f := c.NewTensor(ggml.TypeF32, 64, 8).SetName("f")
		buf, err := bt.AllocBuffer(64 << 20)
		require.NoError(t, err)
		require.NoError(t, backend.TensorAlloc(buf, w, 0))
		// Not a weight the type computes with: refused where it is placed
		// (it would be stored in part, or, for the AMX type, past its
		// allocation).
		require.ErrorIs(t, backend.TensorAlloc(buf, f, 32<<20), backend.ErrUnsupported, bt.Name())

		q, err := ggml.Quantize(typ, testutil.RandF32(rng, 2048*64), 2048, nil)
		require.NoError(t, err)
		require.NoError(t, backend.TensorSet(w, q, 0))
		require.ErrorIs(t, backend.TensorSet(w, q[:len(q)/2], 0), backend.ErrUnsupported, bt.Name())
		require.ErrorIs(t, backend.TensorSet(w, q[:len(q)/2], uint64(len(q)/2)), backend.ErrUnsupported, bt.Name())
		_, err = ggml.Bytes(w)
		require.ErrorIs(t, err, backend.ErrUnsupported, bt.Name())
		require.ErrorIs(t, backend.TensorGet(w, make([]byte, 16), 0), backend.ErrUnsupported, bt.Name())
		require.ErrorIs(t, ggml.SetData(f, testutil.RandF32(rng, 64*8)), ggml.ErrNotAllocated)
		require.NoError(t, buf.Close())
		require.NoError(t, c.Close())
	}

	dev, err := backend.DeviceByType(backend.DeviceCPU)
	require.NoError(t, err)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 4, 4)
	_, err = dev.SupportsWeightIn(c.MulMat(a, a), 2, extra[0])
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = dev.WeightBufferType(0)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	b := c.NewTensor(ggml.TypeF32, 4, 4)
	_, err = dev.WeightBufferType(0, c.MulMat(a, a), c.MulMat(b, a))
	require.ErrorIs(t, err, ggml.ErrInvalid, "ops reading two different weights")
}

// TestExtraBufferViewsAndPlacement: what a hostile pass found around the
// CPU's extra buffer types. A view or reshape of a weight there is refused
// in transfers and computes (ggml would read the re-laid bytes as the
// tensor's own layout: wrong numbers, or a NULL read); tensors the type
// does not compute with are refused where they are placed (AMX sizes a
// 3-D tensor by its first matrix and packs no row of one shorter than a
// tile); CopyTensorAsync checks as TensorCopy does; a scheduler or graph
// allocator refuses an extra type as its compute buffer.
func TestExtraBufferViewsAndPlacement(t *testing.T) {
	_, extra := cpuExtra(t)
	rng := testutil.NewRNG(t)
	be := backendtest.CPU(t)
	for _, bt := range extra {
		t.Run(bt.Name(), func(t *testing.T) {
			typ := ggml.TypeQ4_0
			if bt.Name() == "AMX" {
				typ = ggml.TypeQ8_0
			}
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
			require.NoError(t, err)
			defer c.Close()
			w := c.NewTensor(typ, 2048, 64).SetName("w")
			buf, err := bt.AllocBuffer(8 << 20)
			require.NoError(t, err)
			defer buf.Close()
			require.NoError(t, backend.TensorAlloc(buf, w, 0))
			q, err := ggml.Quantize(typ, testutil.RandF32(rng, 2048*64), 2048, nil)
			require.NoError(t, err)
			require.NoError(t, backend.TensorSet(w, q, 0))

			// Views made after the weight was placed: no buffer of their
			// own, the weight's storage.
			rows := c.View2D(w, 2048, 32, w.Nb()[1], 0)
			reshaped := c.Reshape(w, 4096, 32)
			require.NoError(t, c.Err())
			require.ErrorIs(t, backend.TensorMemset(w, 0, 0, 18), backend.ErrUnsupported, "raw bytes in a re-laid tensor")
			for _, v := range []*ggml.Tensor{rows, reshaped} {
				require.ErrorIs(t, backend.TensorMemset(v, 0, 0, 18), backend.ErrUnsupported)
				_, err := ggml.Bytes(v)
				require.ErrorIs(t, err, backend.ErrUnsupported)
				require.ErrorIs(t, backend.TensorSet(v, q[:v.Bytes()], 0), backend.ErrUnsupported)
				require.ErrorIs(t, ggml.SetBytes(v, q[:v.Bytes()]), backend.ErrUnsupported)

				g, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
				require.NoError(t, err)
				x := g.NewTensor(ggml.TypeF32, v.Ne()[0], 3)
				gr, err := g.BuildGraph(g.MulMat(v, x))
				require.NoError(t, err)
				xb, err := backend.AllocContextTensors(g, be)
				require.NoError(t, err)
				require.NoError(t, ggml.SetData(x, testutil.RandF32(rng, int(v.Ne()[0])*3)))
				err = be.Compute(context.Background(), gr)
				require.ErrorIs(t, err, backend.ErrUnsupported)
				assert.Contains(t, err.Error(), "is a view of \"w\"")
				require.NoError(t, xb.Close())
				require.NoError(t, g.Close())
			}

			// Placement: only weights the type computes with.
			pc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true})
			require.NoError(t, err)
			defer pc.Close()
			short := pc.NewTensor(typ, 2048, 4)
			deep := pc.NewTensor(typ, 2048, 32, 4)
			pbuf, err := bt.AllocBuffer(8 << 20)
			require.NoError(t, err)
			defer pbuf.Close()
			if bt.Name() == "AMX" {
				require.ErrorIs(t, backend.TensorAlloc(pbuf, short, 0), backend.ErrUnsupported)
				require.ErrorIs(t, backend.TensorAlloc(pbuf, deep, 0), backend.ErrUnsupported)
			}

			// CopyTensorAsync out of the buffer: as TensorCopy, refused.
			cc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
			require.NoError(t, err)
			defer cc.Close()
			dst := cc.NewTensor(typ, 2048, 64)
			db, err := backend.AllocContextTensors(cc, be)
			require.NoError(t, err)
			defer db.Close()
			require.ErrorIs(t, be.CopyTensorAsync(be, w, dst), backend.ErrUnsupported)
			require.ErrorIs(t, backend.TensorCopy(w, dst), backend.ErrUnsupported)
			require.NoError(t, be.Synchronize())

			// Not a compute buffer.
			_, err = sched.New([]*backend.Backend{be}, sched.Options{BufferTypes: []*backend.BufferType{bt}})
			require.ErrorIs(t, err, backend.ErrUnsupported)
			_, err = backend.NewGallocr(bt)
			require.ErrorIs(t, err, backend.ErrUnsupported)
		})
	}
}
