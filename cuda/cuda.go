//go:build cuda && cgo

package cuda

/*
// The library is linked by internal/gpulink (package backend imports it),
// the one home of the GPU link flags.
#include "goggml.h"
#include "goggml/fwd-ggml-cuda.h"

// Upstream ggml (the system provider) has no split buffer type: its meta
// device (backend.NewMetaDevice) splits tensors over devices instead.
#ifdef GOGGML_SYSTEM
#define GOGGML_CUDA_HAS_SPLIT 0
static ggml_backend_buffer_type_t goggml_cuda_split_buffer_type(int main_device, const float * split) {
	(void) main_device; (void) split;
	return NULL;
}
#else
#define GOGGML_CUDA_HAS_SPLIT 1
static ggml_backend_buffer_type_t goggml_cuda_split_buffer_type(int main_device, const float * split) {
	return ggml_backend_cuda_split_buffer_type(main_device, split);
}
#endif
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	_ "github.com/go-ggml/ggml/internal/provider"
)

// Built reports whether this binary has the CUDA backend.
const Built = true

var kind = backend.GPUKind{Name: "CUDA", Count: func() int { return int(C.ggml_backend_cuda_get_device_count()) }}

// Reg returns the CUDA entry of ggml's registry, or a backend.ErrNotFound
// error when CUDA could not start.
func Reg() (*backend.Reg, error) { return kind.Reg() }

// DeviceCount returns the number of CUDA devices ggml uses
// (ggml_backend_cuda_get_device_count).
func DeviceCount() int { return kind.DeviceCount() }

func checkDevice(i int) error { return kind.Check(i) }

// Description returns device i's description
// (ggml_backend_cuda_get_device_description).
func Description(i int) (string, error) {
	if err := checkDevice(i); err != nil {
		return "", err
	}
	var buf [256]C.char
	C.ggml_backend_cuda_get_device_description(C.int(i), &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0]), nil
}

// Memory returns device i's free and total memory in bytes
// (ggml_backend_cuda_get_device_memory).
func Memory(i int) (free, total uint64, err error) {
	if err := checkDevice(i); err != nil {
		return 0, 0, err
	}
	var f, t C.size_t
	C.ggml_backend_cuda_get_device_memory(C.int(i), &f, &t)
	return uint64(f), uint64(t), nil
}

// Device returns CUDA device i as a registry device.
func Device(i int) (*backend.Device, error) { return kind.Device(i) }

// Init starts a backend on CUDA device i (ggml_backend_cuda_init, through
// the registry device).
func Init(i int) (*backend.Backend, error) { return kind.Init(i) }

// IsCUDA reports whether be is a CUDA backend (ggml_backend_is_cuda).
func IsCUDA(be *backend.Backend) bool {
	p, err := bridge.View[bridge.Backend](be).Ptr()
	if err != nil {
		return false
	}
	defer runtime.KeepAlive(be)
	return bool(C.ggml_backend_is_cuda(C.ggml_backend_t(p)))
}

// BufferType returns device i's buffer type (ggml_backend_cuda_buffer_type).
func BufferType(i int) (*backend.BufferType, error) {
	if err := checkDevice(i); err != nil {
		return nil, err
	}
	return bridge.NewBufferType[backend.BufferType](unsafe.Pointer(C.ggml_backend_cuda_buffer_type(C.int(i)))), nil
}

// SplitBufferType returns a buffer type that splits matrices by rows over
// the devices in the proportions of split (one entry per device; nil or all
// zeros: by free memory), with mainDevice for the rest
// (ggml_backend_cuda_split_buffer_type). Under the system provider it
// returns a backend.ErrUnsupported error: upstream ggml has no such buffer
// type (backend.NewMetaDevice splits tensors over devices there).
func SplitBufferType(mainDevice int, split []float32) (*backend.BufferType, error) {
	if C.GOGGML_CUDA_HAS_SPLIT == 0 {
		return nil, fmt.Errorf("%w: cuda.SplitBufferType needs ggml_backend_cuda_split_buffer_type, which upstream ggml (this binary links %s) does not have; backend.NewMetaDevice splits tensors over devices there",
			backend.ErrUnsupported, ggml.Provider())
	}
	if err := checkDevice(mainDevice); err != nil {
		return nil, err
	}
	n := DeviceCount()
	if split != nil && len(split) != n {
		return nil, fmt.Errorf("%w: %d split proportions for %d devices", ggml.ErrInvalid, len(split), n)
	}
	// ggml reads GGML_CUDA_MAX_DEVICES floats: give it a full array.
	var arr [16]C.float
	for i, v := range split {
		if v < 0 {
			return nil, fmt.Errorf("%w: split proportion %g is negative", ggml.ErrInvalid, v)
		}
		if i < len(arr) {
			arr[i] = C.float(v)
		}
	}
	bt := C.goggml_cuda_split_buffer_type(C.int(mainDevice), &arr[0])
	return bridge.NewBufferType[backend.BufferType](unsafe.Pointer(bt)), nil
}

// HostBufferType returns the pinned host buffer type for fast transfers
// (ggml_backend_cuda_host_buffer_type).
func HostBufferType() (*backend.BufferType, error) {
	if DeviceCount() == 0 {
		return nil, fmt.Errorf("%w: no CUDA device", backend.ErrNotFound)
	}
	return bridge.NewBufferType[backend.BufferType](unsafe.Pointer(C.ggml_backend_cuda_host_buffer_type())), nil
}

// RegisterHostMemory pins m for fast transfers to CUDA devices
// (ggml_backend_cuda_register_host_buffer). Unregister it before freeing m.
func RegisterHostMemory(m *backend.HostMemory) error {
	p, size, err := bridge.View[bridge.HostMemory](m).Span()
	if err != nil {
		return err
	}
	if !bool(C.ggml_backend_cuda_register_host_buffer(p, C.size_t(size))) {
		return fmt.Errorf("%w: CUDA could not register the host memory", backend.ErrUnsupported)
	}
	return nil
}

// UnregisterHostMemory undoes RegisterHostMemory
// (ggml_backend_cuda_unregister_host_buffer).
func UnregisterHostMemory(m *backend.HostMemory) error {
	p, _, err := bridge.View[bridge.HostMemory](m).Span()
	if err != nil {
		return err
	}
	C.ggml_backend_cuda_unregister_host_buffer(p)
	return nil
}
