//go:build cuda && cgo

package gpulink

/*
// As for Vulkan (vulkan.go); package cuda relies on these lines.
#cgo !ggml_system LDFLAGS: -L${SRCDIR}/../../build/cuda/lib -lggml-cuda -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lcuda -lstdc++ -lm
#cgo ggml_system LDFLAGS: -lggml-cuda
#include "goggml.h"
#include "goggml/fwd-ggml-cuda.h"
*/
import "C"

import (
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
	_ "github.com/go-ggml/ggml/internal/provider"
)

func init() {
	if reg := C.ggml_backend_cuda_reg(); reg != nil && !registered(unsafe.Pointer(reg)) {
		bridge.RegisterBackend(unsafe.Pointer(reg))
	}
}
