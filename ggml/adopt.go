package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// This file gives Go handles to graphs that ggml builds in contexts of its
// own (ggml_backend_graph_copy). Those contexts are borrowed: ggml frees
// them, never go-ggml; the Go handles report ErrClosed afterwards.

// adoptGraph wraps graph g, whose tensors live in the contexts ctxs, and
// gives lease l to its tensors that are not views. release marks the
// handles closed; call it before ggml frees the contexts.
func adoptGraph(ctxs []unsafe.Pointer, gp unsafe.Pointer, l *life.Life, owner bridge.Owner) (*Graph, func()) {
	byPtr := map[*C.struct_ggml_tensor]*Tensor{}
	var wrappers []*Context
	var first *Context
	for _, p := range ctxs {
		cc := (*C.struct_ggml_context)(p)
		if cc == nil {
			continue
		}
		c := &Context{c: cc, noAlloc: true, borrowed: true, memSize: uint64(C.ggml_get_mem_size(cc)), graphSize: DefaultGraphSize, life: l}
		wrappers = append(wrappers, c)
		if first == nil {
			first = c
		}
		for t := C.ggml_get_first_tensor(cc); t != nil; t = C.ggml_get_next_tensor(cc, t) {
			byPtr[t] = c.wrap(t, nil, nil)
		}
	}
	for p, t := range byPtr {
		n := 0
		for i, s := range p.src {
			if s != nil {
				n = i + 1
			}
		}
		if n > 0 {
			t.srcs = make([]*Tensor, n)
			for i := range n {
				t.srcs[i] = byPtr[p.src[i]]
			}
		}
		if p.view_src != nil {
			t.viewSrc = byPtr[p.view_src]
		} else {
			bridge.View[bridge.Tensor](t).SetLease(l, owner) // if p.data is set
		}
	}
	cg := (*C.struct_ggml_cgraph)(gp)
	g := &Graph{ctx: first, c: cg, size: int(C.ggml_graph_size(cg)), seen: newPtrSet(0), guard: newGuard()}
	for i := range int(C.ggml_graph_n_nodes(cg)) {
		p := C.ggml_graph_node(cg, C.int(i))
		g.nodes = append(g.nodes, byPtr[p])
		g.seen.add(p)
	}
	// The copy lists no leafs: they are the sources that are not nodes.
	for _, n := range g.nodes {
		for _, s := range n.srcs {
			if s == nil {
				continue
			}
			if g.seen.add(s.c) {
				g.leafs = append(g.leafs, s)
			}
		}
	}
	return g, func() {
		for _, c := range wrappers {
			for _, t := range c.tensors {
				t.c, t.srcs = nil, nil
			}
			c.c, c.tensors = nil, nil
		}
	}
}

// AddNode appends t to the graph's nodes as it is, without its sources
// (ggml_graph_add_node): for graphs that compute a few nodes of another one
// whose sources are computed already. ErrGraphFull when the graph is full.
func (g *Graph) AddNode(t *Tensor) error {
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
	if len(g.nodes) >= g.size {
		return fmt.Errorf("%w: the graph has %d nodes of %d", ErrGraphFull, len(g.nodes), g.size)
	}
	if g.seen.has(t.c) {
		return fmt.Errorf("%w: %s is in the graph already", ErrInvalid, t.describe())
	}
	C.ggml_graph_add_node(g.c, t.c)
	g.version++
	g.partial = true
	g.seen.add(t.c)
	g.nodes = append(g.nodes, t)
	return nil
}
