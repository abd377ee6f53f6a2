package opt_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/opt"
)

// An Optimizer, Dataset and Result dropped without Close are freed by the
// garbage collector, and the optimizer's scheduler is given back then.
func TestDroppedHandlesAreCollected(t *testing.T) {
	rng := testutil.NewRNG(t)
	cpu := backendtest.CPU(t)
	s := newSched(t, cpu)
	m := newLinear(t, cpu, 3, 2, 4)
	m.set(t, randn(rng, 6, 1), randn(rng, 2, 1))
	func() {
		o, err := opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossMSE})
		require.NoError(t, err)
		ds, err := opt.NewDatasetFrom(f32(randn(rng, 8*3, 1)), 3, f32(randn(rng, 8*2, 1)), 2)
		require.NoError(t, err)
		r := opt.NewResult()
		require.NoError(t, o.Epoch(context.Background(), ds, opt.EpochParams{Split: 4, Train: r, Eval: r}))
	}()
	assert.ErrorIs(t, s.Reset(), ggml.ErrBusy, "lent until the optimizer is collected")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && s.Reset() != nil {
		testutil.Settle(2)
	}
	require.NoError(t, s.Reset(), "the collected optimizer gave the scheduler back")
	o, err := opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossMSE})
	require.NoError(t, err)
	require.NoError(t, o.Close())
}

// Two goroutines that use one optimizer at once: one of them is refused
// with ErrBusy, never an overlap in ggml-opt; Close while an epoch runs is
// ErrBusy too.
func TestConcurrentUseIsBusy(t *testing.T) {
	rng := testutil.NewRNG(t)
	cpu := backendtest.CPU(t)
	s := newSched(t, cpu)
	m := newLinear(t, cpu, 3, 2, 4)
	m.set(t, randn(rng, 6, 1), randn(rng, 2, 1))
	o := newOptimizer(t, s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossMSE})
	ds := newDataset(t, randn(rng, 400*3, 1), 3, randn(rng, 400*2, 1), 2)
	started := make(chan struct{})
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		first := true
		err := o.Epoch(context.Background(), ds, opt.EpochParams{Split: -1, Progress: func(opt.Progress) error {
			if first {
				first = false
				close(started)
				<-release
			}
			return nil
		}})
		assert.NoError(t, err)
	}()
	<-started
	assert.ErrorIs(t, o.Epoch(context.Background(), ds, opt.EpochParams{Split: -1}), ggml.ErrBusy)
	assert.ErrorIs(t, o.Close(), ggml.ErrBusy)
	assert.ErrorIs(t, ds.Close(), ggml.ErrBusy)
	close(release)
	wg.Wait()
	require.NoError(t, o.Close())
}
