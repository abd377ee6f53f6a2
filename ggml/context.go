package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
	"github.com/go-ggml/ggml/internal/sysmem"
)

// DefaultGraphSize is the node capacity of a graph when none is given
// (GGML_DEFAULT_GRAPH_SIZE).
const DefaultGraphSize = 2048

var (
	tensorOverhead = uint64(C.ggml_tensor_overhead())
	objectSize     = tensorOverhead - uint64(C.sizeof_struct_ggml_tensor)
)

// ContextParams says how much a Context can hold. ggml keeps tensor metadata
// (and, unless NoAlloc, tensor data) in one memory pool per context, sized
// once at creation; go-ggml computes that size from these fields.
type ContextParams struct {
	// MaxTensors is how many tensors the context can hold: tensors made
	// with NewTensor and the results of ops, views included.
	MaxTensors int
	// MemSize is the number of bytes for tensor data in the context's own
	// memory. Leave it 0 with NoAlloc.
	MemSize uint64
	// NoAlloc makes the context hold metadata only: tensor data is then
	// allocated in a backend buffer (backend.AllocContextTensors) or by a
	// graph allocator. This is how backends are used.
	NoAlloc bool
	// Graph reserves room for one graph of GraphSize nodes, for BuildGraph.
	Graph bool
	// Grads makes Graph's room that of a graph with gradients
	// (NewGradGraph, for BuildBackward), which is larger.
	Grads bool
	// GraphSize is the node capacity of graphs built in this context,
	// at most MaxGraphSize; 0 means DefaultGraphSize.
	GraphSize int
}

// Context holds tensors and graphs: ggml's struct ggml_context. Ops are
// methods of the context that will own their result.
//
// Graph building uses sticky errors: an op whose inputs break ggml's rules
// records an error on the context and returns a poisoned tensor that later
// ops pass along; Err reports the first such error, and BuildGraph,
// allocation and compute refuse to run while it is set.
//
// A Context is used by one goroutine at a time: an op, NewTensor or
// NewGraph that overlaps another goroutine's on the same context returns
// an ErrBusy result instead of running ggml's constructors on its pool
// twice at once. Close frees it; a Context
// that is no longer reachable (nor any of its tensors) is freed by the
// garbage collector.
type Context struct {
	// The fields up to life are bridge.Context's, in its order (see
	// Tensor).
	contextKind
	c   *C.struct_ggml_context
	err atomic.Pointer[error] // the sticky error; see stickyErr
	// life counts the computes and transfers in flight that read the
	// context's tensors: Close refuses (ErrBusy) while there are any.
	life      *life.Life
	_         life.NoCopy
	pool      unsafe.Pointer // the memory pool lent to ggml (C memory); nil if borrowed
	noAlloc   bool
	memSize   uint64
	graphSize int
	// maxTensors and dataBytes are ContextParams.MaxTensors and MemSize,
	// for the error that says which to raise.
	maxTensors int
	dataBytes  uint64
	// graphRoom is the part of the pool ContextParams.Graph reserved for
	// the first graph: tensors cannot take it (their error then names
	// MaxTensors, not the graph); 0 once a graph took it.
	graphRoom atomic.Uint64
	tensors   []*Tensor     // every wrapper born in this context
	slab      []*Tensor     // room for the next ops' source slices
	tslab     []Tensor      // room for the next tensor handles (wrap)
	used      atomic.Uint64 // bytes of the pool in use, as ggml_used_mem reports them
	// inC is held while ggml's constructors run on the context's pool, which
	// two goroutines must not do at once (enterC).
	inC      atomic.Bool
	borrowed bool // owned by ggml (a graph copy): no ops, no Close
	cleanup  runtime.Cleanup
	// inPlaceOf is set while an in-place op is built: its result is a
	// view of this tensor and takes no data of its own. Atomic: two
	// goroutines that misuse one context read and write it at once (the
	// worst a stale value does is a room check off by one tensor's data,
	// which ggml's own check, recovered in call, still catches).
	inPlaceOf atomic.Pointer[Tensor]
	// custom holds the Go functions of custom ops (see custom.go).
	custom        *customSet
	customCleanup runtime.Cleanup
}

// contextKind marks Context for bridge.View[bridge.Context] (see tensorKind).
type contextKind = bridge.Kind[bridge.Context]

// NewContext creates a context sized by p (ggml_init). Its pool is
// allocated in C memory by go-ggml and lent to ggml; a pool that cannot be
// allocated, or is larger than the machine's memory (on Linux, RAM plus
// swap, or the cgroup's limit), is ErrNoMemory.
func NewContext(p ContextParams) (*Context, error) {
	if p.MaxTensors <= 0 {
		return nil, fmt.Errorf("%w: ContextParams.MaxTensors must be > 0, got %d", ErrInvalid, p.MaxTensors)
	}
	if p.GraphSize < 0 || p.GraphSize > MaxGraphSize {
		return nil, fmt.Errorf("%w: ContextParams.GraphSize must be 0 to %d, got %d", ErrInvalid, MaxGraphSize, p.GraphSize)
	}
	if p.NoAlloc && p.MemSize != 0 {
		return nil, fmt.Errorf("%w: ContextParams.MemSize must be 0 with NoAlloc (data lives in backend buffers)", ErrInvalid)
	}
	graphSize := p.GraphSize
	if graphSize == 0 {
		graphSize = DefaultGraphSize
	}
	// Objects are padded to memAlign: reserve that much per tensor so that
	// MemSize is what the caller's data needs.
	hi, meta := bits.Mul64(uint64(p.MaxTensors), tensorOverhead+memAlign)
	size, carry := bits.Add64(meta, p.MemSize, 0)
	if hi != 0 || carry != 0 || size > math.MaxInt64/2 {
		return nil, fmt.Errorf("%w: context of %d tensors and %d bytes is too large", ErrNoMemory, p.MaxTensors, p.MemSize)
	}
	var reserved uint64
	if p.Graph {
		g, err := GraphOverhead(graphSize)
		if p.Grads {
			g, err = GradGraphOverhead(graphSize)
		}
		if err != nil {
			return nil, err
		}
		reserved = g
		if size += g; size > math.MaxInt64/2 {
			return nil, fmt.Errorf("%w: context of %d tensors, %d bytes and a graph of %d nodes is too large", ErrNoMemory, p.MaxTensors, p.MemSize, graphSize)
		}
	}
	size = pad(size, memAlign) // what ggml_init would make of it
	// The pool is allocated here and lent to ggml (mem_buffer: ggml does
	// not own it), so that a failed allocation is an error: ggml asserts
	// on it. A pool larger than the machine's memory is refused too: on
	// Linux its malloc may succeed and the process be killed when it is
	// used.
	if avail, known := availableMemory(); known && size > avail {
		return nil, fmt.Errorf("%w: a context pool of %d bytes, %d are available", ErrNoMemory, size, avail)
	}
	buf := C.aligned_alloc(poolAlign, C.size_t(pad(size, poolAlign)))
	if buf == nil {
		return nil, fmt.Errorf("%w: cannot allocate a context pool of %d bytes", ErrNoMemory, size)
	}
	var c *C.struct_ggml_context
	err := func() (err error) {
		defer life.Catch(&err) // a check missing here: an error, not an abort
		c = C.ggml_init(C.struct_ggml_init_params{mem_size: C.size_t(size), mem_buffer: buf, no_alloc: C.bool(p.NoAlloc)})
		return nil
	}()
	if err == nil && c == nil {
		err = fmt.Errorf("%w: ggml_init failed", ErrNoMemory)
	}
	if err != nil {
		C.free(buf)
		return nil, err
	}
	ctx := &Context{c: c, pool: buf, noAlloc: p.NoAlloc, memSize: size, graphSize: graphSize, life: newContextLife(),
		maxTensors: p.MaxTensors, dataBytes: p.MemSize,
		tensors: make([]*Tensor, 0, min(p.MaxTensors, 1<<14))}
	ctx.graphRoom.Store(reserved)
	ctx.cleanup = runtime.AddCleanup(ctx, collectContext, contextRes{c: c, pool: buf})
	life.Leaks.Opened("Context", c)
	return ctx, nil
}

// poolAlign is the alignment of a context's pool, ggml_aligned_malloc's
// (ggml asserts GGML_MEM_ALIGN).
const poolAlign = 64

// availableMemory is sysmem.Available; tests replace it.
var availableMemory = sysmem.Available

// contextRes is what the cleanup of a context frees; no Go pointers.
type contextRes struct {
	c    *C.struct_ggml_context
	pool unsafe.Pointer
}

// collectContext is the cleanup of a context never closed.
func collectContext(r contextRes) {
	life.Leaks.Collected(r.c)
	freeContext(r)
}

// freeContext frees a context and then its pool, which ggml does not own.
func freeContext(r contextRes) {
	C.ggml_free(r.c)
	C.free(r.pool)
}

func newContextLife() *life.Life {
	return life.NewExclusive(fmt.Errorf("%w: the context is closed", ErrClosed))
}

// Close frees the context and the memory of its tensors (ggml_free). Its
// tensors and graphs become unusable: their methods report ErrClosed or
// zero values. Close is idempotent and safe on nil. While a compute or a
// data transfer reads the context's tensors (on another goroutine, or the
// compute that runs the calling custom op) Close changes nothing and
// returns ErrBusy.
func (c *Context) Close() error {
	if c == nil || c.c == nil || c.borrowed {
		return nil // a borrowed context is freed by what owns it
	}
	if err := c.life.Close("the context", true); err != nil {
		return err
	}
	c.cleanup.Stop()
	life.Leaks.Closed(c.c)
	freeContext(contextRes{c: c.c, pool: c.pool})
	c.c, c.pool = nil, nil
	if c.custom != nil {
		c.customCleanup.Stop()
		c.custom.handles.free()
		c.custom = nil
	}
	for _, t := range c.tensors {
		t.c = nil
		t.srcs = nil
	}
	c.tensors, c.slab, c.tslab = nil, nil, nil
	return nil
}

// Err returns the first error recorded by an op or graph call on this
// context, or nil.
func (c *Context) Err() error {
	if c == nil {
		return fmt.Errorf("%w: nil *Context", ErrInvalid)
	}
	return c.stickyErr()
}

// UsedMem returns the bytes of the context's pool in use (ggml_used_mem).
func (c *Context) UsedMem() uint64 {
	if c == nil || c.c == nil {
		return 0
	}
	defer runtime.KeepAlive(c)
	return uint64(C.ggml_used_mem(c.c))
}

// MemSize returns the size in bytes of the context's pool (ggml_get_mem_size).
func (c *Context) MemSize() uint64 {
	if c == nil || c.c == nil {
		return 0
	}
	return c.memSize
}

// NoAlloc reports whether the context holds metadata only (ggml_get_no_alloc).
func (c *Context) NoAlloc() bool { return c != nil && c.noAlloc }

// Tensors returns the tensors created in this context, in creation order
// (ggml_get_first_tensor / ggml_get_next_tensor, seen from Go).
func (c *Context) Tensors() []*Tensor {
	if c == nil || c.c == nil {
		return nil
	}
	return append([]*Tensor(nil), c.tensors...)
}

// Tensor returns the tensor of this context with the given name, or nil
// (ggml_get_tensor).
func (c *Context) Tensor(name string) *Tensor {
	if c == nil || c.c == nil {
		return nil
	}
	for _, t := range c.tensors {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

// dataSize returns the bytes a contiguous tensor of type t and shape ne
// needs, as ggml_new_tensor_impl computes it, or an error on overflow.
func dataSize(t Type, ne [MaxDims]int64) (uint64, error) {
	row, err := t.RowSize(ne[0])
	if err != nil {
		return 0, err
	}
	size := row
	for _, n := range ne[1:] {
		if n < 0 {
			return 0, fmt.Errorf("%w: negative dimension in %v", ErrShape, ne)
		}
		hi, lo := bits.Mul64(size, uint64(n))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("%w: tensor %v of %v is larger than 2^63 bytes", ErrShape, ne, t)
		}
		size = lo
	}
	var elems uint64 = 1
	for _, n := range ne {
		hi, lo := bits.Mul64(elems, uint64(n))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("%w: tensor %v has more than 2^63 elements", ErrShape, ne)
		}
		elems = lo
	}
	return size, nil
}
