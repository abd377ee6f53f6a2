package bridge

/*
#include "goggml.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/internal/life"
)

// Backend is the view of a *backend.Backend (see views.go).
type Backend struct {
	Kind[Backend]
	c C.ggml_backend_t // set at birth, never changed
	// life: computes are exclusive work (Enter); schedulers over the
	// backend are users, so the C object outlives them.
	life  *life.Life
	abort *C.int // flag read by the backend's abort callback; nil if it has none
	// lavapipe: the device is Mesa's software Vulkan driver, on which some
	// nodes are refused (Refusal).
	lavapipe bool
	link     life.Links // the RPC connections it computes over, if any (package rpc)
}

// Usable returns why b cannot be used (nil, closed), or nil.
func (b *Backend) Usable() error {
	if b == nil {
		return fmt.Errorf("%w: nil *Backend", life.ErrInvalid)
	}
	if b.life.Closed() {
		return fmt.Errorf("%w: the backend is closed", life.ErrClosed)
	}
	return b.link.Err()
}

// Links returns the RPC connections b computes over (none for a local
// backend).
func (b *Backend) Links() life.Links {
	if b == nil {
		return nil
	}
	return b.link
}

// Ptr returns the ggml_backend_t of an open backend.
func (b *Backend) Ptr() (unsafe.Pointer, error) {
	if err := b.Usable(); err != nil {
		return nil, err
	}
	return unsafe.Pointer(b.c), nil
}

// Name returns the backend's name (ggml_backend_name), "" once closed.
func (b *Backend) Name() string {
	if b.Usable() != nil {
		return ""
	}
	defer runtime.KeepAlive(b)
	return C.GoString(C.ggml_backend_name(b.c))
}

// Acquire keeps b's C object alive, even past its Close, until release is
// called (a scheduler frees after its backends).
func (b *Backend) Acquire() (release func(), err error) {
	if err := b.Usable(); err != nil {
		return nil, err
	}
	if err := b.life.Keep(); err != nil {
		return nil, err
	}
	return b.life.Unkeep, nil
}

// Enter starts exclusive work on b (a compute, a plan, a transfer queued on
// its stream): ErrBusy while other work runs. Call Leave when it is over.
func (b *Backend) Enter() error {
	if b == nil {
		return fmt.Errorf("%w: nil *Backend", life.ErrInvalid)
	}
	// Nothing of b.c is read here: a closed backend's C object is freed
	// (Close frees at once), and Enter is how callers find that out.
	return b.life.Enter("the backend")
}

// Leave ends what Enter started.
func (b *Backend) Leave() { b.life.Leave() }

// Watch arms b's abort flag for ctx (see backend.Backend.Compute): the
// returned stop must be called when the compute is over. A backend without
// an abort flag does nothing.
func (b *Backend) Watch(ctx context.Context) (stop func()) {
	if b.abort == nil {
		return func() {}
	}
	return life.SetOnDone(ctx, unsafe.Pointer(b.abort)) // also clears what a cancelled compute left set
}

// Refusal returns why node t (a *C.struct_ggml_tensor) must not be
// computed on b although ggml supports it there, or nil: on Mesa's
// lavapipe, a mul_mat that reads an im2col corrupts the host heap (see
// backend/refuse.go and the vulkan package).
func (b *Backend) Refusal(t unsafe.Pointer) error {
	p := (*C.struct_ggml_tensor)(t)
	if b == nil || !b.lavapipe || p == nil || p.op != C.GGML_OP_MUL_MAT {
		return nil
	}
	defer runtime.KeepAlive(b)
	return Refusal(C.GoString(C.ggml_backend_name(b.c)), t)
}

// Refusal is Backend.Refusal for a backend taken to be on lavapipe, named
// device.
func Refusal(device string, t unsafe.Pointer) error {
	p := (*C.struct_ggml_tensor)(t)
	if p == nil || p.op != C.GGML_OP_MUL_MAT {
		return nil
	}
	for _, s := range []*C.struct_ggml_tensor{p.src[0], p.src[1]} {
		for s != nil && s.view_src != nil {
			s = s.view_src
		}
		if s != nil && s.op == C.GGML_OP_IM2COL {
			return fmt.Errorf("%w: %s (Mesa lavapipe) would compute mul_mat node %q of im2col node %q (a convolution): on lavapipe this corrupts the host heap (ggml-vulkan leaves descriptor bindings to freed buffers, which lavapipe touches); compute convolutions on the CPU or a hardware GPU (see the vulkan package doc)",
				life.ErrUnsupported, device, C.GoString(&p.name[0]), C.GoString(&s.name[0]))
		}
	}
	return nil
}

// The CPU thread pools that backends compute on are package backend's
// (backend/cpupool.go); package cpu attaches a user's pool, and package
// sched begins the pools of its backends around a compute, through these
// functions, which backend installs at init.
var (
	// AttachThreadPool makes CPU backend b compute on thread pool pool (a
	// ggml_threadpool_t, nil to detach); ref counts the pool's users,
	// isolate says the pool changes the priority or affinity of the thread
	// that computes. ErrBusy while b computes.
	AttachThreadPool func(b *Backend, pool unsafe.Pointer, ref life.PoolRef, isolate bool) error
	// BeginPools starts the pools of the CPU backends among bes that want
	// one of their own, then waits until each distinct pool runs no other
	// compute and marks it running (in one global order); end marks them
	// over. isolate says a pool changes the priority or affinity of the
	// thread that computes. The caller holds bes (Enter).
	BeginPools func(ctx context.Context, bes []*Backend) (end func(), isolate bool, err error)
)

// BufferType is the view of a *backend.BufferType (see views.go).
type BufferType struct {
	Kind[BufferType]
	c C.ggml_backend_buffer_type_t // nil only in a zero BufferType
}

// Ptr returns the ggml_backend_buffer_type_t of bt.
func (bt *BufferType) Ptr() (unsafe.Pointer, error) {
	if bt == nil || bt.c == nil {
		return nil, fmt.Errorf("%w: nil *BufferType", life.ErrInvalid)
	}
	return unsafe.Pointer(bt.c), nil
}

// NewBufferType is where every *backend.BufferType (T) is born: the handle
// of buffer type p (a ggml_backend_buffer_type_t, static in ggml), nil for
// nil. GPU packages get theirs from C through it.
func NewBufferType[T kinded[BufferType]](p unsafe.Pointer) *T {
	if p == nil {
		return nil
	}
	bt := new(T)
	View[BufferType](bt).c = C.ggml_backend_buffer_type_t(p)
	return bt
}

// HostMemory is the view of a *backend.HostMemory (see views.go).
type HostMemory struct {
	Kind[HostMemory]
	mu   sync.Mutex
	p    unsafe.Pointer // nil once freed
	size uint64
}

// Span returns the address and size of the memory.
func (m *HostMemory) Span() (unsafe.Pointer, uint64, error) {
	if m == nil {
		return nil, 0, fmt.Errorf("%w: nil *HostMemory", life.ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.p == nil {
		return nil, 0, fmt.Errorf("%w: the host memory is freed", life.ErrClosed)
	}
	return m.p, m.size, nil
}

// RegistryMu guards ggml's backend registry, a plain std::vector: loading
// and unloading (writers) must not run beside lookups (readers).
var RegistryMu sync.RWMutex

// RegisterBackend adds a backend registry entry (ggml_backend_reg_t) that a
// GPU package linked in (ggml_backend_register), under RegistryMu.
func RegisterBackend(reg unsafe.Pointer) {
	RegistryMu.Lock()
	defer RegistryMu.Unlock()
	C.ggml_backend_register(C.ggml_backend_reg_t(reg))
}

// Device is the view of a *backend.Device (see views.go).
type Device struct {
	Kind[Device]
	c C.ggml_backend_dev_t
}

// Ptr returns the ggml_backend_dev_t of d. It does not check d's registry
// entry: d is one that package backend has just handed out.
func (d *Device) Ptr() (unsafe.Pointer, error) {
	if d == nil || d.c == nil {
		return nil, fmt.Errorf("%w: nil *Device", life.ErrInvalid)
	}
	return unsafe.Pointer(d.c), nil
}

// MetaMu serializes the creation of meta devices, and of their buffer
// types (ggml keeps both in static maps without a lock), against the C
// code that reads those maps (Lock: creation; RLock: readers).
var MetaMu sync.RWMutex

// What only package backend knows, its registry entries and the splits of
// its meta devices, is run through these functions, which backend installs
// at init.
var (
	// WrapDevice returns the view of the *backend.Device of device p (a
	// ggml_backend_dev_t a package got from C: package rpc's devices);
	// DeviceHandle turns it into the handle.
	WrapDevice func(p unsafe.Pointer) *Device
	// MetaGraph checks graph g for the meta backends among bes, before
	// its allocation (placed false) or after it, before a compute.
	MetaGraph func(bes []*Backend, g *Graph, placed bool) error
)

// TransferCheck checks a read (write false) or write of size bytes at
// offset of tensor t (a *C.struct_ggml_tensor) in a buffer of the type it
// was registered for, against what that buffer type asserts.
type TransferCheck func(t unsafe.Pointer, offset, size uint64, write bool) error

// checks maps the buffer types (ggml_backend_buffer_type_t) whose buffers
// assert on transfers (a meta device's; the CPU's extra types, which
// re-lay weights) to their TransferCheck; nChecks counts them, so that a
// process without such types pays one atomic load per transfer.
var (
	checks  sync.Map
	nChecks atomic.Int64
)

// RegisterTransferCheck records that transfers of tensors in buffers of
// type buft are checked by f. Package backend, which owns buffer types,
// passes the check down here when it hands out such a type; buffer types
// live as long as the process.
func RegisterTransferCheck(buft unsafe.Pointer, f TransferCheck) {
	if _, loaded := checks.Swap(buft, f); !loaded {
		nChecks.Add(1)
	}
}

// CheckTransfer checks a read (write false) or write of size bytes at
// offset of tensor t (a *C.struct_ggml_tensor) with the check registered
// for its buffer's type (a view's is its source's): nil for a tensor in
// any other buffer, or in none.
func CheckTransfer(t unsafe.Pointer, offset, size uint64, write bool) error {
	if t == nil || nChecks.Load() == 0 {
		return nil
	}
	tc := (*C.struct_ggml_tensor)(t)
	buf := tc.buffer
	if buf == nil && tc.view_src != nil {
		buf = tc.view_src.buffer
	}
	if buf == nil {
		return nil
	}
	f, ok := checks.Load(unsafe.Pointer(C.ggml_backend_buffer_get_type(buf)))
	if !ok {
		return nil
	}
	return f.(TransferCheck)(t, offset, size, write)
}
