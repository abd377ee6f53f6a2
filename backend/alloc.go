package backend

/*
#include "goggml.h"

// goggml_tensor_alloc_at places t at offset bytes into buf. The address is
// made here, not in Go: a GPU buffer's base is a placeholder (Vulkan's is
// 0x1000), and base+offset as a Go unsafe.Pointer argument can land in the
// Go binary's data, where cgo's pointer check panics on it.
static enum ggml_status goggml_tensor_alloc_at(ggml_backend_buffer_t buf, struct ggml_tensor * t, size_t offset) {
	return ggml_backend_tensor_alloc(buf, t, (char *) ggml_backend_buffer_get_base(buf) + offset);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// TensorAlloc places tensor t at offset bytes into buffer buf
// (ggml_backend_tensor_alloc). t must be a tensor of a NoAlloc context with
// no memory yet and not a view; it must fit in the buffer. t keeps buf
// alive.
func TensorAlloc(buf *Buffer, t *ggml.Tensor, offset uint64) (err error) {
	var h life.Holds
	defer h.Release()
	if err := buf.hold(&h); err != nil {
		return err
	}
	tc, err := tensorPtr(t)
	if err != nil {
		return err
	}
	if err := placeable("TensorAlloc", tc); err != nil {
		return err
	}
	if err := checkExtraPlacement("TensorAlloc", C.ggml_backend_buffer_get_type(buf.c), tc); err != nil {
		return err
	}
	if C.goggml_buffer_is_meta(buf.c) {
		return errMetaPlacement("TensorAlloc")
	}
	release, err := bridge.View[bridge.Context](t.Context()).Claim()
	if err != nil {
		return err
	}
	defer release()

	defer runtime.KeepAlive(buf)
	defer runtime.KeepAlive(t)
	if err := hasBase("TensorAlloc", buf); err != nil {
		return err
	}
	size := uint64(C.ggml_backend_buffer_get_alloc_size(buf.c, tc))
	total := uint64(C.ggml_backend_buffer_get_size(buf.c))
	if offset > total || size > total-offset {
		return fmt.Errorf("%w: TensorAlloc: tensor %v needs %d bytes at offset %d of a %d-byte buffer", ggml.ErrNoMemory, t, size, offset, total)
	}
	if align := uint64(C.ggml_backend_buffer_get_alignment(buf.c)); align > 1 && offset%align != 0 {
		return fmt.Errorf("%w: TensorAlloc: offset %d is not a multiple of the buffer's alignment %d", ggml.ErrInvalid, offset, align)
	}
	defer life.Catch(&err)
	if err := statusErr(C.goggml_tensor_alloc_at(buf.c, tc, C.size_t(offset))); err != nil {
		return err
	}
	bridge.View[bridge.Tensor](t).SetLease(buf.life, buf)
	return nil
}

// hasBase checks that tensors can be placed at addresses in buf: a
// multi-buffer has no base address (ggml returns NULL).
func hasBase(op string, buf *Buffer) error {
	if bool(C.ggml_backend_buffer_is_multi_buffer(buf.c)) {
		return fmt.Errorf("%w: %s: a multi-buffer has no addresses of its own; place tensors in its parts", ErrUnsupported, op)
	}
	return nil
}

// placeable checks what ggml asserts before placing a tensor in a buffer.
func placeable(op string, tc *C.struct_ggml_tensor) error {
	switch {
	case tc.view_src != nil:
		return fmt.Errorf("%w: %s: %q is a view; views get their memory from their source (ViewInit)", ggml.ErrInvalid, op, C.GoString(&tc.name[0]))
	case tc.data != nil || tc.buffer != nil:
		return fmt.Errorf("%w: %s: %q already has memory", ggml.ErrInvalid, op, C.GoString(&tc.name[0]))
	}
	return nil
}

// ViewInit gives view t the memory of its source, which must be allocated
// in a buffer (ggml_backend_view_init). Views in a context are set up by
// AllocContextTensors; this is for views made afterwards that need their
// buffer recorded (TensorCopy and async calls use it).
func ViewInit(t *ggml.Tensor) (err error) {
	tc, err := tensorPtr(t)
	if err != nil {
		return err
	}
	switch {
	case tc.view_src == nil:
		return fmt.Errorf("%w: ViewInit: %v is not a view", ggml.ErrInvalid, t)
	case tc.buffer != nil:
		return fmt.Errorf("%w: ViewInit: view %v is already initialized", ggml.ErrInvalid, t)
	}
	var h life.Holds
	defer h.Release()
	if _, err := storage(t.ViewSource(), &h); err != nil {
		return fmt.Errorf("ViewInit: the view's source: %w", err)
	}
	if tc.view_src.buffer == nil {
		return fmt.Errorf("%w: ViewInit: the source of %v lives in a context's memory, not in a buffer", ggml.ErrInvalid, t)
	}
	defer runtime.KeepAlive(t)
	defer life.Catch(&err)
	return statusErr(C.ggml_backend_view_init(tc))
}

// Tallocr places tensors one after another in a buffer (struct
// ggml_tallocr). It keeps its buffer alive. Use it from one goroutine.
type Tallocr struct {
	_   life.NoCopy
	c   C.struct_ggml_tallocr
	buf *Buffer
}

// NewTallocr starts placing tensors at the beginning of buf
// (ggml_tallocr_new).
func NewTallocr(buf *Buffer) (*Tallocr, error) {
	if err := buf.usable(); err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(buf)
	if C.goggml_buffer_is_meta(buf.c) {
		return nil, errMetaPlacement("NewTallocr")
	}
	if err := hasBase("NewTallocr", buf); err != nil {
		return nil, err
	}
	return &Tallocr{c: C.ggml_tallocr_new(buf.c), buf: buf}, nil
}

// Alloc places tensor t after the previous one, aligned
// (ggml_tallocr_alloc). ErrNoMemory when the buffer is full.
func (a *Tallocr) Alloc(t *ggml.Tensor) (err error) {
	if a == nil {
		return fmt.Errorf("%w: nil *Tallocr", ggml.ErrInvalid)
	}
	var h life.Holds
	defer h.Release()
	if err := a.buf.hold(&h); err != nil {
		return err
	}
	tc, err := tensorPtr(t)
	if err != nil {
		return err
	}
	if err := placeable("Tallocr.Alloc", tc); err != nil {
		return err
	}
	if err := checkExtraPlacement("Tallocr.Alloc", C.ggml_backend_buffer_get_type(a.buf.c), tc); err != nil {
		return err
	}
	release, err := bridge.View[bridge.Context](t.Context()).Claim()
	if err != nil {
		return err
	}
	defer release()

	defer runtime.KeepAlive(a.buf)
	defer runtime.KeepAlive(t)
	// An RPC buffer asks its server for the size: an abort there (a
	// failed exchange) is an error.
	defer life.Catch(&err)
	size := uint64(C.ggml_backend_buffer_get_alloc_size(a.buf.c, tc))
	align := uint64(a.c.alignment)
	size = (size + align - 1) / align * align
	total := uint64(C.ggml_backend_buffer_get_size(a.buf.c))
	if off := uint64(a.c.offset); off > total || size > total-off {
		return fmt.Errorf("%w: Tallocr.Alloc: tensor %v needs %d bytes, the buffer has %d left", ggml.ErrNoMemory, t, size, total-min(off, total))
	}
	if err := statusErr(C.ggml_tallocr_alloc(&a.c, tc)); err != nil {
		return err
	}
	bridge.View[bridge.Tensor](t).SetLease(a.buf.life, a.buf)
	return nil
}

// Gallocr allocates the tensors of graphs in buffers it owns, one per buffer
// type, reusing memory between tensors whose lifetimes do not overlap
// (ggml_gallocr_t). It allocates one graph at a time: an allocation or
// reservation started while another runs is ggml.ErrBusy. Close frees it
// and its buffers; an unreachable Gallocr is freed by the garbage collector
// once no tensor it placed is reachable.
//
// Tensors it placed keep it alive. Their memory stays valid until the
// allocator's buffers are replaced (by Reserve, or by an allocation that
// needs larger buffers) or it is closed; afterwards they report
// ggml.ErrClosed, and allocating their graph again places them anew. Note
// that, as in ggml, allocating another graph reuses the same memory: the
// earlier graph's tensors then read the new graph's data.
type Gallocr struct {
	_       life.NoCopy
	c       C.ggml_gallocr_t // set at birth, never changed
	life    *life.Life
	placed  *life.Life // the lifetime of the tensors placed last: a child of life
	bts     []*BufferType
	failed  bool    // the last reservation failed: ggml left a buffer NULL
	links   linkSet // the RPC connections of its buffer types
	cleanup runtime.Cleanup
}

// newPlacement ends the tensors placed so far (their memory may be reused
// or replaced) and starts a new lifetime for those placed next.
func (a *Gallocr) newPlacement() {
	if a.placed != nil {
		a.placed.Close("", false)
	}
	a.placed = life.NewPlacement(a.life, fmt.Errorf("%w: the graph allocator placed other tensors since; allocate this graph again", ggml.ErrClosed))
}

// change starts a change of where graph g's tensors live (g nil: of the
// tensors placed so far only): see bridge.Quiesce.
func (a *Gallocr) change(g *ggml.Graph) (done func(), err error) {
	return bridge.Quiesce(bridge.View[bridge.Graph](g), "the tensors the graph allocator placed", func() *life.Life { return a.placed })
}

// NewGallocr creates a graph allocator over one or more buffer types; with
// several, Reserve says which tensors go where (ggml_gallocr_new_n).
func NewGallocr(bts ...*BufferType) (*Gallocr, error) {
	if len(bts) == 0 {
		return nil, fmt.Errorf("%w: NewGallocr needs at least one buffer type", ggml.ErrInvalid)
	}
	cb := (*C.ggml_backend_buffer_type_t)(C.malloc(C.size_t(len(bts)) * C.size_t(unsafe.Sizeof(C.ggml_backend_buffer_type_t(nil)))))
	defer C.free(unsafe.Pointer(cb))
	arr := unsafe.Slice(cb, len(bts))
	for i, bt := range bts {
		if err := bt.usable(); err != nil {
			return nil, fmt.Errorf("NewGallocr: buffer type %d: %w", i, err)
		}
		if bt.IsCPUExtra() {
			return nil, errExtraCompute("NewGallocr", bt)
		}
		arr[i] = bt.c
	}
	c := C.ggml_gallocr_new_n(cb, C.int(len(bts)))
	if c == nil {
		return nil, fmt.Errorf("%w: ggml_gallocr_new_n", ggml.ErrNoMemory)
	}
	a := &Gallocr{c: c, bts: append([]*BufferType(nil), bts...)}
	for _, bt := range bts {
		a.links = append(a.links, bt.link()...)
	}
	links := a.links
	a.life = life.New(nil, fmt.Errorf("%w: the graph allocator that placed the tensor is closed", ggml.ErrClosed), func() {
		life.FreeOver(links, func() { C.ggml_gallocr_free(c) })
	})
	a.newPlacement()
	a.cleanup = runtime.AddCleanup(a, life.CloseCollected, a.life)
	life.Leaks.Opened("Gallocr", a.life)
	return a, nil
}

func (a *Gallocr) usable() error {
	if a == nil {
		return fmt.Errorf("%w: nil *Gallocr", ggml.ErrInvalid)
	}
	if a.life.Closed() {
		return fmt.Errorf("%w: the graph allocator is closed", ggml.ErrClosed)
	}
	for _, k := range a.links {
		if err := k.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Close frees the allocator and its buffers (ggml_gallocr_free) once no
// compute or transfer in flight uses tensors it placed; those tensors report
// ggml.ErrClosed at once. It is idempotent and safe on nil.
func (a *Gallocr) Close() error {
	if a == nil || a.life.Closed() {
		return nil
	}
	a.cleanup.Stop()
	life.Leaks.Closed(a.life)
	return a.life.Close("the graph allocator", false)
}

// graphPtr returns the C graph of a usable graph (bridge.Graph.Ptr).
func graphPtr(g *ggml.Graph) (*C.struct_ggml_cgraph, error) {
	p, err := bridge.View[bridge.Graph](g).Ptr()
	return (*C.struct_ggml_cgraph)(p), err
}

// Reserve sizes the buffers for graph g, the largest graph to come, so that
// later allocations need not grow them (ggml_gallocr_reserve). With several
// buffer types every tensor goes to the first.
func (a *Gallocr) Reserve(g *ggml.Graph) error {
	return a.ReserveN(g, nil, nil)
}

// ReserveN is Reserve with the buffer (an index into the allocator's buffer
// types) of each node and each leaf of g; nil slices mean buffer 0 for all
// (ggml_gallocr_reserve_n).
func (a *Gallocr) ReserveN(g *ggml.Graph, nodeBuffers, leafBuffers []int) (err error) {
	if err := a.usable(); err != nil {
		return err
	}
	if err := a.life.Enter("the graph allocator"); err != nil {
		return err
	}
	defer a.life.Leave()
	done, err := a.change(g)
	if err != nil {
		return err
	}
	defer done()
	return a.reserveN(g, nodeBuffers, leafBuffers)
}

func (a *Gallocr) reserveN(g *ggml.Graph, nodeBuffers, leafBuffers []int) (err error) {
	gp, nodes, leafs, free, err := a.reserveArgs(g, nodeBuffers, leafBuffers)
	if err != nil {
		return err
	}
	defer free()
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(a)
	defer life.Catch(&err)
	a.newPlacement() // buffers may be replaced: what was placed before is gone
	if !bool(C.ggml_gallocr_reserve_n(a.c, gp, nodes, leafs)) {
		a.failed = true
		return fmt.Errorf("%w: could not allocate the graph allocator's buffers", ggml.ErrNoMemory)
	}
	a.failed = false
	return nil
}

// reserveArgs are the C arguments of a reservation of g: the graph, and
// the buffer of each node and leaf (checked; see ReserveN). Call free after.
func (a *Gallocr) reserveArgs(g *ggml.Graph, nodeBuffers, leafBuffers []int) (gp *C.struct_ggml_cgraph, nodes, leafs *C.int, free func(), err error) {
	if gp, err = graphPtr(g); err != nil {
		return nil, nil, nil, nil, err
	}
	if nodes, err = a.bufferIDs("node", nodeBuffers, g.NumNodes()); err != nil {
		return nil, nil, nil, nil, err
	}
	if leafs, err = a.bufferIDs("leaf", leafBuffers, g.NumLeafs()); err != nil {
		C.free(unsafe.Pointer(nodes))
		return nil, nil, nil, nil, err
	}
	return gp, nodes, leafs, func() { C.free(unsafe.Pointer(nodes)); C.free(unsafe.Pointer(leafs)) }, nil
}

// bufferIDs copies ids (or zeros) for n tensors into C memory, checked.
func (a *Gallocr) bufferIDs(what string, ids []int, n int) (*C.int, error) {
	if ids != nil && len(ids) != n {
		return nil, fmt.Errorf("%w: %d %s buffer ids for a graph of %d %ss", ggml.ErrInvalid, len(ids), what, n, what)
	}
	p := (*C.int)(C.calloc(C.size_t(max(n, 1)), C.sizeof_int))
	out := unsafe.Slice(p, max(n, 1))
	for i, id := range ids {
		if id < 0 || id >= len(a.bts) {
			C.free(unsafe.Pointer(p))
			return nil, fmt.Errorf("%w: %s %d: buffer id %d, the allocator has %d buffer types", ggml.ErrInvalid, what, i, id, len(a.bts))
		}
		out[i] = C.int(id)
	}
	return p, nil
}

// AllocGraph places every tensor of g that has no memory yet
// (ggml_gallocr_alloc_graph). With one buffer type it grows the buffer when
// needed; with several, Reserve first. Allocating the same graph again (to
// compute it with new inputs) places it anew. While a compute or transfer
// uses a tensor it placed (on another goroutine, or from a custom op of that
// compute), it and Reserve change nothing and return ggml.ErrBusy: they may
// replace the memory that work reads.
func (a *Gallocr) AllocGraph(g *ggml.Graph) (err error) {
	if err := a.usable(); err != nil {
		return err
	}
	if err := a.life.Enter("the graph allocator"); err != nil {
		return err
	}
	defer a.life.Leave()
	done, err := a.change(g)
	if err != nil {
		return err
	}
	defer done()
	gp, err := graphPtr(g)
	if err != nil {
		return err
	}
	// Tensors an earlier allocation placed (their memory may be gone) are
	// placed anew, and so are the views of them.
	ts := bridge.View[bridge.Graph](g).Tensors()
	reset := map[*C.struct_ggml_tensor]bool{}
	for _, t := range ts {
		// Placed by this allocator before, or by an allocation that ended
		// (a scheduler's that was reset, say): placed anew.
		if l := t.Lease(); l != nil && (l.Parent() == a.life || l.Ended()) {
			t.ResetStorage()
			reset[(*C.struct_ggml_tensor)(t.C())] = true
		}
	}
	var fresh []*bridge.Tensor
	for _, t := range ts {
		tc := (*C.struct_ggml_tensor)(t.C())
		if tc.view_src != nil && reset[tc.view_src] {
			tc.buffer, tc.data = nil, nil
		}
		if tc.data == nil && tc.view_src == nil {
			fresh = append(fresh, t)
		}
		// Memory placed by others must still be there: ggml would use it.
		if l := t.Lease(); l != nil && !reset[tc] {
			if err := l.Err(); err != nil {
				return fmt.Errorf("AllocGraph: graph tensor %v: %w", t, err)
			}
		}
		if vs := t.ViewSource(); vs != nil {
			if l := vs.Lease(); l != nil && !reset[tc.view_src] {
				if err := l.Err(); err != nil {
					return fmt.Errorf("AllocGraph: the source of graph tensor %v: %w", t, err)
				}
			}
		}
	}
	// A meta buffer type places each node by its split: what it would
	// assert is checked first.
	for _, bt := range a.bts {
		if m := metaOfBufferType(bt.c); m != nil {
			if err := m.checkGraph(bridge.View[bridge.Graph](g), false); err != nil {
				return err
			}
			break
		}
	}
	// After a failed reservation ggml left a buffer NULL yet thinks it fits:
	// reserve again first (with one buffer type it is this graph's own).
	if a.failed {
		if len(a.bts) > 1 {
			return fmt.Errorf("%w: the last reservation failed; call ReserveN again before allocating", ggml.ErrNoMemory)
		}
		if err := a.reserveN(g, nil, nil); err != nil {
			return err
		}
		// The reservation bumped the generation; place the tensors now.
	}
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(a)
	defer life.Catch(&err)
	before := a.sizes()
	ok := bool(C.ggml_gallocr_alloc_graph(a.c, gp))
	if changed(before, a.sizes()) {
		a.newPlacement()
	}
	if !ok {
		a.failed = true
		if len(a.bts) > 1 {
			return fmt.Errorf("%w: the graph does not fit the reserved buffers; call Reserve with it first", ggml.ErrNoMemory)
		}
		return fmt.Errorf("%w: could not allocate the graph allocator's buffer", ggml.ErrNoMemory)
	}
	for _, t := range fresh {
		t.SetLease(a.placed, a)
	}
	return nil
}

func (a *Gallocr) sizes() []uint64 {
	s := make([]uint64, len(a.bts))
	for i := range s {
		s[i] = uint64(C.ggml_gallocr_get_buffer_size(a.c, C.int(i)))
	}
	return s
}

func changed(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return true
		}
	}
	return false
}

// BufferSize returns the size of the allocator's buffer id, 0 before
// anything was reserved (ggml_gallocr_get_buffer_size).
func (a *Gallocr) BufferSize(id int) (uint64, error) {
	if err := a.usable(); err != nil {
		return 0, err
	}
	if id < 0 || id >= len(a.bts) {
		return 0, fmt.Errorf("%w: buffer id %d, the allocator has %d", ggml.ErrInvalid, id, len(a.bts))
	}
	defer runtime.KeepAlive(a)
	return uint64(C.ggml_gallocr_get_buffer_size(a.c, C.int(id))), nil
}

// AttemptedBufferSize returns the size the allocator last tried to give
// buffer id, also when that failed (ggml_gallocr_get_attempted_buffer_size).
// Only the embedded provider's ggml has it: with another provider it
// returns an ErrUnsupported error.
func (a *Gallocr) AttemptedBufferSize(id int) (uint64, error) {
	if err := a.usable(); err != nil {
		return 0, err
	}
	if !haveOllamaExtras {
		return 0, embeddedOnly("Gallocr.AttemptedBufferSize (ggml_gallocr_get_attempted_buffer_size)")
	}
	if id < 0 || id >= len(a.bts) {
		return 0, fmt.Errorf("%w: buffer id %d, the allocator has %d", ggml.ErrInvalid, id, len(a.bts))
	}
	defer runtime.KeepAlive(a)
	return uint64(C.goggml_gallocr_get_attempted_buffer_size(a.c, C.int(id))), nil
}

// ReserveSizes returns the size of each buffer that reserving graph g would
// need, allocating nothing (ggml_gallocr_reserve_n_size). It measures with
// a scratch allocator of the same buffer types: on the allocator itself,
// ggml's size query leaves buffers that a later allocation would crash on.
func (a *Gallocr) ReserveSizes(g *ggml.Graph, nodeBuffers, leafBuffers []int) (sizes []uint64, err error) {
	if err := a.usable(); err != nil {
		return nil, err
	}
	gp, nodes, leafs, free, err := a.reserveArgs(g, nodeBuffers, leafBuffers)
	if err != nil {
		return nil, err
	}
	defer free()
	scratch, err := NewGallocr(a.bts...)
	if err != nil {
		return nil, err
	}
	defer scratch.Close()
	out := (*C.size_t)(C.calloc(C.size_t(len(a.bts)), C.sizeof_size_t))
	defer C.free(unsafe.Pointer(out))
	defer runtime.KeepAlive(g)
	defer life.Catch(&err)
	C.ggml_gallocr_reserve_n_size(scratch.c, gp, nodes, leafs, out)
	sizes = make([]uint64, len(a.bts))
	for i, v := range unsafe.Slice(out, len(a.bts)) {
		sizes[i] = uint64(v)
	}
	return sizes, nil
}
