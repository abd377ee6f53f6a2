package opt

/*
#include "goggml.h"
#include "goggml/fwd-ggml-opt.h"
#include <stdlib.h>
#include <string.h>
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/life"
)

// Result accumulates what evaluations report (ggml_opt_result_t): the
// number of datapoints, the loss of each batch, the predictions and the
// count of correct ones (cross-entropy only).
//
// A Result is used by one goroutine at a time. Close frees it; an
// unreachable Result is freed by the garbage collector.
type Result struct {
	_       life.NoCopy
	c       C.ggml_opt_result_t
	life    *life.Life
	batch   int64 // datapoints per evaluation so far (0: none yet)
	period  int   // the optimizer's Period it was used with
	loss    Loss  // the optimizer's loss it was used with
	cleanup runtime.Cleanup
}

// NewResult returns an empty result (ggml_opt_result_init).
func NewResult() *Result {
	c := C.ggml_opt_result_init()
	r := &Result{c: c}
	r.life = life.New(nil, fmt.Errorf("%w: the result is closed", ggml.ErrClosed), func() { C.ggml_opt_result_free(c) })
	r.cleanup = runtime.AddCleanup(r, life.CloseCollected, r.life)
	life.Leaks.Opened("Result", r.life)
	return r
}

// Close frees the result (ggml_opt_result_free). It is idempotent and safe
// on nil; while an epoch adds to it, it returns ErrBusy.
func (r *Result) Close() error {
	if r == nil || r.life == nil || r.life.Closed() {
		return nil
	}
	if err := r.life.Close("the result", true); err != nil {
		return err
	}
	r.cleanup.Stop()
	life.Leaks.Closed(r.life)
	return nil
}

func (r *Result) acquire() error {
	if r == nil {
		return fmt.Errorf("%w: nil *opt.Result", ggml.ErrInvalid)
	}
	if r.life == nil {
		return fmt.Errorf("%w: a zero opt.Result: make one with opt.NewResult", ggml.ErrInvalid)
	}
	return r.life.Acquire()
}

// Reset empties the result (ggml_opt_result_reset).
func (r *Result) Reset() error {
	if err := r.acquire(); err != nil {
		return err
	}
	defer r.life.Release()
	C.ggml_opt_result_reset(r.c)
	r.batch = 0
	runtime.KeepAlive(r)
	return nil
}

// accepts checks that o's evaluations can be added to a result used
// before: the same batch size and Period (what ggml_opt_eval asserts on)
// and the same loss, which ggml does not check (it only compares whether
// the losses are per datapoint): losses of two kinds would be averaged
// together, and predictions, which only cross-entropy records, would no
// longer be those of the datapoints counted.
func (r *Result) accepts(o *Optimizer) error {
	if r.batch == 0 {
		return nil
	}
	if r.batch != o.batch || r.period != o.period || r.loss != o.loss {
		return fmt.Errorf("%w: the result holds evaluations of batches of %d (Period %d, %s loss); this optimizer's are of %d (Period %d, %s loss): Reset it or use another",
			ggml.ErrInvalid, r.batch, r.period, r.loss, o.batch, o.period, o.loss)
	}
	return nil
}

// added records that an evaluation of o added to r.
func (r *Result) added(o *Optimizer) {
	r.batch, r.period, r.loss = o.batch, o.period, o.loss
}

// Stats is a summary of a Result.
type Stats struct {
	// N is the number of datapoints evaluated.
	N int64
	// Loss is the mean loss per batch for the per-datapoint losses
	// (mean, cross-entropy, MSE), the total for LossSum; LossUnc is its
	// standard error (NaN under two batches).
	Loss, LossUnc float64
	// Accuracy is the fraction of datapoints predicted right, AccuracyUnc
	// its standard error; NaN without cross-entropy.
	Accuracy, AccuracyUnc float64
}

// Stats returns the result's counts, loss and accuracy with their
// uncertainties (ggml_opt_result_ndata, ggml_opt_result_loss,
// ggml_opt_result_accuracy). An empty result has N 0, Loss 0 and NaN
// for the rest.
func (r *Result) Stats() (Stats, error) {
	if err := r.acquire(); err != nil {
		return Stats{}, err
	}
	defer r.life.Release()
	return r.stats(), nil
}

func (r *Result) stats() Stats {
	defer runtime.KeepAlive(r)
	var n C.int64_t
	var loss, lossUnc, acc, accUnc C.double
	C.ggml_opt_result_ndata(r.c, &n)
	C.ggml_opt_result_loss(r.c, &loss, &lossUnc)
	s := Stats{N: int64(n), Loss: float64(loss), LossUnc: float64(lossUnc), Accuracy: math.NaN(), AccuracyUnc: math.NaN()}
	if n > 0 { // ggml divides by the count
		C.ggml_opt_result_accuracy(r.c, &acc, &accUnc)
		s.Accuracy, s.AccuracyUnc = float64(acc), float64(accUnc)
	}
	return s
}

// Predictions returns the predicted class (the index of the largest
// output) of each datapoint evaluated, in the order evaluated
// (ggml_opt_result_pred); empty without cross-entropy.
func (r *Result) Predictions() ([]int32, error) {
	if err := r.acquire(); err != nil {
		return nil, err
	}
	defer r.life.Release()
	defer runtime.KeepAlive(r)
	var n C.int64_t
	C.ggml_opt_result_ndata(r.c, &n)
	if n == 0 {
		return nil, nil
	}
	// ggml writes as many as it holds: none without predictions.
	out := make([]int32, n)
	buf := (*C.int32_t)(C.malloc(C.size_t(n) * 4))
	defer C.free(unsafe.Pointer(buf))
	C.memset(unsafe.Pointer(buf), 0xff, C.size_t(n)*4) // -1: no prediction
	C.ggml_opt_result_pred(r.c, buf)
	for i, v := range unsafe.Slice(buf, n) {
		out[i] = int32(v)
	}
	if n > 0 && out[0] == -1 {
		return nil, nil
	}
	return out, nil
}
