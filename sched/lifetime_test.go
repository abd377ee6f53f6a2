package sched_test

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
	"github.com/go-ggml/ggml/sched"
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

// Schedulers dropped without Close, each with a 1 MiB compute buffer, keep
// resident memory flat over the second half of the loop.
func TestSchedulersWithoutCloseDoNotLeak(t *testing.T) {
	be := cpu(t)
	settle := func() {
		for range 3 {
			runtime.GC()
			time.Sleep(2 * time.Millisecond)
		}
	}
	const n = 600
	var mid int64
	for i := range n {
		s, err := sched.New([]*backend.Backend{be}, sched.Options{GraphSize: 16})
		require.NoError(t, err)
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true, GraphSize: 16})
		require.NoError(t, err)
		x := c.NewTensor(ggml.TypeF32, 1<<18)
		g, err := c.BuildGraph(c.Scale(x, 2))
		require.NoError(t, err)
		require.NoError(t, s.AllocGraph(g))
		require.NoError(t, ggml.SetData(x, make([]float32, 1<<18)))
		require.NoError(t, s.Compute(context.Background(), g))
		if i%25 == 24 {
			settle()
		}
		if i == n/2 {
			settle()
			mid = rss(t)
		}
	}
	settle()
	end := rss(t)
	t.Logf("RSS %d MiB at the half, %d MiB at the end", mid>>20, end>>20)
	require.Less(t, end-mid, int64(200<<20))
}

// One scheduler per goroutine: right results, and quiet under -race.
func TestConcurrentSchedulers(t *testing.T) {
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			be, err := backend.InitByName("CPU", "")
			if err != nil {
				t.Error(err)
				return
			}
			defer be.Close()
			s, err := sched.New([]*backend.Backend{be}, sched.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			for it := range 10 {
				c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
				x := c.NewTensor(ggml.TypeF32, 16)
				y := c.Add(x, x)
				g, _ := c.BuildGraph(y)
				if err := s.Reset(); err != nil {
					t.Error(err)
				}
				if err := s.AllocGraph(g); err != nil {
					t.Error(err)
					return
				}
				xv := make([]float32, 16)
				for i := range xv {
					xv[i] = float32(w*100 + it*16 + i)
				}
				_ = ggml.SetData(x, xv)
				if err := s.Compute(context.Background(), g); err != nil {
					t.Error(err)
				}
				got, _ := ggml.Data[float32](y)
				for i := range xv {
					if got[i] != 2*xv[i] {
						t.Errorf("worker %d: got %g want %g", w, got[i], 2*xv[i])
						break
					}
				}
				c.Close()
			}
		}()
	}
	wg.Wait()
}
