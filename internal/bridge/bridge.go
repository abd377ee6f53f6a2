// Package bridge carries what go-ggml's packages share but users must not
// see. cgo types are per package, so C pointers cross package boundaries here
// as unsafe.Pointer, through functions that package ggml installs at init.
package bridge

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// AssertError is a GGML_ASSERT (or GGML_ABORT) raised in ggml on the calling
// goroutine's thread, caught by go-ggml's abort callback.
type AssertError struct {
	// Message is ggml's own text: "file:line: condition".
	Message string
}

// Error returns ggml's message with a prefix that says it came from C.
func (e *AssertError) Error() string { return "ggml: assertion failed in C: " + e.Message }

// Catch turns a panic carrying an *AssertError into an error stored in
// *errp. Use it as `defer bridge.Catch(&err)`; other panics propagate.
func Catch(errp *error) {
	if r := recover(); r != nil {
		ae, ok := r.(*AssertError)
		if !ok {
			panic(r)
		}
		var err error = ae
		if h := OnAssert; h != nil {
			if e := h(ae); e != nil {
				err = e
			}
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

// BeginPools calls Begin on the distinct thread pools of the CPU backends
// bes (*backend.Backend), in one global order so that two callers never
// wait on each other's pools; end calls End on them. isolate says a pool
// changes the priority or affinity of the thread that computes. Installed
// by package backend.
var BeginPools func(ctx context.Context, bes []any) (end func(), isolate bool, err error)

// AttachThreadPool makes CPU backend be compute on thread pool pool (nil to
// detach); isolate says the pool changes the priority or affinity of the
// thread that computes, so computes must run on a thread of their own.
// Installed by package backend.
var AttachThreadPool func(be any, pool unsafe.Pointer, ref PoolRef, isolate bool) error

// Installed by package backend's init.
var (
	// BackendPtr returns the ggml_backend_t of an open *backend.Backend.
	BackendPtr func(be any) (unsafe.Pointer, error)
	// BufferTypePtr returns the ggml_backend_buffer_type_t of a
	// *backend.BufferType.
	BufferTypePtr func(bt any) (unsafe.Pointer, error)
	// WrapBufferType returns the *backend.BufferType of a
	// ggml_backend_buffer_type_t a GPU package got from C.
	WrapBufferType func(p unsafe.Pointer) any
	// HostMemoryPtr returns the address and size of a *backend.HostMemory.
	HostMemoryPtr func(m any) (unsafe.Pointer, uint64, error)
	// RegisterBackend adds a backend registry entry (ggml_backend_reg_t)
	// that a GPU package linked in, under the registry's lock.
	RegisterBackend func(reg unsafe.Pointer)
	// WithRegistry runs f under the registry's write lock (package rpc
	// rewrites the RPC entries in it).
	WithRegistry func(f func())
	// WrapDevice returns the *backend.Device of a ggml_backend_dev_t.
	WrapDevice func(p unsafe.Pointer) any
	// DevicePtr returns the ggml_backend_dev_t of a usable
	// *backend.Device.
	DevicePtr func(d any) (unsafe.Pointer, error)
	// AcquireBackend keeps backend be's C object alive, even past its
	// Close, until release is called (a scheduler frees after its backends).
	AcquireBackend func(be any) (release func(), err error)
	// EnterBackend starts exclusive work on backend be (a scheduler's
	// compute): ErrBusy while another compute runs on it.
	EnterBackend func(be any) (leave func(), err error)
	// BackendLinks returns the RPC connections backend be computes over.
	BackendLinks func(be any) []*Link
	// ReadMeta holds, until the returned function is called, the lock
	// that serializes the creation of meta devices against C code that
	// reads ggml's maps of them (a scheduler's creation).
	ReadMeta func() (done func())
	// MetaTransfer checks a read (write false) or write of size bytes at
	// offset of tensor t (a *C.struct_ggml_tensor) against what ggml's
	// meta buffer asserts; nil for a tensor outside meta buffers.
	MetaTransfer func(t unsafe.Pointer, offset, size uint64, write bool) error
	// MetaGraph checks graph g (a *ggml.Graph) for the meta backends among
	// backends (*backend.Backend), before its allocation (placed false) or
	// after it, before a compute.
	MetaGraph func(backends []any, g any, placed bool) error
	// Watch arms backend be's abort flag for ctx (see Backend.Compute);
	// the returned stop must be called when the compute is over.
	Watch func(be any, ctx context.Context) (stop func())
)

// Installed by package ggml's init; the any arguments are that package's
// handle types (*ggml.Tensor, *ggml.Context, *ggml.Graph).
var (
	// TensorPtr returns the *C.struct_ggml_tensor of a usable tensor.
	TensorPtr func(t any) (unsafe.Pointer, error)
	// TensorStorage returns the *C.struct_ggml_tensor of a tensor whose
	// data can be read and written now (allocated, its memory alive), and
	// holds that memory in h: release h when done with the data.
	TensorStorage func(t any, h *Holds) (unsafe.Pointer, error)
	// StorageErr returns why tensor t's data cannot be used now (not
	// allocated, its memory gone), or nil; it holds nothing.
	StorageErr func(t any) error
	// ContextPtr returns the *C.struct_ggml_context of an open context
	// whose sticky error is nil.
	ContextPtr func(c any) (unsafe.Pointer, error)
	// SetLease gives tensor t (not a view) the lifetime l of the memory it
	// was placed in (a buffer, or one allocation of a scheduler or graph
	// allocator), and keeps owner (the handle whose cleanup ends l) alive
	// as long as t.
	SetLease func(t any, l *Life, owner any)
	// LeaseOf returns tensor t's lease, or nil.
	LeaseOf func(t any) *Life
	// ResetStorage forgets where tensor t's data lives (data, buffer,
	// lease), so an allocator can place it anew.
	ResetStorage func(t any)
	// GraphPtr returns the *C.struct_ggml_cgraph of a usable graph.
	GraphPtr func(g any) (unsafe.Pointer, error)
	// GraphTensors returns a graph's leafs then its nodes (*ggml.Tensor),
	// with their C pointers.
	GraphTensors func(g any) ([]any, []unsafe.Pointer)
	// AdoptGraph wraps a graph ggml built in contexts it owns
	// (ggml_backend_graph_copy) as a *ggml.Graph whose allocated tensors
	// carry lease l; release marks the handles closed before ggml frees them.
	AdoptGraph func(ctxs []unsafe.Pointer, graph unsafe.Pointer, l *Life, owner any) (g any, release func())
	// GraphSources reports whether every node's C sources are still the
	// tensors Go knows (a scheduler redirects them to its copies when it
	// splits a graph across backends).
	GraphSources func(g any) bool
	// ClaimContext starts the rewriting of where tensors live, in context
	// v (a *ggml.Context) or a graph's context (a *ggml.Graph): ErrBusy
	// while a compute or transfer uses it, and none starts until release.
	ClaimContext func(v any) (release func(), err error)
	// GraphVersion changes whenever graph g's node list changes.
	GraphVersion func(g any) uint64
	// RestoreSources points every node's C sources back at the tensors Go
	// knows, undoing a scheduler's redirection.
	RestoreSources func(g any)
	// GraphStorage checks that every tensor of graph g is allocated and its
	// memory alive (GraphForCompute without the visit and source checks),
	// and holds what the compute reads: release h when it is over.
	GraphStorage func(g any, h *Holds) error
	// GraphForCompute checks that graph g can be computed (context open, no
	// sticky error, every tensor allocated and its memory alive), calls
	// visit for each leaf and then each node (isNode set), and returns the
	// *C.struct_ggml_cgraph. It adds to h the lifetimes of what the compute
	// reads (contexts, buffers, allocations, custom ops' contexts), acquired
	// (h may be nil for a check alone); the caller releases h when the
	// compute is over, also on error.
	GraphForCompute func(g any, h *Holds, visit func(t unsafe.Pointer, isNode bool) error) (unsafe.Pointer, error)
	// NodeThreadLimit returns the most CPU threads ggml's kernel computes
	// node t correctly with, or 0 for no limit.
	NodeThreadLimit func(t unsafe.Pointer) int64
	// ArmCustom gives the custom ops of graph g the cancel flag (an int32
	// in C memory) of the compute about to run them.
	ArmCustom func(g any, cancel unsafe.Pointer)
	// RefuseNode returns why node t (a *C.struct_ggml_tensor) must not be
	// computed on the backend be (a ggml_backend_t) although ggml supports
	// it there, or nil (set by package backend).
	RefuseNode func(be, t unsafe.Pointer) error
	// GraphDone reports, after a compute of g, the first panic of a custom
	// op's Go function, and clears it.
	GraphDone func(g any) error
	// CheckIndices range-checks the indices that g's nodes read (see
	// GraphForCompute) on the graph as built, whatever a scheduler's split
	// redirected its sources to.
	CheckIndices func(g any, h *Holds) error
	// WriteCheck reports ErrBusy while a compute reads tensor t as
	// indices (checked before it started: a write now would bypass that
	// check); release when the write is over.
	WriteCheck func(t any) (release func(), err error)
)

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
// can be cancelled, starts a goroutine that sets it to 1 when ctx is done.
// The returned stop must be called when the work that reads the flag is
// over: it waits for the goroutine, which then no longer touches the flag.
// This is how a context cancels C code without a Go call per step.
func SetOnDone(ctx context.Context, p unsafe.Pointer) (stop func()) {
	flag := (*int32)(p)
	atomic.StoreInt32(flag, 0)
	done := ctx.Done()
	if done == nil {
		return func() {}
	}
	finished, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-done:
			atomic.StoreInt32(flag, 1)
		case <-finished:
		}
	}()
	return func() {
		close(finished)
		<-exited
	}
}
