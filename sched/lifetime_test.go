package sched_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/sched"
)

// Schedulers dropped without Close, each with a 1 MiB compute buffer, keep
// resident memory flat over the second half of the loop.
func TestSchedulersWithoutCloseDoNotLeak(t *testing.T) {
	be := cpu(t)
	testutil.LeakLoop(t, 600, 200<<20, func() {
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
	})
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
				got, err := ggml.Data[float32](y)
				if err != nil {
					t.Error(err)
					c.Close()
					return
				}
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
