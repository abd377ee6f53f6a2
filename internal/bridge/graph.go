package bridge

/*
#include "goggml.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/go-ggml/ggml/internal/life"
)

// Graph is the view of a *ggml.Graph (see views.go).
type Graph struct {
	Kind[Graph]
	ctx   *Context
	c     *C.struct_ggml_cgraph
	nodes []*Tensor
	leafs []*Tensor
	// version changes whenever the node list changes.
	version uint64
	// guard: computes hold it; changes of the node list refuse while they
	// run.
	guard *life.Life
}

// Usable returns why g cannot be used (nil, context closed, the context's
// sticky error), or nil.
func (g *Graph) Usable() error {
	switch {
	case g == nil:
		return fmt.Errorf("%w: nil *Graph", life.ErrInvalid)
	case g.ctx.c == nil:
		return fmt.Errorf("%w: the graph's context is closed", life.ErrClosed)
	case g.ctx.Err() != nil:
		return g.ctx.Err()
	}
	return nil
}

// Ptr returns the *C.struct_ggml_cgraph of a usable graph whose tensors'
// contexts (members may come from other contexts: weights) are all open.
func (g *Graph) Ptr() (unsafe.Pointer, error) {
	if err := g.Usable(); err != nil {
		return nil, err
	}
	for _, list := range [][]*Tensor{g.leafs, g.nodes} {
		for _, t := range list {
			if !t.Live() {
				return nil, fmt.Errorf("%w: a tensor of the graph belongs to a closed context", life.ErrClosed)
			}
		}
	}
	return unsafe.Pointer(g.c), nil
}

// Tensors returns the graph's leafs then its nodes, in a new slice.
func (g *Graph) Tensors() []*Tensor {
	ts := make([]*Tensor, 0, len(g.leafs)+len(g.nodes))
	return append(append(ts, g.leafs...), g.nodes...)
}

// Version changes whenever the graph's node list changes.
func (g *Graph) Version() uint64 { return g.version }

// Acquire adds to h what every compute of g holds (its context, and its
// node list, which Expand and Clear then leave alone) and checks that g can
// be used.
func (g *Graph) Acquire(h *life.Holds) error {
	if g == nil {
		return fmt.Errorf("%w: nil *Graph", life.ErrInvalid)
	}
	if err := h.Add(g.ctx.life); err != nil {
		return err
	}
	if err := h.Add(g.guard); err != nil {
		return err
	}
	return g.Usable()
}

// Hold checks that every tensor of g is allocated and its memory alive,
// and holds in h what a compute reads (the graph, the tensors' contexts
// and memory): release h when the compute is over. It is PrepareGraph
// without the visit, the index checks and the custom ops.
func (g *Graph) Hold(h *life.Holds) error {
	if err := g.Acquire(h); err != nil {
		return err
	}
	for _, list := range [][]*Tensor{g.leafs, g.nodes} {
		for _, t := range list {
			if err := t.HoldAs("tensor", h); err != nil {
				return err
			}
		}
	}
	return nil
}

// Claim starts the rewriting of where g's tensors live, in g's context
// (Context.Claim).
func (g *Graph) Claim() (release func(), err error) {
	var c *Context
	if g != nil {
		c = g.ctx
	}
	return c.Claim()
}

// SourcesIntact reports whether every node's C sources are still the
// tensors Go knows: a scheduler redirects them to its copies when it splits
// the graph across backends.
func (g *Graph) SourcesIntact() bool {
	for _, n := range g.nodes {
		if n.c == nil {
			continue // closed: compute reports that first
		}
		for i, s := range n.c.src {
			var want *C.struct_ggml_tensor
			if i < len(n.srcs) && n.srcs[i] != nil {
				if n.srcs[i].c == nil {
					continue // closed: compute reports that first
				}
				want = n.srcs[i].c
			}
			if s != want {
				return false
			}
		}
	}
	return true
}

// RestoreSources points every node's C sources back at the tensors Go
// knows, undoing a scheduler's redirection.
func (g *Graph) RestoreSources() {
	if g.ctx.c == nil {
		return
	}
	for _, n := range g.nodes {
		if n.c == nil {
			continue // its context is closed: nothing to restore
		}
		for i := range n.c.src {
			var want *C.struct_ggml_tensor
			if i < len(n.srcs) && n.srcs[i] != nil {
				want = n.srcs[i].c
			}
			if want != nil || i >= len(n.srcs) || n.srcs[i] == nil {
				n.c.src[i] = want
			}
		}
	}
}

// Quiesce starts a change of what an allocator placed (its buffers, the
// data pointers of its tensors): ErrBusy, naming what, while a compute or
// transfer uses them, and until done no such work starts. placed returns the
// allocator's current placement; it is read again by done, which ends the
// old placement at the same instant if a newer one replaced it meanwhile.
// With g not nil, g's context is claimed too (Graph.Claim): the change
// re-places g's tensors.
func Quiesce(g *Graph, what string, placed func() *life.Life) (done func(), err error) {
	release := func() {}
	if g != nil {
		if release, err = g.Claim(); err != nil {
			return nil, err
		}
	}
	old := placed()
	if err := old.EnterIdle(what); err != nil {
		release()
		return nil, err
	}
	return func() {
		old.LeaveIdle(placed() != old)
		release()
	}, nil
}

// What only package ggml knows, its op rules and its custom ops, is run
// through these functions, which ggml installs at init: with backend's
// three (backend.go), the bridge's only hooks.
var (
	// PrepareGraph checks that graph g can be computed (context open, no
	// sticky error, every tensor allocated and its memory alive, the
	// indices that nodes read in range, no scheduler's redirection), calls
	// visit for each leaf and then each node (isNode set) with its
	// *C.struct_ggml_tensor, and returns the *C.struct_ggml_cgraph. It
	// adds to h the lifetimes of what the compute reads (contexts,
	// buffers, allocations, custom ops' contexts), acquired (h may be nil
	// for a check alone); the caller releases h when the compute is over,
	// also on error.
	PrepareGraph func(g *Graph, h *life.Holds, visit func(t unsafe.Pointer, isNode bool) error) (unsafe.Pointer, error)
	// CheckIndices range-checks the indices that g's nodes read (see
	// PrepareGraph) on the graph as built, whatever a scheduler's split
	// redirected its sources to.
	CheckIndices func(g *Graph, h *life.Holds) error
	// ArmCustom gives the custom ops of graph g the cancel flag (an int32
	// in C memory) of the compute about to run them.
	ArmCustom func(g *Graph, cancel unsafe.Pointer)
	// NodeThreadLimit returns the most CPU threads ggml's kernel computes
	// node t (a *C.struct_ggml_tensor) correctly with, or 0 for no limit.
	NodeThreadLimit func(t unsafe.Pointer) int64
	// AdoptGraph wraps a graph ggml built in contexts it owns
	// (ggml_backend_graph_copy) as a *ggml.Graph (GraphHandle) whose
	// allocated tensors carry lease l, owned by owner; release marks the
	// handles closed before ggml frees them.
	AdoptGraph func(ctxs []unsafe.Pointer, graph unsafe.Pointer, l *life.Life, owner Owner) (g *Graph, release func())
)
