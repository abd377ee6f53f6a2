//go:build !darwin || !arm64 || !cgo

package metal

import "github.com/go-ggml/ggml/backend"

// Built reports whether this binary has the Metal backend.
const Built = false

// Init returns ErrNotBuilt: Metal is compiled in on darwin/arm64 only.
func Init() (*backend.Backend, error) { return nil, ErrNotBuilt }

// IsMetal returns false: Metal is compiled in on darwin/arm64 only.
func IsMetal(*backend.Backend) bool { return false }

// SupportsFamily returns ErrNotBuilt: Metal is compiled in on darwin/arm64 only.
func SupportsFamily(*backend.Backend, int) (bool, error) { return false, ErrNotBuilt }

// CaptureNextCompute returns ErrNotBuilt: Metal is compiled in on darwin/arm64 only.
func CaptureNextCompute(*backend.Backend) error { return ErrNotBuilt }
