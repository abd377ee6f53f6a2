package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"

	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// The op machinery: what every op of Context shares.
//
// An op is a method of the Context that will own its result. It checks in
// Go what ggml's constructor and its CPU kernel assert (or silently rely
// on), records an *OpError on the context when a rule is broken (a sticky
// error: see Context), and otherwise calls the C constructor, in these
// steps:
//
//	func (c *Context) Foo(a, b *Tensor) *Tensor {
//		const op = "foo"
//		// nil or closed context, an earlier error, an unusable input
//		if p := c.begin(op, a, b); p != nil {
//			return p
//		}
//		// the op's type rule (opTypes), or a check of its own
//		if p := c.checkTypes(op, TypeF32, a, b); p != nil {
//			return p
//		}
//		// shapes, strides and parameters: what ggml asserts
//		if !sameShape(a, b) {
//			return c.fail(op, ErrShape, "a and b must have the same shape", a, b)
//		}
//		// room in the context's pool for the result
//		if p := c.ensure(op, TypeF32, a.Ne(), nil, a, b); p != nil {
//			return p
//		}
//		// the constructor; an assert in it becomes an error here
//		return c.call(op, func() *C.struct_ggml_tensor { return C.ggml_foo(c.c, a.c, b.c) }, a, b)
//	}
//
// To add an op:
//
//  1. Write its constructor as above in the file of its family, in
//     ggml.h's order: ops_elementwise.go, ops_unary.go (and the gated
//     units), ops_reduce.go, ops_norm.go, ops_softmax.go, ops_matrix.go,
//     ops_view.go (views, copies, rearranging), ops_rope_attn.go,
//     ops_conv.go, ops_pool.go, ops_upscale.go, ops_seq.go (sequence models),
//     ops_train.go (backward ops, losses, optimizer steps); custom ops are
//     in custom.go. Its doc comment says what it computes and names the C
//     function. An in-place variant (FooInPlace) goes right after it and
//     runs the same checks inside c.inPlace.
//  2. If it takes more than f32, give it a type rule in opTypes
//     (ops_types.go), derived from the CPU backend's type traits.
//  3. If its kernel reads values of an input as indices, or computes
//     correctly only up to some number of threads, register the check
//     made at compute time beside the constructor, in an init function
//     (registerIndexCheck, registerThreadLimit): packages backend and
//     sched run it before each compute, when the data is final.
//  4. Name it in the op list of doc.go (# Ops).
//  5. Add it to the op table of the tests (opTable, op_test.go) with the
//     next free fuzz id: the table drives FuzzOps, the check that doc.go's
//     list names every op (TestDocListsEveryOp), and the checks every op
//     must pass (TestEveryOpRefusesUnusableInputs). Test its results in
//     the family's _test.go against a float64 reference computed in Go.

// begin starts an op: it returns a poisoned tensor if the op must not run
// (nil or closed context, an earlier error, an unusable input), else nil.
func (c *Context) begin(op string, inputs ...*Tensor) *Tensor {
	if c == nil {
		return &Tensor{err: &OpError{Op: op, Rule: "nil *Context", Err: ErrInvalid}}
	}
	if err := c.stickyErr(); err != nil {
		return &Tensor{ctx: c, err: err}
	}
	if c.c == nil {
		return c.fail(op, ErrClosed, "the context is closed")
	}
	if c.borrowed {
		return &Tensor{ctx: c, err: &OpError{Op: op, Rule: "this context belongs to a graph copy; build ops in a context of your own (its tensors can be inputs)", Err: ErrInvalid}}
	}
	for i, t := range inputs {
		switch {
		case t == nil:
			return c.fail(op, ErrInvalid, fmt.Sprintf("input %d is nil", i))
		case t.err != nil:
			e := &OpError{Op: op, Inputs: []string{"poisoned"}, Rule: fmt.Sprintf("input %d is the result of a failed op: %v", i, t.err), Err: t.err}
			c.setErr(e)
			return &Tensor{ctx: c, err: e}
		case t.c == nil || t.ctx == nil || t.ctx.c == nil:
			return c.fail(op, ErrClosed, fmt.Sprintf("input %d belongs to a closed context", i))
		}
	}
	return nil
}

// fail records a rule violation on the context and returns a poisoned tensor.
func (c *Context) fail(op string, kind error, rule string, inputs ...*Tensor) *Tensor {
	e := &OpError{Op: op, Rule: rule, Err: kind}
	for i, t := range inputs {
		e.Inputs = append(e.Inputs, string(rune('a'+i))+" "+t.describe())
	}
	c.setErr(e)
	return &Tensor{ctx: c, err: e}
}

// haveUpstream reports whether the linked ggml is upstream's (the system
// provider), with the ops, types and op modes only upstream ggml has.
const haveUpstream = C.GOGGML_HAVE_UPSTREAM != 0

// upstreamOnly records on the context that op (or what of it is named in
// what) needs upstream ggml, and returns a poisoned tensor.
func (c *Context) upstreamOnly(op, what string, inputs ...*Tensor) *Tensor {
	return c.fail(op, ErrUnsupported, bridge.NeedsUpstream(what), inputs...)
}

// invalidType records that op was given type t, which is not Valid: an
// ErrUnsupported error naming -tags ggml_system for a type only upstream
// ggml has, else an ErrType error. It returns a poisoned tensor.
func (c *Context) invalidType(op string, t Type, inputs ...*Tensor) *Tensor {
	if upstreamOnlyType(t) {
		return c.upstreamOnly(op, "type "+upstreamTypeNames[t], inputs...)
	}
	return c.fail(op, ErrType, fmt.Sprintf("%v is not a type of this ggml", t), inputs...)
}

// ensure checks that the context's pool has room for a result of type t and
// shape ne (with data unless the context is NoAlloc or the result is a view
// of viewOf). It returns a poisoned tensor when it has not.
func (c *Context) ensure(op string, t Type, ne [MaxDims]int64, viewOf *Tensor, inputs ...*Tensor) *Tensor {
	if viewOf == nil {
		viewOf = c.inPlaceOf.Load() // an _inplace constructor: the result is a view
	}
	return c.ensureRoom(op, t, ne, viewOf != nil, inputs...)
}

// ensureRoom is ensure with whether the result is a view (no data of its
// own) given.
func (c *Context) ensureRoom(op string, t Type, ne [MaxDims]int64, view bool, inputs ...*Tensor) *Tensor {
	size, err := dataSize(t, ne)
	if err != nil {
		return c.fail(op, ErrShape, err.Error(), inputs...)
	}
	payload := uint64(C.sizeof_struct_ggml_tensor)
	if !view && !c.noAlloc {
		payload += size
	}
	if err := c.room(payload); err != nil {
		return c.fail(op, ErrNoMemory, err.Error(), inputs...)
	}
	return nil
}

// convPlanned is one tensor a composite op's C constructor creates.
type convPlanned struct {
	t    Type
	ne   [MaxDims]int64
	view bool // no data of its own
}

// ensureAll checks that the context's pool has room for every tensor a
// composite op creates (ggml aborts when the pool runs out halfway).
func (c *Context) ensureAll(op string, plan []convPlanned, inputs ...*Tensor) *Tensor {
	need := c.used.Load()
	for _, p := range plan {
		size, err := dataSize(p.t, p.ne)
		if err != nil {
			return c.fail(op, ErrShape, err.Error(), inputs...)
		}
		payload := uint64(C.sizeof_struct_ggml_tensor)
		if !p.view && !c.noAlloc {
			payload += size
		}
		var carry uint64
		need, carry = bits.Add64(need, objectSize+pad(payload, memAlign), 0)
		if carry != 0 || need > c.tensorSpace() {
			return c.fail(op, ErrNoMemory, fmt.Sprintf("the context's pool is full: the op makes %d tensors, which need more than the %d bytes left (%d of %d used, the rest kept for its graph); raise ContextParams.MaxTensors or MemSize",
				len(plan), c.tensorSpace()-min(c.used.Load(), c.tensorSpace()), c.used.Load(), c.tensorSpace()), inputs...)
		}
	}
	return nil
}

// call runs a C constructor; an assert inside it (a check missing here)
// becomes a recorded error instead of an abort.
func (c *Context) call(op string, f func() *C.struct_ggml_tensor, inputs ...*Tensor) (t *Tensor) {
	if !c.enterC() {
		return c.busy(op)
	}
	defer c.leaveC()
	defer func() {
		if r := recover(); r != nil {
			p, ok := r.(life.AssertPanic)
			if !ok {
				panic(r)
			}
			ae := p.Err.(*AssertError)
			t = c.fail(op, ae, "ggml asserted: "+ae.Message, inputs...)
		}
	}()
	return c.result(f(), inputs...)
}

// stickyErr returns the first error an op recorded on the context, or nil.
// It and setErr are atomic: ops that two goroutines misuse one context
// with may record at once, and the first whole error wins.
func (c *Context) stickyErr() error { return bridge.View[bridge.Context](c).Err() }

// setErr records e as the sticky error unless one is recorded.
func (c *Context) setErr(e error) { bridge.View[bridge.Context](c).SetErr(e) }

// enterC claims the context's pool for a call of ggml's constructors, and
// reports false when another goroutine has it: a Context is used by one
// goroutine at a time, and ggml's pool taken by two at once would hand out
// overlapping objects. leaveC gives it back.
func (c *Context) enterC() bool { return c.inC.CompareAndSwap(false, true) }

func (c *Context) leaveC() { c.inC.Store(false) }

// busyErr is the error of a constructor refused by enterC.
func (c *Context) busyErr(op string) error {
	return &OpError{Op: op, Rule: "another goroutine is building on this context at the same time; a Context is used by one goroutine at a time", Err: ErrBusy}
}

// busy returns the poisoned result of an op refused by enterC. It leaves
// the context's sticky error alone (the other goroutine owns the context);
// the result poisons what is built from it.
func (c *Context) busy(op string) *Tensor { return &Tensor{ctx: c, err: c.busyErr(op)} }

// result wraps the C result of an op built from inputs. It links the Go
// handles of the result's sources: the inputs, and any intermediate tensor
// the C constructor made on the way.
func (c *Context) result(p *C.struct_ggml_tensor, inputs ...*Tensor) *Tensor {
	// The usual case: every source is an input (or its view source).
	n := 0
	for i, s := range p.src {
		if s != nil {
			n = i + 1
		}
	}
	srcs := c.srcSlice(n)
	ok := true
	self := -1 // ggml_cast names its result as its own src[1]
	for i := range n {
		if s := p.src[i]; s == p {
			self = i
		} else if s != nil {
			if srcs[i] = findIn(inputs, s); srcs[i] == nil {
				ok = false
				break
			}
		}
	}
	var vs *Tensor
	if ok && p.view_src != nil {
		vs = findIn(inputs, p.view_src)
		ok = vs != nil
	}
	if ok {
		t := c.wrap(p, srcs, vs)
		if self >= 0 {
			t.srcs[self] = t
		}
		return t
	}
	return c.resultDeep(p, append([]*Tensor(nil), inputs...))
}

// resultDeep handles ops whose C constructor made intermediate tensors: it
// wraps them too, recursively.
func (c *Context) resultDeep(p *C.struct_ggml_tensor, inputs []*Tensor) *Tensor {
	known := func(q *C.struct_ggml_tensor) *Tensor { return findIn(inputs, q) }
	var mk func(q *C.struct_ggml_tensor) *Tensor
	mk = func(q *C.struct_ggml_tensor) *Tensor {
		if t := known(q); t != nil {
			return t
		}
		var srcs []*Tensor
		n := 0
		for i, s := range q.src {
			if s != nil {
				n = i + 1
			}
		}
		self := -1
		if n > 0 {
			srcs = make([]*Tensor, n)
			for i := range n {
				if s := q.src[i]; s == q {
					self = i
				} else if s != nil {
					srcs[i] = mk(s)
				}
			}
		}
		var vs *Tensor
		if q.view_src != nil {
			vs = mk(q.view_src)
		}
		t := c.wrap(q, srcs, vs)
		if self >= 0 {
			t.srcs[self] = t
		}
		inputs = append(inputs, t)
		return t
	}
	return mk(p)
}

// srcSlice returns a slice for n sources, carved from a slab so that ops do
// not allocate one each.
func (c *Context) srcSlice(n int) []*Tensor {
	if n == 0 {
		return nil
	}
	if len(c.slab) < n {
		c.slab = make([]*Tensor, max(n, 1024))
	}
	s := c.slab[:n:n]
	c.slab = c.slab[n:]
	return s
}

// findIn returns the handle among inputs (or their view sources) whose C
// tensor is q.
func findIn(inputs []*Tensor, q *C.struct_ggml_tensor) *Tensor {
	for _, in := range inputs {
		if in.c == q {
			return in
		}
		if in.viewSrc != nil && in.viewSrc.c == q {
			return in.viewSrc
		}
	}
	return nil
}

// room checks that the pool has space for one more object of the given
// payload, as ggml_new_object would (it returns NULL, and ggml asserts).
func (c *Context) room(payload uint64) error {
	used, space := c.used.Load(), c.tensorSpace()
	need := pad(payload, memAlign) + objectSize
	if used+need <= space {
		return nil
	}
	// What to raise: MemSize when the tensor's data is what does not fit,
	// else MaxTensors (each tensor's metadata takes its share).
	data := uint64(0)
	if payload > uint64(C.sizeof_struct_ggml_tensor) {
		data = payload - uint64(C.sizeof_struct_ggml_tensor)
	}
	fix := fmt.Sprintf("raise ContextParams.MaxTensors (%d; the context holds %d tensors)", c.maxTensors, len(c.tensors))
	if data > 0 && len(c.tensors) < c.maxTensors {
		fix = fmt.Sprintf("raise ContextParams.MemSize (%d bytes for the tensors' data; this one's is %d)", c.dataBytes, data)
	}
	return fmt.Errorf("%w: the context's pool is full: %d of its %d bytes for tensors are used, and this tensor needs %d more; %s",
		ErrNoMemory, min(used, space), space, need, fix)
}

// tensorSpace is the part of the pool tensors may take: all of it but the
// room ContextParams.Graph keeps for the first graph.
func (c *Context) tensorSpace() uint64 {
	if r := c.graphRoom.Load(); r < c.memSize {
		return c.memSize - r
	}
	return 0
}

// inPlace builds an op whose result is a view of a: the in-place variants
// of ggml's ops (ggml_*_inplace). Each checks what its out-of-place op
// checks; its result is a view of a, so computing it overwrites a's memory,
// and it takes no memory of its own (ensure sees c.inPlaceOf). They save
// memory where a is an intermediate result nobody reads again; on a graph
// input they change the input.
func (c *Context) inPlace(a *Tensor, build func() *Tensor) *Tensor {
	if c == nil {
		return build()
	}
	c.inPlaceOf.Store(a)
	defer c.inPlaceOf.Store(nil)
	return build()
}

// Checks at compute time. Some kernels depend on what no constructor can
// see: the values of an index input (an index out of range is read or
// written out of bounds, or asserted on a worker thread, which ends the
// process) and the number of CPU threads (some kernels hang with more
// threads than heads). Such an op registers its check beside its
// constructor, in an init function of its file; packages backend and
// sched run the checks before each compute (bridge.CheckIndices,
// bridge.NodeThreadLimit), when the data is final.

// computeCheck is what one op registers.
type computeCheck struct {
	// name is the op's name in the errors of the index check.
	name string
	// indices returns the index tensor node n reads and the bound
	// (exclusive) that its values must respect.
	indices func(n *C.struct_ggml_tensor) (idx *C.struct_ggml_tensor, bound int64)
	// threads returns the most CPU threads n's kernel computes correctly
	// with.
	threads func(n *C.struct_ggml_tensor) int64
}

// computeChecks holds the registered checks by op, written only by init
// functions.
var computeChecks [C.GGML_OP_COUNT]computeCheck

// registerIndexCheck registers the index check of op, named name in its
// errors (see computeCheck).
func registerIndexCheck(op C.enum_ggml_op, name string, indices func(n *C.struct_ggml_tensor) (idx *C.struct_ggml_tensor, bound int64)) {
	computeChecks[op].name = name
	computeChecks[op].indices = indices
}

// registerThreadLimit registers the thread limit of op (see computeCheck).
func registerThreadLimit(op C.enum_ggml_op, threads func(n *C.struct_ggml_tensor) int64) {
	computeChecks[op].threads = threads
}

// seqThreadLimit returns the most CPU threads node t's kernel computes
// correctly with, as its op registered it (registerThreadLimit; the
// recurrent ops of ops_seq.go do), else 0 (no limit), for a check before a
// CPU compute. Package backend and package sched check it
// (bridge.NodeThreadLimit).
func seqThreadLimit(t *C.struct_ggml_tensor) int64 {
	if f := computeChecks[t.op].threads; f != nil {
		return f(t)
	}
	return 0
}

// Indices that the graph computes: ggml's kernels read index values
// unchecked (or assert on them on a worker thread), so an op accepts
// computed indices only when they are bounded by construction.

// indexBound returns an upper bound (exclusive) on the values of an i32
// tensor the graph computes, when its ops guarantee one: an argsort's
// or top_k's indices are below its rows' length; views and copies keep the bound.
func indexBound(t *Tensor) (int64, bool) {
	for t != nil && t.live() {
		switch t.c.op {
		case C.GGML_OP_ARGSORT, C.GGML_OP_TOP_K:
			if len(t.srcs) > 0 && t.srcs[0] != nil {
				return t.srcs[0].Ne()[0], true
			}
			return 0, false
		case C.GGML_OP_VIEW, C.GGML_OP_RESHAPE, C.GGML_OP_PERMUTE, C.GGML_OP_TRANSPOSE, C.GGML_OP_CONT, C.GGML_OP_CPY, C.GGML_OP_GET_ROWS:
			if len(t.srcs) == 0 || t.srcs[0] == nil || t.srcs[0].Type() != TypeI32 {
				return 0, false
			}
			t = t.srcs[0]
		default:
			return 0, false
		}
	}
	return 0, false
}

// seqIndices checks i32 indices that select among n items (experts, rows
// of b, states) when the graph computes them: ggml's kernels read the
// values unchecked, so they are accepted only when bounded by construction
// (an argsort or top-k of rows no longer than n, through views and copies).
// Indices that are graph inputs are checked before compute: the op
// registers that check (registerIndexCheck).
func (c *Context) seqIndices(op, what string, ids *Tensor, n int64, inputs ...*Tensor) *Tensor {
	if ids.c.op == C.GGML_OP_NONE {
		return nil
	}
	bound, ok := indexBound(ids)
	if !ok {
		return c.fail(op, ErrInvalid, fmt.Sprintf("ids computed by the graph cannot be checked against the %d %s; compute them in a graph of their own and pass them as an input", n, what), inputs...)
	}
	if bound > n {
		return c.fail(op, ErrShape, fmt.Sprintf("ids (an argsort of rows of %d) can exceed the %d %s", bound, n, what), inputs...)
	}
	return nil
}

// Predicates on shapes and strides that the ops' checks share.

// canRepeat reports whether b can be broadcast to a's shape (ggml_can_repeat).
func canRepeat(b, a *Tensor) bool {
	if isEmpty(b) {
		return isEmpty(a)
	}
	for i := range MaxDims {
		if a.c.ne[i]%b.c.ne[i] != 0 {
			return false
		}
	}
	return true
}

func isEmpty(t *Tensor) bool {
	for i := range MaxDims {
		if t.c.ne[i] == 0 {
			return true
		}
	}
	return false
}

func sameShape(a, b *Tensor) bool { return a.Ne() == b.Ne() }

// adjacent reports whether a's elements are adjacent in dimension 0, which
// ggml's row kernels read as a plain array.
func adjacent(a *Tensor) bool { return a.Nb()[0] == a.Type().Size() }

// dense reports whether a's elements lie packed in ggml's order, with the
// strides a new tensor of its shape has: what "contiguous" means to the
// kernels that walk a tensor as one array or step rows by nb1. Stricter
// than ggml_is_contiguous, which skips dimensions of size 1 (a transposed
// [1 n m] passes it, and such kernels then read the wrong memory).
func dense(a *Tensor) bool {
	ne, nb := a.Ne(), a.Nb()
	t := a.Type()
	return nb[0] == t.Size() && nb[1] == nb[0]*uint64(ne[0]/t.BlockSize()) &&
		nb[2] == nb[1]*uint64(ne[1]) && nb[3] == nb[2]*uint64(ne[2])
}

// flatRows reports whether row r (of ne1·ne2·ne3) of a lies at byte r·nb1,
// as the CPU kernels that walk rows by one index assume (gelu, silu,
// leaky_relu, clamp, argsort, top_k, the GLUs). ggml_is_contiguous and
// ggml_is_contiguous_1 skip dimensions of size 1, so they pass tensors
// where it does not hold (a transposed [1 n m]), and those kernels then
// compute from the wrong rows.
func flatRows(a *Tensor) bool {
	ne, nb := a.Ne(), a.Nb()
	return (ne[2] <= 1 || nb[2] == nb[1]*uint64(ne[1])) &&
		(ne[3] <= 1 || nb[3] == nb[1]*uint64(ne[1])*uint64(ne[2]))
}

// rowsContiguous is what the row-walking kernels need: ggml_is_contiguous_1,
// adjacent elements, and flatRows.
func rowsContiguous(a *Tensor) bool {
	return a.live() && isContiguous1Of(a.c) && adjacent(a) && flatRows(a)
}

// rowsApart reports whether a's rows do not overlap: nb1 is at least a
// row's size.
func rowsApart(a *Tensor) bool {
	if !a.live() {
		return false
	}
	tt := types[a.c._type] // ggml made a: its type is in the table
	ok := tt.blockSize > 0 && uint64(a.c.nb[1]) >= uint64(a.c.ne[0])/uint64(tt.blockSize)*tt.size
	runtime.KeepAlive(a)
	return ok
}

// rowOp checks what the row kernels of sum, mean, argmax and the norms
// need: one of types, and adjacent elements in dimension 0.
func (c *Context) rowOp(op string, a *Tensor, types ...Type) *Tensor {
	ok := false
	for _, t := range types {
		ok = ok || a.Type() == t
	}
	if !ok {
		return c.fail(op, ErrType, fmt.Sprintf("ggml's kernel takes %v, not %v", types, a.Type()), a)
	}
	if !adjacent(a) {
		return c.fail(op, ErrShape, "a's elements must be adjacent in dimension 0; copy it with Cont", a)
	}
	return nil
}

// seqMul returns the product of ns, and false when it overflows int64.
func seqMul(ns ...int64) (int64, bool) {
	p := uint64(1)
	for _, n := range ns {
		if n < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(p, uint64(n))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false
		}
		p = lo
	}
	return int64(p), true
}

// shape4 builds a shape.
func shape4(n0, n1, n2, n3 int64) [MaxDims]int64 { return [MaxDims]int64{n0, n1, n2, n3} }
