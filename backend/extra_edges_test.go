package backend_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// TestExtraBufferTypesTileEdges holds every buffer type a quantized weight
// can live in on the CPU (each extra type that takes the product, and the
// CPU's own) to a float64 reference at the edges of the kernels' tiles:
// rows of one K block (32) and of a few, batches of 1 to 64 columns (AMX
// computes blocks of 32 x 32 results, in two tiles of 16 each way), thread
// counts from 1 to 8. The result tensor is filled with NaN before
// each product, and each product is computed a second time over its own
// result: a kernel that adds to what the result held, instead of storing
// it, is caught either way (issue #40: AMX with K = 32 gave about twice
// the right values, or garbage, at batches of 33 and 48).
//
// The reference is the dequantized weights times the activations in
// float64, with testutil.Q8Dot's bound for activations rounded to q8_0 or
// q8_1 (the CPU's activation type for these weights, as
// model/modeltest's activationType says).
func TestExtraBufferTypesTileEdges(t *testing.T) {
	dev, extra := cpuExtra(t)
	be := cpu(t)
	rng := testutil.NewRNG(t)

	const n = 64 // two blocks of 32 output rows
	types := []ggml.Type{ggml.TypeQ4_0, ggml.TypeQ4_1, ggml.TypeQ8_0}
	ks := []int64{32, 64, 96, 256}
	// Batches: around the tiles' edges; all of 1 to 64 where the CPU has
	// the cores to run them quickly.
	ms := []int64{1, 2, 3, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64}
	// Threads: 1 to 8; up to the CPU's count where it has fewer (ggml's
	// threads spin at their barriers: 8 on 2 cores take 60 ms a product),
	// and 7 besides (an uneven split of the blocks) on 4 cores or more,
	// but not with -short.
	threads := []int{}
	for n := 1; n <= 8 && n <= max(2, runtime.NumCPU()); n++ {
		threads = append(threads, n)
	}
	if !testing.Short() {
		if runtime.NumCPU() >= 8 {
			ms = ms[:0]
			for m := int64(1); m <= 64; m++ {
				ms = append(ms, m)
			}
		}
		// 7 threads (an uneven split) where the CPU has the cores: on 2,
		// their spinning made the test take 50 s.
		if threads[len(threads)-1] < 7 && runtime.NumCPU() >= 4 {
			threads = append(threads, 7)
		}
	}
	t.Logf("batches %v, threads %v", ms, threads)
	bts := append(append([]*backend.BufferType(nil), extra...), backend.CPUBufferType())
	used := map[string]int{}
	for _, typ := range types {
		for _, k := range ks {
			w := make([]float32, k*n)
			for i := range w {
				w[i] = float32(rng.NormFloat64())
			}
			q, err := ggml.Quantize(typ, w, k, nil)
			require.NoError(t, err)
			deq, err := ggml.Dequantize(typ, q)
			require.NoError(t, err)
			xs := testutil.RandF32(rng, int(k*ms[len(ms)-1]))
			// The reference of every column the largest batch has: the
			// smaller batches are its first columns.
			ref := make([]float64, n*ms[len(ms)-1])
			bound := make([]float64, len(ref))
			for j := range ms[len(ms)-1] {
				for i := range int64(n) {
					ref[j*n+i], bound[j*n+i] = testutil.Q8Dot(deq[i*k:(i+1)*k], xs[j*k:(j+1)*k])
				}
			}
			for _, bt := range bts {
				name := fmt.Sprintf("%v/k=%d/%s", typ, k, bt.Name())
				placed := tileEdgeProducts(t, be, dev, bt, typ, k, n, ms, threads, q, xs, func(m int64, threads, pass int, got []float32) {
					for j := range m {
						for i := range int64(n) {
							at := j*n + i
							if g := float64(got[at]); math.IsNaN(g) || math.IsInf(g, 0) || math.Abs(g-ref[at]) > bound[at] {
								require.Failf(t, "wrong product",
									"%s: by %d columns, %d threads, pass %d: [%d, %d] is %v, want %v ± %.3g",
									name, m, threads, pass, i, j, got[at], ref[at], bound[at])
							}
						}
					}
				})
				if placed {
					used[bt.Name()]++
				} else {
					t.Logf("%s: the type does not take this weight", name)
				}
			}
		}
	}
	t.Logf("weights placed: %v", used)
	for _, bt := range extra {
		if bt.Name() == "AMX" {
			require.NotZero(t, used["AMX"], "AMX takes q4_0, q4_1 and q8_0 rows of any multiple of 32")
		}
	}
}

// tileEdgeProducts places the weight (type typ, k x n, quantized as q) in
// bt when the CPU device computes a product with it there, and calls check
// with each product of it by the first m columns of xs, for each m of ms
// and each thread count of threads, twice: over a result filled with NaN,
// then over the first pass's result. It reports whether bt took the
// weight.
func tileEdgeProducts(t *testing.T, be *backend.Backend, dev *backend.Device, bt *backend.BufferType, typ ggml.Type, k, n int64, ms []int64, threads []int, q []byte, xs []float32, check func(m int64, threads, pass int, got []float32)) bool {
	t.Helper()
	wc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(t, err)
	defer wc.Close()
	w := wc.NewTensor(typ, k, n).SetName("w")

	// One graph for each batch, built first: the thread count changes
	// least often (the CPU backend's pool follows it).
	type product struct {
		m    int64
		y    *ggml.Tensor
		g    *ggml.Graph
		nans []float32
	}
	var products []product
	for _, m := range ms {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		defer c.Close()
		xt := c.NewTensor(ggml.TypeF32, k, m).SetName("x")
		y := c.MulMat(w, xt)
		require.NoError(t, c.Err())
		if bt.IsCPUExtra() {
			ok, err := dev.SupportsWeightIn(y, 0, bt)
			require.NoError(t, err)
			if !ok {
				// Extra types take a weight for every batch or for none
				// (llama.cpp's loader asks once, with a batch of its own).
				require.Empty(t, products, "%s took a %v %dx%d weight for another batch, not for %d columns", bt.Name(), typ, k, n, m)
				return false
			}
		}
		buf, err := backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		defer buf.Close()
		require.NoError(t, ggml.SetData(xt, xs[:k*m]))
		g, err := c.BuildGraph(y)
		require.NoError(t, err)
		nans := make([]float32, n*m)
		for i := range nans {
			nans[i] = float32(math.NaN())
		}
		products = append(products, product{m, y, g, nans})
	}

	size, err := bt.AllocSize(w)
	require.NoError(t, err)
	wbuf, err := bt.AllocBuffer(size)
	require.NoError(t, err)
	defer wbuf.Close()
	require.NoError(t, backend.TensorAlloc(wbuf, w, 0))
	require.NoError(t, backend.TensorSet(w, q, 0))

	for _, nt := range threads {
		require.NoError(t, be.SetThreads(nt))
		for _, p := range products {
			require.NoError(t, ggml.SetData(p.y, p.nans))
			for pass := 1; pass <= 2; pass++ {
				require.NoError(t, be.Compute(context.Background(), p.g))
				got, err := ggml.Data[float32](p.y)
				require.NoError(t, err)
				check(p.m, nt, pass, got)
			}
		}
	}
	return true
}
