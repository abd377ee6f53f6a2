package bridge

/*
#include "goggml.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/internal/life"
)

// Tensor is the view of a *ggml.Tensor (see views.go): package ggml's
// Tensor begins with these fields. Its methods are what ggml and the
// packages that place and compute tensors share: whether the tensor can be
// used, what keeps its data alive, where its data lives.
type Tensor struct {
	Kind[Tensor]
	ctx     *Context
	c       *C.struct_ggml_tensor // nil on a poisoned tensor and once the context is closed
	err     error                 // set on a poisoned tensor
	srcs    []*Tensor             // Go mirror of c.src
	viewSrc *Tensor               // the tensor whose memory a view uses
	store   TensorStore
}

// Owner is a handle whose Close ends the lifetime of memory that tensors
// live in (a Buffer, a graph allocator, a scheduler, a graph copy). A
// tensor placed in that memory keeps its owner reachable, so the owner's
// cleanup cannot free the memory under it.
type Owner interface{ Close() error }

// TensorStore is where a tensor's data lives, as go-ggml tracks it: the
// lifetime of the memory (a lease), the handle that owns that memory, and
// the computes that read the data as indices. Package ggml's Tensor holds
// one; only this package reads or writes it.
type TensorStore struct {
	lease *life.Life // set on allocation in a buffer (not on views)
	owner Owner      // the handle whose memory the lease stands for
	// idxReaders counts the running computes that read this tensor's
	// memory as indices checked before they started; -1 while a write
	// through the API runs (see LockWrite).
	idxReaders atomic.Int32
	// host remembers whether the buffer of the tensor's current placement
	// is in host memory (see InHostMemory).
	host atomic.Pointer[hostPlacement]
}

// hostPlacement is one answer of InHostMemory: for the placement with
// this lease in this buffer.
type hostPlacement struct {
	lease *life.Life
	buf   unsafe.Pointer
	host  bool
}

// Live reports whether t is a usable tensor (not poisoned, context open).
func (t *Tensor) Live() bool { return t != nil && t.c != nil && t.ctx != nil && t.ctx.c != nil }

// Usable returns why t cannot be used, or nil.
func (t *Tensor) Usable() error {
	switch {
	case t == nil:
		return fmt.Errorf("%w: nil *Tensor", life.ErrInvalid)
	case t.err != nil:
		return t.err
	case !t.Live():
		return fmt.Errorf("%w: the tensor's context is closed", life.ErrClosed)
	}
	return nil
}

// Ptr returns the *C.struct_ggml_tensor of a usable tensor.
func (t *Tensor) Ptr() (unsafe.Pointer, error) {
	if err := t.Usable(); err != nil {
		return nil, err
	}
	return unsafe.Pointer(t.c), nil
}

// C returns the *C.struct_ggml_tensor, nil on a poisoned tensor and once
// the context is closed (Ptr says why).
func (t *Tensor) C() unsafe.Pointer { return unsafe.Pointer(t.c) }

// base returns the tensor whose memory t uses: its view source, or t.
func (t *Tensor) base() *Tensor {
	if t.viewSrc != nil {
		return t.viewSrc
	}
	return t
}

// StorageErr returns why t's data cannot be read or written now (not
// allocated, its memory gone), or nil; it holds nothing.
func (t *Tensor) StorageErr() error {
	defer runtime.KeepAlive(t)
	if err := t.Usable(); err != nil {
		return err
	}
	base := t.base()
	if base != t && !base.Live() {
		return fmt.Errorf("%w: the context of the view's source tensor is closed", life.ErrClosed)
	}
	if base.store.lease != nil {
		if err := base.store.lease.Err(); err != nil {
			return err
		}
	}
	if t.c.data == nil {
		return fmt.Errorf("%w: tensor %s has no memory yet: allocate it (backend.AllocContextTensors, or a scheduler's AllocGraph)", life.ErrNotAllocated, t.describe())
	}
	return nil
}

// Hold acquires, into h, what reading or writing t's data needs alive: its
// context, its view source's context, and the memory it lives in; then it
// checks that the data can be used now (see StorageErr).
func (t *Tensor) Hold(h *life.Holds) error {
	if t == nil {
		return fmt.Errorf("%w: nil *Tensor", life.ErrInvalid)
	}
	if t.err != nil {
		return t.err
	}
	if t.ctx != nil {
		if err := h.Add(t.ctx.life); err != nil {
			return err
		}
	}
	if vs := t.viewSrc; vs != nil && vs.ctx != nil {
		if err := h.Add(vs.ctx.life); err != nil {
			return err
		}
	}
	if !t.Live() {
		return fmt.Errorf("%w: the tensor's context is closed", life.ErrClosed)
	}
	if l := t.base().store.lease; l != nil {
		if err := h.Add(l); err != nil {
			return err
		}
	}
	return t.StorageErr()
}

// Storage is Hold that returns the *C.struct_ggml_tensor: the tensor whose
// data the caller reads or writes while h holds it.
func (t *Tensor) Storage(h *life.Holds) (unsafe.Pointer, error) {
	if err := t.Hold(h); err != nil {
		return nil, err
	}
	return unsafe.Pointer(t.c), nil
}

// HoldAs is Hold for a tensor of a graph, what ("input", "node", ...) in
// it: the error says so. A tensor whose context is closed is not
// described: a Close on another goroutine may be clearing it.
func (t *Tensor) HoldAs(what string, h *life.Holds) error {
	err := t.Hold(h)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, life.ErrClosed):
		return life.Prefixed("graph "+what, err)
	}
	return life.Prefixed("graph "+what+" "+t.describe(), err)
}

// SetLease gives t (not a view) the lifetime l of the memory it was placed
// in (a buffer, or one allocation of a scheduler or graph allocator), and
// keeps owner (the handle whose Close ends l) reachable as long as t.
func (t *Tensor) SetLease(l *life.Life, owner Owner) {
	if t.Live() && t.c.view_src == nil && t.c.data != nil {
		t.store.lease, t.store.owner = l, owner
	}
}

// Lease returns t's lease, or nil.
func (t *Tensor) Lease() *life.Life {
	if t == nil {
		return nil
	}
	return t.store.lease
}

// ResetStorage forgets where t's data lives (data, buffer, lease), so an
// allocator can place it anew.
func (t *Tensor) ResetStorage() {
	if t.Live() {
		t.c.data, t.c.buffer = nil, nil
		t.store.lease, t.store.owner = nil, nil
		t.store.host.Store(nil)
	}
}

// InHostMemory reports whether t's data lies in a backend buffer in host
// memory (ggml_backend_buffer_is_host), which Go may then copy to and from
// directly, as ggml itself does for host buffers: a CPU buffer, a GPU
// backend's pinned host buffer; not a repacking one. The answer is
// remembered for t's placement (its lease and buffer), so a transfer
// asks C once per placement rather than every time. t must be held (Hold)
// and placed in a buffer. A meta buffer (goggml_buffer_is_meta) is never
// host memory here: over host devices ggml says it is, but its tensors'
// data addresses are placeholders.
func (t *Tensor) InHostMemory() bool {
	b := t.base()
	lease, buf := b.store.lease, t.Buffer()
	if buf == nil {
		return false
	}
	if p := b.store.host.Load(); p != nil && p.lease == lease && p.buf == buf {
		return p.host
	}
	cb := C.ggml_backend_buffer_t(buf)
	host := bool(C.ggml_backend_buffer_is_host(cb)) && !bool(C.goggml_buffer_is_meta(cb))
	runtime.KeepAlive(t)
	b.store.host.Store(&hostPlacement{lease: lease, buf: buf, host: host})
	return host
}

// ViewSource returns the tensor whose memory the view t uses, or nil.
func (t *Tensor) ViewSource() *Tensor {
	if t == nil {
		return nil
	}
	return t.viewSrc
}

// Buffer returns the backend buffer (ggml_backend_buffer_t) that holds t's
// data, nil for a context's memory; t must be usable.
func (t *Tensor) Buffer() unsafe.Pointer { return BufferOf(unsafe.Pointer(t.c)) }

// LockWrite takes t's memory for a write through the API: ErrBusy while a
// compute reads it as indices (checked before it started: a write now
// would bypass that check). UnlockWrite ends the write.
func (t *Tensor) LockWrite() error {
	if t == nil {
		return fmt.Errorf("%w: nil *Tensor", life.ErrInvalid)
	}
	b := t.base()
	if !b.store.idxReaders.CompareAndSwap(0, -1) {
		if b.store.idxReaders.Load() > 0 {
			return fmt.Errorf("%w: tensor %s holds indices that a running compute reads (checked before it started); write it when the compute is over", life.ErrBusy, t.describe())
		}
		return fmt.Errorf("%w: tensor %s is being written on another goroutine", life.ErrBusy, t.describe())
	}
	return nil
}

// UnlockWrite ends a write that LockWrite began.
func (t *Tensor) UnlockWrite() { t.base().store.idxReaders.Store(0) }

// ReadIndices marks t's memory as read, as indices, by a running compute
// (LockWrite refuses writes meanwhile): false while a write through the
// API runs. EndReadIndices ends it.
func (t *Tensor) ReadIndices() bool {
	for {
		n := t.store.idxReaders.Load()
		if n < 0 {
			return false
		}
		if t.store.idxReaders.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// EndReadIndices ends what ReadIndices started.
func (t *Tensor) EndReadIndices() { t.store.idxReaders.Add(-1) }

// String describes the tensor: name, type and shape, e.g. `x f32[4 3]`.
func (t *Tensor) String() string {
	switch {
	case t == nil:
		return "<nil tensor>"
	case t.err != nil:
		return "<poisoned tensor>"
	case !t.Live():
		return "<tensor of closed context>"
	}
	return t.describe()
}

// describe is String for a live tensor: its name (if any), its type
// (ggml_type_name) and its shape up to ggml_n_dims.
func (t *Tensor) describe() string {
	if !t.Live() {
		return t.String()
	}
	defer runtime.KeepAlive(t)
	var b strings.Builder
	if n := C.GoString(&t.c.name[0]); n != "" {
		b.WriteString(n)
		b.WriteByte(' ')
	}
	b.WriteString(C.GoString(C.ggml_type_name(t.c._type)))
	shape := make([]int64, int(C.ggml_n_dims(t.c)))
	for i := range shape {
		shape[i] = int64(t.c.ne[i])
	}
	b.WriteString(fmt.Sprint(shape))
	return b.String()
}

// Context is the view of a *ggml.Context (see views.go).
type Context struct {
	Kind[Context]
	c   *C.struct_ggml_context // nil once closed
	err atomic.Pointer[error]  // the context's sticky error (Err)
	// life counts the computes and transfers in flight that read the
	// context's tensors; work that re-places them runs alone (Claim).
	life *life.Life
}

// Ptr returns the *C.struct_ggml_context of an open context whose sticky
// error is nil.
func (c *Context) Ptr() (unsafe.Pointer, error) {
	switch {
	case c == nil:
		return nil, fmt.Errorf("%w: nil *Context", life.ErrInvalid)
	case c.c == nil:
		return nil, fmt.Errorf("%w: the context is closed", life.ErrClosed)
	case c.Err() != nil:
		return nil, c.Err()
	}
	return unsafe.Pointer(c.c), nil
}

// Err returns the context's sticky error: the first error an op recorded,
// or nil. Ops on two goroutines may record at once (a Context's misuse
// that ops refuse with ErrBusy): the first to record wins, whole.
func (c *Context) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// SetErr records e as the context's sticky error unless one is recorded.
func (c *Context) SetErr(e error) { c.err.CompareAndSwap(nil, &e) }

// Claim starts the rewriting of where the context's tensors live: ErrBusy
// while a compute or transfer uses them, and none starts until release.
func (c *Context) Claim() (release func(), err error) {
	if c == nil || c.life == nil {
		return nil, fmt.Errorf("%w: nil context or graph", life.ErrInvalid)
	}
	if err := c.life.EnterIdle("where the context's tensors live"); err != nil {
		return nil, err
	}
	return func() { c.life.LeaveIdle(false) }, nil
}

// cCopyFrom is the size from which HostCopy copies with C's memcpy.
const cCopyFrom = 1 << 20

// HostCopy copies size bytes from src to dst, host memory both: below
// cCopyFrom with Go's copy, which saves the cgo call (~35 ns, the time of
// a 1-2 KiB copy); from there with the C library's memcpy, as ggml does:
// the cgo call is then under 0.2 % of the copy, and the two routines differ
// by up to 2.4x either way (256 MiB on an Intel Sapphire Rapids: Go's
// non-temporal stores 10 GB/s, glibc's 24 GB/s; 16 MiB on an AMD EPYC: the
// reverse), so the binding copies as fast as ggml driven from C.
// The two may overlap (memory a HostMemory's slice and a buffer's tensor
// share), as for Go's copy: C's memmove, which glibc runs as fast as
// memcpy. Under -race the copy is reported to the race detector, which
// does not see C read or write Go memory.
func HostCopy(dst, src unsafe.Pointer, size uint64) {
	if size < cCopyFrom {
		copy(unsafe.Slice((*byte)(dst), size), unsafe.Slice((*byte)(src), size))
		return
	}
	raceCopy(dst, src, size)
	C.memmove(dst, src, C.size_t(size))
}
