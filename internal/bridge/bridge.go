// Package bridge carries what go-ggml's packages share but users must not
// see: the lifetimes of handles (Life, Holds), typed views of the handles
// that several packages work on (views.go) with the code they share, the
// RPC connections that handles live on (link.go), and the few functions
// that only package ggml (graph.go) or package backend (the meta device,
// backend.go) can run, which they install at init. cgo types are per
// package, so C pointers cross package boundaries here as unsafe.Pointer.
package bridge

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Error kinds of more than one package, declared here once: package ggml
// exports them as ggml.ErrInvalid, ggml.ErrNotAllocated and
// ggml.ErrUnsupported (which backend exports too; ErrClosed and ErrBusy:
// life.go).
var (
	ErrInvalid      = errors.New("ggml: invalid argument")
	ErrNotAllocated = errors.New("ggml: tensor not allocated")
	ErrUnsupported  = errors.New("ggml backend: not supported")
)

// AssertPanic is the panic that go-ggml's abort callback (package ggml's
// goggmlAbort) raises on the goroutine whose C call hit a GGML_ASSERT or
// GGML_ABORT. Err is the *ggml.AssertError that Catch reports.
type AssertPanic struct{ Err error }

// Catch turns an AssertPanic into its error, stored in *errp. Use it as
// `defer bridge.Catch(&err)`; other panics propagate.
func Catch(errp *error) {
	if r := recover(); r != nil {
		p, ok := r.(AssertPanic)
		if !ok {
			panic(r)
		}
		err := p.Err
		if e := linkAbort(p.Err); e != nil {
			err = e // an RPC connection's failure (Link.OnAbort)
		}
		if *errp == nil {
			*errp = err
		} else {
			*errp = fmt.Errorf("%w (after: %v)", err, *errp)
		}
	}
}

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
