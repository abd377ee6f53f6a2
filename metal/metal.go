//go:build darwin && arm64 && cgo

package metal

/*
#include "goggml.h"
#include "goggml/fwd-ggml-metal.h"
*/
import "C"

import (
	"fmt"
	"runtime"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	_ "github.com/go-ggml/ggml/internal/provider"
)

// Built reports whether this binary has the Metal backend.
const Built = true

// Init starts a backend on the Metal device (ggml_backend_metal_init,
// through the registry: the device's name is "Metal").
func Init() (*backend.Backend, error) { return backend.InitByName("Metal", "") }

func metalPtr(be *backend.Backend) (C.ggml_backend_t, error) {
	p, err := bridge.View[bridge.Backend](be).Ptr()
	if err != nil {
		return nil, err
	}
	c := C.ggml_backend_t(p)
	if !bool(C.ggml_backend_is_metal(c)) {
		return nil, fmt.Errorf("%w: %s is not a Metal backend", ggml.ErrInvalid, be.Name())
	}
	return c, nil
}

// IsMetal reports whether be is a Metal backend (ggml_backend_is_metal).
func IsMetal(be *backend.Backend) bool {
	p, err := bridge.View[bridge.Backend](be).Ptr()
	if err != nil {
		return false
	}
	defer runtime.KeepAlive(be)
	return bool(C.ggml_backend_is_metal(C.ggml_backend_t(p)))
}

// SupportsFamily reports whether the GPU supports Apple GPU family
// MTLGPUFamilyApple<family>, e.g. 7 for Apple7 (ggml_backend_metal_supports_family).
func SupportsFamily(be *backend.Backend, family int) (bool, error) {
	c, err := metalPtr(be)
	if err != nil {
		return false, err
	}
	if family < 1 {
		return false, fmt.Errorf("%w: GPU family %d", ggml.ErrInvalid, family)
	}
	defer runtime.KeepAlive(be)
	return bool(C.ggml_backend_metal_supports_family(c, C.int(family))), nil
}

// CaptureNextCompute makes Metal record the next compute for Xcode's GPU
// frame capture (ggml_backend_metal_capture_next_compute).
func CaptureNextCompute(be *backend.Backend) error {
	c, err := metalPtr(be)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(be)
	C.ggml_backend_metal_capture_next_compute(c)
	return nil
}
