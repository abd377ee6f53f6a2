package ggml

// #include "goggml.h"
// #include <stdlib.h>
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// This file binds ggml's automatic differentiation: a graph made with room
// for gradients (NewGradGraph), parameters (Tensor.SetParam) and a loss
// (Tensor.SetLoss) in it, and BuildBackward, which appends the nodes that
// compute every parameter's gradient (ggml_build_backward_expand). ggml
// creates those nodes itself, in a context of the caller's: the Go graph
// and context adopt them afterwards, so they are tensors like any other
// (Grad, GradAcc).

// SetLoss marks the tensor as the loss that BuildBackward differentiates
// (ggml_set_loss) and returns it. The loss must be an f32 scalar (every
// dimension 1), as ggml asserts: anything else records an error on the
// tensor's context (sticky, see Context).
func (t *Tensor) SetLoss() *Tensor {
	defer runtime.KeepAlive(t)
	if !t.live() {
		return t
	}
	if Type(t.c._type) != TypeF32 || C.ggml_nelements(t.c) != 1 {
		return t.ctx.fail("set_loss", ErrShape, "the loss must be an f32 scalar (reduce it with Sum or Mean first)", t)
	}
	t.c.flags |= C.GGML_TENSOR_FLAG_LOSS
	return t
}

// IsLoss reports whether SetLoss marked the tensor.
func (t *Tensor) IsLoss() bool { return t.flag(C.GGML_TENSOR_FLAG_LOSS) }

// NewGradGraph is NewGraph for a graph that BuildBackward can extend with
// gradients (ggml_new_graph_custom with grads): it takes more of the
// context's memory (GradGraphOverhead; ContextParams.Grads reserves it).
func (c *Context) NewGradGraph(size int) (*Graph, error) { return c.newGraph(size, true) }

// GradGraphOverhead returns the context memory a graph of size nodes with
// room for gradients takes (ggml_graph_overhead_custom with grads).
func GradGraphOverhead(size int) (uint64, error) {
	if size < 1 || size > MaxGraphSize {
		return 0, fmt.Errorf("%w: graph size %d is not 1 to %d", ErrInvalid, size, MaxGraphSize)
	}
	n, ok := graphOverhead(uint64(size), true)
	if !ok {
		return 0, fmt.Errorf("%w: a graph of %d nodes", ErrNoMemory, size)
	}
	return n, nil
}

// BuildBackward appends to the graph the nodes that compute the gradient of
// its loss with respect to each of its parameters
// (ggml_build_backward_expand). The graph must have been made by
// NewGradGraph and expanded up to the loss; the new tensors are created in
// ctx, which must be a NoAlloc context with room for them (allocate them
// with the graph, by a scheduler or graph allocator). With accumulate, each
// parameter's gradient is added to an accumulator of its own (GradAcc) at
// every compute instead of replacing it, for gradient accumulation over
// several batches; Reset zeroes them.
//
// What ggml would assert on is an error first: no parameter or no loss in
// the graph (ErrInvalid), a parameter whose value does not reach the loss
// (ErrInvalid, naming it), an op on the way that has no backward pass in
// ggml (ErrUnsupported, naming the op), a graph or context without room for
// the new nodes (ErrGraphFull, ErrNoMemory). The backward pass is first
// built on a copy of the graph in a scratch context, so a refusal leaves
// the graph and ctx as they were. It can be built once per graph.
func (g *Graph) BuildBackward(ctx *Context, accumulate bool) (err error) {
	if err := g.usable(); err != nil {
		return err
	}
	switch {
	case ctx == nil:
		return fmt.Errorf("%w: BuildBackward: nil *Context", ErrInvalid)
	case ctx.c == nil:
		return fmt.Errorf("%w: BuildBackward: the context is closed", ErrClosed)
	case ctx.borrowed:
		return fmt.Errorf("%w: BuildBackward: the context belongs to a graph copy", ErrInvalid)
	case !ctx.noAlloc:
		return fmt.Errorf("%w: BuildBackward: the gradients' context must be NoAlloc (they are allocated with the graph, in backend buffers)", ErrInvalid)
	case !g.grads:
		return fmt.Errorf("%w: BuildBackward: the graph has no room for gradients; make it with NewGradGraph", ErrInvalid)
	case g.backward:
		return fmt.Errorf("%w: BuildBackward: the graph has its backward pass already", ErrInvalid)
	}
	if err := ctx.stickyErr(); err != nil {
		return err
	}
	if err := g.ctx.stickyErr(); err != nil {
		return err
	}
	if err := g.checkBackward(); err != nil {
		return err
	}
	done, err := g.change()
	if err != nil {
		return err
	}
	defer done()
	if !ctx.enterC() {
		return ctx.busyErr("build_backward")
	}
	defer ctx.leaveC()
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(ctx)

	// A dry run on a copy in a scratch context: ggml's asserts (an op
	// without a backward pass, a full graph) end there, and the copy tells
	// how many nodes and leafs, and how much context memory, it takes.
	nodes, leafs, mem, err := g.dryBackward(accumulate)
	if err != nil {
		return err
	}
	if nodes > g.size || leafs > g.size {
		return fmt.Errorf("%w: BuildBackward: the backward pass takes the graph to %d nodes and %d leafs, it has room for %d; make a larger graph", ErrGraphFull, nodes, leafs, g.size)
	}
	if used, space := ctx.used.Load(), ctx.tensorSpace(); used > space || mem > space-used {
		return fmt.Errorf("%w: BuildBackward: the gradients' tensors need %d bytes of the context, it has %d of %d free; give it more MaxTensors", ErrNoMemory, mem, space-min(used, space), space)
	}
	var last *C.struct_ggml_tensor // the context's newest tensor with a Go handle
	if n := len(ctx.tensors); n > 0 {
		last = ctx.tensors[n-1].c
	}
	n0, l0 := len(g.nodes), int(C.goggml_graph_n_leafs(g.c))
	if err := catch(func() {
		accs := g.accumulators(ctx.c, accumulate)
		if accs != nil {
			defer C.free(unsafe.Pointer(accs))
		}
		C.ggml_build_backward_expand(ctx.c, g.c, accs)
	}); err != nil {
		return fmt.Errorf("BuildBackward: %w", err)
	}
	g.adoptBackward(ctx, last, n0, l0)
	g.backward = true
	g.version++
	return nil
}

// catch runs f, a C call, and returns an assert in it as an error.
func catch(f func()) (err error) {
	defer life.Catch(&err)
	f()
	return nil
}

// checkBackward checks in Go what BuildBackward needs: a parameter and a
// loss among the nodes, and a way from each parameter to a loss.
func (g *Graph) checkBackward() error {
	var params []*Tensor
	reach := map[*C.struct_ggml_tensor]bool{} // tensors the loss depends on
	for _, n := range g.nodes {
		if n.c.flags&C.GGML_TENSOR_FLAG_PARAM != 0 {
			params = append(params, n)
		}
		if n.c.flags&C.GGML_TENSOR_FLAG_LOSS != 0 {
			reach[n.c] = true
		}
	}
	switch {
	case len(params) == 0:
		return fmt.Errorf("%w: BuildBackward: the graph has no parameter (SetParam)", ErrInvalid)
	case len(reach) == 0:
		return fmt.Errorf("%w: BuildBackward: the graph has no loss (SetLoss)", ErrInvalid)
	}
	for i := len(g.nodes) - 1; i >= 0; i-- {
		n := g.nodes[i]
		if !reach[n.c] {
			continue
		}
		for _, s := range n.c.src {
			if s != nil {
				reach[s] = true
			}
		}
	}
	// The nodes whose backward pass ggml will build: those that need a
	// gradient (a parameter, the loss, or a result of one that needs it,
	// as ggml_build_backward_expand propagates it) and that the loss
	// depends on. ggml aborts on an op without a backward pass there, on
	// a source of another type than f32 or f16, and on an in-place op.
	needs := map[*C.struct_ggml_tensor]bool{}
	for _, n := range g.nodes {
		if Type(n.c._type) == TypeI32 {
			continue
		}
		need := n.c.flags&(C.GGML_TENSOR_FLAG_PARAM|C.GGML_TENSOR_FLAG_LOSS) != 0
		var bad *C.struct_ggml_tensor
		for j, s := range n.c.src {
			if s == nil || !needs[s] || ignoresGradOf(n.c, j) {
				continue
			}
			if t := Type(s._type); t != TypeF32 && t != TypeF16 {
				bad = s
			}
			need = true
			break
		}
		if !need {
			continue
		}
		needs[n.c] = true
		if !reach[n.c] {
			continue
		}
		if bad != nil {
			return fmt.Errorf("%w: BuildBackward: %s reads %s on the way to the loss; ggml differentiates f32 and f16 only", ErrType, n.describe(), Type(bad._type))
		}
		if why := noBackward(n.c); why != "" {
			return fmt.Errorf("%w: BuildBackward: %s: %s, so the loss cannot be differentiated through it", ErrUnsupported, n.describe(), why)
		}
	}
	var lost []string
	for _, p := range params {
		if !reach[p.c] {
			lost = append(lost, p.describe())
		}
	}
	if len(lost) > 0 {
		return fmt.Errorf("%w: BuildBackward: parameter(s) %s do not reach the loss: no gradient can be computed for them", ErrInvalid, strings.Join(lost, ", "))
	}
	return nil
}

// accumulators returns, with accumulate, an array of g's node count whose
// entry for each parameter node is a new f32 tensor of its shape in ctx
// (ggml_build_backward_expand's grad_accs); else nil. Free it with C.free.
func (g *Graph) accumulators(ctx *C.struct_ggml_context, accumulate bool) **C.struct_ggml_tensor {
	if !accumulate {
		return nil
	}
	n := int(C.ggml_graph_n_nodes(g.c))
	accs := (**C.struct_ggml_tensor)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof((*C.struct_ggml_tensor)(nil)))))
	list := unsafe.Slice(accs, n)
	for i := range n {
		node := C.ggml_graph_node(g.c, C.int(i))
		if node.flags&C.GGML_TENSOR_FLAG_PARAM != 0 {
			list[i] = C.ggml_new_tensor(ctx, C.GGML_TYPE_F32, C.GGML_MAX_DIMS, &node.ne[0])
		}
	}
	return accs
}

// dryBackward builds the backward pass on a copy of g in a scratch
// context and returns the node and leaf counts it ends with and the
// context memory its new tensors take.
func (g *Graph) dryBackward(accumulate bool) (nodes, leafs int, mem uint64, err error) {
	// The copy gets a graph larger than g's (a backward pass adds about
	// twice the forward nodes): whether g has the room is then a count,
	// not an assert in ggml (which, recovered, leaves the thread's stack
	// unwound past C frames).
	room := C.size_t(8*g.size + 256)
	size := C.ggml_graph_overhead_custom(room, true) + C.ggml_tensor_overhead()*C.size_t(8*len(g.nodes)+64)
	for range 6 {
		// The scratch context's pool is go-ggml's, as NewContext's: ggml
		// asserts when it cannot allocate one itself.
		size = C.size_t(pad(uint64(size), poolAlign))
		if avail, known := availableMemory(); known && uint64(size) > avail {
			return 0, 0, 0, fmt.Errorf("%w: BuildBackward: a scratch context of %d bytes, %d are available", ErrNoMemory, uint64(size), avail)
		}
		pool := C.aligned_alloc(poolAlign, size)
		if pool == nil {
			return 0, 0, 0, fmt.Errorf("%w: BuildBackward: cannot allocate a scratch context of %d bytes", ErrNoMemory, uint64(size))
		}
		var sc *C.struct_ggml_context
		if err = catch(func() { sc = C.ggml_init(C.struct_ggml_init_params{mem_size: size, mem_buffer: pool, no_alloc: true}) }); err != nil || sc == nil {
			C.free(pool)
			return 0, 0, 0, fmt.Errorf("%w: BuildBackward: ggml_init of a scratch context of %d bytes failed", ErrNoMemory, uint64(size))
		}
		err = catch(func() {
			dup := C.ggml_new_graph_custom(sc, room, true)
			C.ggml_graph_cpy(g.c, dup)
			before := C.ggml_used_mem(sc)
			accs := g.accumulators(sc, accumulate)
			if accs != nil {
				defer C.free(unsafe.Pointer(accs))
			}
			C.ggml_build_backward_expand(sc, dup, accs)
			nodes, leafs = int(C.ggml_graph_n_nodes(dup)), int(C.goggml_graph_n_leafs(dup))
			mem = uint64(C.ggml_used_mem(sc) - before)
		})
		C.ggml_free(sc)
		C.free(pool)
		var ae *AssertError
		switch {
		case err == nil:
			return nodes, leafs, mem, nil
		case errors.As(err, &ae) && (strings.Contains(ae.Message, "not enough space") || strings.Contains(ae.Message, "obj_new")):
			size *= 4 // the scratch context was too small: again
			continue
		case errors.As(err, &ae) && strings.Contains(ae.Message, "for backward pass"):
			op := ae.Message[strings.LastIndex(ae.Message, ":")+1:]
			return 0, 0, 0, fmt.Errorf("%w: BuildBackward: op %s has no backward pass in ggml; the graph cannot be differentiated through it", ErrUnsupported, strings.TrimSpace(op))
		case errors.As(err, &ae) && strings.Contains(ae.Message, "cgraph->n_nodes < cgraph->size"):
			return 0, 0, 0, fmt.Errorf("%w: BuildBackward: the backward pass does not fit a graph of %d nodes; make a larger graph", ErrGraphFull, g.size)
		}
		return 0, 0, 0, fmt.Errorf("BuildBackward: %w", err)
	}
	return 0, 0, 0, fmt.Errorf("%w: BuildBackward: the backward pass needs more than %d bytes of scratch context", ErrNoMemory, uint64(size))
}

// adoptBackward gives Go handles to what BuildBackward added: the tensors
// ggml created in ctx after last (nil: from the first), and the graph's new
// nodes (from n0) and leafs (from l0).
func (g *Graph) adoptBackward(ctx *Context, last *C.struct_ggml_tensor, n0, l0 int) {
	byPtr := map[*C.struct_ggml_tensor]*Tensor{}
	for _, list := range [][]*Tensor{g.nodes, g.leafs, ctx.tensors} {
		for _, t := range list {
			byPtr[t.c] = t
		}
	}
	var fresh []*Tensor
	p := C.ggml_get_first_tensor(ctx.c)
	if last != nil {
		p = C.ggml_get_next_tensor(ctx.c, last)
	}
	for ; p != nil; p = C.ggml_get_next_tensor(ctx.c, p) {
		t := ctx.wrap(p, nil, nil)
		byPtr[p] = t
		fresh = append(fresh, t)
	}
	for _, t := range fresh {
		n := 0
		for i, s := range t.c.src {
			if s != nil {
				n = i + 1
			}
		}
		if n > 0 {
			t.srcs = make([]*Tensor, n)
			for i := range n {
				t.srcs[i] = byPtr[t.c.src[i]]
			}
		}
		if t.c.view_src != nil {
			t.viewSrc = byPtr[t.c.view_src]
		}
	}
	for i := n0; i < int(C.ggml_graph_n_nodes(g.c)); i++ {
		p := C.ggml_graph_node(g.c, C.int(i))
		g.nodes = append(g.nodes, byPtr[p])
		g.seen.add(p)
	}
	for i := l0; i < int(C.goggml_graph_n_leafs(g.c)); i++ {
		p := C.goggml_graph_leaf(g.c, C.int(i))
		g.leafs = append(g.leafs, byPtr[p])
		g.seen.add(p)
	}
	g.byPtr = byPtr
}

// Grad returns the tensor that holds t's gradient once the graph is
// computed (ggml_graph_get_grad): for a parameter, d loss / d t. It is nil
// before BuildBackward, and for tensors the loss does not depend on.
func (g *Graph) Grad(t *Tensor) *Tensor {
	if !g.backward || t == nil || !t.live() || g.usable() != nil {
		return nil
	}
	defer runtime.KeepAlive(t)
	defer runtime.KeepAlive(g)
	return g.byPtr[C.ggml_graph_get_grad(g.c, t.c)]
}

// GradAcc returns the accumulator of t's gradient (ggml_graph_get_grad_acc):
// the loss's, and with BuildBackward's accumulate each parameter's. nil
// where there is none.
func (g *Graph) GradAcc(t *Tensor) *Tensor {
	if !g.backward || t == nil || !t.live() || g.usable() != nil {
		return nil
	}
	defer runtime.KeepAlive(t)
	defer runtime.KeepAlive(g)
	return g.byPtr[C.ggml_graph_get_grad_acc(g.c, t.c)]
}

// ResetGrads prepares the graph's gradients for a new accumulation
// (ggml_graph_reset): the loss's gradient accumulator is set to 1, every
// other accumulator and the AdamW steps' moments to 0. Those tensors must
// be allocated (ErrNotAllocated otherwise).
func (g *Graph) ResetGrads() (err error) {
	if err := g.usable(); err != nil {
		return err
	}
	if !g.backward {
		return fmt.Errorf("%w: ResetGrads: the graph has no backward pass (BuildBackward)", ErrInvalid)
	}
	var h life.Holds
	defer h.Release()
	var touched []*Tensor
	for _, n := range g.nodes {
		if acc := g.byPtr[C.ggml_graph_get_grad_acc(g.c, n.c)]; acc != nil {
			touched = append(touched, acc)
		}
		if n.c.op == C.GGML_OP_OPT_STEP_ADAMW && len(n.srcs) > 3 {
			touched = append(touched, n.srcs[2], n.srcs[3])
		}
	}
	for _, t := range touched {
		if t == nil || t.c == nil {
			continue
		}
		if t.c.buffer == nil && t.c.data == nil {
			return fmt.Errorf("%w: ResetGrads: %s is not allocated; allocate the graph first", ErrNotAllocated, t.describe())
		}
		if err := bridge.View[bridge.Tensor](t).HoldAs("gradient", &h); err != nil {
			return err
		}
	}
	defer runtime.KeepAlive(g)
	return catch(func() { C.ggml_graph_reset(g.c) })
}

// backwardOps are the ops ggml_compute_backward differentiates (the same
// in both providers); unary and GLU ops have lists of their own.
var backwardOps = map[C.enum_ggml_op]bool{
	C.GGML_OP_NONE: true, C.GGML_OP_DUP: true, C.GGML_OP_ADD: true, C.GGML_OP_ADD1: true, C.GGML_OP_ACC: true,
	C.GGML_OP_SUB: true, C.GGML_OP_MUL: true, C.GGML_OP_DIV: true, C.GGML_OP_SQR: true, C.GGML_OP_SQRT: true,
	C.GGML_OP_LOG: true, C.GGML_OP_SIN: true, C.GGML_OP_COS: true, C.GGML_OP_SUM: true, C.GGML_OP_SUM_ROWS: true,
	C.GGML_OP_MEAN: true, C.GGML_OP_REPEAT: true, C.GGML_OP_REPEAT_BACK: true, C.GGML_OP_RMS_NORM: true,
	C.GGML_OP_MUL_MAT: true, C.GGML_OP_SCALE: true, C.GGML_OP_SET: true, C.GGML_OP_CPY: true, C.GGML_OP_CONT: true,
	C.GGML_OP_RESHAPE: true, C.GGML_OP_VIEW: true, C.GGML_OP_PERMUTE: true, C.GGML_OP_TRANSPOSE: true,
	C.GGML_OP_GET_ROWS: true, C.GGML_OP_DIAG_MASK_INF: true, C.GGML_OP_DIAG_MASK_ZERO: true, C.GGML_OP_SOFT_MAX: true,
	C.GGML_OP_ROPE: true, C.GGML_OP_IM2COL: true, C.GGML_OP_POOL_2D: true, C.GGML_OP_WIN_PART: true,
	C.GGML_OP_WIN_UNPART: true, C.GGML_OP_UNARY: true, C.GGML_OP_CROSS_ENTROPY_LOSS: true, C.GGML_OP_GLU: true,
}

var backwardUnary = map[C.enum_ggml_unary_op]bool{
	C.GGML_UNARY_OP_ABS: true, C.GGML_UNARY_OP_SGN: true, C.GGML_UNARY_OP_NEG: true, C.GGML_UNARY_OP_STEP: true,
	C.GGML_UNARY_OP_RELU: true, C.GGML_UNARY_OP_SILU: true, C.GGML_UNARY_OP_EXP: true, C.GGML_UNARY_OP_EXPM1: true,
	C.GGML_UNARY_OP_SOFTPLUS: true,
}

// noBackward says why ggml cannot build node n's backward pass, or "".
func noBackward(n *C.struct_ggml_tensor) string {
	switch {
	case !backwardOps[n.op]:
		return "ggml has no backward pass for op " + strings.ToLower(C.GoString(C.ggml_op_desc(n)))
	case n.op == C.GGML_OP_UNARY && !backwardUnary[C.ggml_get_unary_op(n)]:
		return "ggml has no backward pass for unary op " + strings.ToLower(C.GoString(C.ggml_op_desc(n)))
	case n.op == C.GGML_OP_GLU && C.ggml_get_glu_op(n) != C.GGML_GLU_OP_SWIGLU:
		return "ggml has no backward pass for GLU op " + strings.ToLower(C.GoString(C.ggml_op_desc(n)))
	case n.view_src != nil && n.op != C.GGML_OP_CPY && n.op != C.GGML_OP_VIEW && n.op != C.GGML_OP_RESHAPE &&
		n.op != C.GGML_OP_PERMUTE && n.op != C.GGML_OP_TRANSPOSE:
		return "it is an in-place op, which ggml does not differentiate (use the op's plain form)"
	}
	return ""
}

// ignoresGradOf reports whether ggml's backward pass of node n leaves its
// source j out (used only for its shape, or indices).
func ignoresGradOf(n *C.struct_ggml_tensor, j int) bool {
	switch n.op {
	case C.GGML_OP_IM2COL, C.GGML_OP_IM2COL_BACK:
		return j == 0
	case C.GGML_OP_UNARY:
		u := C.ggml_get_unary_op(n)
		return j == 0 && (u == C.GGML_UNARY_OP_SGN || u == C.GGML_UNARY_OP_STEP)
	case C.GGML_OP_CPY, C.GGML_OP_GET_ROWS, C.GGML_OP_GET_ROWS_BACK, C.GGML_OP_ROPE:
		return j == 1
	}
	return false
}
