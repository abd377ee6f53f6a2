package backend

/*
#include <errno.h>
#include <stdint.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mman.h>
#endif
#include "goggml.h"

// goggml_buffer_advise_huge asks Linux for transparent huge pages over the
// whole pages of buf's memory (MADV_HUGEPAGE), and returns 0 or errno;
// elsewhere it does nothing and returns 0.
static int goggml_buffer_advise_huge(ggml_backend_buffer_t buf) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	const uintptr_t p = (uintptr_t)ggml_backend_buffer_get_base(buf);
	const size_t n = ggml_backend_buffer_get_size(buf);
	const uintptr_t start = (p + page - 1) / page * page;
	const uintptr_t end = (p + n) / page * page;
	// A buffer without memory (ggml's no_alloc) answers a placeholder
	// address below the first page.
	if (p < page || end <= start) {
		return 0;
	}
	return madvise((void *)start, end - start, MADV_HUGEPAGE) == 0 ? 0 : errno;
#else
	(void)buf;
	return 0;
#endif
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// Buffer is memory on a device that holds tensor data
// (ggml_backend_buffer_t). It keeps what it was allocated from alive;
// tensors placed in it keep it alive. Close makes it unusable at once (its
// tensors then report ggml.ErrClosed) and frees it as soon as no compute or
// transfer that uses it is in flight: work that started before Close, on
// any goroutine or in a callback of that very work, finishes on live
// memory. An unreachable Buffer is freed by the garbage collector. A Buffer
// may be used by several goroutines at once.
type Buffer struct {
	_       life.NoCopy
	c       C.ggml_backend_buffer_t // set at birth, never changed
	life    *life.Life
	from    any     // what it was allocated from, kept alive
	parent  *Buffer // the multi-buffer that owns this one, if any
	parts   []*Buffer
	mem     *HostMemory // the caller memory it is over, if any
	link    linkSet     // the RPC connections it is on, if any
	cleanup runtime.Cleanup
}

// newBuffer is where every Buffer is born: it wraps c, allocated from from
// (kept alive), over caller memory mem (nil if none: released with the
// buffer), owning parts (a multi-buffer).
func newBuffer(c C.ggml_backend_buffer_t, from any, mem *HostMemory, parts []*Buffer) *Buffer {
	return newBufferFreeing(c, from, mem, parts, nil)
}

// newBufferFreeing is newBuffer with a function that runs after the free.
func newBufferFreeing(c C.ggml_backend_buffer_t, from any, mem *HostMemory, parts []*Buffer, onFree func()) *Buffer {
	b := &Buffer{c: c, from: from, mem: mem, parts: parts}
	mems := []*HostMemory{}
	if mem != nil {
		mems = append(mems, mem)
	}
	for _, p := range parts {
		if p.mem != nil {
			mems = append(mems, p.mem)
		}
	}
	// The registry entry of the buffer's device counts its live buffers:
	// Unload refuses while a buffer of the library is alive.
	reg := regOfBuffer(c)
	if reg != nil {
		regs.Lock()
		reg.buffers++
		regs.Unlock()
	}
	// A buffer on an RPC server lives on its connection: broken, the
	// buffer is unusable and its free skips the C call (see life.Link).
	link := linksOfBufferType(C.ggml_backend_buffer_get_type(c))
	b.link = link
	b.life = life.New(link.Parent(), fmt.Errorf("%w: the tensor's buffer is closed", ggml.ErrClosed), func() {
		life.FreeOver(link, func() { C.ggml_backend_buffer_free(c) })
		for _, m := range mems {
			m.release()
		}
		if onFree != nil {
			onFree()
		}
		if reg != nil {
			regs.Lock()
			reg.buffers--
			regs.Unlock()
		}
	})
	b.cleanup = runtime.AddCleanup(b, life.CloseCollected, b.life)
	life.Leaks.Opened("Buffer", b.life)
	return b
}

// regOfBuffer returns the registry entry of the device whose buffer type c
// has, or nil (host buffers of no device).
func regOfBuffer(c C.ggml_backend_buffer_t) *Reg {
	dev := C.ggml_backend_buft_get_device(C.ggml_backend_buffer_get_type(c))
	if dev == nil {
		return nil
	}
	return regFromC(C.ggml_backend_dev_backend_reg(dev))
}

// Close frees the buffer (ggml_backend_buffer_free), once no compute or
// transfer in flight uses it. It is idempotent and safe on nil.
func (b *Buffer) Close() error {
	if b == nil {
		return nil
	}
	if b.parent != nil {
		if b.parent.life.Closed() {
			return nil // its multi-buffer closed it
		}
		return fmt.Errorf("%w: this buffer is part of a multi-buffer, which frees it: close that", ggml.ErrInvalid)
	}
	if b.life.Closed() {
		return nil
	}
	b.cleanup.Stop()
	life.Leaks.Closed(b.life)
	return b.life.Close("the buffer", false)
}

func (b *Buffer) usable() error {
	if b == nil {
		return fmt.Errorf("%w: nil *Buffer", ggml.ErrInvalid)
	}
	if b.life.Closed() {
		return fmt.Errorf("%w: the buffer is closed", ggml.ErrClosed)
	}
	return b.link.Err()
}

// hold acquires the buffer for a call that uses its C object; release h
// after the call.
func (b *Buffer) hold(h *life.Holds) error {
	if b == nil {
		return fmt.Errorf("%w: nil *Buffer", ggml.ErrInvalid)
	}
	if err := h.Add(b.life); err != nil {
		if b.link != nil && !b.life.Closed() {
			return err // its connection broke: say which and why
		}
		return fmt.Errorf("%w: the buffer is closed", ggml.ErrClosed)
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
		if p.life.Busy() {
			return nil, fmt.Errorf("%w: NewMultiBuffer: part %d is in use", ggml.ErrBusy, i)
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
	m := newBuffer(c, nil, nil, append([]*Buffer(nil), parts...))
	for _, p := range parts {
		// The multi-buffer frees the part: the part's tensors now depend
		// on the multi-buffer's lifetime.
		p.cleanup.Stop()
		life.Leaks.Closed(p.life)
		p.parent = m
		p.life.Reparent(m.life)
	}
	return m, nil
}

// IsMulti reports whether the buffer is a multi-buffer
// (ggml_backend_buffer_is_multi_buffer).
func (b *Buffer) IsMulti() bool {
	var h life.Holds
	defer h.Release()
	if b.hold(&h) != nil {
		return false
	}
	defer runtime.KeepAlive(b)
	return bool(C.ggml_backend_buffer_is_multi_buffer(b.c))
}

// Name returns the buffer's name, e.g. "CPU" (ggml_backend_buffer_name), or
// "" once closed.
func (b *Buffer) Name() string {
	var h life.Holds
	defer h.Release()
	if b.hold(&h) != nil {
		return ""
	}
	defer runtime.KeepAlive(b)
	return C.GoString(C.ggml_backend_buffer_name(b.c))
}

// Size returns the buffer's size in bytes (ggml_backend_buffer_get_size).
func (b *Buffer) Size() uint64 {
	var h life.Holds
	defer h.Release()
	if b.hold(&h) != nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return uint64(C.ggml_backend_buffer_get_size(b.c))
}

// Alignment returns the alignment of tensor data in the buffer
// (ggml_backend_buffer_get_alignment).
func (b *Buffer) Alignment() uint64 {
	var h life.Holds
	defer h.Release()
	if b.hold(&h) != nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return uint64(C.ggml_backend_buffer_get_alignment(b.c))
}

// MaxSize returns the largest tensor the buffer can hold
// (ggml_backend_buffer_get_max_size).
func (b *Buffer) MaxSize() uint64 {
	var h life.Holds
	defer h.Release()
	if b.hold(&h) != nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return uint64(C.ggml_backend_buffer_get_max_size(b.c))
}

// IsHost reports whether the buffer is in host memory, so that its
// tensors' data pointers can be read and written by the CPU
// (ggml_backend_buffer_is_host). It is false for a meta device's buffer
// (NewMetaDevice), which ggml reports as host over CPU devices although
// its addresses are placeholders for its parts' memory.
func (b *Buffer) IsHost() bool {
	var h life.Holds
	defer h.Release()
	if b.hold(&h) != nil {
		return false
	}
	defer runtime.KeepAlive(b)
	return bool(C.ggml_backend_buffer_is_host(b.c)) && !bool(C.goggml_buffer_is_meta(b.c))
}

// Type returns the buffer's type (ggml_backend_buffer_get_type).
func (b *Buffer) Type() *BufferType {
	var h life.Holds
	defer h.Release()
	if b.hold(&h) != nil {
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
	var h life.Holds
	defer h.Release()
	if err := b.hold(&h); err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(b)
	if !bool(C.ggml_backend_buffer_is_host(b.c)) || bool(C.goggml_buffer_is_meta(b.c)) {
		return nil, fmt.Errorf("%w: buffer %s is not in host memory", ErrUnsupported, b.Name())
	}
	return C.ggml_backend_buffer_get_base(b.c), nil
}

// AdviseHugePages asks the operating system to back the buffer's memory
// with transparent huge pages, which the CPU reaches with fewer TLB misses
// and its prefetchers stream across (Linux: madvise MADV_HUGEPAGE over the
// buffer's whole pages; with the system's THP setting "madvise" or
// "always", the pages written after the call come as huge pages where
// memory allows). Call it before writing the buffer: pages already written
// stay small until the kernel's background work merges them. It changes no
// data and nothing the buffer does. gguf.Load calls it for the weights it
// copies into CPU buffers: it took a 1B model's generation from 30 to 34
// tokens per second on a 2-vCPU Sapphire Rapids (bench/README.md).
//
// It applies to buffers in this process's memory: host buffers and those
// of the CPU device's extra buffer types (AMX, CPU_REPACK: not "host" to
// ggml, since their layout is not ggml's, but in the process's memory).
// A multi-buffer advises each of its parts. Other buffers return an
// ErrUnsupported error. Outside Linux it does nothing and returns nil.
func (b *Buffer) AdviseHugePages() error {
	var h life.Holds
	defer h.Release()
	if err := b.hold(&h); err != nil {
		return err
	}
	defer runtime.KeepAlive(b)
	if len(b.parts) > 0 { // a multi-buffer has no memory of its own
		for _, p := range b.parts {
			if err := p.AdviseHugePages(); err != nil {
				return err
			}
		}
		return nil
	}
	if C.goggml_buffer_is_meta(b.c) ||
		!(C.ggml_backend_buffer_is_host(b.c) || C.goggml_buft_is_cpu_extra(C.ggml_backend_buffer_get_type(b.c))) {
		return fmt.Errorf("%w: buffer %s is not in this process's memory", ErrUnsupported, b.Name())
	}
	if e := C.goggml_buffer_advise_huge(b.c); e != 0 {
		return fmt.Errorf("backend: AdviseHugePages: madvise: %w", syscall.Errno(e))
	}
	return nil
}

// AllocSize returns the bytes tensor t needs in this buffer
// (ggml_backend_buffer_get_alloc_size).
func (b *Buffer) AllocSize(t *ggml.Tensor) (uint64, error) {
	var h life.Holds
	defer h.Release()
	if err := b.hold(&h); err != nil {
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
func (b *Buffer) Clear(value byte) (err error) {
	var h life.Holds
	defer h.Release()
	if err := b.hold(&h); err != nil {
		return err
	}
	defer runtime.KeepAlive(b)
	defer life.Catch(&err)
	C.ggml_backend_buffer_clear(b.c, C.uint8_t(value))
	return nil
}

// Reset lets the buffer's backend forget per-tensor state it keeps
// (ggml_backend_buffer_reset); tensor data is untouched.
func (b *Buffer) Reset() error {
	var h life.Holds
	defer h.Release()
	if err := b.hold(&h); err != nil {
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
	var h life.Holds
	defer h.Release()
	if b.hold(&h) != nil {
		return UsageAny
	}
	defer runtime.KeepAlive(b)
	return BufferUsage(C.ggml_backend_buffer_get_usage(b.c))
}

// SetUsage marks what the buffer holds (ggml_backend_buffer_set_usage; for a
// multi-buffer, every part is marked: ggml_backend_multi_buffer_set_usage).
func (b *Buffer) SetUsage(u BufferUsage) error {
	var h life.Holds
	defer h.Release()
	if err := b.hold(&h); err != nil {
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
	bt := be.DefaultBufferType()
	if bt == nil {
		if err := be.usable(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: backend %s has no buffer type", ErrUnsupported, be.Name())
	}
	return allocContextTensors(ctx, bt, be)
}

// AllocContextTensorsFromType is AllocContextTensors with a buffer type of
// your choice (ggml_backend_alloc_ctx_tensors_from_buft).
func AllocContextTensorsFromType(ctx *ggml.Context, bt *BufferType) (*Buffer, error) {
	return allocContextTensors(ctx, bt, bt)
}

// ContextTensorsSize returns the bytes AllocContextTensorsFromType would
// allocate (ggml_backend_alloc_ctx_tensors_from_buft_size).
func ContextTensorsSize(ctx *ggml.Context, bt *BufferType) (n uint64, err error) {
	if err := bt.usable(); err != nil {
		return 0, err
	}
	releaseBT, err := bt.link().Hold()
	if err != nil {
		return 0, err
	}
	defer releaseBT()
	cc, err := contextPtr(ctx)
	if err != nil {
		return 0, err
	}
	if !ctx.NoAlloc() {
		return 0, fmt.Errorf("%w: a context that keeps data in its own memory has nothing to allocate in a buffer", ggml.ErrInvalid)
	}
	defer runtime.KeepAlive(ctx)
	defer life.Catch(&err) // an RPC type asks its server for sizes
	return uint64(C.ggml_backend_alloc_ctx_tensors_from_buft_size(cc, bt.c)), nil
}

func allocContextTensors(ctx *ggml.Context, bt *BufferType, from any) (buf *Buffer, err error) {
	if err := bt.usable(); err != nil {
		return nil, err
	}
	releaseBT, err := bt.link().Hold()
	if err != nil {
		return nil, err
	}
	defer releaseBT()
	cc, err := contextPtr(ctx)
	if err != nil {
		return nil, err
	}
	release, err := bridge.View[bridge.Context](ctx).Claim()
	if err != nil {
		return nil, err
	}
	defer release()
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
		if tc, err := tensorPtr(t); err == nil {
			if err := checkExtraPlacement("AllocContextTensors", bt.c, tc); err != nil {
				return nil, err
			}
		}
		if v := bridge.View[bridge.Tensor](t); v.Lease() != nil && v.Lease().Err() != nil {
			v.ResetStorage()
			dead[t] = true
		}
		pending = append(pending, t)
	}
	for _, t := range ctx.Tensors() {
		if vs := t.ViewSource(); vs != nil && dead[vs] {
			bridge.View[bridge.Tensor](t).ResetStorage()
		}
	}
	// An RPC type asks its server for sizes: an abort there is an error.
	size, err := func() (n uint64, err error) {
		defer life.Catch(&err)
		return uint64(C.ggml_backend_alloc_ctx_tensors_from_buft_size(cc, bt.c)), nil
	}()
	if err != nil {
		return nil, err
	}
	if len(pending) == 0 || size == 0 {
		return nil, fmt.Errorf("%w: the context has no tensor left to allocate", ggml.ErrInvalid)
	}
	defer runtime.KeepAlive(ctx)
	// A meta device's buffer asks for the split of every tensor: the
	// splits are checked, and recorded for ggml's callback, first.
	var meta *metaState
	var placed []*C.struct_ggml_tensor
	if meta = metaOfBufferType(bt.c); meta != nil {
		if placed, err = meta.prepare(ctx); err != nil {
			return nil, err
		}
		defer func() {
			if err == nil {
				err = meta.takeFailed()
			}
			if err != nil {
				meta.forget(placed)
			}
		}()
	}
	defer life.Catch(&err)
	c := C.ggml_backend_alloc_ctx_tensors_from_buft(cc, bt.c)
	if c == nil {
		return nil, fmt.Errorf("%w: could not allocate %d bytes in a %s buffer", ggml.ErrNoMemory, size, bt.Name())
	}
	var onFree func()
	if meta != nil {
		onFree = func() { meta.forget(placed) }
	}
	buf = newBufferFreeing(c, from, nil, nil, onFree)
	for _, t := range pending {
		bridge.View[bridge.Tensor](t).SetLease(buf.life, buf)
	}
	return buf, nil
}

// InitTensor lets the buffer's backend set up per-tensor state for tensor
// t, which must live in this buffer (ggml_backend_buffer_init_tensor).
// Allocation does this already; it is for tensors whose data pointer was
// set by other means.
func (b *Buffer) InitTensor(t *ggml.Tensor) (err error) {
	var h life.Holds
	defer h.Release()
	if err := b.hold(&h); err != nil {
		return err
	}
	tc, err := storage(t, &h)
	if err != nil {
		return err
	}
	if C.ggml_backend_buffer_t(bridge.View[bridge.Tensor](t).Buffer()) != b.c {
		return fmt.Errorf("%w: InitTensor: tensor %v does not live in buffer %s", ggml.ErrInvalid, t, b.Name())
	}
	defer runtime.KeepAlive(b)
	defer runtime.KeepAlive(t)
	defer life.Catch(&err)
	return statusErr(C.ggml_backend_buffer_init_tensor(b.c, tc))
}
