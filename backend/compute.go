package backend

/*
#include "goggml.h"

static void goggml_call_set_n_threads_c(void *fn, ggml_backend_t be, int n) {
	((ggml_backend_set_n_threads_t)fn)(be, n);
}
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// This file holds a backend's computes: its threads, the checks of what
// it is given, Compute and ComputeAsync.

// MaxThreads is the most threads a CPU backend or thread pool takes
// (GGML_MAX_N_THREADS).
const MaxThreads = 512

// SetThreads sets the number of threads the backend computes with
// (ggml_backend_set_n_threads, through the registry). Backends created by
// this package start with one per CPU. A CPU backend's own thread pool is
// replaced by one of n threads; a pool the user attached stays, and caps
// the count (Threads). ErrUnsupported when the backend has no thread
// setting.
func (b *Backend) SetThreads(n int) error {
	if err := b.enter(); err != nil { // not while a compute plans with the old count
		return err
	}
	defer b.leave()
	if n < 1 || n > MaxThreads {
		return fmt.Errorf("%w: thread count must be 1 to %d, got %d", ggml.ErrInvalid, MaxThreads, n)
	}
	fn := b.dev.procAddress("ggml_backend_set_n_threads")
	if fn == nil {
		return fmt.Errorf("%w: backend %s has no thread setting", ErrUnsupported, b.Name())
	}
	C.goggml_call_set_n_threads_c(fn, b.c, C.int(n))
	b.threads.Store(int64(n))
	runtime.KeepAlive(b)
	return b.resizeOwnPool(n) // a pool the user attached stays
}

// Threads returns the number of threads the backend computes with: its
// thread setting, capped by the size of an attached CPU thread pool. It is
// 0 for backends without a thread setting (GPUs).
func (b *Backend) Threads() int {
	if b.usable() != nil {
		return 0
	}
	n := int(b.threads.Load())
	if p := b.pool.threads.Load(); p > 0 && n > int(p) {
		n = int(p)
	}
	return n
}

// checkThreads refuses a node whose CPU kernel cannot run on the backend's
// thread count.
func (b *Backend) checkThreads(t *C.struct_ggml_tensor) error {
	limit := bridge.NodeThreadLimit(unsafe.Pointer(t))
	if limit <= 0 {
		return nil
	}
	if n := b.Threads(); int64(n) > limit {
		return fmt.Errorf("%w: ggml's CPU kernel of %s (node %q) computes its %d heads on at most %d threads and hangs or loses heads with more; this backend computes with %d (SetThreads)",
			ErrUnsupported, C.GoString(C.ggml_op_desc(t)), C.GoString(&t.name[0]), limit, limit, n)
	}
	return nil
}

// SupportsOp reports whether the backend can compute tensor t's op
// (ggml_backend_supports_op), less what the binding refuses on the device
// (on Mesa's lavapipe, a mul_mat of an im2col: see the vulkan package).
func (b *Backend) SupportsOp(t *ggml.Tensor) bool {
	if b.usable() != nil {
		return false
	}
	tc, err := tensorPtr(t)
	if err != nil {
		return false
	}
	defer runtime.KeepAlive(t)
	defer runtime.KeepAlive(b)
	return bool(C.ggml_backend_supports_op(b.c, tc)) && b.refuses(tc) == nil
}

// checkTensor tells whether the backend can read and write tensor t where
// its data lives.
func (b *Backend) checkTensor(t *C.struct_ggml_tensor) error {
	buf := t.buffer
	if t.view_src != nil {
		buf = t.view_src.buffer
	}
	if buf == nil {
		// Data in a context pool: plain host memory.
		if b.dev == nil || b.dev.Type() != DeviceCPU {
			return fmt.Errorf("%w: tensor %q lives in a context's memory, which backend %s cannot use; allocate it with AllocContextTensors",
				ErrUnsupported, C.GoString(&t.name[0]), b.Name())
		}
		return nil
	}
	if !bool(C.ggml_backend_supports_buft(b.c, C.ggml_backend_buffer_get_type(buf))) {
		return fmt.Errorf("%w: backend %s cannot use tensor %q in a %s buffer", ErrUnsupported,
			b.Name(), C.GoString(&t.name[0]), C.GoString(C.ggml_backend_buffer_name(buf)))
	}
	// A meta buffer of host devices says it is host memory, so the CPU
	// backend accepts it, but its tensors' addresses are placeholders.
	if b.meta == nil && bool(C.goggml_buffer_is_meta(buf)) {
		return fmt.Errorf("%w: backend %s cannot use tensor %q: it is in a meta buffer, which only the meta device's backend computes", ErrUnsupported,
			b.Name(), C.GoString(&t.name[0]))
	}
	return nil
}

// Compute runs graph g on the backend and waits for it
// (ggml_backend_graph_compute). Every tensor of the graph must be allocated
// where the backend can use it, and the backend must support every op.
// When ctx is cancelled, a backend with an abort hook (the CPU) stops between
// nodes and Compute returns ctx.Err(); other backends finish the graph. A ctx
// that can never be cancelled costs nothing. Cancellation acts between
// nodes only: one long node (a large mul_mat) runs to its end first, and a
// custom op runs until its function returns (it can poll
// ggml.CustomView.Cancelled). A cancel reaches the compute through a
// goroutine, a little later: a compute that ends in the meantime returns
// nil, its work done. Compute holds what the graph reads (contexts,
// buffers, allocations) until it returns: a Close of one of them in the
// meantime waits for it or returns ggml.ErrBusy (see each Close).
func (b *Backend) Compute(ctx context.Context, g *ggml.Graph) (err error) {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	if err := ctx.Err(); err != nil {
		return err
	}
	var h life.Holds
	defer h.Release()
	gp, err := b.checkGraph(g, &h)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(b)
	if err := b.ensurePool(); err != nil {
		return err
	}
	end, err := beginPool(ctx, b.pool.ref)
	if err != nil {
		return err
	}
	defer end()
	stop := bridge.View[bridge.Backend](b).Watch(ctx)
	defer stop()
	bridge.ArmCustom(bridge.View[bridge.Graph](g), unsafe.Pointer(b.abort))
	err = b.onThread(func() (err error) {
		defer life.Catch(&err)
		st := C.ggml_backend_graph_compute(b.c, gp)
		if st == C.GGML_STATUS_ABORTED && ctx.Err() != nil {
			return ctx.Err()
		}
		return statusErr(st)
	})
	if err == nil {
		err = g.CustomError()
	}
	return err
}

// ComputeAsync starts graph g on the backend and returns; Synchronize waits
// for it (ggml_backend_graph_compute_async). It checks g as Compute does.
// Use Compute for cancellation through a context. What the graph reads
// stays held until Synchronize (or Close of the backend): until then its
// context and graph report ggml.ErrBusy to Close and changes, and its
// buffers are freed only afterwards.
func (b *Backend) ComputeAsync(g *ggml.Graph) (err error) {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	gp, err := b.checkGraph(g, &b.held)
	if err != nil {
		return err
	}
	if b.abort != nil {
		atomic.StoreInt32((*int32)(unsafe.Pointer(b.abort)), 0)
	}
	if err := b.ensurePool(); err != nil {
		return err
	}
	end, err := beginPool(context.Background(), b.pool.ref) // the CPU computes before returning
	if err != nil {
		return err
	}
	defer end()
	b.pending = append(b.pending, g)
	defer runtime.KeepAlive(b)
	return b.onThread(func() (err error) {
		defer life.Catch(&err)
		return statusErr(C.goggml_graph_compute_async(b.c, gp))
	})
}

// onThread runs a compute, on a thread of its own if the backend's thread
// pool changes the computing thread (life.OnThread).
func (b *Backend) onThread(f func() error) error { return life.OnThread(b.pool.isolate, f) }

// checkGraph validates g for computing on b (see Compute) and holds in h
// what the compute reads.
func (b *Backend) checkGraph(g *ggml.Graph, h *life.Holds) (*C.struct_ggml_cgraph, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	gp, err := bridge.PrepareGraph(bridge.View[bridge.Graph](g), h, func(p unsafe.Pointer, isNode bool) error {
		t := (*C.struct_ggml_tensor)(p)
		if isNode && !bool(C.ggml_backend_supports_op(b.c, t)) {
			return fmt.Errorf("%w: backend %s cannot compute %s (node %q, %s)", ErrUnsupported,
				b.Name(), C.GoString(C.ggml_op_desc(t)), C.GoString(&t.name[0]), C.GoString(C.ggml_type_name(t._type)))
		}
		if isNode {
			if err := b.checkThreads(t); err != nil {
				return err
			}
			if err := b.refuses(t); err != nil {
				return err
			}
		}
		return b.checkTensor(t)
	})
	if err == nil && b.meta != nil {
		err = b.meta.checkPlaced(g) // what ggml's meta backend asserts
	}
	return (*C.struct_ggml_cgraph)(gp), err
}
