package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

func init() {
	bridge.PrepareGraph = func(v *bridge.Graph, h *life.Holds, visit func(t unsafe.Pointer, isNode bool) error) (unsafe.Pointer, error) {
		return graphForCompute(bridge.Handle[Graph](v), h, visit)
	}
	bridge.CheckIndices = func(v *bridge.Graph, h *life.Holds) error {
		g := bridge.Handle[Graph](v)
		if err := g.usable(); err != nil {
			return err
		}
		return g.checkAllIndices(h)
	}
	bridge.ArmCustom = func(v *bridge.Graph, cancel unsafe.Pointer) {
		if v != nil {
			armCustom(bridge.Handle[Graph](v), cancel)
		}
	}
	bridge.NodeThreadLimit = func(p unsafe.Pointer) int64 { return seqThreadLimit((*C.struct_ggml_tensor)(p)) }
	bridge.AdoptGraph = func(ctxs []unsafe.Pointer, g unsafe.Pointer, l *life.Life, owner bridge.Owner) (*bridge.Graph, func()) {
		adopted, release := adoptGraph(ctxs, g, l, owner)
		return bridge.View[bridge.Graph](adopted), release
	}
}

// graphForCompute is bridge.PrepareGraph.
func graphForCompute(g *Graph, h *life.Holds, visit func(t unsafe.Pointer, isNode bool) error) (unsafe.Pointer, error) {
	if h == nil {
		h = new(life.Holds)
		defer h.Release()
	}
	if err := bridge.View[bridge.Graph](g).Acquire(h); err != nil {
		return nil, err
	}
	for _, t := range g.leafs {
		if err := bridge.View[bridge.Tensor](t).HoldAs("input", h); err != nil {
			return nil, err
		}
		if visit != nil {
			if err := visit(unsafe.Pointer(t.c), false); err != nil {
				return nil, err
			}
		}
	}
	if g.partial {
		// Nodes added alone: their sources, and theirs in turn (a graph
		// copy follows them all), are inputs too.
		seen := map[*Tensor]bool{}
		var stack []*Tensor
		for _, n := range g.nodes {
			stack = append(stack, n.srcs...)
		}
		for len(stack) > 0 {
			t := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if t == nil || seen[t] {
				continue
			}
			seen[t] = true
			if err := bridge.View[bridge.Tensor](t).HoldAs("input", h); err != nil {
				return nil, err
			}
			if g.seen.has(t.c) {
				continue
			}
			if visit != nil {
				if err := visit(unsafe.Pointer(t.c), false); err != nil {
					return nil, err
				}
			}
			stack = append(stack, t.srcs...)
		}
	}
	for _, t := range g.nodes {
		if err := bridge.View[bridge.Tensor](t).HoldAs("node", h); err != nil {
			return nil, err
		}
		if err := holdCustom(t, h); err != nil {
			return nil, err
		}
		if visit != nil {
			if err := visit(unsafe.Pointer(t.c), true); err != nil {
				return nil, err
			}
		}
	}
	if !bridge.View[bridge.Graph](g).SourcesIntact() {
		return nil, fmt.Errorf("%w: a scheduler holds this graph (it split it across backends and redirected its inputs to its copies); compute it with that scheduler, or Reset the scheduler first", ErrInvalid)
	}
	if err := g.checkAllIndices(h); err != nil {
		return nil, err
	}
	return unsafe.Pointer(g.c), nil
}

// checkAllIndices checks the indices that g's nodes read (checkIndices),
// on the graph as built: a scheduler's split redirects node sources to its
// own copies (filled from these at compute time), so the sources are put
// back while the structure is examined, and restored after.
//
// What the structure and the placement decide (which tensor holds each
// node's index data, whether another node writes it, which are bounded by
// construction) is kept in an indexPlan for the next computes of the same
// graph with the same placement; each compute still checks the data's
// values and locks them against writes.
func (g *Graph) checkAllIndices(h *life.Holds) error {
	if t := C.goggml_graph_extra_view(g.c); t != nil {
		// Not an index check, but every compute runs this one first.
		return fmt.Errorf("%w: tensor %q of the graph is a view of %q, which is in a %s buffer (re-laid for the CPU's kernels): ops read such a tensor whole, as the weight of a matrix product; use the tensor itself",
			ErrUnsupported, C.GoString(&t.name[0]), C.GoString(&t.view_src.name[0]), C.GoString(C.ggml_backend_buffer_name(t.view_src.buffer)))
	}
	plan := g.indexPlan.Load()
	if ok, err := plan.holdsFor(g); err != nil {
		return err
	} else if !ok {
		if plan, err = g.planIndices(); err != nil {
			return err
		}
		if !g.partial {
			g.indexPlan.Store(plan)
		}
	}
	for i := range plan.data {
		d := &plan.data[i]
		refuse := func(rule string, kind error) error { return g.indexRefusal(d.at, d.op, rule, kind) }
		if d.owner != nil && h != nil {
			view := bridge.View[bridge.Tensor](d.owner)
			if !view.ReadIndices() {
				return fmt.Errorf("%w: index tensor %q is being written on another goroutine", ErrBusy, C.GoString(&d.q.name[0]))
			}
			h.Defer(view.EndReadIndices)
		}
		if err := checkIndexData(d.q, d.rows, refuse); err != nil {
			return err
		}
	}
	return plan.err
}

// indexPlan is what checkAllIndices learned from a graph's structure and
// placement: the index data to check at every compute, and the refusal
// the structure earned (after the data of the nodes before it), if any.
// It stays true while the graph's node list (version) and the data
// address and buffer of each of its tensors (snap) stay the same: one
// allocation computed many times. A graph with nodes added alone
// (AddNode) has tensors outside its lists and gets no kept plan.
type indexPlan struct {
	version uint64
	snap    []uintptr // data and buffer of each leaf, then each node
	data    []indexData
	err     error
}

// indexData is index data that a node reads, checked at every compute.
type indexData struct {
	at    int                   // the reading node's position in g.nodes
	op    string                // its op
	q     *C.struct_ggml_tensor // the data
	rows  int64                 // the bound (exclusive)
	owner *Tensor               // whose memory is locked while it is read; nil: not in the lists
}

// holdsFor reports whether p was made for g as it is now; ErrClosed when
// a tensor of g belongs to a closed context.
func (p *indexPlan) holdsFor(g *Graph) (bool, error) {
	ok := p != nil && p.version == g.version && !g.partial
	i := 0
	for _, list := range [][]*Tensor{g.leafs, g.nodes} {
		for _, t := range list {
			c := t.c
			if c == nil {
				return false, fmt.Errorf("%w: a tensor of the graph belongs to a closed context", ErrClosed)
			}
			if ok {
				ok = i+1 < len(p.snap) && p.snap[i] == uintptr(c.data) && p.snap[i+1] == uintptr(unsafe.Pointer(c.buffer))
				i += 2
			}
		}
	}
	return ok && i == len(p.snap), nil
}

// planIndices examines g's structure and placement for checkAllIndices.
func (g *Graph) planIndices() (*indexPlan, error) {
	p := &indexPlan{version: g.version}
	for _, list := range [][]*Tensor{g.leafs, g.nodes} {
		for _, t := range list {
			p.snap = append(p.snap, uintptr(t.c.data), uintptr(unsafe.Pointer(t.c.buffer)))
		}
	}
	// Most graphs read no indices: then there is nothing to restore.
	reads := false
	for _, n := range g.nodes {
		if idx, _, _ := indexSource(n); idx != nil {
			reads = true
			break
		}
	}
	if !reads {
		return p, nil
	}
	// Sources a scheduler redirected are put back while the structure is
	// examined. Intact ones are left alone: a compute of the graph on
	// another backend may be reading them.
	if gv := bridge.View[bridge.Graph](g); !gv.SourcesIntact() {
		saved := make([][len(C.struct_ggml_tensor{}.src)]*C.struct_ggml_tensor, len(g.nodes))
		for i, n := range g.nodes {
			saved[i] = n.c.src
		}
		gv.RestoreSources()
		defer func() {
			for i, n := range g.nodes {
				n.c.src = saved[i]
			}
		}()
	}
	writers := g.writers()
	for i, t := range g.nodes {
		if idx, rows, op := indexSource(t); idx != nil {
			d, err := g.checkIndices(i, idx, rows, op, writers)
			if err != nil {
				p.err = err
				break
			}
			if d != nil {
				p.data = append(p.data, *d)
			}
		}
	}
	return p, nil
}

// indexSource returns, for a node whose kernel reads row or expert indices
// and asserts they are in range, the index tensor, the bound (exclusive)
// and the op's name, as the op registered them beside its constructor
// (registerIndexCheck); nil for other nodes.
func indexSource(t *Tensor) (idx *C.struct_ggml_tensor, rows int64, op string) {
	chk := &computeChecks[t.c.op]
	if chk.indices == nil {
		return nil, 0, ""
	}
	idx, rows = chk.indices(t.c)
	return idx, rows, chk.name
}

// viewOps are the ops whose result is a view that writes nothing.
func viewOp(op C.enum_ggml_op) bool {
	switch op {
	case C.GGML_OP_NONE, C.GGML_OP_VIEW, C.GGML_OP_RESHAPE, C.GGML_OP_PERMUTE, C.GGML_OP_TRANSPOSE:
		return true
	}
	return false
}

func memBase(p *C.struct_ggml_tensor) *C.struct_ggml_tensor {
	if p.view_src != nil {
		return p.view_src
	}
	return p
}

// writers maps the memory (the base tensor) that nodes of g write into
// without owning it (cpy into a tensor, in-place ops, set_rows, ...) to the
// position in g.nodes of the first such node.
func (g *Graph) writers() map[*C.struct_ggml_tensor]int {
	w := map[*C.struct_ggml_tensor]int{}
	for i, n := range g.nodes {
		if n.c.view_src != nil && !viewOp(n.c.op) {
			if _, ok := w[n.c.view_src]; !ok {
				w[n.c.view_src] = i
			}
		}
	}
	return w
}

// checkIndices checks, before compute, the indices that node g.nodes[at]
// reads: their values where they are data (inputs, in host or device
// memory), their bound where the graph computes them (an argsort or top_k,
// through views and copies). The checks hold only if nothing else in the
// graph writes the indices' memory between then and the point of use: such
// graphs are refused. Nodes that run after the reader may write there (an
// allocator reuses an input's memory once its last reader is done).
//
// It returns the index data to check (the values and the lock, at every
// compute: see checkAllIndices), nil when the indices are bounded by
// construction, or the refusal.
func (g *Graph) checkIndices(at int, idx *C.struct_ggml_tensor, rows int64, op string, writers map[*C.struct_ggml_tensor]int) (*indexData, error) {
	refuse := func(rule string, kind error) error { return g.indexRefusal(at, op, rule, kind) }
	// Walk from the indices down the chain of views and copies that a
	// bound was derived from, to the first tensor that this graph does not
	// compute: that one's values are data.
	for q := idx; q != nil; {
		var w *Tensor
		if i, ok := writers[memBase(q)]; ok && i < at {
			w = g.nodes[i]
		}
		if w == nil || w.c == q {
			w = g.overlappingWriter(q, at)
		}
		if w != nil && w.c != q {
			return nil, refuse(fmt.Sprintf("node %s of the same graph writes into the memory of the index tensor %q, so its values cannot be checked before compute; compute the indices in a graph of their own", w.describe(), C.GoString(&q.name[0])), ErrInvalid)
		}
		if !g.seen.has(q) || q.op == C.GGML_OP_NONE || !g.computes(q) {
			// Data: checked at each compute, and locked against writes
			// through the API (SetData, TensorSet, ... on any goroutine,
			// or from a callback of this compute) until it is over.
			return &indexData{at: at, op: op, q: q, rows: rows, owner: g.memOwner(q)}, nil
		}
		switch q.op {
		case C.GGML_OP_ARGSORT, C.GGML_OP_TOP_K:
			return nil, nil // bounded by construction (checked when the op was built)
		case C.GGML_OP_VIEW, C.GGML_OP_RESHAPE, C.GGML_OP_PERMUTE, C.GGML_OP_TRANSPOSE, C.GGML_OP_CONT, C.GGML_OP_CPY, C.GGML_OP_GET_ROWS:
			q = q.src[0]
		default:
			return nil, refuse(fmt.Sprintf("the index tensor %q is computed by %s, whose values cannot be checked before compute", C.GoString(&q.name[0]), C.GoString(C.ggml_op_desc(q))), ErrInvalid)
		}
	}
	return nil, nil
}

// indexRefusal is the error of node g.nodes[at], an op op, whose indices
// break rule.
func (g *Graph) indexRefusal(at int, op, rule string, kind error) error {
	var inputs []string
	for i, s := range g.nodes[at].srcs {
		if s != nil {
			inputs = append(inputs, string(rune('a'+i))+" "+s.describe())
		}
	}
	return &OpError{Op: op, Inputs: inputs, Rule: rule, Err: kind}
}

// overlappingWriter returns a node of g before position before that may
// write memory overlapping q's (tensors placed at the same address, TensorAlloc; memory an
// allocator shares): a node of an op that writes its result, whose result
// overlaps q, or a custom op (it may write its inputs) that takes a tensor
// overlapping q. Views of q and q itself are not writers. Addresses are
// compared within one buffer only (device buffers' addresses are offsets).
func (g *Graph) overlappingWriter(q *C.struct_ggml_tensor, before int) *Tensor {
	if q.data == nil {
		return nil
	}
	buf := bufferOf(q)
	lo := uintptr(q.data)
	hi := lo + uintptr(nbytesOf(q)) // ggml_nbytes, computed in Go: no cgo call per node
	overlaps := func(p *C.struct_ggml_tensor) bool {
		if p == nil || p == q || p.data == nil || bufferOf(p) != buf {
			return false
		}
		plo := uintptr(p.data)
		phi := plo + uintptr(nbytesOf(p))
		return plo < hi && lo < phi
	}
	base := memBase(q) // the node that computes q's memory, for a view
	// Where the graph computes q's memory, what nodes wrote there before
	// it (an allocator reuses memory once its last reader is done) is
	// overwritten: only the nodes between it and the reader count.
	start := 0
	for i, n := range g.nodes[:before] {
		if n.c == base {
			start = i + 1
		}
	}
	for _, n := range g.nodes[start:before] {
		if n.c == nil || n.c == q || (n.c == base && !isCustom(n.c)) {
			continue
		}
		switch n.c.op {
		case C.GGML_OP_MAP_CUSTOM1, C.GGML_OP_MAP_CUSTOM2, C.GGML_OP_MAP_CUSTOM3, C.GGML_OP_CUSTOM:
			if overlaps(n.c) {
				return n
			}
			for _, s := range n.c.src {
				if overlaps(s) || s == q {
					return n
				}
			}
			continue
		}
		if !viewOp(n.c.op) && overlaps(n.c) {
			return n
		}
	}
	return nil
}

// memOwner returns the Go handle, among g's leafs and nodes, of the tensor
// whose memory index tensor q uses (bridge.Tensor.ReadIndices marks it
// while a compute reads it, and LockWrite refuses writes meanwhile); nil
// for an input of a node added alone, not in the lists.
func (g *Graph) memOwner(q *C.struct_ggml_tensor) *Tensor {
	base := memBase(q)
	for _, list := range [][]*Tensor{g.leafs, g.nodes} {
		for _, t := range list {
			b := t
			if t.viewSrc != nil {
				b = t.viewSrc
			}
			if b.c == base {
				return b
			}
		}
	}
	return nil
}

func isCustom(p *C.struct_ggml_tensor) bool {
	switch p.op {
	case C.GGML_OP_MAP_CUSTOM1, C.GGML_OP_MAP_CUSTOM2, C.GGML_OP_MAP_CUSTOM3, C.GGML_OP_CUSTOM:
		return true
	}
	return false
}

// computes reports whether q is one of g's nodes (not a leaf or an input of
// a node added alone).
func (g *Graph) computes(q *C.struct_ggml_tensor) bool {
	for _, n := range g.nodes {
		if n.c == q {
			return true
		}
	}
	return false
}

// checkIndexData range-checks index data that is already there: an input,
// in host memory or (copied out first) device memory.
func checkIndexData(idx *C.struct_ggml_tensor, rows int64, refuse func(string, error) error) error {
	if idx._type != C.GGML_TYPE_I32 && idx._type != C.GGML_TYPE_I64 {
		return nil // the op's constructor refused other types
	}
	base := memBase(idx)
	if idx.data == nil || base.data == nil {
		return nil // not allocated: compute reports that
	}
	data := idx.data
	// A meta buffer of host devices says it is host memory, but its
	// tensors' addresses are placeholders.
	if buf := bufferOf(idx); buf != nil && (!bool(C.ggml_backend_buffer_is_host(buf)) || bool(C.goggml_buffer_is_meta(buf))) {
		n := C.ggml_nbytes(idx)
		tmp := C.malloc(max(n, 1))
		if tmp == nil {
			return refuse("no memory to copy the indices out of device memory for their check", ErrNoMemory)
		}
		defer C.free(tmp)
		C.ggml_backend_tensor_get(idx, tmp, 0, n)
		data = tmp
	}
	ne, nb := idx.ne, idx.nb
	for i3 := range int64(ne[3]) {
		for i2 := range int64(ne[2]) {
			for i1 := range int64(ne[1]) {
				for i0 := range int64(ne[0]) {
					off := uintptr(i0)*uintptr(nb[0]) + uintptr(i1)*uintptr(nb[1]) + uintptr(i2)*uintptr(nb[2]) + uintptr(i3)*uintptr(nb[3])
					var v int64
					if idx._type == C.GGML_TYPE_I32 {
						v = int64(*(*int32)(unsafe.Add(data, off)))
					} else {
						v = *(*int64)(unsafe.Add(data, off))
					}
					if v < 0 || v >= rows {
						return refuse(fmt.Sprintf("index [%d,%d,%d,%d] = %d is outside 0..%d", i0, i1, i2, i3, v, rows-1), ErrInvalid)
					}
				}
			}
		}
	}
	return nil
}

// bufferOf returns the buffer that holds t's data (bridge.BufferOf).
func bufferOf(t *C.struct_ggml_tensor) *C.struct_ggml_backend_buffer {
	return (*C.struct_ggml_backend_buffer)(bridge.BufferOf(unsafe.Pointer(t)))
}
