package sched

/*
#include "goggml.h"
typedef struct {
	int cancel;
	uintptr_t handle;
} goggml_sched_state;
void goggml_sched_install_eval(ggml_backend_sched_t s, goggml_sched_state *st);
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// This file holds a scheduler's computes: the checks made before each one
// (thread limits, refusals), Compute and ComputeAsync, cancellation, and
// the eval callback.

// threadLimit is a node whose CPU kernel computes correctly on at most
// limit threads, and the backend (index) the scheduler gave it.
type threadLimit struct {
	node  *C.struct_ggml_tensor
	limit int64
	be    int
}

// threadLimits lists the nodes of g, as allocated, whose kernel limits the
// threads of the backend they were given.
func (s *Scheduler) threadLimits(g *ggml.Graph) []threadLimit {
	var out []threadLimit
	for _, t := range bridge.View[bridge.Graph](g).Tensors() {
		p := t.C()
		limit := bridge.NodeThreadLimit(p)
		if limit <= 0 {
			continue
		}
		tc := (*C.struct_ggml_tensor)(p)
		be := unsafe.Pointer(C.ggml_backend_sched_get_tensor_backend(s.c, tc))
		for i, q := range s.ptrs {
			if q == be {
				out = append(out, threadLimit{node: tc, limit: limit, be: i})
			}
		}
	}
	return out
}

// refusal returns why a node of g, as allocated, must not be computed on
// the backend it was given although ggml supports it there (on Mesa's
// lavapipe, a mul_mat of an im2col: see the vulkan package), or nil.
func (s *Scheduler) refusal(g *ggml.Graph) error {
	for _, t := range bridge.View[bridge.Graph](g).Tensors() {
		p := t.C()
		be := unsafe.Pointer(C.ggml_backend_sched_get_tensor_backend(s.c, (*C.struct_ggml_tensor)(p)))
		for i, q := range s.ptrs {
			if q == be {
				if err := s.views[i].Refusal(p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkThreads refuses to compute a node on a CPU backend with more
// threads than its kernel computes correctly with (it would hang).
func (s *Scheduler) checkThreads() error {
	for _, l := range s.limited {
		if n := s.backends[l.be].Threads(); int64(n) > l.limit {
			return fmt.Errorf("%w: ggml's CPU kernel of %s (node %q) computes its %d heads on at most %d threads and hangs or loses heads with more; backend %d computes with %d (SetThreads)",
				backend.ErrUnsupported, C.GoString(C.ggml_op_desc(l.node)), C.GoString(&l.node.name[0]), l.limit, l.limit, l.be, n)
		}
	}
	return nil
}

// Compute computes graph g over the scheduler's backends and waits
// (ggml_backend_sched_graph_compute), allocating it first unless it is the
// graph allocated now. A cancelled ctx stops the compute between nodes:
// CPU backends through their abort flag, others through the eval callback;
// Compute then returns ctx.Err(). One long node runs to its end first, and
// a custom op until its function returns (it can poll
// ggml.CustomView.Cancelled).
func (s *Scheduler) Compute(ctx context.Context, g *ggml.Graph) error {
	return s.compute(ctx, g, true)
}

// ComputeAsync starts computing g as Compute does and returns; Synchronize
// waits (ggml_backend_sched_graph_compute_async).
func (s *Scheduler) ComputeAsync(g *ggml.Graph) error {
	return s.compute(context.Background(), g, false)
}

func (s *Scheduler) compute(ctx context.Context, g *ggml.Graph, wait bool) (err error) {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return err
	}
	// The backends compute one graph at a time: a compute of their own,
	// or of another scheduler, now is ErrBusy.
	for i, be := range s.views {
		if err := be.Enter(); err != nil {
			return fmt.Errorf("scheduler backend %d: %w", i, err)
		}
		defer be.Leave()
	}
	if s.graph == nil {
		if err := s.allocGraph(g); err != nil {
			return err
		}
	} else if s.graph != g {
		return fmt.Errorf("%w: the scheduler holds another graph; Reset it first", ggml.ErrInvalid)
	} else if bridge.View[bridge.Graph](g).Version() != s.version {
		return fmt.Errorf("%w: the graph changed since it was allocated (ggml would compute the old splits); Reset and allocate it again", ggml.ErrInvalid)
	}
	// The allocation must still be whole: inputs from other buffers alive,
	// and kept alive until the compute is over.
	var h life.Holds
	defer h.Release()
	gv := bridge.View[bridge.Graph](g)
	if err := gv.Hold(&h); err != nil {
		return err
	}
	// The indices that nodes read must be in range: ggml asserts, on a
	// worker thread, which ends the process.
	if err := bridge.CheckIndices(gv, &h); err != nil {
		return err
	}
	p, err := gv.Ptr()
	if err != nil {
		return err
	}
	gp := (*C.struct_ggml_cgraph)(p)
	if err := s.checkThreads(); err != nil {
		return err
	}
	if s.refused != nil {
		return s.refused
	}
	if err := bridge.MetaGraph(s.views, bridge.View[bridge.Graph](g), true); err != nil {
		return err
	}
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(s)
	stop := s.watch(ctx)
	defer stop()
	bridge.ArmCustom(gv, unsafe.Pointer(&s.state.cancel))
	// The Go callback is reachable from C through a handle only during the
	// compute: a handle kept between computes would keep the scheduler (and
	// all the callback captures) reachable for ever.
	if s.eval.fn != nil {
		h := cgo.NewHandle(s.eval)
		s.state.handle = C.uintptr_t(h)
		defer func() {
			s.state.handle = 0
			h.Delete()
		}()
	}
	// The eval callback costs a synchronize per split: install it only for
	// a Go callback or a context that can be cancelled.
	if s.state.handle != 0 || ctx.Done() != nil {
		C.goggml_sched_install_eval(s.c, s.state)
	} else {
		C.ggml_backend_sched_set_eval_callback(s.c, nil, nil)
	}
	// The CPU backends' thread pools run one graph at a time: wait for
	// computes on them elsewhere.
	end, isolate, err := bridge.BeginPools(ctx, s.views)
	if err != nil {
		return err
	}
	err = life.OnThread(isolate, func() (err error) {
		defer life.Catch(&err)
		var st C.enum_ggml_status
		t0 := time.Now()
		if wait {
			st = C.ggml_backend_sched_graph_compute(s.c, gp)
		} else {
			st = C.ggml_backend_sched_graph_compute_async(s.c, gp)
		}
		s.inGGML.Add(int64(time.Since(t0)))
		switch {
		case ctx.Err() != nil && (st == C.GGML_STATUS_ABORTED || atomic.LoadInt32((*int32)(unsafe.Pointer(&s.state.cancel))) != 0):
			return ctx.Err()
		case st == C.GGML_STATUS_SUCCESS:
			return nil
		case st == C.GGML_STATUS_ALLOC_FAILED:
			return fmt.Errorf("%w: the scheduler could not allocate the graph", ggml.ErrNoMemory)
		case st == C.GGML_STATUS_ABORTED:
			return backend.ErrAborted
		default:
			return fmt.Errorf("%w: %s", backend.ErrComputeFailed, C.GoString(C.ggml_status_to_string(st)))
		}
	})
	end()
	if perr := s.eval.takePanic(); perr != nil {
		panic(perr)
	}
	if err == nil && s.eval.stopped() {
		return ErrStopped
	}
	if err == nil && wait {
		err = g.CustomError()
	}
	return err
}

// ComputeTime returns the total time the scheduler's Compute and
// ComputeAsync calls have spent inside ggml's compute call
// (ggml_backend_sched_graph_compute, _async), since the scheduler was
// made: the rest of their time is go-ggml's own checks and bookkeeping.
// For ComputeAsync it counts until ggml returned, not until the work
// ended. It is safe to call from any goroutine.
func (s *Scheduler) ComputeTime() time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(s.inGGML.Load())
}

// ErrStopped is returned by Compute when the eval callback returned false.
var ErrStopped = fmt.Errorf("sched: compute stopped by the eval callback")

// watch arms the cancel flags for ctx: the eval callback's and each
// backend's abort flag.
func (s *Scheduler) watch(ctx context.Context) func() {
	s.eval.reset()
	stops := []func(){life.SetOnDone(ctx, unsafe.Pointer(&s.state.cancel))}
	for _, be := range s.views {
		stops = append(stops, be.Watch(ctx))
	}
	return func() {
		for _, f := range stops {
			f()
		}
	}
}

// Synchronize waits for the scheduler's backends (ggml_backend_sched_synchronize).
func (s *Scheduler) Synchronize() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	defer runtime.KeepAlive(s)
	C.ggml_backend_sched_synchronize(s.c)
	return nil
}

// evalState holds the Go eval callback and what it needs.
type evalState struct {
	mu     sync.Mutex
	fn     func(t *ggml.Tensor, ask bool) bool
	handle cgo.Handle
	nodes  map[unsafe.Pointer]*ggml.Tensor
	panicV any
	halted bool
	state  *C.goggml_sched_state
}

func (e *evalState) setGraph(g *ggml.Graph) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nodes = map[unsafe.Pointer]*ggml.Tensor{}
	for _, list := range [][]*ggml.Tensor{g.Leafs(), g.Nodes()} {
		for _, t := range list {
			e.nodes[bridge.View[bridge.Tensor](t).C()] = t
		}
	}
}

func (e *evalState) reset() {
	e.mu.Lock()
	e.panicV, e.halted = nil, false
	e.mu.Unlock()
}

func (e *evalState) takePanic() any {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.panicV
	e.panicV = nil
	return p
}

func (e *evalState) stopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.halted
}

// SetEvalCallback sets fn to observe the nodes of each compute
// (ggml_backend_sched_set_eval_callback): for each node ggml first asks
// (ask true) whether fn wants to see it, and if fn said yes, calls it again
// once the node is computed (ask false), when fn may read the node's data;
// returning false then stops the compute (Compute returns ErrStopped). nil
// removes the callback. fn runs on the computing goroutine; a panic in it
// stops the compute and is raised again by Compute.
func (s *Scheduler) SetEvalCallback(fn func(t *ggml.Tensor, ask bool) bool) error {
	if err := s.usable(); err != nil {
		return err
	}
	e := s.eval
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fn = fn
	return nil
}

//export goggmlSchedEval
func goggmlSchedEval(t *C.struct_ggml_tensor, ask C.bool, h C.uintptr_t) (ret C.bool) {
	e := cgo.Handle(h).Value().(*evalState)
	e.mu.Lock()
	fn, node := e.fn, e.nodes[unsafe.Pointer(t)]
	e.mu.Unlock()
	if fn == nil || node == nil {
		return C.bool(!bool(ask)) // not ours: do not observe, do not stop
	}
	defer func() {
		if r := recover(); r != nil {
			e.mu.Lock()
			e.panicV, e.halted = r, true
			e.mu.Unlock()
			// Stop the rest of the compute, as for a false return: this
			// split through ggml's answer, the next splits through the
			// cancel flag that the C side checks first.
			atomic.StoreInt32((*int32)(unsafe.Pointer(&e.state.cancel)), 1)
			ret = C.bool(bool(ask))
		}
	}()
	ok := fn(node, bool(ask))
	if !bool(ask) && !ok {
		e.mu.Lock()
		e.halted = true
		e.mu.Unlock()
		// ggml stops only the current split: the cancel flag stops the rest.
		atomic.StoreInt32((*int32)(unsafe.Pointer(&e.state.cancel)), 1)
	}
	return C.bool(ok)
}
