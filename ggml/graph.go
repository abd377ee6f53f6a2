package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// Graph is a computation graph (struct ggml_cgraph) in a context's pool: the
// nodes (op results) in the order they must be computed, and the leafs
// (inputs and constants) they read. It belongs to its context and is used by
// one goroutine at a time, like the context. While a compute of the graph
// runs (or an asynchronous one is not yet synchronized), Expand, AddNode and
// Clear return ErrBusy: ggml walks the node list.
type Graph struct {
	// The fields up to guard are bridge.Graph's, in its order (see
	// Tensor).
	graphKind
	ctx     *Context
	c       *C.struct_ggml_cgraph
	nodes   []*Tensor
	leafs   []*Tensor
	version uint64 // bumped by every change of the node list
	// guard: computes hold it; Expand, AddNode and Clear refuse to change
	// the node list that ggml is walking (ErrBusy).
	guard *life.Life
	size  int
	seen  ptrSet        // mirror of the graph's hash set
	stack []expandFrame // scratch for Expand, kept between calls
	// partial: AddNode added nodes whose sources are not in the graph.
	partial bool
	// grads: made by NewGradGraph; backward: BuildBackward ran, and byPtr
	// finds the Go handle of each of the graph's tensors (Grad, GradAcc).
	grads, backward bool
	byPtr           map[*C.struct_ggml_tensor]*Tensor
	// indexPlan: what the index checks learned of the graph's structure
	// and placement (checkAllIndices); computes on several goroutines may
	// read and replace it.
	indexPlan atomic.Pointer[indexPlan]
}

// graphKind marks Graph for bridge.View[bridge.Graph] (see tensorKind).
type graphKind = bridge.Kind[bridge.Graph]

func newGuard() *life.Life {
	return life.NewGuard(fmt.Errorf("%w: the graph's context is closed", ErrClosed))
}

// change starts a change of g's node list: ErrBusy while a compute of g
// runs (one started on another goroutine, or the one whose custom op
// calls). Call the returned function when the change is over.
func (g *Graph) change() (func(), error) {
	if err := g.guard.EnterIdle("the graph"); err != nil {
		return nil, err
	}
	return func() { g.guard.LeaveIdle(false) }, nil
}

// NewGraph creates an empty graph with room for size nodes and size leafs
// (ggml_new_graph_custom, without gradients); size is 1 to MaxGraphSize.
// The context needs the room for it (GraphOverhead):
// ContextParams.Graph reserves one graph of ContextParams.GraphSize.
func (c *Context) NewGraph(size int) (*Graph, error) { return c.newGraph(size, false) }

func (c *Context) newGraph(size int, grads bool) (*Graph, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil *Context", ErrInvalid)
	}
	if c.c == nil {
		return nil, fmt.Errorf("%w: the context is closed", ErrClosed)
	}
	if err := c.stickyErr(); err != nil {
		return nil, err
	}
	if c.borrowed {
		return nil, fmt.Errorf("%w: this context belongs to a graph copy; make graphs in a context of your own", ErrInvalid)
	}
	need, err := GraphOverhead(size)
	if grads {
		need, err = GradGraphOverhead(size)
	}
	if err != nil {
		return nil, err
	}
	if !c.enterC() {
		return nil, c.busyErr("new_graph")
	}
	defer c.leaveC()
	if used := c.used.Load(); used > c.memSize || need > c.memSize-used {
		hint := "set ContextParams.Graph (and GraphSize)"
		if grads {
			hint = "set ContextParams.Graph and Grads (and GraphSize)"
		}
		return nil, fmt.Errorf("%w: a graph of %d nodes needs %d bytes, the context has %d of %d free; %s",
			ErrNoMemory, size, need, c.memSize-used, c.memSize, hint)
	}
	c.graphRoom.Store(0) // the first graph takes the room ContextParams.Graph kept
	g := C.ggml_new_graph_custom(c.c, C.size_t(size), C.bool(grads))
	defer runtime.KeepAlive(c)
	c.used.Add(need)
	return &Graph{ctx: c, c: g, size: size, seen: newPtrSet(min(size, 1024)), guard: newGuard(), grads: grads}, nil
}

// BuildGraph creates a graph of the context's GraphSize and expands it with
// each of outputs, in order (ggml_new_graph_custom + ggml_build_forward_expand).
// It returns the context's sticky error if an op failed.
func (c *Context) BuildGraph(outputs ...*Tensor) (*Graph, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil *Context", ErrInvalid)
	}
	g, err := c.NewGraph(c.graphSize)
	if err != nil {
		return nil, err
	}
	for _, t := range outputs {
		if err := g.Expand(t); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *Graph) usable() error { return bridge.View[bridge.Graph](g).Usable() }

// Expand adds t and every tensor it depends on that the graph does not have
// yet (ggml_build_forward_expand). Tensors may come from other contexts
// (weights, say). It fails, adding nothing, when the graph has no room
// (ErrGraphFull), when t is poisoned, or when the context has an error.
func (g *Graph) Expand(t *Tensor) error {
	if err := g.usable(); err != nil {
		return err
	}
	done, err := g.change()
	if err != nil {
		return err
	}
	defer done()
	if err := t.usable(); err != nil {
		return err
	}
	// Walk the sources as ggml_visit_parents does (post-order, src[0] first),
	// marking what it visits in the graph's set as ggml does, to count what
	// would be added and check the graph has room for it; on failure the
	// marks are taken back.
	if g.seen.has(t.c) {
		return nil
	}
	// What the walk finds goes straight onto the node and leaf lists,
	// and is taken off again if the graph has no room.
	n0, l0 := len(g.nodes), len(g.leafs)
	if g.nodes == nil {
		g.nodes = make([]*Tensor, 0, min(g.size, 1<<12))
	}
	undo := func() {
		g.unmark(g.nodes[n0:], g.leafs[l0:], nil)
		clear(g.nodes[n0:])
		clear(g.leafs[l0:])
		g.nodes, g.leafs = g.nodes[:n0], g.leafs[:l0]
	}
	stack := append(g.stack[:0], expandFrame{t: t})
	defer func() { g.stack = stack[:0] }()
	g.seen.add(t.c)
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.i < len(f.t.srcs) {
			s := f.t.srcs[f.i]
			f.i++
			if s == nil {
				continue
			}
			if !s.live() {
				g.unmark(nil, nil, stack)
				undo()
				return fmt.Errorf("%w: %s depends on a tensor of a closed context", ErrClosed, t.describe())
			}
			if !g.seen.add(s.c) {
				continue
			}
			stack = append(stack, expandFrame{t: s})
			continue
		}
		n := f.t
		stack = stack[:len(stack)-1]
		if n.c.op == C.GGML_OP_NONE && n.c.flags&C.GGML_TENSOR_FLAG_PARAM == 0 {
			g.leafs = append(g.leafs, n)
		} else {
			g.nodes = append(g.nodes, n)
		}
	}
	if len(g.nodes) > g.size || len(g.leafs) > g.size {
		nodes, leafs := len(g.nodes)-n0, len(g.leafs)-l0
		undo()
		return fmt.Errorf("%w: adding %s needs %d nodes and %d leafs, the graph has %d and %d of %d; build a larger graph (ContextParams.GraphSize or NewGraph)",
			ErrGraphFull, t.describe(), nodes, leafs, n0, l0, g.size)
	}
	C.ggml_build_forward_expand(g.c, t.c)
	runtime.KeepAlive(t)
	g.version++
	if int(C.ggml_graph_n_nodes(g.c)) != len(g.nodes) {
		return fmt.Errorf("ggml: internal error: graph has %d nodes in C and %d in Go", int(C.ggml_graph_n_nodes(g.c)), len(g.nodes))
	}
	return nil
}

// unmark takes back the marks of a failed Expand: the tensors it finished
// and those still on its stack.
func (g *Graph) unmark(nodes, leafs []*Tensor, stack []expandFrame) {
	for _, list := range [][]*Tensor{nodes, leafs} {
		for _, n := range list {
			g.seen.del(n.c)
		}
	}
	for _, f := range stack {
		g.seen.del(f.t.c)
	}
}

type expandFrame struct {
	t *Tensor
	i int
}

// Size returns the node capacity of the graph (ggml_graph_size).
func (g *Graph) Size() int {
	if g == nil {
		return 0
	}
	return g.size
}

// NumNodes returns the number of nodes, the op results (ggml_graph_n_nodes).
func (g *Graph) NumNodes() int {
	if g == nil || g.ctx.c == nil {
		return 0
	}
	return len(g.nodes)
}

// Node returns node i in compute order; negative i counts from the end, -1
// being the last node (ggml_graph_node). It returns nil out of range.
func (g *Graph) Node(i int) *Tensor {
	n := g.NumNodes()
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return nil
	}
	return g.nodes[i]
}

// Nodes returns the nodes in compute order (ggml_graph_nodes).
func (g *Graph) Nodes() []*Tensor {
	if g.NumNodes() == 0 {
		return nil
	}
	return append([]*Tensor(nil), g.nodes...)
}

// NumLeafs returns the number of leafs: inputs and constants (cgraph->n_leafs).
func (g *Graph) NumLeafs() int {
	if g == nil || g.ctx.c == nil {
		return 0
	}
	return len(g.leafs)
}

// Leafs returns the leafs in the order ggml visited them (cgraph->leafs).
func (g *Graph) Leafs() []*Tensor {
	if g.NumLeafs() == 0 {
		return nil
	}
	return append([]*Tensor(nil), g.leafs...)
}

// Tensor returns the node or leaf with the given name, or nil
// (ggml_graph_get_tensor).
func (g *Graph) Tensor(name string) *Tensor {
	if g == nil || g.ctx.c == nil {
		return nil
	}
	for _, list := range [][]*Tensor{g.nodes, g.leafs} {
		for _, t := range list {
			if t.Name() == name {
				return t
			}
		}
	}
	return nil
}

// Clear empties the graph, keeping its capacity, so it can be built again
// (ggml_graph_clear).
func (g *Graph) Clear() error {
	if err := g.usable(); err != nil {
		return err
	}
	done, err := g.change()
	if err != nil {
		return err
	}
	defer done()
	C.ggml_graph_clear(g.c)
	g.version++
	g.seen.reset()
	g.nodes, g.leafs, g.partial = nil, nil, false
	g.backward, g.byPtr = false, nil
	return nil
}

// Context returns the context that holds the graph.
func (g *Graph) Context() *Context {
	if g == nil {
		return nil
	}
	return g.ctx
}

// Print writes the graph's nodes and leafs to ggml's log, which go-ggml
// routes to slog at info level (ggml_graph_print).
func (g *Graph) Print() error {
	if err := g.usable(); err != nil {
		return err
	}
	C.ggml_graph_print(g.c)
	runtime.KeepAlive(g)
	return nil
}
