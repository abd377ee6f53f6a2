package ggml_test

import (
	"flag"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

var long = flag.Bool("long", false, "run the lifetime loops 100000 times")

// leakLoop is testutil.LeakLoop, run 100000 times with -long.
func leakLoop(t *testing.T, n int, iter func()) {
	if *long {
		n = 100000
	}
	testutil.LeakLoop(t, n, 256<<20, iter)
}

const mib = 1 << 20

func TestContextsWithoutCloseDoNotLeak(t *testing.T) {
	data := make([]float32, mib/4)
	leakLoop(t, 2000, func() {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: mib})
		require.NoError(t, err)
		require.NoError(t, ggml.SetData(c.NewTensor(ggml.TypeF32, mib/4), data))
	})
}

func TestBuffersWithoutCloseDoNotLeak(t *testing.T) {
	be := cpuBackend(t)
	data := make([]float32, mib/4)
	leakLoop(t, 2000, func() {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
		require.NoError(t, err)
		x := c.NewTensor(ggml.TypeF32, mib/4)
		_, err = backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		require.NoError(t, ggml.SetData(x, data))
	})
}

func TestBackendsWithoutCloseDoNotLeak(t *testing.T) {
	leakLoop(t, 500, func() {
		_, err := backend.InitByName("CPU", "")
		require.NoError(t, err)
	})
}

// A tensor keeps its context, its buffer and the tensors it reads alive,
// though the program dropped every other reference to them.
func TestChildrenKeepParentsAlive(t *testing.T) {
	rng := newRNG(t)
	be := cpuBackend(t)
	xv := randF32(rng, 64)
	y, g := func() (*ggml.Tensor, *ggml.Graph) {
		w, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
		require.NoError(t, err)
		x := w.NewTensor(ggml.TypeF32, 64)
		_, err = backend.AllocContextTensors(w, be)
		require.NoError(t, err)
		require.NoError(t, ggml.SetData(x, xv))
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		y := c.Scale(x, 4)
		g, err := c.BuildGraph(y)
		require.NoError(t, err)
		_, err = backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		return y, g
	}()
	for range 5 {
		runtime.GC()
	}
	// Churn the allocator so freed memory would be reused.
	for range 50 {
		c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 1 << 16})
		_ = ggml.SetData(c.NewTensor(ggml.TypeF32, 1<<14), make([]float32, 1<<14))
	}
	runtime.GC()
	require.NoError(t, be.Compute(t.Context(), g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	for i := range xv {
		require.Equal(t, 4*xv[i], got[i]) // exact: a power-of-two scale
	}
}
