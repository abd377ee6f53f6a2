package bridge

/*
#include "goggml.h"
*/
import "C"

import "unsafe"

// The handles that several packages work on (ggml's Tensor, Context and
// Graph; backend's Backend, Device, BufferType and HostMemory) are seen from here
// through views: a view is a struct of this package whose fields are the
// first fields of the handle, in the same order and of the same layout (C
// pointers have this package's cgo types, the same C types). A handle
// embeds the view's kind (Kind[V]), a field of no size, through an
// unexported alias, so that users see neither the field nor a method;
// View accepts only a pointer to a type that embeds the kind, and returns
// the same memory as the view. Each handle's package has a test
// that checks the layouts match (testutil.SameLayout). The view's methods
// are the code that the other packages run on the handle: go-to-definition
// lands on them, and none calls back into the handle's package.

// Kind marks a handle type as one whose first fields are those of view V
// (a handle embeds Kind[V] through an unexported alias). It has no size,
// and users see neither it nor its method.
type Kind[V any] struct{}

func (Kind[V]) viewOf(*V) {}

// kinded is satisfied by the handle types that embed Kind[V].
type kinded[V any] interface{ viewOf(*V) }

// View returns the view V of handle h (nil for nil): bridge.View[Tensor]
// of a *ggml.Tensor, bridge.View[Backend] of a *backend.Backend, ...
func View[V any, H kinded[V]](h *H) *V { return (*V)(unsafe.Pointer(h)) }

// Handle returns the handle (H, such as ggml.Graph) whose view v is: the
// way back from a view that the handle's package made.
func Handle[H kinded[V], V any](v *V) *H { return (*H)(unsafe.Pointer(v)) }

// BufferOf returns the backend buffer (ggml_backend_buffer_t) that holds the
// data of the C tensor t: its view source's for a view; nil for data in a
// context's memory.
func BufferOf(t unsafe.Pointer) unsafe.Pointer {
	p := (*C.struct_ggml_tensor)(t)
	if p.view_src != nil {
		return unsafe.Pointer(p.view_src.buffer)
	}
	return unsafe.Pointer(p.buffer)
}
