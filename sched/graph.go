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
)

// prepare checks graph g against what ggml's scheduler asserts and
// forgets the placement of tensors an earlier allocation of this scheduler
// made (so they are placed anew). It returns the tensors that need memory.
func (s *Scheduler) prepare(g *ggml.Graph) (*C.struct_ggml_cgraph, []*bridge.Tensor, error) {
	if err := s.usable(); err != nil {
		return nil, nil, err
	}
	gv := bridge.GraphOf(g)
	p, err := gv.Ptr()
	if err != nil {
		return nil, nil, err
	}
	gp := (*C.struct_ggml_cgraph)(p)
	if s.graph != nil && s.graph != g {
		return nil, nil, fmt.Errorf("%w: the scheduler holds another allocated graph; Reset it first", ggml.ErrInvalid)
	}
	if s.graph != g && !gv.SourcesIntact() {
		return nil, nil, fmt.Errorf("%w: another scheduler holds this graph (it redirected its inputs to its copies); Reset that one first", ggml.ErrInvalid)
	}
	if n := g.NumNodes() + g.NumLeafs(); n > s.graphSize {
		return nil, nil, fmt.Errorf("%w: the graph has %d nodes and leafs, the scheduler takes %d (Options.GraphSize)", ggml.ErrGraphFull, n, s.graphSize)
	}
	ts := gv.Tensors()
	if len(s.touched) > 0 { // pinned tensors outside the graph share ggml's set
		members := make(map[unsafe.Pointer]bool, len(ts))
		for _, t := range ts {
			members[t.C()] = true
		}
		extra := 0
		for p := range s.touched {
			if !members[p] {
				extra++
			}
		}
		if n := len(ts) + extra; n > s.graphSize {
			return nil, nil, fmt.Errorf("%w: the graph and the other pinned tensors make %d, the scheduler takes %d (Options.GraphSize)", ggml.ErrGraphFull, n, s.graphSize)
		}
	}
	var fresh []*bridge.Tensor
	inputs := map[unsafe.Pointer]bool{}
	for _, t := range ts {
		tc := (*C.struct_ggml_tensor)(t.C())
		// Placed by this scheduler before, or by an allocation that ended
		// (another scheduler's, reset since): placed anew.
		if l := t.Lease(); l != nil && (l.Parent() == s.life || l.Ended()) {
			t.ResetStorage()
		}
		if tc.view_src != nil {
			if vl := t.ViewSource().Lease(); vl != nil && (vl.Parent() == s.life || vl.Ended()) {
				tc.buffer, tc.data = nil, nil
			}
		}
	}
	for _, t := range ts {
		tc := (*C.struct_ggml_tensor)(t.C())
		base := tc
		if tc.view_src != nil {
			base = tc.view_src
		}
		if base.data == nil {
			if tc.view_src == nil {
				fresh = append(fresh, t)
			}
		} else {
			// Pre-allocated: its memory must be alive, in a buffer, and
			// some backend must run its op where it lives.
			if err := t.StorageErr(); err != nil {
				return nil, nil, fmt.Errorf("sched: %v: %w", t, err)
			}
			if base.buffer == nil {
				return nil, nil, fmt.Errorf("%w: tensor %v lives in a context's memory; a scheduler needs tensors in backend buffers", backend.ErrUnsupported, t)
			}
			buft := C.ggml_backend_buffer_get_type(base.buffer)
			if !s.someBackend(func(b C.ggml_backend_t) bool {
				return bool(C.ggml_backend_supports_op(b, tc)) && bool(C.ggml_backend_supports_buft(b, buft))
			}) {
				return nil, nil, fmt.Errorf("%w: no backend of the scheduler can run %s on tensor %v where it lives (a %s buffer)",
					backend.ErrUnsupported, C.GoString(C.ggml_op_desc(tc)), t, C.GoString(C.ggml_backend_buffer_name(base.buffer)))
			}
		}
		isNode := tc.op != C.GGML_OP_NONE || tc.flags&C.GGML_TENSOR_FLAG_PARAM != 0
		if isNode && !s.someBackend(func(b C.ggml_backend_t) bool { return bool(C.ggml_backend_supports_op(b, tc)) }) {
			return nil, nil, fmt.Errorf("%w: no backend of the scheduler can compute %s (node %v)", backend.ErrUnsupported, C.GoString(C.ggml_op_desc(tc)), t)
		}
		if s.parallel && isNode {
			for _, src := range tc.src {
				if src != nil && src.flags&C.GGML_TENSOR_FLAG_INPUT != 0 {
					inputs[unsafe.Pointer(src)] = true
				}
			}
		}
	}
	if len(inputs) > maxGraphInputs {
		return nil, nil, fmt.Errorf("%w: with Options.Parallel a graph takes at most %d tensors marked as inputs, this one %d", ggml.ErrInvalid, maxGraphInputs, len(inputs))
	}
	return gp, fresh, nil
}

// enterChange starts exclusive work on the scheduler that re-places graph
// g's tensors (enter, then change); done ends both.
func (s *Scheduler) enterChange(g *ggml.Graph) (done func(), err error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	end, err := s.change(g)
	if err != nil {
		s.leave()
		return nil, err
	}
	return func() {
		end()
		s.leave()
	}, nil
}

func (s *Scheduler) someBackend(ok func(C.ggml_backend_t) bool) bool {
	for _, p := range s.ptrs {
		if ok(C.ggml_backend_t(p)) {
			return true
		}
	}
	return false
}

// release ends the scheduler's hold on the graph it allocated: the tensors
// it placed die, and the graph's sources point at its own tensors again.
func (s *Scheduler) release() {
	s.newPlacement()
	if s.graph != nil {
		bridge.GraphOf(s.graph).RestoreSources()
		s.graph, s.limited, s.refused = nil, nil, nil
	}
}

// Reserve sizes the compute buffers for graph g, the largest to come, so
// that later graphs need no reallocation (ggml_backend_sched_reserve). It
// resets the scheduler.
func (s *Scheduler) Reserve(g *ggml.Graph) (err error) {
	done, err := s.enterChange(g)
	if err != nil {
		return err
	}
	defer done()
	gp, fresh, err := s.prepare(g)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(s)
	s.release() // buffers may be replaced
	// Reserving places the measure graph's tensors and splits it; put it
	// back as it was, so it can be allocated later like any graph.
	defer func() {
		for _, t := range fresh {
			t.ResetStorage()
		}
		resetViews(g, fresh)
		bridge.GraphOf(g).RestoreSources()
	}()
	defer bridge.Catch(&err)
	if !bool(C.ggml_backend_sched_reserve(s.c, gp)) {
		s.failed = true
		return fmt.Errorf("%w: could not reserve the compute buffers", ggml.ErrNoMemory)
	}
	s.failed = false
	return nil
}

// resetViews forgets the memory of g's views of tensors in fresh.
func resetViews(g *ggml.Graph, fresh []*bridge.Tensor) {
	if len(fresh) == 0 {
		return
	}
	set := map[*bridge.Tensor]bool{}
	for _, t := range fresh {
		set[t] = true
	}
	for _, t := range bridge.GraphOf(g).Tensors() {
		if vs := t.ViewSource(); vs != nil && set[vs] {
			tc := (*C.struct_ggml_tensor)(t.C())
			tc.buffer, tc.data = nil, nil
		}
	}
}

// ReserveSizes returns, per backend, the compute buffer size graph g
// needs, allocating nothing (ggml_backend_sched_reserve_size). It measures
// on a scratch scheduler over the same backends: on the scheduler itself,
// ggml's size query leaves buffers that a later compute would crash on.
// The graph must not be split across backends yet (build it for this).
func (s *Scheduler) ReserveSizes(g *ggml.Graph) (sizes []uint64, err error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	release, err := bridge.GraphOf(g).Claim()
	if err != nil {
		return nil, err
	}
	defer release()
	gp, _, err := s.prepare(g)
	if err != nil {
		return nil, err
	}
	scratch, err := New(s.backends, Options{BufferTypes: s.bts, GraphSize: s.graphSize, Parallel: s.parallel})
	if err != nil {
		return nil, err
	}
	defer scratch.Close()
	out := (*C.size_t)(C.calloc(C.size_t(len(s.backends)), C.sizeof_size_t))
	defer C.free(unsafe.Pointer(out))
	defer runtime.KeepAlive(g)
	// Splitting redirects g's sources to the scratch scheduler's copies:
	// point them back, the scratch scheduler is going away.
	defer bridge.GraphOf(g).RestoreSources()
	defer bridge.Catch(&err)
	C.ggml_backend_sched_reserve_size(scratch.c, gp, out)
	for _, v := range unsafe.Slice(out, len(s.backends)) {
		sizes = append(sizes, uint64(v))
	}
	return sizes, nil
}

// SplitGraph assigns g's nodes to backends and splits it, without
// allocating (ggml_backend_sched_split_graph): NumSplits, NumCopies and
// TensorBackend then describe it. Like an allocation, it ends what the
// scheduler allocated before.
func (s *Scheduler) SplitGraph(g *ggml.Graph) (err error) {
	done, err := s.enterChange(g)
	if err != nil {
		return err
	}
	defer done()
	gp, _, err := s.prepare(g)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(s)
	s.release()
	// The split stays described in the scheduler; g gets its own sources
	// back (an allocation splits again from them).
	defer bridge.GraphOf(g).RestoreSources()
	defer bridge.Catch(&err)
	C.ggml_backend_sched_split_graph(s.c, gp)
	return nil
}

// AllocGraph assigns, splits and allocates graph g (ggml_backend_sched_alloc_graph).
// The scheduler must not hold another allocation: Reset first. The tensors
// it places are valid until the next Reset, allocation or Close.
func (s *Scheduler) AllocGraph(g *ggml.Graph) (err error) {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return s.allocGraph(g)
}

func (s *Scheduler) allocGraph(g *ggml.Graph) (err error) {
	release, err := bridge.GraphOf(g).Claim()
	if err != nil {
		return err
	}
	defer release()
	if s != nil && s.graph != nil {
		return fmt.Errorf("%w: the scheduler holds an allocated graph; Reset it first", ggml.ErrInvalid)
	}
	if s != nil && s.failed {
		// ggml left a compute buffer NULL while thinking it fits: a
		// reservation must allocate it again before anything else.
		return fmt.Errorf("%w: the last allocation failed; Reserve (with this graph or a larger one) before allocating", ggml.ErrNoMemory)
	}
	done, err := s.change(nil)
	if err != nil {
		return err
	}
	defer done()
	gp, fresh, err := s.prepare(g)
	if err != nil {
		return err
	}
	// A meta backend places each node by its split: what it would assert
	// is checked first.
	if err := bridge.MetaGraph(s.views, bridge.GraphOf(g), false); err != nil {
		return err
	}
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(s)
	s.release() // (no C reset: it would drop the pins of SetTensorBackend)
	ok, err := func() (ok bool, err error) {
		defer bridge.Catch(&err)
		return bool(C.ggml_backend_sched_alloc_graph(s.c, gp)), nil
	}()
	if !ok || err != nil {
		s.failed = true
		bridge.GraphOf(g).RestoreSources()
		C.ggml_backend_sched_reset(s.c)
		if err == nil {
			err = fmt.Errorf("%w: the scheduler could not allocate the graph", ggml.ErrNoMemory)
		}
		return err
	}
	for _, t := range fresh {
		t.SetLease(s.placed, s)
	}
	s.graph = g
	s.version = bridge.GraphOf(g).Version()
	s.eval.setGraph(g)
	s.limited = s.threadLimits(g)
	s.refused = s.refusal(g)
	return nil
}

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
	for _, t := range bridge.GraphOf(g).Tensors() {
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
	for _, t := range bridge.GraphOf(g).Tensors() {
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

// Reset ends the current allocation (ggml_backend_sched_reset): the
// tensors it placed report ggml.ErrNotAllocated, and pins set with
// SetTensorBackend are forgotten. While a compute or transfer uses a tensor
// it placed (on another goroutine, or from a custom op of that compute), it
// changes nothing and returns ggml.ErrBusy, as do Reserve, SplitGraph and
// AllocGraph.
func (s *Scheduler) Reset() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	done, err := s.change(nil)
	if err != nil {
		return err
	}
	defer done()
	defer runtime.KeepAlive(s)
	s.release()
	clear(s.touched) // ggml's reset empties its tensor set
	C.ggml_backend_sched_reset(s.c)
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
	} else if bridge.GraphOf(g).Version() != s.version {
		return fmt.Errorf("%w: the graph changed since it was allocated (ggml would compute the old splits); Reset and allocate it again", ggml.ErrInvalid)
	}
	// The allocation must still be whole: inputs from other buffers alive,
	// and kept alive until the compute is over.
	var h bridge.Holds
	defer h.Release()
	gv := bridge.GraphOf(g)
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
	if err := bridge.MetaGraph(s.views, bridge.GraphOf(g), true); err != nil {
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
	err = bridge.OnThread(isolate, func() (err error) {
		defer bridge.Catch(&err)
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
	stops := []func(){bridge.SetOnDone(ctx, unsafe.Pointer(&s.state.cancel))}
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
			e.nodes[bridge.TensorOf(t).C()] = t
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
