//go:build !cuda || !cgo

package cuda

import "github.com/go-ggml/ggml/backend"

// Built reports whether this binary has the CUDA backend.
const Built = false

// Reg returns ErrNotBuilt: this binary was built without -tags cuda.
func Reg() (*backend.Reg, error) { return nil, ErrNotBuilt }

// DeviceCount returns 0: this binary was built without -tags cuda.
func DeviceCount() int { return 0 }

// Description returns ErrNotBuilt: this binary was built without -tags cuda.
func Description(int) (string, error) { return "", ErrNotBuilt }

// Memory returns ErrNotBuilt: this binary was built without -tags cuda.
func Memory(int) (free, total uint64, err error) { return 0, 0, ErrNotBuilt }

// Device returns ErrNotBuilt: this binary was built without -tags cuda.
func Device(int) (*backend.Device, error) { return nil, ErrNotBuilt }

// Init returns ErrNotBuilt: this binary was built without -tags cuda.
func Init(int) (*backend.Backend, error) { return nil, ErrNotBuilt }

// IsCUDA returns false: this binary was built without -tags cuda.
func IsCUDA(*backend.Backend) bool { return false }

// BufferType returns ErrNotBuilt: this binary was built without -tags cuda.
func BufferType(int) (*backend.BufferType, error) { return nil, ErrNotBuilt }

// SplitBufferType returns ErrNotBuilt: this binary was built without -tags cuda.
func SplitBufferType(int, []float32) (*backend.BufferType, error) { return nil, ErrNotBuilt }

// HostBufferType returns ErrNotBuilt: this binary was built without -tags cuda.
func HostBufferType() (*backend.BufferType, error) { return nil, ErrNotBuilt }

// RegisterHostMemory returns ErrNotBuilt: this binary was built without -tags cuda.
func RegisterHostMemory(*backend.HostMemory) error { return ErrNotBuilt }

// UnregisterHostMemory returns ErrNotBuilt: this binary was built without -tags cuda.
func UnregisterHostMemory(*backend.HostMemory) error { return ErrNotBuilt }
