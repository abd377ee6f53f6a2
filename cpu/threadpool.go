package cpu

// #include "goggml.h"
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// Priority is the scheduling priority of a thread pool's threads (enum
// ggml_sched_priority). Above normal needs privileges; ggml warns and goes
// on without them.
type Priority int

// Priorities (GGML_SCHED_PRIO_*).
const (
	PriorityLow      Priority = -1
	PriorityNormal   Priority = 0
	PriorityMedium   Priority = 1
	PriorityHigh     Priority = 2
	PriorityRealtime Priority = 3
)

// ThreadPoolParams configure a thread pool (struct ggml_threadpool_params).
// Start from DefaultThreadPoolParams.
type ThreadPoolParams struct {
	Threads   int      // 1 to backend.MaxThreads
	Priority  Priority // of the pool's threads, and of the thread that computes
	Poll      int      // 0 (sleep at once) to 100 (spin longest) before waiting
	StrictCPU bool     // pin thread i to the i-th CPU of CPUs
	CPUs      []int    // CPU ids the threads may run on; empty: inherit
	Paused    bool     // start paused
}

// DefaultThreadPoolParams returns ggml's defaults for n threads
// (ggml_threadpool_params_default).
func DefaultThreadPoolParams(n int) ThreadPoolParams {
	p := C.ggml_threadpool_params_default(C.int(n))
	return ThreadPoolParams{Threads: int(p.n_threads), Priority: Priority(p.prio), Poll: int(p.poll), StrictCPU: bool(p.strict_cpu), Paused: bool(p.paused)}
}

func (p ThreadPoolParams) toC() (C.struct_ggml_threadpool_params, error) {
	var c C.struct_ggml_threadpool_params
	switch {
	case p.Threads < 1 || p.Threads > backend.MaxThreads:
		return c, fmt.Errorf("%w: thread pool of %d threads (1 to %d)", ggml.ErrInvalid, p.Threads, backend.MaxThreads)
	case p.Priority < PriorityLow || p.Priority > PriorityRealtime:
		return c, fmt.Errorf("%w: unknown priority %d", ggml.ErrInvalid, int(p.Priority))
	case p.Poll < 0 || p.Poll > 100:
		return c, fmt.Errorf("%w: poll %d is not 0 to 100", ggml.ErrInvalid, p.Poll)
	}
	C.ggml_threadpool_params_init(&c, C.int(p.Threads))
	c.prio = C.enum_ggml_sched_priority(p.Priority)
	c.poll = C.uint32_t(p.Poll)
	c.strict_cpu = C.bool(p.StrictCPU)
	for _, cpu := range p.CPUs {
		if cpu < 0 || cpu >= backend.MaxThreads {
			return c, fmt.Errorf("%w: CPU id %d is not 0 to %d", ggml.ErrInvalid, cpu, backend.MaxThreads-1)
		}
		c.cpumask[cpu] = true
	}
	return c, nil
}

// ThreadPool is a set of CPU threads that computes graphs for CPU backends
// attached to it (struct ggml_threadpool), instead of threads started for
// each compute. It cannot be closed while a backend or plan uses it.
//
// ggml's pool runs one graph at a time: computes on backends (and plans,
// and schedulers) that share a pool wait for each other, so a pool may be
// shared by backends used on different goroutines. A compute started from
// within a compute on the same pool (a custom op, a scheduler's eval
// callback) waits for ever, unless its context is cancelled.
type ThreadPool struct {
	_       [0]func()
	id      uint64
	threads int
	isolate bool
	running chan struct{} // holds a token while a compute runs on the pool

	mu         sync.Mutex
	c          *C.struct_ggml_threadpool
	users      int
	busy       bool // a compute runs (it holds the token)
	pauseAfter bool // Pause was called during a compute
	cleanup    runtime.Cleanup
}

// NewThreadPool starts a pool (ggml_threadpool_new). The pool is created
// paused and then resumed unless p.Paused, so that ggml does not change the
// priority or affinity of the calling goroutine's thread.
func NewThreadPool(p ThreadPoolParams) (*ThreadPool, error) {
	cp, err := p.toC()
	if err != nil {
		return nil, err
	}
	cp.paused = true
	c := C.ggml_threadpool_new(&cp)
	if c == nil {
		return nil, fmt.Errorf("%w: ggml_threadpool_new", ggml.ErrNoMemory)
	}
	if !p.Paused {
		C.ggml_threadpool_resume(c)
	}
	tp := &ThreadPool{c: c, id: life.NewPoolID(), threads: p.Threads, isolate: p.Priority != PriorityNormal || len(p.CPUs) > 0,
		running: make(chan struct{}, 1)}
	tp.cleanup = runtime.AddCleanup(tp, collectPool, c)
	life.Leaks.Opened("ThreadPool", c)
	return tp, nil
}

// Threads returns the pool's thread count (ggml_threadpool_get_n_threads is
// declared by ggml but not defined, so go-ggml keeps the count).
func (tp *ThreadPool) Threads() int {
	if tp == nil {
		return 0
	}
	return tp.threads
}

func (tp *ThreadPool) usable() error {
	if tp == nil {
		return fmt.Errorf("%w: nil *ThreadPool", ggml.ErrInvalid)
	}
	if tp.c == nil {
		return fmt.Errorf("%w: the thread pool is closed", ggml.ErrClosed)
	}
	return nil
}

// Pause makes the pool's threads sleep until Resume or the next compute
// (ggml_threadpool_pause). During a compute on the pool, the threads go to
// sleep when it ends (pausing ggml's pool in the middle of a compute can
// leave the compute waiting for ever).
func (tp *ThreadPool) Pause() error {
	if tp == nil {
		return fmt.Errorf("%w: nil *ThreadPool", ggml.ErrInvalid)
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if err := tp.usable(); err != nil {
		return err
	}
	if tp.busy {
		tp.pauseAfter = true
		return nil
	}
	C.ggml_threadpool_pause(tp.c)
	return nil
}

// Resume wakes the pool's threads (ggml_threadpool_resume). During a
// compute on the pool they are awake; Resume then cancels a Pause made
// during it.
func (tp *ThreadPool) Resume() error {
	if tp == nil {
		return fmt.Errorf("%w: nil *ThreadPool", ggml.ErrInvalid)
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if err := tp.usable(); err != nil {
		return err
	}
	tp.pauseAfter = false
	if !tp.busy {
		C.ggml_threadpool_resume(tp.c)
	}
	return nil
}

// Close stops and frees the pool (ggml_threadpool_free). It fails while a
// backend or plan uses the pool; it is idempotent and safe on nil.
func (tp *ThreadPool) Close() error {
	if tp == nil {
		return nil
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.c == nil {
		return nil
	}
	if tp.users > 0 {
		return fmt.Errorf("%w: the thread pool is used by %d backend(s) or plan(s); detach them first (SetThreadPool(be, nil))", ggml.ErrInvalid, tp.users)
	}
	tp.cleanup.Stop()
	life.Leaks.Closed(tp.c)
	freePool(tp.c)
	tp.c = nil
	return nil
}

// poolsFreed counts the pools freed, by Close or by a cleanup (for tests).
var poolsFreed atomic.Int64

// freePool stops the pool's threads, waiting for each to end, and frees it
// (ggml_threadpool_free).
func freePool(c *C.struct_ggml_threadpool) {
	C.ggml_threadpool_free(c)
	poolsFreed.Add(1)
}

// Dropped pools are freed off the cleanup goroutine (runtime cleanups run
// one at a time, and freeing a pool waits for its threads to end), by at
// most maxFreers goroutines at once.
const maxFreers = 8

var freeQueue struct {
	mu      sync.Mutex
	pools   []*C.struct_ggml_threadpool
	freeing int // goroutines draining pools
}

// freeLater is the cleanup of a dropped pool. It pauses the pool at once
// (ggml_threadpool_pause: its threads stop polling for work, which they do
// by spinning, and sleep) and hands the free to a freeing goroutine.
// Without the pause, a few hundred dropped pools kept every CPU busy
// spinning, and each free waited for a spinning thread to be scheduled.
// collectPool is the cleanup of a pool never closed.
func collectPool(c *C.struct_ggml_threadpool) {
	life.Leaks.Collected(c)
	freeLater(c)
}

func freeLater(c *C.struct_ggml_threadpool) {
	C.ggml_threadpool_pause(c)
	q := &freeQueue
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pools = append(q.pools, c)
	if q.freeing < maxFreers {
		q.freeing++
		go drainFrees()
	}
}

func drainFrees() {
	q := &freeQueue
	for {
		q.mu.Lock()
		n := len(q.pools)
		if n == 0 {
			q.freeing--
			q.mu.Unlock()
			return
		}
		c := q.pools[n-1]
		q.pools[n-1] = nil
		q.pools = q.pools[:n-1]
		q.mu.Unlock()
		freePool(c)
	}
}

// poolRef lets package backend count the pool's users (life.PoolRef).
type poolRef struct{ tp *ThreadPool }

func (r poolRef) Acquire() error {
	r.tp.mu.Lock()
	defer r.tp.mu.Unlock()
	if err := r.tp.usable(); err != nil {
		return err
	}
	r.tp.users++
	return nil
}

func (r poolRef) Threads() int { return r.tp.threads }

func (r poolRef) ID() uint64 { return r.tp.id }

func (r poolRef) Begin(ctx context.Context) error {
	if done := ctx.Done(); done == nil {
		r.tp.running <- struct{}{}
	} else {
		select {
		case r.tp.running <- struct{}{}:
		case <-done:
			return ctx.Err()
		}
	}
	r.tp.mu.Lock()
	r.tp.busy = true
	r.tp.mu.Unlock()
	return nil
}

func (r poolRef) End() {
	r.tp.mu.Lock()
	r.tp.busy = false
	if r.tp.pauseAfter {
		r.tp.pauseAfter = false
		C.ggml_threadpool_pause(r.tp.c) // a user holds the pool: it is open
	}
	r.tp.mu.Unlock()
	<-r.tp.running
}

func (r poolRef) Release() {
	r.tp.mu.Lock()
	r.tp.users--
	r.tp.mu.Unlock()
}

// SetThreadPool makes CPU backend be compute on pool, or on threads started
// per compute when pool is nil (ggml_backend_cpu_set_threadpool). The
// backend keeps the pool alive and in use until it is detached or the
// backend is closed; plans created meanwhile keep it in use too. ggml pauses
// a pool that is replaced. A CPU backend computes on a pool of its own (see
// package backend), which this replaces for good: after SetThreadPool(be,
// nil) the backend starts threads per compute, whatever SetThreads says.
// ErrBusy while the backend computes (from a custom op or eval callback of
// that compute, too).
func SetThreadPool(be *backend.Backend, pool *ThreadPool) error {
	if pool == nil {
		return bridge.AttachThreadPool(bridge.View[bridge.Backend](be), nil, nil, false)
	}
	if err := pool.usable(); err != nil {
		return err
	}
	return bridge.AttachThreadPool(bridge.View[bridge.Backend](be), unsafe.Pointer(pool.c), poolRef{pool}, pool.isolate)
}

// BufferFromHostMemory makes a CPU buffer over size bytes of m, starting
// offset bytes in, a multiple of 32 (ggml_backend_cpu_buffer_from_ptr). The
// buffer keeps m alive and in use; tensors in it keep the buffer alive.
func BufferFromHostMemory(m *backend.HostMemory, offset, size uint64) (*backend.Buffer, error) {
	return backend.CPUBufferFromHostMemory(m, offset, size)
}
