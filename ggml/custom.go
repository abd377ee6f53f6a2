package ggml

/*
#include "goggml.h"
#include <string.h>

// Trampolines with the signatures ggml calls: each passes the node and the
// handle that ggml keeps as userdata on to goggmlCustom (custom_export.go).
extern void goggmlCustom(struct ggml_tensor * dst, int ith, int nth, uintptr_t h);

static void goggml_custom1(struct ggml_tensor * dst, const struct ggml_tensor * a, int ith, int nth, void * ud) {
	(void)a;
	goggmlCustom(dst, ith, nth, (uintptr_t)ud);
}
static void goggml_custom2(struct ggml_tensor * dst, const struct ggml_tensor * a, const struct ggml_tensor * b, int ith, int nth, void * ud) {
	(void)a; (void)b;
	goggmlCustom(dst, ith, nth, (uintptr_t)ud);
}
static void goggml_custom3(struct ggml_tensor * dst, const struct ggml_tensor * a, const struct ggml_tensor * b, const struct ggml_tensor * c, int ith, int nth, void * ud) {
	(void)a; (void)b; (void)c;
	goggmlCustom(dst, ith, nth, (uintptr_t)ud);
}
static void goggml_custom(struct ggml_tensor * dst, int ith, int nth, void * ud) {
	goggmlCustom(dst, ith, nth, (uintptr_t)ud);
}

static struct ggml_tensor * goggml_map_custom1(struct ggml_context * ctx, struct ggml_tensor * a, int n_tasks, uintptr_t h, bool inplace) {
	return inplace ? ggml_map_custom1_inplace(ctx, a, goggml_custom1, n_tasks, (void *)h)
	               : ggml_map_custom1(ctx, a, goggml_custom1, n_tasks, (void *)h);
}
static struct ggml_tensor * goggml_map_custom2(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int n_tasks, uintptr_t h, bool inplace) {
	return inplace ? ggml_map_custom2_inplace(ctx, a, b, goggml_custom2, n_tasks, (void *)h)
	               : ggml_map_custom2(ctx, a, b, goggml_custom2, n_tasks, (void *)h);
}
static struct ggml_tensor * goggml_map_custom3(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, struct ggml_tensor * c, int n_tasks, uintptr_t h, bool inplace) {
	return inplace ? ggml_map_custom3_inplace(ctx, a, b, c, goggml_custom3, n_tasks, (void *)h)
	               : ggml_map_custom3(ctx, a, b, c, goggml_custom3, n_tasks, (void *)h);
}
static struct ggml_tensor * goggml_custom_4d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
		struct ggml_tensor ** args, int n_args, int n_tasks, uintptr_t h) {
	return ggml_custom_4d(ctx, type, ne0, ne1, ne2, ne3, args, n_args, goggml_custom, n_tasks, (void *)h);
}
// goggml_custom_handle returns the userdata of a custom node: ggml keeps
// {function, n_tasks, userdata} in its op_params for every custom op.
struct goggml_custom_params { void * fun; int n_tasks; void * userdata; };
static uintptr_t goggml_custom_handle(const struct ggml_tensor * t) {
	struct goggml_custom_params p;
	memcpy(&p, t->op_params, sizeof p);
	return (uintptr_t)p.userdata;
}
static struct ggml_tensor * goggml_custom_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor ** args, int n_args, int n_tasks, uintptr_t h) {
	return ggml_custom_inplace(ctx, a, args, n_args, goggml_custom, n_tasks, (void *)h);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/go-ggml/ggml/internal/life"
)

// CustomFunc is the body of a custom op. ggml calls it during compute on
// each of its worker threads at once, with ith = 0..nth-1: each call must
// compute its own share of dst (rows ith, ith+nth, ..., say) and leave the
// rest alone. src are the op's inputs. The views are valid only during the
// call.
//
// The function runs on a goroutine of its own for each of ggml's threads,
// while ggml's thread and the goroutine that called Compute wait: it must
// not wait for that goroutine, nor compute graphs on the same backend (that
// is ggml.ErrBusy). A panic is recovered, and so is runtime.Goexit (what
// t.FailNow calls); the compute finishes (dst holds whatever was written)
// and Compute returns a *CustomPanicError. A function that works long
// should poll dst.Cancelled. Closing, from the function, the context that
// holds the running graph is ErrBusy; closing a buffer takes effect when the
// compute is over. Custom ops run on the CPU backend only.
type CustomFunc func(dst CustomView, src []CustomView, ith, nth int)

// CustomView is a tensor as a custom op's function sees it: its type,
// shape, strides and memory.
type CustomView struct {
	Type   Type
	Ne     [MaxDims]int64
	Nb     [MaxDims]uint64
	data   unsafe.Pointer
	size   uint64
	cancel *int32 // the running compute's cancel flag (C memory), or nil
}

// Cancelled reports whether the context of the compute that runs the op
// was cancelled. ggml checks cancellation only between nodes: a custom op
// that works long (or waits) should poll Cancelled and return early, leaving
// dst incomplete; Compute then returns the context's error. It is false for
// computes whose context cannot be cancelled and on backends without an
// abort hook.
func (v CustomView) Cancelled() bool {
	return v.cancel != nil && atomic.LoadInt32(v.cancel) != 0
}

// Bytes returns the tensor's memory (ggml_nbytes bytes from its data).
func (v CustomView) Bytes() []byte {
	if v.data == nil {
		return nil
	}
	return unsafe.Slice((*byte)(v.data), v.size)
}

// Float32s returns the tensor's memory as float32 values, or nil when the
// tensor is not f32. Element (i0, i1, i2, i3) is at Index(i0, i1, i2, i3).
func (v CustomView) Float32s() []float32 {
	if v.Type != TypeF32 || v.data == nil {
		return nil
	}
	return unsafe.Slice((*float32)(v.data), v.size/4)
}

// Int32s returns the tensor's memory as int32 values, or nil when the
// tensor is not i32.
func (v CustomView) Int32s() []int32 {
	if v.Type != TypeI32 || v.data == nil {
		return nil
	}
	return unsafe.Slice((*int32)(v.data), v.size/4)
}

// Index returns the position of element (i0, i1, i2, i3) in the slice
// Float32s or Int32s returns, following the strides.
func (v CustomView) Index(i0, i1, i2, i3 int64) int64 {
	es := int64(v.Type.Size())
	return (i0*int64(v.Nb[0]) + i1*int64(v.Nb[1]) + i2*int64(v.Nb[2]) + i3*int64(v.Nb[3])) / es
}

// Rows returns the number of rows: ne1*ne2*ne3.
func (v CustomView) Rows() int64 { return v.Ne[1] * v.Ne[2] * v.Ne[3] }

func viewOf(t *C.struct_ggml_tensor) CustomView {
	v := CustomView{Type: Type(t._type), data: t.data, size: uint64(C.ggml_nbytes(t))}
	for i := range MaxDims {
		v.Ne[i], v.Nb[i] = int64(t.ne[i]), uint64(t.nb[i])
	}
	return v
}

// ErrCustomOp is the kind of the error a panicking custom op causes.
var ErrCustomOp = errors.New("ggml: custom op panicked")

// CustomPanicError reports a panic in a custom op's function.
type CustomPanicError struct {
	Node  string // the node's name
	Value any    // what the function panicked with
	Stack []byte // the panicking goroutine's stack
}

// Error returns "ggml: custom op NODE panicked: VALUE".
func (e *CustomPanicError) Error() string {
	return fmt.Sprintf("ggml: custom op %q panicked: %v", e.Node, e.Value)
}

// Unwrap returns ErrCustomOp.
func (e *CustomPanicError) Unwrap() error { return ErrCustomOp }

// customOp is a custom op's Go side. ggml holds a cgo.Handle to a weak
// pointer to it: the context holds it strongly, so the function lives as
// long as the context, and a function that refers back to the context does
// not keep it alive (the handle table roots only the weak pointer).
type customOp struct {
	fn     CustomFunc
	tasks  int                   // threads to run fn on; 0: all
	cancel atomic.Pointer[int32] // the cancel flag of the compute that runs it now
	mu     sync.Mutex
	panic  *CustomPanicError // the first panic since the last report
}

// customSet is a context's custom ops.
type customSet struct {
	ops     []*customOp
	byNode  map[*C.struct_ggml_tensor]*customOp
	handles *customHandles
}

// customHandles are the handles of a context's custom ops: the argument of
// the context's cleanup, so it refers to nothing of the context's (the
// ops' functions may refer to the context).
type customHandles struct{ list []cgo.Handle }

// liveHandles are the handles not yet deleted, each with the lifetime of
// the context that owns the op: a graph copy made before that context's
// Close still names the handle, and cgo.Handle.Value panics on a deleted
// one. A compute holds the owning context (holdCustom), so it cannot close
// while the op may run.
var liveHandles sync.Map // cgo.Handle -> *life.Life

func (s *customHandles) free() {
	for _, h := range s.list {
		liveHandles.Delete(h)
		h.Delete()
	}
	s.list = nil
}

// newCustom registers fn for a node about to be built and returns the
// handle to give ggml.
func (c *Context) newCustom(fn CustomFunc, tasks int) (*customOp, cgo.Handle) {
	if c.custom == nil {
		c.custom = &customSet{byNode: map[*C.struct_ggml_tensor]*customOp{}, handles: &customHandles{}}
		c.customCleanup = runtime.AddCleanup(c, (*customHandles).free, c.custom.handles)
	}
	op := &customOp{fn: fn, tasks: tasks}
	h := cgo.NewHandle(weak.Make(op))
	liveHandles.Store(h, c.life)
	c.custom.ops = append(c.custom.ops, op)
	c.custom.handles.list = append(c.custom.handles.list, h)
	return op, h
}

// armCustom gives the custom ops among g's nodes the cancel flag (C memory)
// of the compute about to run them, so that CustomView.Cancelled can read it.
func armCustom(g *Graph, cancel unsafe.Pointer) {
	for _, t := range g.nodes {
		if t.c == nil {
			continue
		}
		switch t.c.op {
		case C.GGML_OP_MAP_CUSTOM1, C.GGML_OP_MAP_CUSTOM2, C.GGML_OP_MAP_CUSTOM3, C.GGML_OP_CUSTOM:
		default:
			continue
		}
		h := cgo.Handle(C.goggml_custom_handle(t.c))
		if _, ok := liveHandles.Load(h); !ok {
			continue
		}
		if wp, ok := h.Value().(weak.Pointer[customOp]); ok {
			if op := wp.Value(); op != nil {
				op.cancel.Store((*int32)(cancel))
			}
		}
	}
}

// holdCustom adds to h the context that owns custom node t's Go function,
// and refuses a node whose function is gone (its context was closed after a
// graph copy took the node): ggml would skip it and leave stale data.
func holdCustom(t *Tensor, h *life.Holds) error {
	switch t.c.op {
	case C.GGML_OP_MAP_CUSTOM1, C.GGML_OP_MAP_CUSTOM2, C.GGML_OP_MAP_CUSTOM3, C.GGML_OP_CUSTOM:
	default:
		return nil
	}
	v, ok := liveHandles.Load(cgo.Handle(C.goggml_custom_handle(t.c)))
	if !ok {
		return fmt.Errorf("%w: custom op %s: the context that defined its Go function is closed", ErrClosed, t.describe())
	}
	return h.Add(v.(*life.Life))
}

// customErr returns and clears the first panic of the custom ops among g's
// nodes since the last call.
func (g *Graph) customErr() error {
	for _, n := range g.nodes {
		if n.ctx == nil || n.ctx.custom == nil {
			continue
		}
		op := n.ctx.custom.byNode[n.c]
		if op == nil {
			continue
		}
		op.mu.Lock()
		p := op.panic
		op.panic = nil
		op.mu.Unlock()
		if p != nil {
			return p
		}
	}
	return nil
}

// CustomError returns, and clears, the first panic of a custom op of g
// since the graph was last computed. The synchronous computes (Compute of
// backends, plans and schedulers) return it themselves; after an
// asynchronous compute, call it once the backend is synchronized.
func (g *Graph) CustomError() error {
	if g == nil {
		return nil
	}
	return g.customErr()
}

// customRules checks what every custom op needs.
func (c *Context) customRules(op string, fn CustomFunc, tasks int, inputs ...*Tensor) *Tensor {
	switch {
	case fn == nil:
		return c.fail(op, ErrInvalid, "the function is nil", inputs...)
	case tasks < 0 || tasks > math.MaxInt32:
		return c.fail(op, ErrInvalid, fmt.Sprintf("tasks %d must be 0 (all threads) or a positive thread count", tasks), inputs...)
	}
	return nil
}

// nTasks is the n_tasks ggml records. This ggml calls a custom op on every
// thread of the compute whatever n_tasks says; goggmlCustom honours tasks.
func nTasks(tasks int) C.int {
	if tasks == 0 {
		return C.GGML_N_TASKS_MAX
	}
	return C.int(tasks)
}

// buildCustom builds a custom node with build and records its op.
func (c *Context) buildCustom(op string, fn CustomFunc, tasks int, ty Type, ne [MaxDims]int64, viewOf *Tensor, build func(h C.uintptr_t) *C.struct_ggml_tensor, inputs ...*Tensor) *Tensor {
	if p := c.ensure(op, ty, ne, viewOf, inputs...); p != nil {
		return p
	}
	cop, h := c.newCustom(fn, tasks)
	t := c.call(op, func() *C.struct_ggml_tensor { return build(C.uintptr_t(h)) }, inputs...)
	if t.err == nil {
		c.custom.byNode[t.c] = cop
	}
	return t
}

// MapCustom1 is a custom op of one input: the result has a's type and
// shape, and fn computes it from src[0] = a (ggml_map_custom1). tasks is
// the number of threads to run fn on; 0 means all of the backend's.
func (c *Context) MapCustom1(a *Tensor, fn CustomFunc, tasks int) *Tensor {
	return c.mapCustom("map_custom1", []*Tensor{a}, fn, tasks, false)
}

// MapCustom1InPlace is MapCustom1 computed into a's memory: the result is a
// view of a, and fn sees a's data in dst (ggml_map_custom1_inplace).
func (c *Context) MapCustom1InPlace(a *Tensor, fn CustomFunc, tasks int) *Tensor {
	return c.mapCustom("map_custom1", []*Tensor{a}, fn, tasks, true)
}

// MapCustom2 is a custom op of two inputs, with a's type and shape
// (ggml_map_custom2).
func (c *Context) MapCustom2(a, b *Tensor, fn CustomFunc, tasks int) *Tensor {
	return c.mapCustom("map_custom2", []*Tensor{a, b}, fn, tasks, false)
}

// MapCustom2InPlace is MapCustom2 computed into a's memory
// (ggml_map_custom2_inplace).
func (c *Context) MapCustom2InPlace(a, b *Tensor, fn CustomFunc, tasks int) *Tensor {
	return c.mapCustom("map_custom2", []*Tensor{a, b}, fn, tasks, true)
}

// MapCustom3 is a custom op of three inputs, with a's type and shape
// (ggml_map_custom3).
func (c *Context) MapCustom3(a, b, d *Tensor, fn CustomFunc, tasks int) *Tensor {
	return c.mapCustom("map_custom3", []*Tensor{a, b, d}, fn, tasks, false)
}

// MapCustom3InPlace is MapCustom3 computed into a's memory
// (ggml_map_custom3_inplace).
func (c *Context) MapCustom3InPlace(a, b, d *Tensor, fn CustomFunc, tasks int) *Tensor {
	return c.mapCustom("map_custom3", []*Tensor{a, b, d}, fn, tasks, true)
}

func (c *Context) mapCustom(op string, in []*Tensor, fn CustomFunc, tasks int, inPlace bool) *Tensor {
	if p := c.begin(op, in...); p != nil {
		return p
	}
	if p := c.customRules(op, fn, tasks, in...); p != nil {
		return p
	}
	a := in[0]
	var vo *Tensor
	if inPlace {
		vo = a
	}
	n, ip := C.int(nTasks(tasks)), C.bool(inPlace)
	return c.buildCustom(op, fn, tasks, a.Type(), a.Ne(), vo, func(h C.uintptr_t) *C.struct_ggml_tensor {
		switch len(in) {
		case 1:
			return C.goggml_map_custom1(c.c, a.c, n, h, ip)
		case 2:
			return C.goggml_map_custom2(c.c, a.c, in[1].c, n, h, ip)
		}
		return C.goggml_map_custom3(c.c, a.c, in[1].c, in[2].c, n, h, ip)
	}, in...)
}

// MaxCustomArgs is the most inputs Custom4D takes (GGML_MAX_SRC - 1).
const MaxCustomArgs = 9

// Custom4D is a custom op that makes a new tensor of type t and shape ne
// from up to MaxCustomArgs inputs, which fn sees as src (ggml_custom_4d).
func (c *Context) Custom4D(t Type, ne [MaxDims]int64, args []*Tensor, fn CustomFunc, tasks int) *Tensor {
	const op = "custom"
	if p := c.begin(op, args...); p != nil {
		return p
	}
	if p := c.customRules(op, fn, tasks, args...); p != nil {
		return p
	}
	switch {
	case !t.Valid():
		return c.invalidType(op, t, args...)
	case len(args) > MaxCustomArgs:
		return c.fail(op, ErrInvalid, fmt.Sprintf("%d inputs: at most %d", len(args), MaxCustomArgs), args...)
	}
	for i, n := range ne {
		if n < 0 {
			return c.fail(op, ErrShape, fmt.Sprintf("ne%d (%d) must be >= 0", i, n), args...)
		}
	}
	if ne[0]%t.BlockSize() != 0 {
		return c.fail(op, ErrShape, fmt.Sprintf("ne0 (%d) must be a multiple of %v's block size %d", ne[0], t, t.BlockSize()), args...)
	}
	cargs := c.cArgs(args)
	defer C.free(unsafe.Pointer(cargs))
	return c.buildCustom(op, fn, tasks, t, ne, nil, func(h C.uintptr_t) *C.struct_ggml_tensor {
		return C.goggml_custom_4d(c.c, C.enum_ggml_type(t), C.int64_t(ne[0]), C.int64_t(ne[1]), C.int64_t(ne[2]), C.int64_t(ne[3]),
			cargs, C.int(len(args)), nTasks(tasks), h)
	}, args...)
}

// CustomInPlace is a custom op computed into a's memory: the result is a
// view of a, fn sees a as dst and src[0], and args as src[1:]
// (ggml_custom_inplace). It takes at most MaxCustomArgs-1 args.
func (c *Context) CustomInPlace(a *Tensor, args []*Tensor, fn CustomFunc, tasks int) *Tensor {
	const op = "custom"
	in := append([]*Tensor{a}, args...)
	if p := c.begin(op, in...); p != nil {
		return p
	}
	if p := c.customRules(op, fn, tasks, in...); p != nil {
		return p
	}
	if len(args) > MaxCustomArgs-1 {
		return c.fail(op, ErrInvalid, fmt.Sprintf("%d args: at most %d", len(args), MaxCustomArgs-1), in...)
	}
	cargs := c.cArgs(args)
	defer C.free(unsafe.Pointer(cargs))
	return c.buildCustom(op, fn, tasks, a.Type(), a.Ne(), a, func(h C.uintptr_t) *C.struct_ggml_tensor {
		return C.goggml_custom_inplace(c.c, a.c, cargs, C.int(len(args)), nTasks(tasks), h)
	}, in...)
}

// cArgs copies the tensors' C pointers to C memory (cgo forbids passing Go
// memory holding pointers to Go memory; these point to C, but a C array is
// the plain way). The caller frees it.
func (c *Context) cArgs(args []*Tensor) **C.struct_ggml_tensor {
	n := max(len(args), 1)
	p := (**C.struct_ggml_tensor)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.struct_ggml_tensor)(nil)))))
	s := unsafe.Slice(p, n)
	for i, t := range args {
		s[i] = t.c
	}
	return p
}
