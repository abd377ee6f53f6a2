package opt_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/opt"
)

// The regressions of issue #40: what a user passes in is a Go error, never
// an abort, a crash or a wrong result.

// A dataset whose shard order ggml cannot allocate is ErrNoMemory before
// ggml_opt_dataset_init, whose std::vector throws an uncaught
// std::bad_alloc (an abort).
func TestDatasetTooLargeIsNoMemory(t *testing.T) {
	_, err := opt.NewDataset(1<<40, 1, 0, 1)
	require.ErrorIs(t, err, ggml.ErrNoMemory)
	_, err = opt.NewDataset(1<<40, 1, 1, 1<<20)
	require.ErrorIs(t, err, ggml.ErrNoMemory)
	// What the machine has bounds it too: 1 MiB of data and 2 MiB of
	// shard orders.
	opt.SetAvailableMemory(t, 2<<20)
	_, err = opt.NewDataset(1<<18, 1, 0, 1)
	require.ErrorIs(t, err, ggml.ErrNoMemory)
	ds, err := opt.NewDataset(1<<10, 1, 0, 1)
	require.NoError(t, err)
	require.NoError(t, ds.Close())
}

// Under an address-space limit, a dataset whose data fits but whose shard
// order does not is ErrNoMemory: ggml's buffer was allocated and its
// std::vector threw.
func TestDatasetUnderAddressLimit(t *testing.T) {
	if !underAddressLimit(t, 2<<30) {
		return
	}
	_, err := opt.NewDataset(1<<28, 1, 0, 1) // 1 GiB of data, 2 GiB of shard order (twice)
	require.ErrorIs(t, err, ggml.ErrNoMemory)
	ds, err := opt.NewDataset(1<<20, 1, 0, 1)
	require.NoError(t, err)
	require.NoError(t, ds.Fill(func(i int, data, _ []float32) error { data[0] = float32(i); return nil }))
	require.NoError(t, ds.Close())
}

// Graph.BuildBackward's scratch context (8 times the graph's size) that
// cannot be allocated is ErrNoMemory, not ggml_init's assert escaping as a
// Go panic. New builds the same backward pass.
func TestBuildBackwardUnderAddressLimit(t *testing.T) {
	if !underAddressLimit(t, 256<<20) {
		return
	}
	const size = 1 << 20 // a graph of 72 MiB; its scratch copy takes 580 MiB
	ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true, Grads: true, GraphSize: size})
	require.NoError(t, err)
	defer ctx.Close()
	w := ctx.NewTensor(ggml.TypeF32, 4).SetParam()
	loss := ctx.Sum(ctx.Sqr(w))
	loss.SetLoss()
	g, err := ctx.NewGradGraph(size)
	require.NoError(t, err)
	require.NoError(t, g.Expand(loss))
	require.ErrorIs(t, g.BuildBackward(ctx, false), ggml.ErrNoMemory)
}

// New's compute context (ggml-opt's graphs) is ErrNoMemory where the
// machine cannot hold it, as a ggml.Context is, instead of ggml_init's
// assert when malloc fails.
func TestNewComputeContextNoMemory(t *testing.T) {
	cpu := backendtest.CPU(t)
	s := newSched(t, cpu)
	m := newLinear(t, cpu, 3, 2, 4)
	opt.SetAvailableMemory(t, 64<<10)
	o, err := opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossMSE})
	if err == nil {
		require.NoError(t, o.Close())
	}
	require.ErrorIs(t, err, ggml.ErrNoMemory)
	opt.SetAvailableMemory(t, 1<<40)
	o, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossMSE})
	require.NoError(t, err, "the failed New gave the scheduler back")
	require.NoError(t, o.Close())
}

// A result holds evaluations of one loss: cross-entropy evaluations added
// to mean-squared-error ones are refused (ErrInvalid), so its losses are of
// one kind and its predictions those of the datapoints it counts.
func TestResultRefusesAnotherLoss(t *testing.T) {
	rng := testutil.NewRNG(t)
	cpu := backendtest.CPU(t)
	bg := context.Background()
	m := newLinear(t, cpu, 3, 2, 4)
	m.set(t, randn(rng, 6, 1), randn(rng, 2, 1))
	mse := newOptimizer(t, newSched(t, cpu), opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossMSE})
	m2 := newLinear(t, cpu, 3, 2, 4)
	m2.set(t, randn(rng, 6, 1), randn(rng, 2, 1))
	ce := newOptimizer(t, newSched(t, cpu), opt.Params{Inputs: m2.x, Outputs: m2.y, Loss: opt.LossCrossEntropy})
	ds := newDataset(t, randn(rng, 8*3, 1), 3, randn(rng, 8*2, 1), 2)

	r := opt.NewResult()
	defer r.Close()
	require.NoError(t, mse.Evaluate(bg, ds, r))
	before, err := r.Stats()
	require.NoError(t, err)
	require.ErrorIs(t, ce.Evaluate(bg, ds, r), ggml.ErrInvalid)
	require.ErrorIs(t, ce.Epoch(bg, ds, opt.EpochParams{Split: -1, Train: r}), ggml.ErrInvalid)
	after, err := r.Stats()
	require.NoError(t, err)
	assert.Equal(t, before.N, after.N, "nothing was added")
	pred, err := r.Predictions()
	require.NoError(t, err)
	assert.Empty(t, pred, "mean squared error predicts no class")

	require.NoError(t, r.Reset())
	require.NoError(t, ce.Evaluate(bg, ds, r))
	pred, err = r.Predictions()
	require.NoError(t, err)
	assert.Len(t, pred, 8)
	require.ErrorIs(t, mse.Evaluate(bg, ds, r), ggml.ErrInvalid)
}

// hugeOutputs is the model y = repeat(W·x) with x and W 1×1 and y of n
// rows: tiny weights and data, compute buffers of 2 × 4n bytes.
func hugeOutputs(t *testing.T, cpu *backend.Backend, n int64) (x, y *ggml.Tensor) {
	t.Helper()
	wctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	x = wctx.NewTensor(ggml.TypeF32, 1, 1).SetName("x")
	w := wctx.NewTensor(ggml.TypeF32, 1, 1).SetName("w").SetParam()
	buf, err := backend.AllocContextTensors(wctx, cpu)
	require.NoError(t, err)
	require.NoError(t, ggml.SetData(w, []float32{1}))
	cctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
	require.NoError(t, err)
	y = cctx.Repeat(cctx.MulMat(w, x), cctx.NewTensor(ggml.TypeF32, n, 1)).SetName("y")
	require.NoError(t, cctx.Err())
	t.Cleanup(func() {
		require.NoError(t, cctx.Close())
		require.NoError(t, buf.Close())
		require.NoError(t, wctx.Close())
	})
	return x, y
}

// An epoch whose compute buffers cannot be allocated is ErrNoMemory from
// Epoch and Fit (ggml-opt ignores the scheduler's failure, whose allocator
// then crashed), and the scheduler serves another optimizer afterwards.
func TestEpochComputeBuffersNoMemory(t *testing.T) {
	cpu := backendtest.CPU(t)
	s := newSched(t, cpu)
	bg := context.Background()
	ds := newDataset(t, []float64{1}, 1, nil, 0)
	for _, c := range []struct {
		name string
		run  func(*opt.Optimizer) error
	}{
		{"Epoch", func(o *opt.Optimizer) error { return o.Epoch(bg, ds, opt.EpochParams{Split: -1}) }},
		{"Evaluate", func(o *opt.Optimizer) error { return o.Evaluate(bg, ds, nil) }},
		{"Fit", func(o *opt.Optimizer) error { _, err := o.Fit(bg, ds, opt.FitParams{Epochs: 1}); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, y := hugeOutputs(t, cpu, 1<<46) // 256 TiB per tensor: more than any address space
			o, err := opt.New(s, opt.Params{Inputs: x, Outputs: y, Loss: opt.LossSum, Method: opt.SGD})
			require.NoError(t, err)
			require.ErrorIs(t, c.run(o), ggml.ErrNoMemory)
			assert.Error(t, c.run(o), "the optimizer is not used after a failed allocation")
			require.NoError(t, o.Close())
		})
	}
	// The scheduler trains a model that fits.
	rng := testutil.NewRNG(t)
	m := newLinear(t, cpu, 3, 2, 4)
	m.set(t, randn(rng, 6, 1), randn(rng, 2, 1))
	o := newOptimizer(t, s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossMSE})
	small := newDataset(t, randn(rng, 8*3, 1), 3, randn(rng, 8*2, 1), 2)
	r := opt.NewResult()
	defer r.Close()
	require.NoError(t, o.Epoch(bg, small, opt.EpochParams{Split: 4, Train: r, Eval: r}))
	_, err := opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y})
	require.ErrorIs(t, err, ggml.ErrBusy)
}

// Zero values of Dataset, Result and Optimizer are refused by every method
// (ErrInvalid, or the zero answer of a method without an error); Close
// returns nil, again and again.
func TestZeroValuesMisuse(t *testing.T) {
	for _, v := range []any{&opt.Dataset{}, &opt.Result{}, &opt.Optimizer{}} {
		rv := reflect.ValueOf(v)
		typ := rv.Type()
		require.Positive(t, typ.NumMethod())
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			t.Run(typ.Elem().Name()+"."+m.Name, func(t *testing.T) {
				args := make([]reflect.Value, m.Type.NumIn()-1)
				for j := range args {
					args[j] = reflect.Zero(m.Type.In(j + 1))
				}
				for range 2 {
					var out []reflect.Value
					require.NotPanics(t, func() { out = rv.Method(i).Call(args) })
					for _, o := range out {
						err, isErr := o.Interface().(error)
						switch {
						case o.Type() == reflect.TypeFor[error]() && m.Name == "Close":
							assert.NoError(t, err)
						case o.Type() == reflect.TypeFor[error]():
							assert.ErrorIs(t, err, ggml.ErrInvalid)
						case !isErr:
							assert.True(t, o.IsZero(), "%s returns %v", m.Name, o)
						}
					}
				}
			})
		}
	}
	// As arguments too.
	cpu := backendtest.CPU(t)
	s := newSched(t, cpu)
	m := newLinear(t, cpu, 3, 2, 4)
	o := newOptimizer(t, s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossMSE})
	bg := context.Background()
	assert.ErrorIs(t, o.Epoch(bg, &opt.Dataset{}, opt.EpochParams{}), ggml.ErrInvalid)
	ds := newDataset(t, make([]float64, 8*3), 3, make([]float64, 8*2), 2)
	assert.ErrorIs(t, o.Evaluate(bg, ds, &opt.Result{}), ggml.ErrInvalid)
	assert.ErrorIs(t, o.Epoch(bg, ds, opt.EpochParams{Split: -1, Train: &opt.Result{}}), ggml.ErrInvalid)
	require.NoError(t, o.Epoch(bg, ds, opt.EpochParams{Split: -1}))
}
