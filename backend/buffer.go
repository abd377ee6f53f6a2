package backend

// #include "goggml.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// Buffer is memory on a device that holds tensor data
// (ggml_backend_buffer_t). It keeps what it was allocated from alive;
// tensors placed in it keep it alive. Close frees it at once, after which
// those tensors report ggml.ErrClosed. An unreachable Buffer is freed by the
// garbage collector.
type Buffer struct {
	_       noCopy
	c       C.ggml_backend_buffer_t
	from    any     // what it was allocated from, kept alive
	parent  *Buffer // the multi-buffer that owns this one, if any
	parts   []*Buffer
	mem     *HostMemory // the caller memory it is over, if any
	cleanup runtime.Cleanup
}

func newBuffer(c C.ggml_backend_buffer_t, from any) *Buffer {
	b := &Buffer{c: c, from: from}
	b.cleanup = runtime.AddCleanup(b, freeBuffer, c)
	return b
}

func freeBuffer(c C.ggml_backend_buffer_t) { C.ggml_backend_buffer_free(c) }

// Close frees the buffer (ggml_backend_buffer_free). It is idempotent and
// safe on nil.
func (b *Buffer) Close() error {
	if b == nil || b.c == nil {
		return nil
	}
	if b.parent != nil {
		if b.parent.c == nil {
			return nil // its multi-buffer closed it
		}
		return fmt.Errorf("%w: this buffer is part of a multi-buffer, which frees it: close that", ggml.ErrInvalid)
	}
	b.cleanup.Stop()
	freeBuffer(b.c)
	b.c = nil
	b.from = nil
	for _, p := range b.parts {
		p.c = nil
		if p.mem != nil {
			p.mem.release()
		}
	}
	if b.mem != nil {
		b.mem.release()
	}
	return nil
}

func (b *Buffer) usable() error {
	if b == nil {
		return fmt.Errorf("%w: nil *Buffer", ggml.ErrInvalid)
	}
	if b.c == nil {
		return fmt.Errorf("%w: the buffer is closed", ggml.ErrClosed)
	}
	return nil
}

// LeaseErr is ggml.ErrClosed once the buffer is closed (or the multi-buffer
// that owns it): tensors in it check this before touching their data.
func (b *Buffer) LeaseErr() error {
	if b.c == nil {
		return fmt.Errorf("%w: the tensor's buffer is closed", ggml.ErrClosed)
	}
	return nil
}

// NewMultiBuffer joins buffers into one, which then owns them: closing it
// frees them all, and Clear and SetUsage reach them all
// (ggml_backend_multi_buffer_alloc_buffer). Its type is the first part's.
// The parts stay usable for their tensors; their own Close then reports an
// error. A buffer can be part of one multi-buffer only.
func NewMultiBuffer(parts ...*Buffer) (*Buffer, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: NewMultiBuffer needs at least one buffer", ggml.ErrInvalid)
	}
	seen := map[*Buffer]bool{}
	for i, p := range parts {
		if err := p.usable(); err != nil {
			return nil, fmt.Errorf("NewMultiBuffer: part %d: %w", i, err)
		}
		if p.parent != nil || seen[p] {
			return nil, fmt.Errorf("%w: NewMultiBuffer: part %d is already owned by a multi-buffer or given twice", ggml.ErrInvalid, i)
		}
		if p.parts != nil {
			return nil, fmt.Errorf("%w: NewMultiBuffer: part %d is a multi-buffer itself; join its parts instead", ggml.ErrInvalid, i)
		}
		seen[p] = true
	}
	arr := (*C.ggml_backend_buffer_t)(C.malloc(C.size_t(len(parts)) * C.size_t(unsafe.Sizeof(C.ggml_backend_buffer_t(nil)))))
	defer C.free(unsafe.Pointer(arr))
	cs := unsafe.Slice(arr, len(parts))
	for i, p := range parts {
		cs[i] = p.c
	}
	c := C.ggml_backend_multi_buffer_alloc_buffer(arr, C.size_t(len(parts)))
	if c == nil {
		return nil, fmt.Errorf("%w: ggml_backend_multi_buffer_alloc_buffer", ggml.ErrNoMemory)
	}
	m := &Buffer{c: c, parts: append([]*Buffer(nil), parts...)}
	var mems []*HostMemory // parts over caller memory: released with the multi-buffer
	for _, p := range parts {
		p.cleanup.Stop() // the multi-buffer frees it
		p.parent = m
		if p.mem != nil {
			mems = append(mems, p.mem)
		}
	}
	m.cleanup = runtime.AddCleanup(m, func(r multiRes) {
		freeBuffer(r.c)
		for _, mem := range r.mems {
			mem.release()
		}
	}, multiRes{c: c, mems: mems})
	return m, nil
}

type multiRes struct {
	c    C.ggml_backend_buffer_t
	mems []*HostMemory
}

// IsMulti reports whether the buffer is a multi-buffer
// (ggml_backend_buffer_is_multi_buffer).
func (b *Buffer) IsMulti() bool {
	if b.usable() != nil {
		return false
	}
	defer runtime.KeepAlive(b)
	return bool(C.ggml_backend_buffer_is_multi_buffer(b.c))
}

// Name returns the buffer's name, e.g. "CPU" (ggml_backend_buffer_name), or
// "" once closed.
func (b *Buffer) Name() string {
	if b.usable() != nil {
		return ""
	}
	defer runtime.KeepAlive(b)
	return C.GoString(C.ggml_backend_buffer_name(b.c))
}

// Size returns the buffer's size in bytes (ggml_backend_buffer_get_size).
func (b *Buffer) Size() uint64 {
	if b.usable() != nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return uint64(C.ggml_backend_buffer_get_size(b.c))
}

// Alignment returns the alignment of tensor data in the buffer
// (ggml_backend_buffer_get_alignment).
func (b *Buffer) Alignment() uint64 {
	if b.usable() != nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return uint64(C.ggml_backend_buffer_get_alignment(b.c))
}

// MaxSize returns the largest tensor the buffer can hold
// (ggml_backend_buffer_get_max_size).
func (b *Buffer) MaxSize() uint64 {
	if b.usable() != nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return uint64(C.ggml_backend_buffer_get_max_size(b.c))
}

// IsHost reports whether the buffer is in host memory
// (ggml_backend_buffer_is_host).
func (b *Buffer) IsHost() bool {
	if b.usable() != nil {
		return false
	}
	defer runtime.KeepAlive(b)
	return bool(C.ggml_backend_buffer_is_host(b.c))
}

// Type returns the buffer's type (ggml_backend_buffer_get_type).
func (b *Buffer) Type() *BufferType {
	if b.usable() != nil {
		return nil
	}
	defer runtime.KeepAlive(b)
	return bufferTypeFromC(C.ggml_backend_buffer_get_type(b.c))
}

// Base returns the address of the buffer's memory, for host buffers only
// (ggml_backend_buffer_get_base). The memory belongs to the buffer: it is
// valid until the buffer is closed or collected, so keep the buffer alive
// (runtime.KeepAlive) while you use it. An empty buffer has a nil base.
func (b *Buffer) Base() (unsafe.Pointer, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(b)
	if !bool(C.ggml_backend_buffer_is_host(b.c)) {
		return nil, fmt.Errorf("%w: buffer %s is not in host memory", ErrUnsupported, b.Name())
	}
	return C.ggml_backend_buffer_get_base(b.c), nil
}

// AllocSize returns the bytes tensor t needs in this buffer
// (ggml_backend_buffer_get_alloc_size).
func (b *Buffer) AllocSize(t *ggml.Tensor) (uint64, error) {
	if err := b.usable(); err != nil {
		return 0, err
	}
	tc, err := tensorPtr(t)
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(t)
	defer runtime.KeepAlive(b)
	return uint64(C.ggml_backend_buffer_get_alloc_size(b.c, tc)), nil
}

// Clear sets every byte of the buffer to value (ggml_backend_buffer_clear).
func (b *Buffer) Clear(value byte) error {
	if err := b.usable(); err != nil {
		return err
	}
	defer runtime.KeepAlive(b)
	C.ggml_backend_buffer_clear(b.c, C.uint8_t(value))
	return nil
}

// Reset lets the buffer's backend forget per-tensor state it keeps
// (ggml_backend_buffer_reset); tensor data is untouched.
func (b *Buffer) Reset() error {
	if err := b.usable(); err != nil {
		return err
	}
	defer runtime.KeepAlive(b)
	C.ggml_backend_buffer_reset(b.c)
	return nil
}

// BufferUsage tells a scheduler what a buffer holds (enum
// ggml_backend_buffer_usage).
type BufferUsage int

// Buffer usages (GGML_BACKEND_BUFFER_USAGE_*).
const (
	UsageAny     BufferUsage = 0
	UsageWeights BufferUsage = 1 // ops reading it run on its backend
	UsageCompute BufferUsage = 2
)

// String returns "any", "weights" or "compute".
func (u BufferUsage) String() string {
	switch u {
	case UsageAny:
		return "any"
	case UsageWeights:
		return "weights"
	case UsageCompute:
		return "compute"
	}
	return fmt.Sprintf("BufferUsage(%d)", int(u))
}

// Usage returns what the buffer is marked as holding
// (ggml_backend_buffer_get_usage).
func (b *Buffer) Usage() BufferUsage {
	if b.usable() != nil {
		return UsageAny
	}
	defer runtime.KeepAlive(b)
	return BufferUsage(C.ggml_backend_buffer_get_usage(b.c))
}

// SetUsage marks what the buffer holds (ggml_backend_buffer_set_usage; for a
// multi-buffer, every part is marked: ggml_backend_multi_buffer_set_usage).
func (b *Buffer) SetUsage(u BufferUsage) error {
	if err := b.usable(); err != nil {
		return err
	}
	if u != UsageAny && u != UsageWeights && u != UsageCompute {
		return fmt.Errorf("%w: unknown buffer usage %d", ggml.ErrInvalid, int(u))
	}
	defer runtime.KeepAlive(b)
	C.ggml_backend_buffer_set_usage(b.c, C.enum_ggml_backend_buffer_usage(u))
	return nil
}

// AllocContextTensors allocates every tensor of ctx that has no memory yet
// in one new buffer of the backend's default buffer type, and sets up the
// views of those tensors (ggml_backend_alloc_ctx_tensors). ctx must be a
// NoAlloc context. The tensors keep the buffer alive; close it when done.
func AllocContextTensors(ctx *ggml.Context, be *Backend) (*Buffer, error) {
	if err := be.usable(); err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(be)
	return allocContextTensors(ctx, bufferTypeFromC(C.ggml_backend_get_default_buffer_type(be.c)), be)
}

// AllocContextTensorsFromType is AllocContextTensors with a buffer type of
// your choice (ggml_backend_alloc_ctx_tensors_from_buft).
func AllocContextTensorsFromType(ctx *ggml.Context, bt *BufferType) (*Buffer, error) {
	return allocContextTensors(ctx, bt, bt)
}

// ContextTensorsSize returns the bytes AllocContextTensorsFromType would
// allocate (ggml_backend_alloc_ctx_tensors_from_buft_size).
func ContextTensorsSize(ctx *ggml.Context, bt *BufferType) (uint64, error) {
	if err := bt.usable(); err != nil {
		return 0, err
	}
	cc, err := contextPtr(ctx)
	if err != nil {
		return 0, err
	}
	if !ctx.NoAlloc() {
		return 0, fmt.Errorf("%w: a context that keeps data in its own memory has nothing to allocate in a buffer", ggml.ErrInvalid)
	}
	defer runtime.KeepAlive(ctx)
	return uint64(C.ggml_backend_alloc_ctx_tensors_from_buft_size(cc, bt.c)), nil
}

func allocContextTensors(ctx *ggml.Context, bt *BufferType, from any) (buf *Buffer, err error) {
	if err := bt.usable(); err != nil {
		return nil, err
	}
	cc, err := contextPtr(ctx)
	if err != nil {
		return nil, err
	}
	if !ctx.NoAlloc() {
		return nil, fmt.Errorf("%w: AllocContextTensors needs a NoAlloc context; this one keeps data in its own memory", ggml.ErrInvalid)
	}
	// Tensors whose memory is gone (their buffer closed) are placed anew,
	// and their views follow them: C still has their old pointers.
	var pending []*ggml.Tensor
	dead := map[*ggml.Tensor]bool{}
	for _, t := range ctx.Tensors() {
		if t.ViewSource() != nil || t.IsAllocated() {
			continue
		}
		if l := bridge.LeaseOf(t); l != nil && l.LeaseErr() != nil {
			bridge.ResetStorage(t)
			dead[t] = true
		}
		pending = append(pending, t)
	}
	for _, t := range ctx.Tensors() {
		if vs := t.ViewSource(); vs != nil && dead[vs] {
			bridge.ResetStorage(t)
		}
	}
	size := uint64(C.ggml_backend_alloc_ctx_tensors_from_buft_size(cc, bt.c))
	if len(pending) == 0 || size == 0 {
		return nil, fmt.Errorf("%w: the context has no tensor left to allocate", ggml.ErrInvalid)
	}
	defer runtime.KeepAlive(ctx)
	defer bridge.Catch(&err)
	c := C.ggml_backend_alloc_ctx_tensors_from_buft(cc, bt.c)
	if c == nil {
		return nil, fmt.Errorf("%w: could not allocate %d bytes in a %s buffer", ggml.ErrNoMemory, size, bt.Name())
	}
	buf = newBuffer(c, from)
	for _, t := range pending {
		bridge.SetLease(t, buf)
	}
	return buf, nil
}

// InitTensor lets the buffer's backend set up per-tensor state for tensor
// t, which must live in this buffer (ggml_backend_buffer_init_tensor).
// Allocation does this already; it is for tensors whose data pointer was
// set by other means.
func (b *Buffer) InitTensor(t *ggml.Tensor) (err error) {
	if err := b.usable(); err != nil {
		return err
	}
	tc, err := storage(t)
	if err != nil {
		return err
	}
	if bufferOf(tc) != b.c {
		return fmt.Errorf("%w: InitTensor: tensor %v does not live in buffer %s", ggml.ErrInvalid, t, b.Name())
	}
	defer runtime.KeepAlive(b)
	defer runtime.KeepAlive(t)
	defer bridge.Catch(&err)
	return statusErr(C.ggml_backend_buffer_init_tensor(b.c, tc))
}
