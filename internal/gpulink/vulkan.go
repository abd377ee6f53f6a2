//go:build vulkan && cgo

package gpulink

/*
// The embedded provider: the static library make vulkan builds from its
// sources, in build/vulkan/lib of a checkout, or, for a module that
// requires go-ggml, where build/gpulib put it (CGO_LDFLAGS=-L<dir>). The system provider: upstream's libggml-vulkan.so beside the
// libggml that pkg-config finds, never the embedded library, whose structs
// differ. This is the one home of these flags: package vulkan relies on them.
#cgo !ggml_system LDFLAGS: -L${SRCDIR}/../../build/vulkan/lib -lggml-vulkan -lvulkan -lstdc++ -lm
#cgo ggml_system LDFLAGS: -lggml-vulkan
#include "goggml.h"
#include "goggml/fwd-ggml-vulkan.h"
*/
import "C"

import (
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
	_ "github.com/go-ggml/ggml/internal/provider"
)

func init() {
	// ggml_backend_vk_reg starts Vulkan and returns nil when it cannot
	// (no loader, no driver): then there is simply no Vulkan device.
	if reg := C.ggml_backend_vk_reg(); reg != nil && !registered(unsafe.Pointer(reg)) {
		bridge.RegisterBackend(unsafe.Pointer(reg))
	}
}
