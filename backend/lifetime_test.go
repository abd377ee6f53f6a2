package backend_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

const mib = 1 << 20

func TestHandlesWithoutCloseDoNotLeak(t *testing.T) {
	be := cpu(t)
	data := make([]byte, mib)
	graph := func() (*ggml.Graph, *ggml.Tensor) {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		x := c.NewTensor(ggml.TypeF32, mib/4)
		g, err := c.BuildGraph(c.Scale(x, 2))
		require.NoError(t, err)
		return g, x
	}
	t.Run("gallocr", func(t *testing.T) {
		testutil.LeakLoop(t, 800, 256<<20, func() {
			g, x := graph()
			ga, err := backend.NewGallocr(be.DefaultBufferType())
			require.NoError(t, err)
			require.NoError(t, ga.AllocGraph(g))
			require.NoError(t, backend.TensorSet(x, data, 0))
		})
	})
	t.Run("plan", func(t *testing.T) {
		testutil.LeakLoop(t, 800, 256<<20, func() {
			g, x := graph()
			_, err := backend.AllocContextTensors(g.Context(), be)
			require.NoError(t, err)
			require.NoError(t, backend.TensorSet(x, data, 0))
			_, err = be.NewPlan(g)
			require.NoError(t, err)
		})
	})
	t.Run("graph copy", func(t *testing.T) {
		testutil.LeakLoop(t, 800, 256<<20, func() {
			g, x := graph()
			_, err := backend.AllocContextTensors(g.Context(), be)
			require.NoError(t, err)
			require.NoError(t, backend.TensorSet(x, data, 0))
			_, err = be.CopyGraph(g)
			require.NoError(t, err)
		})
	})
	t.Run("host memory buffer", func(t *testing.T) {
		testutil.LeakLoop(t, 800, 256<<20, func() {
			m, err := backend.AllocHostMemory(mib)
			require.NoError(t, err)
			copy(m.Bytes(), data)
			_, err = backend.CPUBufferFromHostMemory(m, 0, mib)
			require.NoError(t, err)
		})
	})
}

// One backend per goroutine, several goroutines: results stay right and the
// race detector stays quiet (go test -race).
func TestConcurrentBackends(t *testing.T) {
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			be, err := backend.InitByName("CPU", "")
			if !assertNoError(t, err) {
				return
			}
			defer be.Close()
			for it := range 20 {
				c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
				if !assertNoError(t, err) {
					return
				}
				x := c.NewTensor(ggml.TypeF32, 64)
				y := c.Add(x, x)
				g, err := c.BuildGraph(y)
				assertNoError(t, err)
				buf, err := backend.AllocContextTensors(c, be)
				assertNoError(t, err)
				xv := make([]float32, 64)
				for i := range xv {
					xv[i] = float32(w*1000 + it*64 + i)
				}
				assertNoError(t, ggml.SetData(x, xv))
				assertNoError(t, be.Compute(context.Background(), g))
				got, err := ggml.Data[float32](y)
				assertNoError(t, err)
				for i := range xv {
					if got[i] != 2*xv[i] {
						t.Errorf("worker %d: got %g, want %g", w, got[i], 2*xv[i])
						break
					}
				}
				_ = backend.DeviceCount() // the registry is shared
				for range backend.Devices() {
				}
				buf.Close()
				c.Close()
			}
		}()
	}
	wg.Wait()
}

func assertNoError(t *testing.T, err error) bool {
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// A CPU compute whose context is cancelled stops between nodes and returns
// ctx.Err(). The check counts work, not time: a custom op early in a long
// chain of products cancels the context, and the products after it must not
// all have run (an ignored cancel runs every one). Every buffer byte starts
// as 0xff, a NaN, so a product that never ran is all NaN. How soon a compute
// returns after a cancel is BenchmarkCancel in bench.
func TestCancelStopsCompute(t *testing.T) {
	be := cpu(t)
	const n, k, m = 600, 128, 64 // 600 products of 128×128 by 128×64: ~1.3 GFLOP
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: n + 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	w := c.NewTensor(ggml.TypeF32, k, k)
	x := c.NewTensor(ggml.TypeF32, k, m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled atomic.Int32 // custom op calls that cancelled (thread 0 only)
	y := c.MulMat(w, x)
	y = c.MapCustom1InPlace(y, func(dst ggml.CustomView, _ []ggml.CustomView, ith, _ int) {
		if ith == 0 {
			cancelled.Add(1)
			cancel()
			// The cancel reaches the compute through a goroutine: wait
			// until it has (bounded), or a fast CPU finishes every
			// product first and Compute rightly returns nil.
			deadline := time.Now().Add(time.Minute)
			for !dst.Cancelled() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}, 0)
	products := make([]*ggml.Tensor, n)
	for i := range products {
		y = c.MulMat(w, y)
		products[i] = y
	}
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	require.NoError(t, buf.Clear(0xff))
	eye := make([]float32, k*k)
	for i := range k {
		eye[i*k+i] = 1
	}
	ones := make([]float32, k*m)
	for i := range ones {
		ones[i] = 1
	}
	require.NoError(t, ggml.SetData(w, eye))
	require.NoError(t, ggml.SetData(x, ones))

	err = be.Compute(ctx, g)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int32(1), cancelled.Load())
	ran := 0 // products computed: identity times ones gives ones
	for i, p := range products {
		out, err := ggml.Data[float32](p)
		require.NoError(t, err)
		switch {
		case out[0] == 1 && out[len(out)-1] == 1:
			ran++
		case math.IsNaN(float64(out[0])):
		default:
			t.Fatalf("product %d holds %v: neither computed nor untouched", i, out[0])
		}
	}
	t.Logf("%d of %d products ran after the cancel", ran, n)
	require.Less(t, ran, n, "the cancel did not stop the compute: every product ran")
}
