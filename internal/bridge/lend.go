//go:build cgo

package bridge

import (
	"context"
	"unsafe"
)

// Lent is a scheduler that package sched lends to package opt for as long
// as an optimization context uses it: ggml-opt resets it, allocates its
// own graphs on it and computes them, all in C. While lent, the
// scheduler's own methods are ErrBusy and it cannot be closed.
type Lent struct {
	// Ptr is the ggml_backend_sched_t.
	Ptr unsafe.Pointer
	// GraphSize is the most nodes plus leafs of a graph it takes.
	GraphSize int
	// Backends are its backends, in priority order.
	Backends []*Backend
	// Run runs f, a C call that computes on the scheduler
	// (ggml_opt_eval), as the scheduler's own computes run: its backends
	// entered (ErrBusy while another compute uses one), their CPU thread
	// pools begun, an assert in f returned as an error.
	Run func(ctx context.Context, f func()) error
	// GiveBack resets the scheduler and ends the loan. It is idempotent,
	// and safe from a cleanup.
	GiveBack func()
}

// LendScheduler lends s, a *sched.Scheduler, as a Lent: ErrBusy while it
// computes or is lent already, ErrClosed once closed. What it placed
// before is unplaced (as by its Reset). Package sched installs it at init.
var LendScheduler func(s any) (*Lent, error)
