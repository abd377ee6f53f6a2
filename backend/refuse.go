package backend

/*
#include "goggml.h"
*/
import "C"

import (
	"strings"
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
)

// Nodes the binding refuses to compute on a device although ggml says it
// supports them, because computing them there corrupts the process.
//
// Mesa's software Vulkan driver (lavapipe, device "llvmpipe ..."): a graph
// where an im2col node feeds a mul_mat node, as Conv1D, Conv2D and Conv2DDW
// build, corrupted the host heap in about half the runs of a test that ran
// other graphs first (glibc "malloc(): unsorted double linked list
// corrupted" in a later malloc or free). ggml-vulkan reuses its descriptor
// sets from graph to graph and rewrites only the bindings a dispatch uses,
// so the rest still name buffers freed since; lavapipe 22.3 dereferences
// them when it runs the command buffer (an atomic increment in freed memory,
// seen under Electric Fence). Keeping every buffer alive, or a ggml-vulkan
// that rewrites all twelve bindings, ends it. Upstream ggml 0.21.0 binds the
// same way. See vulkan/doc.go.

// isLavapipe reports whether device d is Mesa's lavapipe under ggml's
// Vulkan backend.
func isLavapipe(d *Device) bool {
	if d == nil || d.usable() != nil {
		return false
	}
	r := d.Reg()
	return r != nil && r.Name() == "Vulkan" && strings.Contains(strings.ToLower(d.Description()), "llvmpipe")
}

// refuses returns why node t must not be computed on b although ggml
// supports it there, or nil (bridge.Backend.Refusal, which package sched
// asks too).
func (b *Backend) refuses(t *C.struct_ggml_tensor) error {
	return bridge.View[bridge.Backend](b).Refusal(unsafe.Pointer(t))
}
