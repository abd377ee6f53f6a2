package backend_test

import (
	"context"
	"sync"
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
