package backend_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("RSS needs /proc/self/statm (Linux)")
	}
	pages, err := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	require.NoError(t, err)
	return pages * int64(os.Getpagesize())
}

// leakLoop runs iter n times without closing what it makes and checks that
// resident memory stays flat over the second half (each iteration touches
// about 1 MiB, so a leak would show as n/2 MiB). The first half warms up C's
// allocator, whose per-thread arenas keep memory freed by the cleanup
// goroutine for a while.
func leakLoop(t *testing.T, n int, iter func()) {
	var mid int64
	for i := range n {
		iter()
		if i%25 == 24 {
			settle(1)
		}
		if i == n/2 {
			settle(3)
			mid = rss(t)
		}
	}
	settle(3)
	end := rss(t)
	t.Logf("%d iterations: RSS %d MiB after warm-up, %d MiB at the end", n, mid>>20, end>>20)
	require.Less(t, end-mid, int64(256<<20), "resident memory grew: handles leak")
}

// settle collects garbage and gives the cleanup goroutine time to free
// what it found (runtime.GC does not wait for cleanups).
func settle(rounds int) {
	for range rounds {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
	}
}

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
		leakLoop(t, 800, func() {
			g, x := graph()
			ga, err := backend.NewGallocr(be.DefaultBufferType())
			require.NoError(t, err)
			require.NoError(t, ga.AllocGraph(g))
			require.NoError(t, backend.TensorSet(x, data, 0))
		})
	})
	t.Run("plan", func(t *testing.T) {
		leakLoop(t, 800, func() {
			g, x := graph()
			_, err := backend.AllocContextTensors(g.Context(), be)
			require.NoError(t, err)
			require.NoError(t, backend.TensorSet(x, data, 0))
			_, err = be.NewPlan(g)
			require.NoError(t, err)
		})
	})
	t.Run("graph copy", func(t *testing.T) {
		leakLoop(t, 800, func() {
			g, x := graph()
			_, err := backend.AllocContextTensors(g.Context(), be)
			require.NoError(t, err)
			require.NoError(t, backend.TensorSet(x, data, 0))
			_, err = be.CopyGraph(g)
			require.NoError(t, err)
		})
	})
	t.Run("host memory buffer", func(t *testing.T) {
		leakLoop(t, 800, func() {
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

// A long CPU compute returns soon after its context is cancelled: the abort
// flag is read between nodes. The bound is the 50 ms; the best of
// three tries counts, so that a loaded machine does not fail it while an
// ignored cancel (seconds of compute) still would.
func TestCancelLatency(t *testing.T) {
	be := cpu(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 600, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	w := c.NewTensor(ggml.TypeF32, 512, 512)
	y := c.NewTensor(ggml.TypeF32, 512, 512)
	for range 500 { // 500 products of 512² matrices: ~134 GFLOP, seconds
		y = c.MulMat(w, y)
	}
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	best := time.Hour
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		var at time.Time
		time.AfterFunc(30*time.Millisecond, func() { at = time.Now(); cancel() })
		err := be.Compute(ctx, g)
		returned := time.Now()
		require.ErrorIs(t, err, context.Canceled)
		lat := returned.Sub(at)
		t.Logf("returned %v after the cancel", lat)
		best = min(best, lat)
	}
	require.Less(t, best, 50*time.Millisecond)
}
