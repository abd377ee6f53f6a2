package opt_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/opt"
)

// Datasets refuse what ggml_opt_dataset_init asserts on, or loses data to.
func TestDatasetMisuse(t *testing.T) {
	for _, c := range []struct{ n, data, label, shard int }{
		{0, 1, 1, 1}, {4, 0, 1, 1}, {4, 1, -1, 1}, {4, 1, 1, 0}, {10, 2, 1, 3},
	} {
		_, err := opt.NewDataset(c.n, c.data, c.label, c.shard)
		assert.ErrorIs(t, err, ggml.ErrInvalid, "%+v", c)
	}
	_, err := opt.NewDatasetFrom(make([]float32, 7), 2, nil, 0)
	assert.ErrorIs(t, err, ggml.ErrShape)
	_, err = opt.NewDatasetFrom(make([]float32, 8), 2, make([]float32, 3), 1)
	assert.ErrorIs(t, err, ggml.ErrShape)
	ds, err := opt.NewDataset(4, 2, 0, 1)
	require.NoError(t, err)
	assert.ErrorIs(t, ds.SetLabels(nil), ggml.ErrInvalid)
	require.NoError(t, ds.Close())
	require.NoError(t, ds.Close())
	assert.ErrorIs(t, ds.SetData(make([]float32, 8)), ggml.ErrClosed)
	_, err = ds.Data()
	assert.ErrorIs(t, err, ggml.ErrClosed)
	assert.ErrorIs(t, ds.Shuffle(1, -1), ggml.ErrClosed)
	var nilDS *opt.Dataset
	assert.ErrorIs(t, nilDS.SetData(nil), ggml.ErrInvalid)
	assert.NoError(t, nilDS.Close())
}

// New refuses models that ggml-opt would assert on, or train wrong.
func TestNewMisuse(t *testing.T) {
	cpu := backendtest.CPU(t)
	s := newSched(t, cpu)
	m := newLinear(t, cpu, 3, 2, 4)

	_, err := opt.New(nil, opt.Params{Inputs: m.x, Outputs: m.y})
	assert.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = opt.New(s, opt.Params{Outputs: m.y})
	assert.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: 7})
	assert.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y, Method: 5})
	assert.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y, Period: -1})
	assert.ErrorIs(t, err, ggml.ErrInvalid)

	ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true})
	require.NoError(t, err)
	defer ctx.Close()
	// Outputs that are not a matrix of one column per datapoint.
	_, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: ctx.Reshape(m.y, 2, 2, 2)})
	assert.ErrorIs(t, err, ggml.ErrShape)
	_, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: ctx.Transpose(m.y)})
	assert.ErrorIs(t, err, ggml.ErrShape)
	// Inputs without memory.
	x2 := ctx.NewTensor(ggml.TypeF32, 3, 4)
	_, err = opt.New(s, opt.Params{Inputs: x2, Outputs: ctx.Add(ctx.MulMat(m.w, x2), m.b)})
	assert.ErrorIs(t, err, ggml.ErrNotAllocated)
	// Outputs that do not depend on the inputs, or on no parameter.
	other := ctx.Scale(m.y, 2)
	_, err = opt.New(s, opt.Params{Inputs: m.w, Outputs: ctx.Scale(m.x, 2)})
	assert.ErrorIs(t, err, ggml.ErrShape) // w is [3, 2], x has 4 columns
	_, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: ctx.Scale(m.x, 2)})
	assert.ErrorIs(t, err, ggml.ErrInvalid)
	// A loss marked in the model.
	sum := ctx.Sum(other)
	sum.SetLoss()
	_, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: ctx.Add(other, ctx.Repeat(sum, other))})
	assert.ErrorIs(t, err, ggml.ErrInvalid)
	// An op without a backward pass on the way to the loss.
	_, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: ctx.Tanh(m.y)})
	assert.ErrorIs(t, err, ggml.ErrUnsupported)
	require.NoError(t, ctx.Err())

	// A closed scheduler.
	s2 := newSched(t, cpu)
	require.NoError(t, s2.Close())
	_, err = opt.New(s2, opt.Params{Inputs: m.x, Outputs: m.y})
	assert.ErrorIs(t, err, ggml.ErrClosed)

	// The scheduler is lent to one optimizer at a time.
	o, err := opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y})
	require.NoError(t, err)
	_, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y})
	assert.ErrorIs(t, err, ggml.ErrBusy)
	assert.ErrorIs(t, s.Close(), ggml.ErrBusy)
	assert.ErrorIs(t, s.Reset(), ggml.ErrBusy)
	require.NoError(t, o.Close())
	require.NoError(t, o.Close())
	require.NoError(t, s.Reset())
	o, err = opt.New(s, opt.Params{Inputs: m.x, Outputs: m.y})
	require.NoError(t, err)
	require.NoError(t, o.Close())
}

// Epochs refuse what ggml_opt_epoch, ggml_opt_eval and
// ggml_opt_dataset_get_batch assert on, before any of it runs, and the
// optimizer trains on afterwards.
func TestEpochMisuse(t *testing.T) {
	rng := testutil.NewRNG(t)
	cpu := backendtest.CPU(t)
	s := newSched(t, cpu)
	m := newLinear(t, cpu, 3, 2, 4)
	m.set(t, randn(rng, 6, 1), randn(rng, 2, 1))
	alpha := float32(0)
	o := newOptimizer(t, s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossCrossEntropy,
		StepParams: func(opt.Step) opt.StepParams {
			p := opt.DefaultStepParams()
			p.AdamW.Alpha = alpha
			return p
		}})
	bg := context.Background()
	good := newDataset(t, randn(rng, 8*3, 1), 3, randn(rng, 8*2, 1), 2)
	for name, c := range map[string]struct {
		ds   *opt.Dataset
		kind error
	}{
		"datapoint length": {newDataset(t, randn(rng, 8*2, 1), 2, randn(rng, 8*2, 1), 2), ggml.ErrShape},
		"label length":     {newDataset(t, randn(rng, 8*3, 1), 3, randn(rng, 8*3, 1), 3), ggml.ErrShape},
		"no labels":        {newDataset(t, randn(rng, 8*3, 1), 3, nil, 0), ggml.ErrShape},
		"smaller":          {newDataset(t, randn(rng, 2*3, 1), 3, randn(rng, 2*2, 1), 2), ggml.ErrInvalid},
		"not divided":      {newDataset(t, randn(rng, 6*3, 1), 3, randn(rng, 6*2, 1), 2), ggml.ErrInvalid},
	} {
		assert.ErrorIs(t, o.Epoch(bg, c.ds, opt.EpochParams{Split: -1}), c.kind, name)
	}
	shards, err := opt.NewDataset(24, 3, 2, 8)
	require.NoError(t, err)
	defer shards.Close()
	assert.ErrorIs(t, o.Epoch(bg, shards, opt.EpochParams{}), ggml.ErrInvalid, "a batch of half a shard")
	assert.ErrorIs(t, o.Epoch(bg, good, opt.EpochParams{Split: 2}), ggml.ErrInvalid, "a split inside a batch")
	assert.ErrorIs(t, o.Epoch(bg, good, opt.EpochParams{Split: 12}), ggml.ErrInvalid, "a split past the end")
	// Step parameters ggml asserts on: checked before the step.
	for _, a := range []float32{0, -1} {
		alpha = a
		assert.ErrorIs(t, o.Epoch(bg, good, opt.EpochParams{Split: -1}), ggml.ErrInvalid)
	}
	_, err = o.Fit(bg, good, opt.FitParams{Epochs: 0})
	assert.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = o.Fit(bg, good, opt.FitParams{Epochs: 1, ValSplit: 1})
	assert.ErrorIs(t, err, ggml.ErrInvalid)

	// Cancellation between batches, and an error from the callback.
	alpha = 0.01
	cctx, cancel := context.WithCancel(bg)
	cancel()
	assert.ErrorIs(t, o.Epoch(cctx, good, opt.EpochParams{Split: -1}), context.Canceled)
	stop := errors.New("stop")
	calls := 0
	err = o.Epoch(bg, good, opt.EpochParams{Split: -1, Progress: func(p opt.Progress) error {
		calls++
		assert.True(t, p.Train)
		assert.Equal(t, 1, p.Batch)
		assert.Equal(t, 2, p.Batches)
		assert.Equal(t, int64(4), p.Stats.N)
		return stop
	}})
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, calls)

	// A result takes evaluations of one batch size and kind of loss.
	r := opt.NewResult()
	defer r.Close()
	require.NoError(t, o.Evaluate(bg, good, r))
	m8 := newLinear(t, cpu, 3, 2, 8)
	s2 := newSched(t, cpu)
	o8 := newOptimizer(t, s2, opt.Params{Inputs: m8.x, Outputs: m8.y, Loss: opt.LossCrossEntropy})
	assert.ErrorIs(t, o8.Evaluate(bg, good, r), ggml.ErrInvalid)
	require.NoError(t, r.Reset())
	require.NoError(t, o8.Evaluate(bg, good, r))
	st, err := r.Stats()
	require.NoError(t, err)
	assert.Equal(t, int64(8), st.N)

	// The optimizer still trains.
	require.NoError(t, o.Epoch(bg, good, opt.EpochParams{Split: -1, ProgressBar: false}))

	// Closed handles.
	require.NoError(t, good.Close())
	assert.ErrorIs(t, o.Epoch(bg, good, opt.EpochParams{Split: -1}), ggml.ErrClosed)
	require.NoError(t, r.Close())
	_, err = r.Stats()
	assert.ErrorIs(t, err, ggml.ErrClosed)
	require.NoError(t, o.Close())
	assert.ErrorIs(t, o.Epoch(bg, good, opt.EpochParams{}), ggml.ErrClosed)
	assert.ErrorIs(t, o.Reset(true), ggml.ErrClosed)
}

// While an optimizer is open, the model's buffer and contexts stay alive:
// closed, they are freed when the optimizer is.
func TestOptimizerHoldsModel(t *testing.T) {
	cpu := backendtest.CPU(t)
	s := newSched(t, cpu)
	wctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	x := wctx.NewTensor(ggml.TypeF32, 2, 2)
	w := wctx.NewTensor(ggml.TypeF32, 2, 2).SetParam()
	buf, err := backend.AllocContextTensors(wctx, cpu)
	require.NoError(t, err)
	require.NoError(t, ggml.SetData(w, []float32{1, 2, 3, 4}))
	cctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	o, err := opt.New(s, opt.Params{Inputs: x, Outputs: cctx.MulMat(w, x), Loss: opt.LossSum, Method: opt.SGD})
	require.NoError(t, err)
	// As the Optimizer's doc says: the contexts refuse (ErrBusy), the
	// buffer closes, and is freed with the optimizer.
	assert.ErrorIs(t, cctx.Close(), ggml.ErrBusy)
	assert.ErrorIs(t, wctx.Close(), ggml.ErrBusy)
	require.NoError(t, buf.Close())
	ds, err := opt.NewDatasetFrom([]float32{1, 0, 0, 1}, 2, nil, 0)
	require.NoError(t, err)
	defer ds.Close()
	r := opt.NewResult()
	defer r.Close()
	require.NoError(t, o.Epoch(context.Background(), ds, opt.EpochParams{Split: -1, Train: r}))
	st, err := r.Stats()
	require.NoError(t, err)
	assert.Equal(t, float64(1+2+3+4), st.Loss, "the sum of w·I")
	require.NoError(t, o.Close())
	require.NoError(t, cctx.Close())
	require.NoError(t, buf.Close())
	require.NoError(t, wctx.Close())
}
