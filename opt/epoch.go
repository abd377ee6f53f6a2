package opt

/*
#include "goggml.h"
#include "goggml/fwd-ggml-opt.h"
#include <stdlib.h>
#include <string.h>

// goggml_opt_saved is what reserving changes in a tensor of the graph.
typedef struct {
	void *data, *extra;
	ggml_backend_buffer_t buffer;
	int32_t flags;
	struct ggml_tensor *src[GGML_MAX_SRC];
} goggml_opt_saved;

static void goggml_opt_save(goggml_opt_saved *sv, const struct ggml_tensor *t) {
	sv->data = t->data;
	sv->extra = t->extra;
	sv->buffer = t->buffer;
	sv->flags = t->flags;
	memcpy(sv->src, t->src, sizeof sv->src);
}

static void goggml_opt_restore(const goggml_opt_saved *sv, struct ggml_tensor *t) {
	t->data = sv->data;
	t->extra = sv->extra;
	t->buffer = sv->buffer;
	t->flags = sv->flags;
	memcpy(t->src, sv->src, sizeof sv->src);
}

// goggml_opt_reserve allocates the scheduler's compute buffers for g, one
// of ggml-opt's graphs (ggml_backend_sched_reserve), before ggml_opt_alloc
// allocates a copy of it: ggml-opt ignores the failure of that allocation,
// and the scheduler's allocator then crashes on the buffer it could not
// allocate. Reserving allocates g's tensors and, over several backends,
// points their sources at copies: they are put back as they were, since
// ggml-opt copies g. It returns 1 where the buffers are allocated, 0 where
// they cannot be, -1 where nothing was tried (no memory to save g).
//
// Where the reservation failed, the allocator is left with no buffer but
// with g's layout, which the next graph of that layout would be placed in
// (a crash): it is reserved again for a graph of one small node, so that it
// holds a layout and buffers that match.
static int goggml_opt_reserve(ggml_backend_sched_t s, struct ggml_cgraph *g) {
	const int nn = ggml_graph_n_nodes(g), nl = goggml_graph_n_leafs(g);
	goggml_opt_saved *sv = (goggml_opt_saved *)malloc(sizeof *sv * (size_t)(nn + nl + 1));
	if (sv == NULL) {
		return -1;
	}
	for (int i = 0; i < nn; i++) {
		goggml_opt_save(&sv[i], ggml_graph_node(g, i));
	}
	for (int i = 0; i < nl; i++) {
		goggml_opt_save(&sv[nn + i], goggml_graph_leaf(g, i));
	}
	ggml_backend_sched_reset(s);
	const bool ok = ggml_backend_sched_reserve(s, g);
	ggml_backend_sched_reset(s);
	for (int i = 0; i < nn; i++) {
		goggml_opt_restore(&sv[i], ggml_graph_node(g, i));
	}
	for (int i = 0; i < nl; i++) {
		goggml_opt_restore(&sv[nn + i], goggml_graph_leaf(g, i));
	}
	free(sv);
	if (ok) {
		return 1;
	}
	const size_t mem = ggml_graph_overhead_custom(4, false) + 4*ggml_tensor_overhead();
	void *pool = aligned_alloc(64, (mem + 63) / 64 * 64);
	if (pool != NULL) {
		struct ggml_init_params p = { (mem + 63) / 64 * 64, pool, true };
		struct ggml_context *ctx = ggml_init(p);
		struct ggml_tensor *a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
		struct ggml_cgraph *small = ggml_new_graph_custom(ctx, 4, false);
		ggml_build_forward_expand(small, ggml_scale(ctx, a, 1.0f));
		ggml_backend_sched_reserve(s, small);
		ggml_backend_sched_reset(s);
		ggml_free(ctx);
		free(pool);
	}
	return 0;
}
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

// graphNames name ggml-opt's graphs, as Optimizer.graphs lists them.
var graphNames = [3]string{"forward", "gradient", "optimizer step"}

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
// kind of loss, invalid step parameters (ErrInvalid). Compute buffers that
// the scheduler cannot allocate are ErrNoMemory, checked before ggml-opt
// allocates each of its graphs (it ignores that failure); the optimizer is
// then unusable (ErrInvalid): close it.
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
	inp, err := bridge.View[bridge.Tensor](o.inputs).Ptr()
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
		// The graph ggml_opt_alloc picks: forward to evaluate; to train,
		// the optimizer step's on the last batch of a period, else the
		// gradients'.
		g := 0
		if train {
			g = 1
			if (o.optI+1)%o.period == 0 {
				g = 2
			}
		}
		reserved := C.int(1)
		err := o.lent.Run(ctx, func() {
			if g != o.allocated {
				// ggml_opt_alloc allocates another graph: reserve it first.
				o.allocated = -1
				if reserved = C.goggml_opt_reserve(C.ggml_backend_sched_t(o.lent.Ptr), o.graphs[g]); reserved != 1 {
					return
				}
			}
			C.ggml_opt_alloc(o.c, C.bool(train))
			o.allocated = g
			ds.batch((*C.struct_ggml_tensor)(inp), labels, o.batch, ib)
			C.ggml_opt_eval(o.c, rc)
		})
		runtime.KeepAlive(o)
		runtime.KeepAlive(ds)
		if err == nil && reserved != 1 {
			// ggml-opt still takes the graph it allocated before for
			// allocated, but its memory is gone with the reservation.
			err = fmt.Errorf("%w: the scheduler cannot allocate the compute buffers of ggml-opt's %s graph for batches of %d", ggml.ErrNoMemory, graphNames[g], o.batch)
		}
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
