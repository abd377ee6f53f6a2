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
// embeds the view's kind, a field of no size, through an unexported alias,
// so that users see neither the field nor a method; TensorOf and its
// siblings accept only a pointer to a type that embeds the kind, and
// return the same memory as the view. Each handle's package has a test
// that checks the layouts match (testutil.SameLayout). The view's methods
// are the code that the other packages run on the handle: go-to-definition
// lands on them, and none calls back into the handle's package.

// TensorKind marks package ggml's Tensor as a Tensor view (TensorOf).
type TensorKind struct{}

func (TensorKind) tensorKind() {}

// ContextKind marks package ggml's Context as a Context view (ContextOf).
type ContextKind struct{}

func (ContextKind) contextKind() {}

// GraphKind marks package ggml's Graph as a Graph view (GraphOf).
type GraphKind struct{}

func (GraphKind) graphKind() {}

// BackendKind marks package backend's Backend as a Backend view (BackendOf).
type BackendKind struct{}

func (BackendKind) backendKind() {}

// BufferTypeKind marks package backend's BufferType as a BufferType view
// (BufferTypeOf).
type BufferTypeKind struct{}

func (BufferTypeKind) bufferTypeKind() {}

// DeviceKind marks package backend's Device as a Device view (DeviceOf).
type DeviceKind struct{}

func (DeviceKind) deviceKind() {}

// HostMemoryKind marks package backend's HostMemory as a HostMemory view
// (HostMemoryOf).
type HostMemoryKind struct{}

func (HostMemoryKind) hostMemoryKind() {}

type (
	tensorKind     interface{ tensorKind() }
	contextKind    interface{ contextKind() }
	graphKind      interface{ graphKind() }
	backendKind    interface{ backendKind() }
	bufferTypeKind interface{ bufferTypeKind() }
	hostMemoryKind interface{ hostMemoryKind() }
	deviceKind     interface{ deviceKind() }
)

// TensorOf returns the view of a *ggml.Tensor (nil for nil).
func TensorOf[T tensorKind](t *T) *Tensor { return (*Tensor)(unsafe.Pointer(t)) }

// ContextOf returns the view of a *ggml.Context (nil for nil).
func ContextOf[T contextKind](c *T) *Context { return (*Context)(unsafe.Pointer(c)) }

// GraphOf returns the view of a *ggml.Graph (nil for nil).
func GraphOf[T graphKind](g *T) *Graph { return (*Graph)(unsafe.Pointer(g)) }

// GraphHandle returns the *ggml.Graph (T) whose view g is: the way back
// from a view that package ggml made (AdoptGraph).
func GraphHandle[T graphKind](g *Graph) *T { return (*T)(unsafe.Pointer(g)) }

// BackendOf returns the view of a *backend.Backend (nil for nil).
func BackendOf[T backendKind](b *T) *Backend { return (*Backend)(unsafe.Pointer(b)) }

// BackendHandle returns the *backend.Backend (T) whose view b is: the way
// back for the hooks package backend installs (MetaGraph).
func BackendHandle[T backendKind](b *Backend) *T { return (*T)(unsafe.Pointer(b)) }

// DeviceOf returns the view of a *backend.Device (nil for nil).
func DeviceOf[T deviceKind](d *T) *Device { return (*Device)(unsafe.Pointer(d)) }

// DeviceHandle returns the *backend.Device (T) whose view d is: the way
// back from a view that package backend made (WrapDevice).
func DeviceHandle[T deviceKind](d *Device) *T { return (*T)(unsafe.Pointer(d)) }

// BufferTypeOf returns the view of a *backend.BufferType (nil for nil).
func BufferTypeOf[T bufferTypeKind](bt *T) *BufferType {
	return (*BufferType)(unsafe.Pointer(bt))
}

// HostMemoryOf returns the view of a *backend.HostMemory (nil for nil).
func HostMemoryOf[T hostMemoryKind](m *T) *HostMemory { return (*HostMemory)(unsafe.Pointer(m)) }

// NoCopy makes go vet's copylocks check report copies of handle structs,
// and makes them incomparable: handles are used through pointers. Handles
// carry it as a field named _.
type NoCopy struct{ _ [0]func() }

// Lock is there for go vet's copylocks check; it does nothing.
func (*NoCopy) Lock() {}

// Unlock is there for go vet's copylocks check; it does nothing.
func (*NoCopy) Unlock() {}

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
