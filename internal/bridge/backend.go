package bridge

/*
#include "goggml.h"
*/
import "C"

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Backend is the view of a *backend.Backend (see views.go).
type Backend struct {
	BackendKind
	c C.ggml_backend_t // set at birth, never changed
	// life: computes are exclusive work (Enter); schedulers over the
	// backend are users, so the C object outlives them.
	life  *Life
	abort *C.int    // flag read by the backend's abort callback; nil if it has none
	pool  *PoolSlot // the CPU thread pool it computes on, if any
	// lavapipe: the device is Mesa's software Vulkan driver, on which some
	// nodes are refused (Refusal).
	lavapipe bool
	link     Links // the RPC connections it computes over, if any (package rpc)
}

// Usable returns why b cannot be used (nil, closed), or nil.
func (b *Backend) Usable() error {
	if b == nil {
		return fmt.Errorf("%w: nil *Backend", ErrInvalid)
	}
	if b.life.Closed() {
		return fmt.Errorf("%w: the backend is closed", ErrClosed)
	}
	return b.link.Err()
}

// Links returns the RPC connections b computes over (none for a local
// backend).
func (b *Backend) Links() Links {
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
	if err := b.life.keep(); err != nil {
		return nil, err
	}
	return b.life.unkeep, nil
}

// Enter starts exclusive work on b (a compute, a plan, a transfer queued on
// its stream): ErrBusy while other work runs. Call Leave when it is over.
func (b *Backend) Enter() error {
	if b == nil {
		return fmt.Errorf("%w: nil *Backend", ErrInvalid)
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
	return SetOnDone(ctx, unsafe.Pointer(b.abort)) // also clears what a cancelled compute left set
}

// Abort returns b's abort flag (C memory), nil if it has none.
func (b *Backend) Abort() unsafe.Pointer { return unsafe.Pointer(b.abort) }

// Pool returns the slot of the CPU thread pool b computes on.
func (b *Backend) Pool() *PoolSlot { return b.pool }

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
				ErrUnsupported, device, C.GoString(&p.name[0]), C.GoString(&s.name[0]))
		}
	}
	return nil
}

// AttachThreadPool makes CPU backend b compute on thread pool pool (a
// ggml_threadpool_t, nil to detach) (ggml_backend_cpu_set_threadpool); ref
// counts the pool's users, isolate says the pool changes the priority or
// affinity of the thread that computes, so computes must run on a thread
// of their own. It is the user's choice (cpu.SetThreadPool): b no longer
// starts a pool of its own. ErrBusy while b computes (a custom op or eval
// callback of b's own compute, or another goroutine).
func (b *Backend) AttachThreadPool(pool unsafe.Pointer, ref PoolRef, isolate bool) error {
	if err := b.Enter(); err != nil {
		return err
	}
	defer b.Leave()
	if err := b.attachPool(pool, ref, isolate); err != nil {
		return err
	}
	b.pool.ownThreads = 0
	return nil
}

// attachPool is AttachThreadPool for a caller that holds b (Enter).
func (b *Backend) attachPool(pool unsafe.Pointer, ref PoolRef, isolate bool) error {
	if err := b.Usable(); err != nil {
		return err
	}
	defer runtime.KeepAlive(b)
	if !bool(C.ggml_backend_is_cpu(b.c)) {
		return fmt.Errorf("%w: thread pools are for the CPU backend, not %s", ErrUnsupported, b.Name())
	}
	// A CPU backend of a module loaded at run time is one too, but its
	// structs are that module's ggml's, which this one's
	// ggml_backend_cpu_set_threadpool may not know.
	if C.ggml_backend_dev_backend_reg(C.ggml_backend_get_device(b.c)) != C.ggml_backend_cpu_reg() {
		return fmt.Errorf("%w: thread pools attach to the linked ggml's CPU backend, not to one of a module loaded at run time (%s)", ErrUnsupported, b.Name())
	}
	if ref != nil {
		if err := ref.Acquire(); err != nil {
			return err
		}
	}
	// ggml pauses the pool it replaces: not while another backend
	// computes on it.
	end := func() {}
	if old := b.pool.ref; old != nil && old != ref {
		end, _ = beginPool(context.Background(), old)
	}
	C.ggml_backend_cpu_set_threadpool(b.c, (C.ggml_threadpool_t)(pool))
	end()
	b.pool.Release()
	b.pool.ref, b.pool.isolate = ref, isolate
	if ref != nil {
		b.pool.threads.Store(int64(ref.Threads()))
	}
	return nil
}

// NewOwnPool starts a CPU backend's own thread pool of n threads (package
// backend installs it): the pool, its user count, or why ggml could not.
var NewOwnPool func(n int) (pool unsafe.Pointer, ref PoolRef, err error)

// WantOwnPool makes b start a thread pool of its own, of n threads, when a
// compute or plan first needs one (EnsurePool); 0 never. Call it at b's
// birth or while holding b (Enter).
func (b *Backend) WantOwnPool(n int) { b.pool.ownThreads = n }

// ResizeOwnPool makes the pool b starts of its own n threads, if b wants
// one (WantOwnPool): a pool of its own already started, of another size,
// is let go (freed when no plan holds it), and the next compute starts
// the new one. The caller holds b (Enter).
func (b *Backend) ResizeOwnPool(n int) error {
	if b.pool.ownThreads == 0 {
		return nil // the user's pool, or none, stays
	}
	b.pool.ownThreads = n
	if b.pool.ref != nil && b.pool.ref.Threads() != n {
		return b.attachPool(nil, nil, false)
	}
	return nil
}

// EnsurePool starts b's own thread pool if b wants one (WantOwnPool) and
// has no pool: before a compute or a plan, while holding b (Enter). The
// pool is made then, not at b's birth, so that a backend that never
// computes holds no threads.
func (b *Backend) EnsurePool() error {
	n := b.pool.ownThreads
	if n == 0 || b.pool.ref != nil || NewOwnPool == nil {
		return nil
	}
	pool, ref, err := NewOwnPool(n)
	if err != nil {
		return err
	}
	if err := b.attachPool(pool, ref, false); err != nil {
		// Not attached: no user holds it. A use taken and given back
		// frees it (the last user of an own pool frees it).
		if ref.Acquire() == nil {
			ref.Release()
		}
		return err
	}
	return nil
}

// poolIDs numbers the CPU thread pools of package cpu and package
// backend's own, for the order of BeginPools.
var poolIDs atomic.Uint64

// NewPoolID returns a number no other pool has.
func NewPoolID() uint64 { return poolIDs.Add(1) }

// PoolSlot holds the CPU thread pool a backend computes on, where the
// backend's cleanup can see it.
type PoolSlot struct {
	ref     PoolRef
	isolate bool
	threads atomic.Int64 // the pool's size; 0: no pool
	// ownThreads: without a pool, the backend starts one of its own of
	// this many threads when it needs one (EnsurePool); 0: never (the
	// user attached one, or detached for good).
	ownThreads int
}

// Ref returns the pool, or nil.
func (s *PoolSlot) Ref() PoolRef { return s.ref }

// Isolate reports whether the pool changes the priority or affinity of the
// computing thread: computes then run on a thread of their own (OnThread).
func (s *PoolSlot) Isolate() bool { return s.isolate }

// Threads returns the pool's thread count, 0 without a pool.
func (s *PoolSlot) Threads() int64 { return s.threads.Load() }

// Release drops the pool.
func (s *PoolSlot) Release() {
	if s.ref != nil {
		s.ref.Release()
		s.ref, s.isolate = nil, false
		s.threads.Store(0)
	}
}

// Begin waits until the pool, if any, runs no other compute and marks
// this one running (ggml's pool runs one graph at a time); end marks it
// over.
func (s *PoolSlot) Begin(ctx context.Context) (end func(), err error) { return beginPool(ctx, s.ref) }

func beginPool(ctx context.Context, ref PoolRef) (end func(), err error) {
	if ref == nil {
		return func() {}, nil
	}
	if err := ref.Begin(ctx); err != nil {
		return nil, err
	}
	return ref.End, nil
}

// BeginPools calls Begin on the distinct thread pools of the CPU backends
// bes, in one global order so that two callers never wait on each other's
// pools; end calls End on them. isolate says a pool changes the priority or
// affinity of the thread that computes. The caller holds bes (Enter): the
// pools they want of their own are started first (EnsurePool).
func BeginPools(ctx context.Context, bes []*Backend) (end func(), isolate bool, err error) {
	var refs []PoolRef
	for _, b := range bes {
		if b != nil {
			if err := b.EnsurePool(); err != nil {
				return nil, false, err
			}
		}
		if b == nil || b.pool.ref == nil || slices.Contains(refs, b.pool.ref) {
			continue
		}
		refs = append(refs, b.pool.ref)
		isolate = isolate || b.pool.isolate
	}
	slices.SortFunc(refs, func(a, b PoolRef) int { return cmp.Compare(a.ID(), b.ID()) })
	for i, r := range refs {
		if err := r.Begin(ctx); err != nil {
			for _, r := range refs[:i] {
				r.End()
			}
			return nil, false, err
		}
	}
	return func() {
		for _, r := range refs {
			r.End()
		}
	}, isolate, nil
}

// BeginPool is beginPool for a pool captured elsewhere (a plan's).
func BeginPool(ctx context.Context, ref PoolRef) (end func(), err error) { return beginPool(ctx, ref) }

// BufferType is the view of a *backend.BufferType (see views.go).
type BufferType struct {
	BufferTypeKind
	c C.ggml_backend_buffer_type_t // nil only in a zero BufferType
}

// Ptr returns the ggml_backend_buffer_type_t of bt.
func (bt *BufferType) Ptr() (unsafe.Pointer, error) {
	if bt == nil || bt.c == nil {
		return nil, fmt.Errorf("%w: nil *BufferType", ErrInvalid)
	}
	return unsafe.Pointer(bt.c), nil
}

// NewBufferType is where every *backend.BufferType (T) is born: the handle
// of buffer type p (a ggml_backend_buffer_type_t, static in ggml), nil for
// nil. GPU packages get theirs from C through it.
func NewBufferType[T bufferTypeKind](p unsafe.Pointer) *T {
	if p == nil {
		return nil
	}
	bt := new(T)
	BufferTypeOf(bt).c = C.ggml_backend_buffer_type_t(p)
	return bt
}

// HostMemory is the view of a *backend.HostMemory (see views.go).
type HostMemory struct {
	HostMemoryKind
	mu   sync.Mutex
	p    unsafe.Pointer // nil once freed
	size uint64
}

// Span returns the address and size of the memory.
func (m *HostMemory) Span() (unsafe.Pointer, uint64, error) {
	if m == nil {
		return nil, 0, fmt.Errorf("%w: nil *HostMemory", ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.p == nil {
		return nil, 0, fmt.Errorf("%w: the host memory is freed", ErrClosed)
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
	DeviceKind
	c C.ggml_backend_dev_t
}

// Ptr returns the ggml_backend_dev_t of d. It does not check d's registry
// entry: d is one that package backend has just handed out.
func (d *Device) Ptr() (unsafe.Pointer, error) {
	if d == nil || d.c == nil {
		return nil, fmt.Errorf("%w: nil *Device", ErrInvalid)
	}
	return unsafe.Pointer(d.c), nil
}

// MetaMu serializes the creation of meta devices, and of their buffer
// types (ggml keeps both in static maps without a lock), against the C
// code that reads those maps (Lock: creation; RLock: readers).
var MetaMu sync.RWMutex

// ReadMeta read-locks MetaMu until done is called (a scheduler's creation
// reads ggml's maps of meta devices).
func ReadMeta() (done func()) {
	MetaMu.RLock()
	return MetaMu.RUnlock
}

// What only package backend knows, its registry entries and the splits of
// its meta devices, is run through these functions, which backend installs
// at init.
var (
	// WrapDevice returns the view of the *backend.Device of device p (a
	// ggml_backend_dev_t a package got from C: package rpc's devices);
	// DeviceHandle turns it into the handle.
	WrapDevice func(p unsafe.Pointer) *Device
	// MetaTransfer checks a read (write false) or write of size bytes at
	// offset of tensor t (a *C.struct_ggml_tensor) against what ggml's
	// meta buffer, and the CPU's extra buffer types (repacked weights,
	// AMX), assert; nil for a tensor outside such buffers.
	MetaTransfer func(t unsafe.Pointer, offset, size uint64, write bool) error
	// MetaGraph checks graph g for the meta backends among bes, before
	// its allocation (placed false) or after it, before a compute.
	MetaGraph func(bes []*Backend, g *Graph, placed bool) error
)
