//go:build (vulkan || cuda) && cgo

package gpulink

/*
#include "goggml.h"

static int gpulink_registered(ggml_backend_reg_t reg) {
	for (size_t i = 0; i < ggml_backend_reg_count(); i++) {
		if (ggml_backend_reg_get(i) == reg) return 1;
	}
	return 0;
}
*/
import "C"

import (
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
)

// registered reports whether reg is in ggml's registry already: an
// upstream libggml built with the backend registers it at start-up, and
// the embedded ggml would list a second registration's devices twice.
func registered(reg unsafe.Pointer) bool {
	bridge.RegistryMu.Lock()
	defer bridge.RegistryMu.Unlock()
	return C.gpulink_registered(C.ggml_backend_reg_t(reg)) != 0
}
