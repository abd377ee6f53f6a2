package backend

/*
#include "goggml.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
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

// refusal returns why node t must not be computed on a device (lavapipe
// tells whether the device is lavapipe), or nil.
func refusal(lavapipe bool, device string, t *C.struct_ggml_tensor) error {
	if !lavapipe || t == nil || t.op != C.GGML_OP_MUL_MAT {
		return nil
	}
	for _, s := range []*C.struct_ggml_tensor{t.src[0], t.src[1]} {
		for s != nil && s.view_src != nil {
			s = s.view_src
		}
		if s != nil && s.op == C.GGML_OP_IM2COL {
			return fmt.Errorf("%w: %s (Mesa lavapipe) would compute mul_mat node %q of im2col node %q (a convolution): on lavapipe this corrupts the host heap (ggml-vulkan leaves descriptor bindings to freed buffers, which lavapipe touches); compute convolutions on the CPU or a hardware GPU (see the vulkan package doc)",
				ErrUnsupported, device, C.GoString(&t.name[0]), C.GoString(&s.name[0]))
		}
	}
	return nil
}

// refuses is refusal for this backend's device.
func (b *Backend) refuses(t *C.struct_ggml_tensor) error {
	return refusal(b.lavapipe, b.Name(), t)
}

// refusesNode is bridge.RefuseNode: the refusal for node p on the backend
// whose ggml_backend_t is be.
func refusesNode(be, p unsafe.Pointer) error {
	if be == nil || p == nil || (*C.struct_ggml_tensor)(p).op != C.GGML_OP_MUL_MAT {
		return nil
	}
	c := C.ggml_backend_t(be)
	d := deviceFromC(C.ggml_backend_get_device(c))
	if !isLavapipe(d) {
		return nil
	}
	return refusal(true, C.GoString(C.ggml_backend_name(c)), (*C.struct_ggml_tensor)(p))
}
