package backend

// #include "goggml.h"
import "C"

import (
	"context"
	"fmt"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/hashsize"
	"github.com/go-ggml/ggml/internal/life"
	"github.com/go-ggml/ggml/internal/sysmem"
)

// GraphCopy is a copy of a graph, with the data of its tensors, on another
// backend (struct ggml_backend_graph_copy). Its tensors keep it alive;
// Close frees its buffer and contexts, after which they report
// ggml.ErrClosed.
type GraphCopy struct {
	_       life.NoCopy
	c       C.struct_ggml_backend_graph_copy // set at birth, never changed
	life    *life.Life
	graph   *ggml.Graph
	release func()
	cleanup runtime.Cleanup
}

// checkCopyable checks what ggml_backend_graph_copy asserts: every tensor
// allocated, and (for the data copy) in a backend buffer.
func checkCopyable(g *ggml.Graph) error {
	_, err := bridge.PrepareGraph(bridge.View[bridge.Graph](g), nil, func(p unsafe.Pointer, _ bool) error {
		t := (*C.struct_ggml_tensor)(p)
		if t.view_src == nil && t.buffer == nil {
			return fmt.Errorf("%w: tensor %q lives in a context's memory; graph copies need tensors in backend buffers", ErrUnsupported, C.GoString(&t.name[0]))
		}
		return nil
	})
	return err
}

// CopyGraph copies graph g, every tensor and its data, into a new buffer of
// backend b (ggml_backend_graph_copy). Every tensor of g must be allocated
// in a backend buffer. The copy's graph lists g's nodes in the same order.
func (b *Backend) CopyGraph(g *ggml.Graph) (gc *GraphCopy, err error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	if err := checkCopyable(g); err != nil {
		return nil, err
	}
	gp, err := graphPtr(g)
	if err != nil {
		return nil, err
	}
	if g.NumNodes() == 0 {
		return nil, fmt.Errorf("%w: the graph has no nodes to copy", ggml.ErrInvalid)
	}
	if err := copyFits(g); err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(b)
	defer life.Catch(&err)
	c := C.ggml_backend_graph_copy(b.c, gp)
	if c.buffer == nil {
		return nil, fmt.Errorf("%w: could not allocate the graph copy on %s", ggml.ErrNoMemory, b.Name())
	}
	gc = &GraphCopy{c: c}
	links := b.link
	gc.life = life.New(links.Parent(), fmt.Errorf("%w: the graph copy is closed", ggml.ErrClosed), func() {
		life.FreeOver(links, func() { C.ggml_backend_graph_copy_free(c) })
	})
	cg, release := bridge.AdoptGraph([]unsafe.Pointer{unsafe.Pointer(c.ctx_allocated), unsafe.Pointer(c.ctx_unallocated)}, unsafe.Pointer(c.graph), gc.life, gc)
	gc.graph, gc.release = bridge.Handle[ggml.Graph](cg), release
	gc.cleanup = runtime.AddCleanup(gc, life.CloseCollected, gc.life)
	life.Leaks.Opened("GraphCopy", gc.life)
	return gc, nil
}

// Graph returns the copied graph. Its contexts belong to the copy: build
// new ops in a context of your own (the copy's tensors can be inputs).
func (gc *GraphCopy) Graph() *ggml.Graph {
	if gc == nil {
		return nil
	}
	return gc.graph
}

// Size returns the size of the copy's buffer in bytes.
func (gc *GraphCopy) Size() uint64 {
	if gc == nil || gc.life.Acquire() != nil {
		return 0
	}
	defer gc.life.Release()
	defer runtime.KeepAlive(gc)
	return uint64(C.ggml_backend_buffer_get_size(gc.c.buffer))
}

// Close frees the copy (ggml_backend_graph_copy_free). It is idempotent and
// safe on nil. While a compute or transfer uses the copy's tensors it
// changes nothing and returns ggml.ErrBusy.
func (gc *GraphCopy) Close() error {
	if gc == nil || gc.life.Closed() {
		return nil
	}
	if err := gc.life.Close("the graph copy", true); err != nil {
		return err
	}
	gc.cleanup.Stop()
	life.Leaks.Closed(gc.life)
	gc.release()
	return nil
}

// CompareGraphBackend runs graph g node by node on backend b1 and a copy of
// it on b2, calling fn after each node that is not a view with the node
// index and the two results; fn returns false to stop
// (ggml_backend_compare_graph_backend, done in Go on GraphCopy so that fn
// gets ordinary tensors). With testNode set, both graphs are computed whole
// and fn is called for that node only. g must be computable on b1 and its
// ops supported by b2; fn must not keep t2 after it returns.
func CompareGraphBackend(b1, b2 *Backend, g *ggml.Graph, fn func(i int, t1, t2 *ggml.Tensor) bool, testNode *ggml.Tensor) error {
	if fn == nil {
		return fmt.Errorf("%w: CompareGraphBackend needs a callback", ggml.ErrInvalid)
	}
	if err := b2.usable(); err != nil {
		return err
	}
	if _, err := b1.checkGraph(g, nil); err != nil {
		return err
	}
	nodes := g.Nodes()
	test := -1
	if testNode != nil {
		for i, n := range nodes {
			if n == testNode {
				test = i
			}
		}
		if test < 0 {
			return fmt.Errorf("%w: the test node %v is not a node of the graph", ggml.ErrInvalid, testNode)
		}
	}
	for _, n := range nodes {
		if !b2.SupportsOp(n) {
			return fmt.Errorf("%w: backend %s cannot compute %s (node %q)", ErrUnsupported, b2.Name(), n.Op(), n.Name())
		}
	}
	gc, err := b2.CopyGraph(g)
	if err != nil {
		return err
	}
	defer gc.Close()
	copies := gc.Graph().Nodes()
	ctx := context.Background()
	if test >= 0 {
		if err := b1.Compute(ctx, g); err != nil {
			return err
		}
		if err := b2.Compute(ctx, gc.Graph()); err != nil {
			return err
		}
		fn(test, nodes[test], copies[test])
		return nil
	}
	// One-node graphs over the nodes, in order (as ggml's graph views).
	scratch, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true, Graph: true, GraphSize: 1})
	if err != nil {
		return err
	}
	defer scratch.Close()
	one, err := scratch.NewGraph(1)
	if err != nil {
		return err
	}
	for i := range nodes {
		for _, pair := range []struct {
			be *Backend
			n  *ggml.Tensor
		}{{b1, nodes[i]}, {b2, copies[i]}} {
			if err := one.Clear(); err != nil {
				return err
			}
			if err := one.AddNode(pair.n); err != nil {
				return err
			}
			if err := pair.be.Compute(ctx, one); err != nil {
				return err
			}
		}
		if isViewOp(nodes[i]) {
			continue
		}
		if !fn(i, nodes[i], copies[i]) {
			break
		}
	}
	return nil
}

func isViewOp(t *ggml.Tensor) bool {
	switch t.Op() {
	case "VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE":
		return true
	}
	return false
}

// availableMemory is sysmem.Available; tests replace it.
var availableMemory = sysmem.Available

// copyFits checks the host memory ggml_backend_graph_copy takes before it
// copies anything, which it sizes from the graph's capacity, not its node
// count: a hash set of the graph's hash size h, h tensor pointers and h
// flags, and two contexts of h tensors and a graph each (ggml aborts when
// one of these mallocs fails). About 750 bytes per slot, some 37 times what
// the graph itself takes.
func copyFits(g *ggml.Graph) error {
	h := hashsize.Of(2 * uint64(g.Size())) // the graph's visited_hash_set.size
	graph, err := ggml.GraphOverhead(g.Size())
	if err != nil {
		return err
	}
	perSlot := uint64(C.sizeof_uintptr_t)*2 + 1 + 1 + 2*uint64(C.ggml_tensor_overhead())
	hi, need := bits.Mul64(h, perSlot)
	need, carry := bits.Add64(need, 2*graph, 0)
	if hi != 0 || carry != 0 {
		return fmt.Errorf("%w: copying a graph of size %d needs more than 2^64 bytes", ggml.ErrNoMemory, g.Size())
	}
	if avail, known := availableMemory(); known && need > avail {
		return fmt.Errorf("%w: copying a graph of size %d needs %d bytes of host memory for ggml's tables, %d are available; build it with a smaller size",
			ggml.ErrNoMemory, g.Size(), need, avail)
	}
	return nil
}
