package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
)

func init() {
	bridge.TensorPtr = func(v any) (unsafe.Pointer, error) {
		t, _ := v.(*Tensor)
		if err := t.usable(); err != nil {
			return nil, err
		}
		return unsafe.Pointer(t.c), nil
	}
	bridge.TensorStorage = func(v any) (unsafe.Pointer, error) {
		t, _ := v.(*Tensor)
		if err := t.storageErr(); err != nil {
			return nil, err
		}
		return unsafe.Pointer(t.c), nil
	}
	bridge.ContextPtr = func(v any) (unsafe.Pointer, error) {
		c, _ := v.(*Context)
		switch {
		case c == nil:
			return nil, fmt.Errorf("%w: nil *Context", ErrInvalid)
		case c.c == nil:
			return nil, fmt.Errorf("%w: the context is closed", ErrClosed)
		case c.err != nil:
			return nil, c.err
		}
		return unsafe.Pointer(c.c), nil
	}
	bridge.SetLease = func(v any, l bridge.Lease) {
		t := v.(*Tensor)
		if t.live() && t.c.view_src == nil && t.c.data != nil {
			t.lease = l
		}
	}
	bridge.LeaseOf = func(v any) bridge.Lease {
		if t, _ := v.(*Tensor); t != nil {
			return t.lease
		}
		return nil
	}
	bridge.ResetStorage = func(v any) {
		t := v.(*Tensor)
		if t.live() {
			t.c.data, t.c.buffer, t.lease = nil, nil, nil
		}
	}
	bridge.GraphPtr = func(v any) (unsafe.Pointer, error) {
		g, _ := v.(*Graph)
		if err := g.usable(); err != nil {
			return nil, err
		}
		// Members may come from other contexts (weights): all must be open.
		for _, list := range [][]*Tensor{g.leafs, g.nodes} {
			for _, t := range list {
				if !t.live() {
					return nil, fmt.Errorf("%w: a tensor of the graph belongs to a closed context", ErrClosed)
				}
			}
		}
		return unsafe.Pointer(g.c), nil
	}
	bridge.GraphTensors = func(v any) ([]any, []unsafe.Pointer) {
		g := v.(*Graph)
		ts := make([]any, 0, len(g.leafs)+len(g.nodes))
		ps := make([]unsafe.Pointer, 0, len(g.leafs)+len(g.nodes))
		for _, list := range [][]*Tensor{g.leafs, g.nodes} {
			for _, t := range list {
				ts = append(ts, t)
				ps = append(ps, unsafe.Pointer(t.c))
			}
		}
		return ts, ps
	}
	bridge.AdoptGraph = func(ctxs []unsafe.Pointer, g unsafe.Pointer, l bridge.Lease) (any, func()) {
		return adoptGraph(ctxs, g, l)
	}
	bridge.GraphSources = func(v any) bool { return v.(*Graph).sourcesIntact() }
	bridge.GraphVersion = func(v any) uint64 { return v.(*Graph).version }
	bridge.RestoreSources = func(v any) {
		g := v.(*Graph)
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
	bridge.GraphStorage = func(v any) error {
		g, _ := v.(*Graph)
		if err := g.usable(); err != nil {
			return err
		}
		for _, list := range [][]*Tensor{g.leafs, g.nodes} {
			for _, t := range list {
				if err := t.storageErr(); err != nil {
					return fmt.Errorf("ggml: graph tensor %s: %w", t.describe(), err)
				}
			}
		}
		return nil
	}
	bridge.GraphForCompute = graphForCompute
	bridge.NodeThreadLimit = func(p unsafe.Pointer) int64 { return seqThreadLimit((*C.struct_ggml_tensor)(p)) }
	bridge.GraphDone = func(v any) error {
		g, _ := v.(*Graph)
		return g.CustomError()
	}
}

func graphForCompute(v any, visit func(t unsafe.Pointer, isNode bool) error) (unsafe.Pointer, error) {
	g, _ := v.(*Graph)
	if err := g.usable(); err != nil {
		return nil, err
	}
	for _, t := range g.leafs {
		if err := t.storageErr(); err != nil {
			return nil, fmt.Errorf("ggml: graph input %s: %w", t.describe(), err)
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
			if err := t.storageErr(); err != nil {
				return nil, fmt.Errorf("ggml: graph input %s: %w", t.describe(), err)
			}
			if _, in := g.seen[t.c]; in {
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
		if err := t.storageErr(); err != nil {
			return nil, fmt.Errorf("ggml: graph node %s: %w", t.describe(), err)
		}
		if err := checkNodeData(t); err != nil {
			return nil, err
		}
		if visit != nil {
			if err := visit(unsafe.Pointer(t.c), true); err != nil {
				return nil, err
			}
		}
	}
	if !g.sourcesIntact() {
		return nil, fmt.Errorf("%w: a scheduler holds this graph (it split it across backends and redirected its inputs to its copies); compute it with that scheduler, or Reset the scheduler first", ErrInvalid)
	}
	return unsafe.Pointer(g.c), nil
}

// checkNodeData checks what ggml's kernels assert about the data of a node's
// inputs, where that data is already known: inputs that are leafs in host
// memory. (Inputs computed by the graph itself cannot be checked ahead.)
func checkNodeData(t *Tensor) error {
	var idx *C.struct_ggml_tensor
	var rows int64
	var op string
	switch t.c.op {
	case C.GGML_OP_GET_ROWS:
		idx, rows, op = t.c.src[1], int64(t.c.src[0].ne[1]), "get_rows"
	case C.GGML_OP_SET_ROWS:
		idx, rows, op = t.c.src[1], int64(t.c.ne[1]), "set_rows"
	case C.GGML_OP_GET_ROWS_BACK:
		idx, rows, op = t.c.src[1], int64(t.c.ne[1]), "get_rows_back"
	default:
		if idx, rows, op = seqIndexSource(t); idx == nil {
			return nil
		}
	}
	if idx == nil || idx.op != C.GGML_OP_NONE || (idx._type != C.GGML_TYPE_I32 && idx._type != C.GGML_TYPE_I64) || idx.data == nil {
		return nil
	}
	if buf := bufferOf(idx); buf != nil && !bool(C.ggml_backend_buffer_is_host(buf)) {
		return nil
	}
	ne, nb := idx.ne, idx.nb
	for i2 := range int64(ne[2]) {
		for i1 := range int64(ne[1]) {
			for i0 := range int64(ne[0]) {
				off := uintptr(i0)*uintptr(nb[0]) + uintptr(i1)*uintptr(nb[1]) + uintptr(i2)*uintptr(nb[2])
				var v int64
				if idx._type == C.GGML_TYPE_I32 {
					v = int64(*(*int32)(unsafe.Add(idx.data, off)))
				} else {
					v = *(*int64)(unsafe.Add(idx.data, off))
				}
				if v < 0 || v >= rows {
					var inputs []string
					for i, s := range t.srcs {
						if s != nil {
							inputs = append(inputs, string(rune('a'+i))+" "+s.describe())
						}
					}
					return &OpError{Op: op, Inputs: inputs,
						Rule: fmt.Sprintf("index [%d,%d,%d] = %d is outside 0..%d", i0, i1, i2, v, rows-1), Err: ErrInvalid}
				}
			}
		}
	}
	return nil
}

func bufferOf(t *C.struct_ggml_tensor) *C.struct_ggml_backend_buffer {
	if t.view_src != nil {
		return t.view_src.buffer
	}
	return t.buffer
}

// sourcesIntact reports whether every node's C sources are the tensors the
// Go handles name.
func (g *Graph) sourcesIntact() bool {
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
