//go:build vulkan && cgo

package vulkan

/*
// The library is linked by internal/gpulink (package backend imports it),
// the one home of the GPU link flags.
#include "goggml.h"
#include "goggml/fwd-ggml-vulkan.h"
*/
import "C"

import (
	"runtime"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/internal/bridge"
	_ "github.com/go-ggml/ggml/internal/provider"
)

// Built reports whether this binary has the Vulkan backend.
const Built = true

var kind = backend.GPUKind{Name: "Vulkan", Count: func() int { return int(C.ggml_backend_vk_get_device_count()) }}

// Reg returns the Vulkan entry of ggml's registry, or a backend.ErrNotFound
// error when Vulkan could not start.
func Reg() (*backend.Reg, error) { return kind.Reg() }

// DeviceCount returns the number of Vulkan devices ggml uses
// (ggml_backend_vk_get_device_count).
func DeviceCount() int { return kind.DeviceCount() }

func checkDevice(i int) error { return kind.Check(i) }

// Description returns device i's description
// (ggml_backend_vk_get_device_description).
func Description(i int) (string, error) {
	if err := checkDevice(i); err != nil {
		return "", err
	}
	var buf [256]C.char
	C.ggml_backend_vk_get_device_description(C.int(i), &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0]), nil
}

// Memory returns device i's free and total memory in bytes, as its
// registry device reports it (ggml_backend_dev_memory: the embedded
// provider's ggml_backend_vk_get_device_memory takes a device context, not
// the index its header declares, so it is not called directly; upstream's
// takes the index, and its registry device calls it, so both providers
// answer the same way).
func Memory(i int) (free, total uint64, err error) {
	d, err := Device(i)
	if err != nil {
		return 0, 0, err
	}
	free, total = d.Memory()
	return free, total, nil
}

// Device returns Vulkan device i as a registry device.
func Device(i int) (*backend.Device, error) { return kind.Device(i) }

// Init starts a backend on Vulkan device i (ggml_backend_vk_init, through
// the registry device).
func Init(i int) (*backend.Backend, error) { return kind.Init(i) }

// IsVulkan reports whether be is a Vulkan backend (ggml_backend_is_vk).
func IsVulkan(be *backend.Backend) bool {
	p, err := bridge.View[bridge.Backend](be).Ptr()
	if err != nil {
		return false
	}
	defer runtime.KeepAlive(be)
	return bool(C.ggml_backend_is_vk(C.ggml_backend_t(p)))
}

// BufferType returns device i's buffer type (ggml_backend_vk_buffer_type).
func BufferType(i int) (*backend.BufferType, error) {
	d, err := Device(i)
	if err != nil {
		return nil, err
	}
	return d.BufferType(), nil
}

// HostBufferType returns the pinned host buffer type for fast transfers to
// Vulkan devices (ggml_backend_vk_host_buffer_type).
func HostBufferType() (*backend.BufferType, error) {
	d, err := Device(0)
	if err != nil {
		return nil, err
	}
	return d.HostBufferType()
}
