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
	"fmt"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// prepare checks graph g against what ggml's scheduler asserts and
// forgets the placement of tensors an earlier allocation of this scheduler
// made (so they are placed anew). It returns the tensors that need memory.
func (s *Scheduler) prepare(g *ggml.Graph) (*C.struct_ggml_cgraph, []*bridge.Tensor, error) {
	if err := s.usable(); err != nil {
		return nil, nil, err
	}
	gv := bridge.View[bridge.Graph](g)
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
		bridge.View[bridge.Graph](s.graph).RestoreSources()
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
		bridge.View[bridge.Graph](g).RestoreSources()
	}()
	defer life.Catch(&err)
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
	for _, t := range bridge.View[bridge.Graph](g).Tensors() {
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
	release, err := bridge.View[bridge.Graph](g).Claim()
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
	defer bridge.View[bridge.Graph](g).RestoreSources()
	defer life.Catch(&err)
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
	defer bridge.View[bridge.Graph](g).RestoreSources()
	defer life.Catch(&err)
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
	release, err := bridge.View[bridge.Graph](g).Claim()
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
	if err := bridge.MetaGraph(s.views, bridge.View[bridge.Graph](g), false); err != nil {
		return err
	}
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(s)
	s.release() // (no C reset: it would drop the pins of SetTensorBackend)
	ok, err := func() (ok bool, err error) {
		defer life.Catch(&err)
		return bool(C.ggml_backend_sched_alloc_graph(s.c, gp)), nil
	}()
	if !ok || err != nil {
		s.failed = true
		bridge.View[bridge.Graph](g).RestoreSources()
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
	s.version = bridge.View[bridge.Graph](g).Version()
	s.eval.setGraph(g)
	s.limited = s.threadLimits(g)
	s.refused = s.refusal(g)
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
