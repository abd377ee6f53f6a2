package opt

/*
#include "goggml.h"
#include "goggml/fwd-ggml-opt.h"
*/
import "C"

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// nilCtx is the context of calls that cannot be cancelled.
var nilCtx = context.Background()

// perDatapoint reports whether o's loss is a mean over datapoints, which
// results average over batches (ggml-opt's loss_per_datapoint).
func (o *Optimizer) perDatapoint() bool { return o.loss != LossSum }

// Progress is what a progress callback hears after each batch.
type Progress struct {
	// Epoch is the optimizer's epoch, from 1.
	Epoch int
	// Train is set for a training batch, clear for an evaluation batch.
	Train bool
	// Batch counts the batches done of this part (training or
	// evaluation) of the epoch, from 1, of Batches.
	Batch, Batches int
	// Stats summarizes this part of the epoch so far.
	Stats Stats
	// Elapsed is the time since this part of the epoch started.
	Elapsed time.Duration
}

// EpochParams configure one epoch.
type EpochParams struct {
	// Split is the datapoint where training ends and evaluation starts:
	// the batches before it train (forward, backward and, every Period
	// batches, an optimizer step), the rest are only evaluated (ggml's
	// idata_split). 0 evaluates everything; -1 trains on everything. It
	// must be a multiple of the batch size.
	Split int
	// Train and Eval, if not nil, accumulate the training and the
	// evaluation batches' results.
	Train, Eval *Result
	// Progress, if not nil, is called after each batch; an error from it
	// stops the epoch and is returned.
	Progress func(Progress) error
	// ProgressBar prints ggml's progress bar on stderr after each batch
	// (ggml_opt_epoch_callback_progress_bar).
	ProgressBar bool
}

// Epoch runs one pass over ds in batches (as ggml_opt_epoch does, in a Go
// loop over ggml_opt_alloc, the copy of a batch and ggml_opt_eval): the
// datapoints before p.Split train the model, the others are evaluated.
// Batches are read in the dataset's order (Dataset.Shuffle). A done ctx
// stops it between batches with ctx.Err(). What ggml would assert on is an
// error first: a datapoint or label length that is not the inputs' or
// outputs' (ErrShape), a batch size that does not divide the dataset or
// that is larger than it, a batch that is not whole shards, a split that
// is not whole batches, a result used with another batch size, Period or
// kind of loss, invalid step parameters (ErrInvalid).
func (o *Optimizer) Epoch(ctx context.Context, ds *Dataset, p EpochParams) error {
	if ctx == nil {
		ctx = nilCtx
	}
	if err := o.enter(); err != nil {
		return err
	}
	defer o.life.Leave()
	o.epoch++
	return o.runEpoch(ctx, ds, p, o.epoch)
}

// Evaluate computes the model on every batch of ds without training,
// adding to r (Epoch with Split 0: ggml_opt_epoch with idata_split 0, as
// ggml's mnist-eval calls it).
func (o *Optimizer) Evaluate(ctx context.Context, ds *Dataset, r *Result) error {
	if ctx == nil {
		ctx = nilCtx
	}
	if err := o.enter(); err != nil {
		return err
	}
	defer o.life.Leave()
	return o.runEpoch(ctx, ds, EpochParams{Eval: r}, max(o.epoch, 1))
}

// check returns why o cannot run batches of ds split at split (resolved:
// not negative), or nil.
func (o *Optimizer) check(ds *Dataset, split int64) error {
	switch {
	case ds.dataLen != o.inLen:
		return fmt.Errorf("%w: the dataset's datapoints are %d values, the inputs' columns %d", ggml.ErrShape, ds.dataLen, o.inLen)
	case o.loss.needsLabels() && ds.labelLen != o.outLen:
		return fmt.Errorf("%w: the dataset's labels are %d values, the outputs' columns %d (the %s loss compares them)", ggml.ErrShape, ds.labelLen, o.outLen, o.loss)
	case ds.n < o.batch:
		return fmt.Errorf("%w: the dataset has %d datapoints, fewer than a batch of %d", ggml.ErrInvalid, ds.n, o.batch)
	case ds.n%o.batch != 0:
		return fmt.Errorf("%w: batches of %d do not divide the dataset's %d datapoints", ggml.ErrInvalid, o.batch, ds.n)
	case o.batch%ds.shard != 0:
		return fmt.Errorf("%w: a batch of %d is not a whole number of the dataset's shards of %d", ggml.ErrInvalid, o.batch, ds.shard)
	case o.forward && split > 0:
		return fmt.Errorf("%w: the optimizer was made with Params.Forward: it cannot train (use Split 0, or Evaluate)", ggml.ErrInvalid)
	case split > ds.n || split%o.batch != 0:
		return fmt.Errorf("%w: the split at %d is not a whole number of batches of %d within the dataset's %d datapoints", ggml.ErrInvalid, split, o.batch, ds.n)
	}
	return nil
}

// runEpoch is Epoch, entered.
func (o *Optimizer) runEpoch(ctx context.Context, ds *Dataset, p EpochParams, epoch int) error {
	if err := o.usable(); err != nil {
		return err
	}
	if err := ds.acquire(); err != nil {
		return err
	}
	defer ds.life.Release()
	split := int64(p.Split)
	if split < 0 {
		split = ds.n
	}
	if err := o.check(ds, split); err != nil {
		return err
	}
	nb, ibSplit := ds.n/o.batch, split/o.batch
	// Progress reports read a result: lend one where none is given.
	for _, r := range []**Result{&p.Train, &p.Eval} {
		if *r == nil && (p.ProgressBar || p.Progress != nil) {
			tmp := NewResult()
			defer tmp.Close()
			*r = tmp
		}
		if *r != nil {
			if err := (*r).acquire(); err != nil {
				return err
			}
			defer (*r).life.Release()
			if err := (*r).accepts(o); err != nil {
				return err
			}
		}
	}
	inp, err := bridge.TensorOf(o.inputs).Ptr()
	if err != nil {
		return err
	}
	var labels *C.struct_ggml_tensor
	if o.loss.needsLabels() {
		labels = C.ggml_opt_labels(o.c)
	}
	C.ggml_time_init()
	start, t0us := time.Now(), C.ggml_time_us()
	for ib := range nb {
		train := ib < ibSplit
		if ib == ibSplit {
			start, t0us = time.Now(), C.ggml_time_us()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		r := p.Eval
		if train {
			r = p.Train
		}
		step := train && (o.optI+1)%o.period == 0
		if step {
			sp := DefaultStepParams()
			if o.pars != nil {
				sp = o.pars(Step{Epoch: epoch, Iter: o.iter})
			}
			if err := sp.check(o.method); err != nil {
				return err
			}
			o.state.pars.adamw.alpha = C.float(sp.AdamW.Alpha)
			o.state.pars.adamw.beta1 = C.float(sp.AdamW.Beta1)
			o.state.pars.adamw.beta2 = C.float(sp.AdamW.Beta2)
			o.state.pars.adamw.eps = C.float(sp.AdamW.Eps)
			o.state.pars.adamw.wd = C.float(sp.AdamW.WD)
			o.state.pars.sgd.alpha = C.float(sp.SGD.Alpha)
			o.state.pars.sgd.wd = C.float(sp.SGD.WD)
		}
		var rc C.ggml_opt_result_t
		if r != nil {
			rc = r.c
		}
		err := o.lent.Run(ctx, func() {
			C.ggml_opt_alloc(o.c, C.bool(train))
			ds.batch((*C.struct_ggml_tensor)(inp), labels, o.batch, ib)
			C.ggml_opt_eval(o.c, rc)
		})
		runtime.KeepAlive(o)
		runtime.KeepAlive(ds)
		if err != nil {
			o.failed = err
			return fmt.Errorf("opt: batch %d: %w", ib, err)
		}
		if step {
			o.iter++
		}
		o.optI = (o.optI + 1) % o.period
		if r == nil {
			continue
		}
		r.added(o)
		done, total := ib+1, ibSplit
		if !train {
			done, total = ib+1-ibSplit, nb-ibSplit
		}
		if p.ProgressBar {
			C.ggml_opt_epoch_callback_progress_bar(C.bool(train), o.c, ds.c, rc, C.int64_t(done), C.int64_t(total), t0us)
		}
		if p.Progress != nil {
			pr := Progress{Epoch: epoch, Train: train, Batch: int(done), Batches: int(total), Stats: r.stats(), Elapsed: time.Since(start)}
			if err := p.Progress(pr); err != nil {
				return err
			}
		}
	}
	return nil
}

// FitParams configure Fit.
type FitParams struct {
	// Epochs is the number of passes over the dataset, at least 1.
	Epochs int
	// ValSplit is the fraction of the dataset, at its end, that is only
	// evaluated (validation), in [0, 1).
	ValSplit float32
	// Seed draws the shuffles of the dataset (Dataset.Shuffle).
	Seed uint64
	// Progress, if not nil, is called after each batch.
	Progress func(Progress) error
	// ProgressBar prints ggml's progress bar, and a line per epoch, on
	// stderr.
	ProgressBar bool
}

// FitResult is the last epoch's training and validation results.
type FitResult struct {
	Train, Val Stats
}

// Fit trains the model on ds for p.Epochs epochs (ggml_opt_fit's loop, in
// Go: Epoch per epoch). A logical batch is the optimizer's Period times its
// batch size, and must divide the dataset; the last p.ValSplit of the
// logical batches are validation. As in ggml_opt_fit, the whole dataset is
// shuffled once, and the training part before each epoch, whenever a
// logical batch is smaller than it: with go-ggml's generator from p.Seed,
// so a fit is repeatable. A done ctx stops it between batches.
func (o *Optimizer) Fit(ctx context.Context, ds *Dataset, p FitParams) (FitResult, error) {
	if ctx == nil {
		ctx = nilCtx
	}
	if err := o.enter(); err != nil {
		return FitResult{}, err
	}
	defer o.life.Leave()
	if err := ds.acquire(); err != nil {
		return FitResult{}, err
	}
	defer ds.life.Release()
	logical := o.batch * int64(o.period)
	switch {
	case p.Epochs < 1:
		return FitResult{}, fmt.Errorf("%w: Fit: Epochs must be at least 1, got %d", ggml.ErrInvalid, p.Epochs)
	case !(p.ValSplit >= 0 && p.ValSplit < 1):
		return FitResult{}, fmt.Errorf("%w: Fit: ValSplit must be in [0, 1), got %v", ggml.ErrInvalid, p.ValSplit)
	case ds.n%logical != 0:
		return FitResult{}, fmt.Errorf("%w: Fit: logical batches of %d (Period %d × batch %d) do not divide the dataset's %d datapoints", ggml.ErrInvalid, logical, o.period, o.batch, ds.n)
	}
	if err := o.check(ds, 0); err != nil {
		return FitResult{}, fmt.Errorf("Fit: %w", err)
	}
	if o.forward {
		return FitResult{}, fmt.Errorf("%w: Fit: the optimizer was made with Params.Forward: it cannot train", ggml.ErrInvalid)
	}
	nLogical := ds.n / logical
	ibSplit := int64((1-p.ValSplit)*float32(nLogical)) * int64(o.period)
	split := ibSplit * o.batch
	rng := rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))
	if logical < ds.n {
		if err := ds.shuffle(rng, -1); err != nil {
			return FitResult{}, err
		}
	}
	train, val := NewResult(), NewResult()
	defer train.Close()
	defer val.Close()
	begin := time.Now()
	var out FitResult
	for e := 1; e <= p.Epochs; e++ {
		if logical < split {
			if err := ds.shuffle(rng, int(split)); err != nil {
				return out, err
			}
		}
		_ = train.Reset()
		_ = val.Reset()
		if p.ProgressBar {
			fmt.Fprintf(os.Stderr, "opt.Fit: epoch %04d/%04d:\n", e, p.Epochs)
		}
		o.epoch++
		if err := o.runEpoch(ctx, ds, EpochParams{Split: int(split), Train: train, Eval: val, Progress: p.Progress, ProgressBar: p.ProgressBar}, o.epoch); err != nil {
			return out, err
		}
		if p.ProgressBar {
			fmt.Fprintln(os.Stderr)
		}
		out = FitResult{Train: train.stats(), Val: val.stats()}
	}
	if p.ProgressBar {
		fmt.Fprintf(os.Stderr, "opt.Fit: training took %s\n", time.Since(begin).Round(time.Second))
	}
	return out, nil
}
