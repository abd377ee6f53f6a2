package backend

/*
#include "goggml.h"

// goggml_own_pool starts the default pool of a CPU backend: n threads at
// ggml's defaults, but polling 1 (after a compute they spin for new work
// for a few milliseconds, not ggml's default of about half a second, then
// sleep), created paused and then resumed so that ggml leaves the calling
// thread's priority and affinity alone.
static struct ggml_threadpool *goggml_own_pool(int n) {
	struct ggml_threadpool_params p = ggml_threadpool_params_default(n);
	p.poll = 1;
	p.paused = true;
	struct ggml_threadpool *tp = ggml_threadpool_new(&p);
	if (tp != NULL) {
		ggml_threadpool_resume(tp);
	}
	return tp;
}
*/
import "C"

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/life"
)

// ownPool is the thread pool that a CPU backend made by this package
// computes on unless the user attaches one of their own
// (cpu.SetThreadPool): started by the backend's first compute or plan
// (Backend.ensurePool), its threads stay from compute to compute.
// Without a pool ggml starts and joins the CPU's worker threads in every
// compute, which made generating a token of the small Llama example
// ~15-25 % slower and a 0.5 ms matrix-vector product 1.7x slower. After
// a compute its threads poll for the next one for a few milliseconds
// (poll 1: 131072 pause instructions), then sleep, so an idle program
// burns no CPU. With poll 0 they slept at once, and the few microseconds
// the binding spends between two computes were enough for the next one to
// wait for a woken thread: a 0.5-2 ms matrix-vector product took 1.03-1.06
// of its time driven from C; with poll 1, 0.97-1.02.
//
// The backend and the plans made on it count as its users; the last one
// to let go frees it (ggml_threadpool_free). Only its backend computes on
// it, so Begin and End only order that backend's computes and plans.
type ownPool struct {
	c       *C.struct_ggml_threadpool
	id      uint64
	threads int
	running chan struct{} // holds a token while a compute runs on the pool

	mu    sync.Mutex
	users int
}

// newOwnPool starts a pool of n threads. ggml asserts when the system
// gives it no more threads: that comes back as an error.
func newOwnPool(n int) (p *ownPool, err error) {
	defer life.Catch(&err)
	c := C.goggml_own_pool(C.int(n))
	if c == nil {
		return nil, fmt.Errorf("%w: ggml could not start a thread pool of %d threads", ggml.ErrNoMemory, n)
	}
	return &ownPool{c: c, id: life.NewPoolID(), threads: n, running: make(chan struct{}, 1)}, nil
}

// Acquire counts a user (the backend, a plan).
func (p *ownPool) Acquire() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return fmt.Errorf("%w: the backend's thread pool was freed", ggml.ErrClosed)
	}
	p.users++
	return nil
}

// Release ends a use; the last one frees the pool.
func (p *ownPool) Release() {
	p.mu.Lock()
	p.users--
	last := p.users == 0
	p.mu.Unlock()
	if last {
		p.free()
	}
}

func (p *ownPool) free() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c != nil {
		C.ggml_threadpool_free(p.c)
		p.c = nil
	}
}

// Threads returns the pool's thread count.
func (p *ownPool) Threads() int { return p.threads }

// ID returns the pool's number, unique among all pools.
func (p *ownPool) ID() uint64 { return p.id }

// Begin waits until no compute runs on the pool, then marks one running.
func (p *ownPool) Begin(ctx context.Context) error {
	if done := ctx.Done(); done == nil {
		p.running <- struct{}{}
	} else {
		select {
		case p.running <- struct{}{}:
		case <-done:
			return ctx.Err()
		}
	}
	return nil
}

// End marks the compute that Begin started over.
func (p *ownPool) End() { <-p.running }
