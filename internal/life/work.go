package life

import (
	"context"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// PoolRef is a CPU thread pool attached to a backend or captured by a plan:
// it cannot be freed while it has users.
type PoolRef interface {
	Acquire() error
	Release()
	Threads() int // the pool's thread count
	ID() uint64   // unique to the pool, for the order of BeginPools
	// Begin waits until no compute runs on the pool (ggml's pool runs one
	// graph at a time; two at once deadlock or mix their work), then marks
	// one running, or returns ctx.Err() if ctx is done first. End marks it
	// over. Whatever calls into C with the pool (a compute, a plan compute,
	// ggml_backend_cpu_set_threadpool, which pauses the pool it replaces)
	// runs between them.
	Begin(ctx context.Context) error
	End()
}

// OnThread runs f, a compute. When isolate is set (the backend's thread
// pool changes the priority or affinity of the computing thread: ggml
// applies them to the caller, which computes too), it runs on an OS thread
// of its own that is discarded afterwards, so no goroutine inherits them.
func OnThread(isolate bool, f func() error) error {
	if !isolate {
		return f()
	}
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		err = f()
	}()
	<-done
	return err
}

// SetOnDone clears the int32 flag at p (C memory that C reads) and, if ctx
// can be cancelled, arranges for it to be set to 1 when ctx is done. The
// returned stop must be called when the work that reads the flag is over:
// after it returns, nothing touches the flag any more. This is how a
// context cancels C code without a Go call per step. It starts no
// goroutine (context.AfterFunc): a goroutine per compute, and the wait for
// it to end, cost tens of microseconds per compute on a busy machine.
func SetOnDone(ctx context.Context, p unsafe.Pointer) (stop func()) {
	flag := (*int32)(p)
	atomic.StoreInt32(flag, 0)
	if ctx.Done() == nil {
		return func() {}
	}
	set := make(chan struct{})
	unregister := context.AfterFunc(ctx, func() {
		atomic.StoreInt32(flag, 1)
		close(set)
	})
	return func() {
		if !unregister() {
			<-set // the setter started: wait until it is done with the flag
		}
	}
}

// poolIDs numbers the CPU thread pools of package cpu and package
// backend's own, for the order in which a compute begins them.
var poolIDs atomic.Uint64

// NewPoolID returns a number no other pool has.
func NewPoolID() uint64 { return poolIDs.Add(1) }
