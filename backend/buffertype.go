package backend

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// BufferType is a kind of memory a device offers, such as the CPU's host
// memory or a GPU's device memory (ggml_backend_buffer_type_t). It is owned
// by ggml and lives as long as its device; it has no Close and is safe to
// share between goroutines.
type BufferType struct {
	// bridge.BufferType's fields: GPU packages see a *BufferType through
	// that view (bridge.View[bridge.BufferType]; TestViewLayouts checks the match).
	bufferTypeKind
	c C.ggml_backend_buffer_type_t
}

// bufferTypeKind marks BufferType for bridge.View[bridge.BufferType] (see
// backendKind).
type bufferTypeKind = bridge.Kind[bridge.BufferType]

// bufferTypeFromC returns the handle of buffer type c, nil for nil
// (bridge.NewBufferType, where GPU packages get theirs too).
func bufferTypeFromC(c C.ggml_backend_buffer_type_t) *BufferType {
	return bridge.NewBufferType[BufferType](unsafe.Pointer(c))
}

func (bt *BufferType) usable() error {
	_, err := bridge.View[bridge.BufferType](bt).Ptr()
	return err
}

// CPUBufferType returns the buffer type of host memory, always available
// (ggml_backend_cpu_buffer_type).
func CPUBufferType() *BufferType { return bufferTypeFromC(C.ggml_backend_cpu_buffer_type()) }

// Name returns the buffer type's name, e.g. "CPU" (ggml_backend_buft_name).
func (bt *BufferType) Name() string {
	if bt.usable() != nil {
		return ""
	}
	return C.GoString(C.ggml_backend_buft_name(bt.c))
}

// Alignment returns the alignment in bytes of tensor data in buffers of this
// type (ggml_backend_buft_get_alignment).
func (bt *BufferType) Alignment() uint64 {
	if bt.usable() != nil {
		return 0
	}
	return uint64(C.ggml_backend_buft_get_alignment(bt.c))
}

// MaxSize returns the largest buffer of this type that can be allocated
// (ggml_backend_buft_get_max_size).
func (bt *BufferType) MaxSize() uint64 {
	if bt.usable() != nil {
		return 0
	}
	return uint64(C.ggml_backend_buft_get_max_size(bt.c))
}

// IsHost reports whether buffers of this type are in host memory, readable
// by the CPU (ggml_backend_buft_is_host).
func (bt *BufferType) IsHost() bool {
	return bt.usable() == nil && bool(C.ggml_backend_buft_is_host(bt.c))
}

// Device returns the device that owns this buffer type, or nil
// (ggml_backend_buft_get_device). ggml leaves the device of its CPU buffer
// type (CPUBufferType, the CPU device's BufferType) unset; Device returns
// the CPU device for it.
func (bt *BufferType) Device() *Device {
	if bt.usable() != nil {
		return nil
	}
	if d := C.ggml_backend_buft_get_device(bt.c); d != nil {
		return deviceFromC(d)
	}
	if bt.c == C.ggml_backend_cpu_buffer_type() {
		// What ggml's FIXME there names: the CPU registry's device.
		return deviceFromC(C.ggml_backend_reg_dev_get(C.ggml_backend_cpu_reg(), 0))
	}
	return nil
}

// AllocSize returns the bytes tensor t needs in a buffer of this type; some
// types pad or add room (ggml_backend_buft_get_alloc_size).
func (bt *BufferType) AllocSize(t *ggml.Tensor) (n uint64, err error) {
	if err := bt.usable(); err != nil {
		return 0, err
	}
	releaseBT, err := bt.link().Hold()
	if err != nil {
		return 0, err
	}
	defer releaseBT()
	tc, err := tensorPtr(t)
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(t)
	defer life.Catch(&err)
	return uint64(C.ggml_backend_buft_get_alloc_size(bt.c, tc)), nil
}

// AllocBuffer allocates a buffer of size bytes of this type
// (ggml_backend_buft_alloc_buffer). size must be > 0: the embedded
// provider's ggml leaks the empty buffer it makes for size 0.
func (bt *BufferType) AllocBuffer(size uint64) (buf *Buffer, err error) {
	if err := bt.usable(); err != nil {
		return nil, err
	}
	releaseBT, err := bt.link().Hold()
	if err != nil {
		return nil, err
	}
	defer releaseBT()
	if size == 0 {
		return nil, fmt.Errorf("%w: a buffer of 0 bytes holds nothing (and ggml would leak it)", ggml.ErrInvalid)
	}
	if size > math.MaxInt64 {
		return nil, fmt.Errorf("%w: buffer of %d bytes", ggml.ErrNoMemory, size)
	}
	if max := bt.MaxSize(); size > max {
		return nil, fmt.Errorf("%w: %d bytes exceed the largest %s buffer (%d bytes)", ggml.ErrNoMemory, size, bt.Name(), max)
	}
	var c C.ggml_backend_buffer_t
	if err := func() (err error) {
		defer life.Catch(&err)
		c = C.ggml_backend_buft_alloc_buffer(bt.c, C.size_t(size))
		return nil
	}(); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w: could not allocate a %s buffer of %d bytes", ggml.ErrNoMemory, bt.Name(), size)
	}
	return newBuffer(c, bt, nil, nil), nil
}

// link returns the RPC connections of the buffer type's device (a meta
// device's are those of its devices), or none.
func (bt *BufferType) link() linkSet {
	if bt == nil || bt.c == nil {
		return nil
	}
	return linksOfBufferType(bt.c)
}

func linksOfBufferType(c C.ggml_backend_buffer_type_t) linkSet {
	if c == nil {
		return nil
	}
	return linksOfDevice(C.ggml_backend_buft_get_device(c))
}

// linkSet are the RPC connections a C object depends on: none for local
// devices, one for an RPC device, those of its devices for a meta device.
type linkSet = life.Links

func linksOfDevice(d C.ggml_backend_dev_t) linkSet {
	if d == nil {
		return nil
	}
	if k := life.LinkOf(unsafe.Pointer(d)); k != nil {
		return linkSet{k}
	}
	if m := metaOf(d); m != nil {
		return m.links
	}
	return nil
}

// String returns the buffer type's name.
func (bt *BufferType) String() string { return bt.Name() }
