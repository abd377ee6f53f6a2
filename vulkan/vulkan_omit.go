//go:build !vulkan || !cgo

package vulkan

import "github.com/go-ggml/ggml/backend"

// Built reports whether this binary has the Vulkan backend.
const Built = false

// Reg returns ErrNotBuilt: this binary was built without -tags vulkan.
func Reg() (*backend.Reg, error) { return nil, ErrNotBuilt }

// DeviceCount returns 0: this binary was built without -tags vulkan.
func DeviceCount() int { return 0 }

// Description returns ErrNotBuilt: this binary was built without -tags vulkan.
func Description(int) (string, error) { return "", ErrNotBuilt }

// Memory returns ErrNotBuilt: this binary was built without -tags vulkan.
func Memory(int) (free, total uint64, err error) { return 0, 0, ErrNotBuilt }

// Device returns ErrNotBuilt: this binary was built without -tags vulkan.
func Device(int) (*backend.Device, error) { return nil, ErrNotBuilt }

// Init returns ErrNotBuilt: this binary was built without -tags vulkan.
func Init(int) (*backend.Backend, error) { return nil, ErrNotBuilt }

// IsVulkan returns false: this binary was built without -tags vulkan.
func IsVulkan(*backend.Backend) bool { return false }

// BufferType returns ErrNotBuilt: this binary was built without -tags vulkan.
func BufferType(int) (*backend.BufferType, error) { return nil, ErrNotBuilt }

// HostBufferType returns ErrNotBuilt: this binary was built without -tags vulkan.
func HostBufferType() (*backend.BufferType, error) { return nil, ErrNotBuilt }
