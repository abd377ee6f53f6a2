package backend

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
	"github.com/go-ggml/ggml/internal/sysmem"
)

// HostMemoryAlign is the alignment of HostMemory: enough for every ggml
// buffer over caller memory (the CPU needs 32 bytes).
const HostMemoryAlign = 64

// HostMemory is host memory for buffers over caller memory
// (Device.BufferFromHostMemory, CPUBufferFromHostMemory). Made by
// AllocHostMemory, it is Go memory pinned with runtime.Pinner, which lets C
// keep pointers to it while it is pinned. Its Bytes are yours to fill and
// read, and stay valid memory as long as you hold the slice, even after
// Close or after the HostMemory itself is collected (the garbage collector
// frees it only once nothing refers to it). Made by ExternalHostMemory, it
// is memory from outside Go's heap (a file mapping) that the HostMemory
// releases when it is done with it. It cannot be closed while a buffer uses
// it: Close then reports an error; buffers keep it alive.
type HostMemory struct {
	// The fields up to size are bridge.HostMemory's, in its order: GPU
	// packages see a *HostMemory through that view (bridge.View[bridge.HostMemory];
	// TestViewLayouts checks the match).
	hostMemoryKind
	mu       sync.Mutex
	p        unsafe.Pointer // the memory's address; nil once closed
	size     uint64
	_        life.NoCopy
	buf      []byte // HostMemoryAlign-aligned, size bytes; nil once closed
	users    int
	pin      *runtime.Pinner // nil for external memory
	giveBack *releaseOnce    // external memory: gives it back
	cleanup  runtime.Cleanup
}

// releaseOnce runs an external HostMemory's release function once, from
// Close or from the cleanup of the collected HostMemory.
type releaseOnce struct {
	once sync.Once
	f    func()
}

func (r *releaseOnce) run() { r.once.Do(r.f) }

// ExternalHostMemory wraps host memory allocated outside Go's heap (a file
// mapping made with mmap, C memory) for buffers over it, as AllocHostMemory's
// memory is. mem must start at a multiple of HostMemoryAlign and stay valid
// until release runs. release runs once: at Close, or when the HostMemory is
// collected; never while a buffer over the memory is alive (buffers keep
// their HostMemory alive, and Close refuses while one uses it). Go memory
// does not belong here (the garbage collector may move or free it): use
// AllocHostMemory.
func ExternalHostMemory(mem []byte, release func()) (*HostMemory, error) {
	if len(mem) == 0 {
		return nil, fmt.Errorf("%w: external host memory of 0 bytes", ggml.ErrInvalid)
	}
	if release == nil {
		return nil, fmt.Errorf("%w: ExternalHostMemory needs a release function", ggml.ErrInvalid)
	}
	p := unsafe.Pointer(unsafe.SliceData(mem))
	if uintptr(p)%HostMemoryAlign != 0 {
		return nil, fmt.Errorf("%w: external host memory at %p is not aligned to %d bytes", ggml.ErrInvalid, p, HostMemoryAlign)
	}
	r := &releaseOnce{f: release}
	m := &HostMemory{buf: mem[:len(mem):len(mem)], p: p, size: uint64(len(mem)), giveBack: r}
	m.cleanup = runtime.AddCleanup(m, func(r *releaseOnce) { life.Leaks.Collected(r); r.run() }, r)
	life.Leaks.Opened("HostMemory", r)
	return m, nil
}

// hostMemoryKind marks HostMemory for bridge.View[bridge.HostMemory] (see
// backendKind).
type hostMemoryKind = bridge.Kind[bridge.HostMemory]

// hostAvailable is sysmem.Available; tests may replace it.
var hostAvailable = sysmem.Available

// AllocHostMemory allocates size bytes of host memory aligned to
// HostMemoryAlign, zeroed. More than the machine's memory is ErrNoMemory.
func AllocHostMemory(size uint64) (*HostMemory, error) {
	if size == 0 || size > math.MaxInt64-HostMemoryAlign {
		return nil, fmt.Errorf("%w: host memory of %d bytes", ggml.ErrInvalid, size)
	}
	// The Go runtime ends the process when it cannot get memory: refuse
	// what cannot succeed first.
	if avail, ok := hostAvailable(); ok && size > avail {
		return nil, fmt.Errorf("%w: host memory of %d bytes, the machine has %d", ggml.ErrNoMemory, size, avail)
	}
	raw := make([]byte, size+HostMemoryAlign)
	off := 0
	if r := uintptr(unsafe.Pointer(unsafe.SliceData(raw))) % HostMemoryAlign; r != 0 {
		off = int(HostMemoryAlign - r)
	}
	buf := raw[off : off+int(size) : off+int(size)]
	pin := new(runtime.Pinner)
	pin.Pin(unsafe.SliceData(raw))
	m := &HostMemory{buf: buf, p: unsafe.Pointer(unsafe.SliceData(buf)), size: size, pin: pin}
	m.cleanup = runtime.AddCleanup(m, func(pin *runtime.Pinner) { life.Leaks.Collected(pin); pin.Unpin() }, pin)
	life.Leaks.Opened("HostMemory", pin)
	return m, nil
}

// Size returns the size in bytes.
func (m *HostMemory) Size() uint64 {
	if m == nil {
		return 0
	}
	return m.size
}

// Bytes returns the memory as a slice; nil once closed. A slice of
// AllocHostMemory's memory stays valid memory while you hold it, but buffers
// over the memory see what you write only until Close; a slice of
// ExternalHostMemory's memory is valid until Close.
func (m *HostMemory) Bytes() []byte {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.buf
}

// Close lets go of the memory: it unpins memory of AllocHostMemory (the
// garbage collector frees it once no slice refers to it) and runs the
// release function of ExternalHostMemory (slices of it are then invalid).
// It fails while a buffer uses it; it is idempotent and safe on nil.
func (m *HostMemory) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.p == nil {
		return nil
	}
	if m.users > 0 {
		return fmt.Errorf("%w: host memory is in use by %d buffer(s); close them first", ggml.ErrInvalid, m.users)
	}
	m.cleanup.Stop()
	if m.giveBack != nil {
		life.Leaks.Closed(m.giveBack)
		m.giveBack.run()
	} else {
		life.Leaks.Closed(m.pin)
		m.pin.Unpin()
	}
	m.p, m.buf = nil, nil
	return nil
}

// span checks [offset, offset+size) and the alignment of its start and
// returns its address, counting one more user.
func (m *HostMemory) span(offset, size, align uint64) (unsafe.Pointer, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil *HostMemory", ggml.ErrInvalid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.p == nil:
		return nil, fmt.Errorf("%w: the host memory is freed", ggml.ErrClosed)
	case size == 0 || offset > m.size || size > m.size-offset:
		return nil, fmt.Errorf("%w: bytes [%d, %d) of %d bytes of host memory", ggml.ErrShape, offset, offset+size, m.size)
	case align > 1 && offset%align != 0:
		return nil, fmt.Errorf("%w: offset %d is not a multiple of the buffer alignment %d", ggml.ErrInvalid, offset, align)
	}
	m.users++
	return unsafe.Add(m.p, offset), nil
}

func (m *HostMemory) release() {
	m.mu.Lock()
	m.users--
	m.mu.Unlock()
}

// hostBuffer wraps a buffer over m: it keeps m alive and in use until the
// buffer is freed.
func hostBuffer(c C.ggml_backend_buffer_t, m *HostMemory) *Buffer { return newBuffer(c, m, m, nil) }

// BufferFromHostMemory makes a buffer of the device over size bytes of m
// starting offset bytes in, with tensors of at most maxTensorSize bytes
// (ggml_backend_dev_buffer_from_host_ptr). offset must be a multiple of the
// device buffer type's alignment. ErrUnsupported when the device cannot
// (Props().Caps.BufferFromHostPtr).
func (d *Device) BufferFromHostMemory(m *HostMemory, offset, size, maxTensorSize uint64) (*Buffer, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	p, err := d.Props()
	if err != nil {
		return nil, err
	}
	if !p.Caps.BufferFromHostPtr {
		return nil, fmt.Errorf("%w: device %s cannot make buffers over host memory", ErrUnsupported, d.Name())
	}
	ptr, err := m.span(offset, size, max(d.BufferType().Alignment(), 32))
	if err != nil {
		return nil, err
	}
	c := C.ggml_backend_dev_buffer_from_host_ptr(d.c, ptr, C.size_t(size), C.size_t(maxTensorSize))
	if c == nil {
		m.release()
		return nil, fmt.Errorf("%w: device %s could not make a buffer over host memory", ErrUnsupported, d.Name())
	}
	return hostBuffer(c, m), nil
}

// CPUBufferFromHostMemory makes a CPU buffer over size bytes of m starting
// offset bytes in (ggml_backend_cpu_buffer_from_ptr); offset must be a
// multiple of 32.
func CPUBufferFromHostMemory(m *HostMemory, offset, size uint64) (*Buffer, error) {
	ptr, err := m.span(offset, size, 32)
	if err != nil {
		return nil, err
	}
	return hostBuffer(C.ggml_backend_cpu_buffer_from_ptr(ptr, C.size_t(size)), m), nil
}
