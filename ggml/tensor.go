package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
)

// Tensor is an n-dimensional tensor of a Context (struct ggml_tensor).
// Shapes use ggml's order: ne[0] is the innermost, contiguous dimension.
//
// A Tensor keeps its context alive, and the tensors it was computed from,
// and, once allocated, the buffer that holds its data. After its context is
// closed its methods return zero values, and those that return an error
// return ErrClosed. A poisoned tensor (the result of an op that failed, see
// Context) reports its error from Err and zero values elsewhere.
type Tensor struct {
	// The fields up to store are bridge.Tensor's, in its order: packages
	// backend and sched see a *Tensor through that view (bridge.View[bridge.Tensor];
	// TestViewLayouts checks the match).
	tensorKind
	ctx     *Context
	c       *C.struct_ggml_tensor
	err     error     // set on a poisoned tensor
	srcs    []*Tensor // Go mirror of c.src, keeps the inputs alive
	viewSrc *Tensor   // the tensor whose memory a view uses
	// store is where the data lives (the memory's lease, the handle that
	// owns it, the computes that read it as indices): bridge's business.
	store bridge.TensorStore
}

// tensorKind marks Tensor for bridge.View[bridge.Tensor]; it has no size, and users
// see neither it nor a method of it.
type tensorKind = bridge.Kind[bridge.Tensor]

// tensorSlab is the most tensor handles a context allocates at a time:
// 256 handles stay under the runtime's 32 KiB limit of a small object,
// whose allocation takes no heap lock and is not zeroed page by page.
const tensorSlab = 256

// wrap makes the Go handle of a tensor that this context's C code created.
// It also counts the object in the context's pool as ggml_new_object does,
// so that room checks need no cgo call.
func (c *Context) wrap(p *C.struct_ggml_tensor, srcs []*Tensor, viewSrc *Tensor) *Tensor {
	// Handles come from a slab per context: one allocation per
	// tensorSlab tensors instead of one each. A slab lives as long as any
	// of its handles, which the context's list keeps anyway.
	if len(c.tslab) == 0 {
		// Slabs grow with the context: small contexts stay small.
		c.tslab = make([]Tensor, min(max(len(c.tensors), 16), tensorSlab))
	}
	t := &c.tslab[0]
	c.tslab = c.tslab[1:]
	t.ctx, t.c, t.srcs, t.viewSrc = c, p, srcs, viewSrc
	c.tensors = append(c.tensors, t)
	payload := uint64(C.sizeof_struct_ggml_tensor)
	if p.view_src == nil && !c.noAlloc {
		var ne [MaxDims]int64
		for i := range ne {
			ne[i] = int64(p.ne[i])
		}
		size, _ := dataSize(Type(p._type), ne)
		payload += size
	}
	c.used.Add(objectSize + pad(payload, memAlign))
	return t
}

// NewTensor creates a tensor of type t and shape ne (ne[0] innermost, one to
// four dimensions) (ggml_new_tensor). Its data lives in the context's pool,
// or, in a NoAlloc context, nowhere until it is allocated in a backend
// buffer. Errors are sticky: see Context.
func (c *Context) NewTensor(t Type, ne ...int64) *Tensor {
	const op = "new_tensor"
	if p := c.begin(op); p != nil {
		return p
	}
	if !t.Valid() {
		return c.invalidType(op, t)
	}
	if len(ne) < 1 || len(ne) > MaxDims {
		return c.fail(op, ErrShape, fmt.Sprintf("%d dimensions given, ggml takes 1 to %d", len(ne), MaxDims))
	}
	shape := [MaxDims]int64{1, 1, 1, 1}
	for i, n := range ne {
		if n < 0 {
			return c.fail(op, ErrShape, fmt.Sprintf("ne%d (%d) is negative", i, n))
		}
		shape[i] = n
	}
	if n := shape[0]; n%t.BlockSize() != 0 {
		return c.fail(op, ErrShape, fmt.Sprintf("ne0 (%d) of a %v tensor must be a multiple of its block size %d", n, t, t.BlockSize()))
	}
	var cne [MaxDims]C.int64_t
	for i := range shape {
		cne[i] = C.int64_t(shape[i])
	}
	// The pool is claimed before its room is checked: another goroutine
	// (a misused context) must not take the last room in between, or
	// ggml_new_object would assert.
	if !c.enterC() {
		return c.busy(op)
	}
	defer c.leaveC()
	if p := c.ensureRoom(op, t, shape, false); p != nil {
		return p
	}
	return c.wrap(C.ggml_new_tensor(c.c, C.enum_ggml_type(t), C.int(len(ne)), &cne[0]), nil, nil)
}

// live reports whether t is a usable tensor (not poisoned, context open).
func (t *Tensor) live() bool { return bridge.View[bridge.Tensor](t).Live() }

// usable returns why t cannot be used, or nil.
func (t *Tensor) usable() error { return bridge.View[bridge.Tensor](t).Usable() }

// Err returns the error of a poisoned tensor (the result of an op that
// failed), or nil.
func (t *Tensor) Err() error {
	if t == nil {
		return fmt.Errorf("%w: nil *Tensor", ErrInvalid)
	}
	return t.err
}

// Context returns the context that owns the tensor.
func (t *Tensor) Context() *Context {
	if t == nil {
		return nil
	}
	return t.ctx
}

// Type returns the tensor's element type (tensor->type).
func (t *Tensor) Type() Type {
	if !t.live() {
		return 0
	}
	typ := Type(t.c._type)
	runtime.KeepAlive(t)
	return typ
}

// Ne returns the number of elements in each of the four dimensions
// (tensor->ne); unused dimensions are 1.
func (t *Tensor) Ne() (ne [MaxDims]int64) {
	if t.live() {
		p := &t.c.ne
		ne = [MaxDims]int64{int64(p[0]), int64(p[1]), int64(p[2]), int64(p[3])}
		runtime.KeepAlive(t)
	}
	return ne
}

// Nb returns the stride in bytes of each dimension (tensor->nb).
func (t *Tensor) Nb() (nb [MaxDims]uint64) {
	if t.live() {
		p := &t.c.nb
		nb = [MaxDims]uint64{uint64(p[0]), uint64(p[1]), uint64(p[2]), uint64(p[3])}
		runtime.KeepAlive(t)
	}
	return nb
}

// Dims returns the number of dimensions, trailing dimensions of 1 not
// counted, at least 1 (ggml_n_dims).
func (t *Tensor) Dims() int {
	defer runtime.KeepAlive(t)
	if !t.live() {
		return 0
	}
	return int(C.ggml_n_dims(t.c))
}

// Shape returns ne up to Dims(): the tensor's shape as a slice.
func (t *Tensor) Shape() []int64 {
	ne := t.Ne()
	return ne[:t.Dims()]
}

// Elements returns the number of elements (ggml_nelements).
func (t *Tensor) Elements() int64 {
	defer runtime.KeepAlive(t)
	if !t.live() {
		return 0
	}
	ne := t.c.ne
	return int64(ne[0] * ne[1] * ne[2] * ne[3])
}

// Rows returns the number of rows, ne[1]*ne[2]*ne[3] (ggml_nrows).
func (t *Tensor) Rows() int64 {
	defer runtime.KeepAlive(t)
	if !t.live() {
		return 0
	}
	ne := t.c.ne
	return int64(ne[1] * ne[2] * ne[3])
}

// Bytes returns the size in bytes of the tensor's data, strides included
// (ggml_nbytes, computed in Go from the tensor struct).
func (t *Tensor) Bytes() uint64 {
	defer runtime.KeepAlive(t)
	if !t.live() {
		return 0
	}
	return nbytesOf(t.c)
}

// IsContiguous reports whether the elements are stored densely in order
// (ggml_is_contiguous).
func (t *Tensor) IsContiguous() bool {
	defer runtime.KeepAlive(t)
	return t.live() && isContiguousOf(t.c)
}

// IsTransposed reports whether nb[0] > nb[1] (ggml_is_transposed).
func (t *Tensor) IsTransposed() bool {
	defer runtime.KeepAlive(t)
	return t.live() && t.c.nb[0] > t.c.nb[1]
}

// Name returns the tensor's name (ggml_get_name).
func (t *Tensor) Name() string {
	defer runtime.KeepAlive(t)
	if !t.live() {
		return ""
	}
	return C.GoString(&t.c.name[0])
}

// SetName names the tensor and returns it (ggml_set_name). Names longer
// than MaxNameLen bytes are cut, as ggml does.
func (t *Tensor) SetName(name string) *Tensor {
	defer runtime.KeepAlive(t)
	if !t.live() {
		return t
	}
	if len(name) > MaxNameLen {
		name = name[:MaxNameLen]
	}
	n := copy(unsafe.Slice((*byte)(unsafe.Pointer(&t.c.name[0])), MaxNameLen), name)
	t.c.name[n] = 0
	return t
}

// SetInput marks the tensor as a graph input and returns it (ggml_set_input):
// allocators then keep its memory apart from intermediate results.
func (t *Tensor) SetInput() *Tensor {
	defer runtime.KeepAlive(t)
	if t.live() {
		t.c.flags |= C.GGML_TENSOR_FLAG_INPUT
	}
	return t
}

// SetOutput marks the tensor as a graph output and returns it
// (ggml_set_output): allocators then never reuse its memory.
func (t *Tensor) SetOutput() *Tensor {
	defer runtime.KeepAlive(t)
	if t.live() {
		t.c.flags |= C.GGML_TENSOR_FLAG_OUTPUT
	}
	return t
}

// SetParam marks a leaf tensor as a trainable parameter and returns it
// (ggml_set_param). ggml allows this only on tensors that are not the result
// of an op; otherwise the error is recorded on the context.
func (t *Tensor) SetParam() *Tensor {
	defer runtime.KeepAlive(t)
	if !t.live() {
		return t
	}
	if t.c.op != C.GGML_OP_NONE {
		return t.ctx.fail("set_param", ErrInvalid, "only a tensor that is not the result of an op can be a parameter", t)
	}
	t.c.flags |= C.GGML_TENSOR_FLAG_PARAM
	return t
}

func (t *Tensor) flag(f C.int32_t) bool {
	defer runtime.KeepAlive(t)
	return t.live() && t.c.flags&f != 0
}

// IsInput reports whether SetInput marked the tensor.
func (t *Tensor) IsInput() bool { return t.flag(C.GGML_TENSOR_FLAG_INPUT) }

// IsOutput reports whether SetOutput marked the tensor.
func (t *Tensor) IsOutput() bool { return t.flag(C.GGML_TENSOR_FLAG_OUTPUT) }

// IsParam reports whether SetParam marked the tensor.
func (t *Tensor) IsParam() bool { return t.flag(C.GGML_TENSOR_FLAG_PARAM) }

// Op returns the name of the op that computes the tensor, "NONE" for a leaf
// (ggml_op_desc: unary and GLU ops by their own names).
func (t *Tensor) Op() string {
	defer runtime.KeepAlive(t)
	if !t.live() {
		return ""
	}
	return C.GoString(C.ggml_op_desc(t.c))
}

// Sources returns the tensors this one is computed from (tensor->src).
func (t *Tensor) Sources() []*Tensor {
	if !t.live() {
		return nil
	}
	return append([]*Tensor(nil), t.srcs...)
}

// ViewSource returns the tensor whose memory this view uses, or nil when the
// tensor is not a view (tensor->view_src).
func (t *Tensor) ViewSource() *Tensor {
	if !t.live() {
		return nil
	}
	return t.viewSrc
}

// ViewOffset returns the byte offset of a view in its source's memory
// (tensor->view_offs).
func (t *Tensor) ViewOffset() uint64 {
	defer runtime.KeepAlive(t)
	if !t.live() {
		return 0
	}
	return uint64(t.c.view_offs)
}

// IsAllocated reports whether the tensor has memory and that memory is still
// alive.
func (t *Tensor) IsAllocated() bool { return bridge.View[bridge.Tensor](t).StorageErr() == nil }

// buffer returns the backend buffer that holds the tensor's data, or nil
// when the data lives in a context pool.
func (t *Tensor) buffer() *C.struct_ggml_backend_buffer { return bufferOf(t.c) }

// String describes the tensor: name, type and shape, e.g. `x f32[4 3]`.
func (t *Tensor) String() string { return bridge.View[bridge.Tensor](t).String() }

// describe is String, for error messages.
func (t *Tensor) describe() string { return t.String() }
