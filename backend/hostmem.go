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
)

// HostMemoryAlign is the alignment of HostMemory: enough for every ggml
// buffer over caller memory (the CPU needs 32 bytes).
const HostMemoryAlign = 64

// HostMemory is host memory allocated outside the Go heap, for buffers over
// caller memory (Device.BufferFromHostMemory, CPUBufferFromHostMemory): C
// may keep pointers to it, which Go memory does not allow. Its Bytes are
// yours to fill and read. It cannot be freed while a buffer uses it: Close
// then reports an error; buffers keep it alive.
type HostMemory struct {
	_       noCopy
	mu      sync.Mutex
	p       unsafe.Pointer
	size    uint64
	users   int
	cleanup runtime.Cleanup
}

// AllocHostMemory allocates size bytes of host memory aligned to
// HostMemoryAlign (posix_memalign semantics through C.aligned_alloc).
func AllocHostMemory(size uint64) (*HostMemory, error) {
	if size == 0 || size > math.MaxInt64 {
		return nil, fmt.Errorf("%w: host memory of %d bytes", ggml.ErrInvalid, size)
	}
	padded := (size + HostMemoryAlign - 1) / HostMemoryAlign * HostMemoryAlign
	p := C.aligned_alloc(HostMemoryAlign, C.size_t(padded))
	if p == nil {
		return nil, fmt.Errorf("%w: could not allocate %d bytes of host memory", ggml.ErrNoMemory, size)
	}
	m := &HostMemory{p: p, size: size}
	m.cleanup = runtime.AddCleanup(m, func(p unsafe.Pointer) { C.free(p) }, p)
	return m, nil
}

// Size returns the size in bytes.
func (m *HostMemory) Size() uint64 {
	if m == nil {
		return 0
	}
	return m.size
}

// Bytes returns the memory as a slice, valid until Close. Nil once closed.
func (m *HostMemory) Bytes() []byte {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(m.p), m.size)
}

// Close frees the memory. It fails while a buffer uses it; it is idempotent
// and safe on nil.
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
	C.free(m.p)
	m.p = nil
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
