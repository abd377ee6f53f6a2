package backend

/*
#include "goggml.h"
*/
import "C"

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// The CPU thread pool a backend computes on: its own (pool.go), started
// by its first compute or plan, or one the user attached (package cpu's
// SetThreadPool, through bridge.AttachThreadPool). Package sched begins
// the pools of its backends around a compute through bridge.BeginPools.

func init() {
	bridge.AttachThreadPool = func(v *bridge.Backend, pool unsafe.Pointer, ref life.PoolRef, isolate bool) error {
		if v == nil {
			return fmt.Errorf("%w: nil *Backend", ggml.ErrInvalid)
		}
		return bridge.Handle[Backend](v).attachThreadPool(pool, ref, isolate)
	}
	bridge.BeginPools = func(ctx context.Context, vs []*bridge.Backend) (func(), bool, error) {
		bes := make([]*Backend, len(vs))
		for i, v := range vs {
			if v != nil {
				bes[i] = bridge.Handle[Backend](v)
			}
		}
		return beginPools(ctx, bes)
	}
}

// poolSlot holds the CPU thread pool a backend computes on, where the
// backend's cleanup can see it.
type poolSlot struct {
	ref     life.PoolRef
	isolate bool
	threads atomic.Int64 // the pool's size; 0: no pool
	// ownThreads: without a pool, the backend starts one of its own of
	// this many threads when it needs one (ensurePool); 0: never (the
	// user attached one, or detached for good).
	ownThreads int
}

// release drops the pool.
func (s *poolSlot) release() {
	if s.ref != nil {
		s.ref.Release()
		s.ref, s.isolate = nil, false
		s.threads.Store(0)
	}
}

// attachThreadPool makes CPU backend b compute on thread pool pool (a
// ggml_threadpool_t, nil to detach) (ggml_backend_cpu_set_threadpool); ref
// counts the pool's users, isolate says the pool changes the priority or
// affinity of the thread that computes, so computes must run on a thread
// of their own. It is the user's choice (cpu.SetThreadPool): b no longer
// starts a pool of its own. ErrBusy while b computes (a custom op or eval
// callback of b's own compute, or another goroutine).
func (b *Backend) attachThreadPool(pool unsafe.Pointer, ref life.PoolRef, isolate bool) error {
	v := bridge.View[bridge.Backend](b)
	if err := v.Enter(); err != nil {
		return err
	}
	defer v.Leave()
	if err := b.attachPool(pool, ref, isolate); err != nil {
		return err
	}
	b.pool.ownThreads = 0
	return nil
}

// attachPool is attachThreadPool for a caller that holds b (Enter).
func (b *Backend) attachPool(pool unsafe.Pointer, ref life.PoolRef, isolate bool) error {
	if err := bridge.View[bridge.Backend](b).Usable(); err != nil {
		return err
	}
	defer runtime.KeepAlive(b)
	if !bool(C.ggml_backend_is_cpu(b.c)) {
		return fmt.Errorf("%w: thread pools are for the CPU backend, not %s", ErrUnsupported, b.Name())
	}
	// A CPU backend of a module loaded at run time is one too, but its
	// structs are that module's ggml's, which this one's
	// ggml_backend_cpu_set_threadpool may not know.
	if C.ggml_backend_dev_backend_reg(C.ggml_backend_get_device(b.c)) != C.ggml_backend_cpu_reg() {
		return fmt.Errorf("%w: thread pools attach to the linked ggml's CPU backend, not to one of a module loaded at run time (%s)", ErrUnsupported, b.Name())
	}
	if ref != nil {
		if err := ref.Acquire(); err != nil {
			return err
		}
	}
	// ggml pauses the pool it replaces: not while another backend
	// computes on it.
	end := func() {}
	if old := b.pool.ref; old != nil && old != ref {
		end, _ = beginPool(context.Background(), old)
	}
	C.ggml_backend_cpu_set_threadpool(b.c, (C.ggml_threadpool_t)(pool))
	end()
	b.pool.release()
	b.pool.ref, b.pool.isolate = ref, isolate
	if ref != nil {
		b.pool.threads.Store(int64(ref.Threads()))
	}
	return nil
}

// resizeOwnPool makes the pool b starts of its own n threads, if b wants
// one: a pool of its own already started, of another size, is let go
// (freed when no plan holds it), and the next compute starts the new one.
// The caller holds b (Enter).
func (b *Backend) resizeOwnPool(n int) error {
	if b.pool.ownThreads == 0 {
		return nil // the user's pool, or none, stays
	}
	b.pool.ownThreads = n
	if b.pool.ref != nil && b.pool.ref.Threads() != n {
		return b.attachPool(nil, nil, false)
	}
	return nil
}

// ensurePool starts b's own thread pool if b wants one and has no pool:
// before a compute or a plan, while holding b (Enter). The pool is made
// then, not at b's birth, so that a backend that never computes holds no
// threads.
func (b *Backend) ensurePool() error {
	n := b.pool.ownThreads
	if n == 0 || b.pool.ref != nil {
		return nil
	}
	p, err := newOwnPool(n)
	if err != nil {
		return err
	}
	if err := b.attachPool(unsafe.Pointer(p.c), p, false); err != nil {
		// Not attached: no user holds it. A use taken and given back
		// frees it (the last user of an own pool frees it).
		if p.Acquire() == nil {
			p.Release()
		}
		return err
	}
	return nil
}

// beginPool waits until pool ref, if any, runs no other compute and marks
// this one running (ggml's pool runs one graph at a time); end marks it
// over.
func beginPool(ctx context.Context, ref life.PoolRef) (end func(), err error) {
	if ref == nil {
		return func() {}, nil
	}
	if err := ref.Begin(ctx); err != nil {
		return nil, err
	}
	return ref.End, nil
}

// beginPools calls beginPool on the distinct thread pools of the CPU
// backends bes, in one global order so that two callers never wait on
// each other's pools; end ends them. isolate says a pool changes the
// priority or affinity of the thread that computes. The caller holds bes
// (Enter): the pools they want of their own are started first.
func beginPools(ctx context.Context, bes []*Backend) (end func(), isolate bool, err error) {
	var refs []life.PoolRef
	for _, b := range bes {
		if b != nil {
			if err := b.ensurePool(); err != nil {
				return nil, false, err
			}
		}
		if b == nil || b.pool.ref == nil || slices.Contains(refs, b.pool.ref) {
			continue
		}
		refs = append(refs, b.pool.ref)
		isolate = isolate || b.pool.isolate
	}
	slices.SortFunc(refs, func(a, b life.PoolRef) int { return cmp.Compare(a.ID(), b.ID()) })
	for i, r := range refs {
		if err := r.Begin(ctx); err != nil {
			for _, r := range refs[:i] {
				r.End()
			}
			return nil, false, err
		}
	}
	return func() {
		for _, r := range refs {
			r.End()
		}
	}, isolate, nil
}
