package backend

import (
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
)

// The views of internal/bridge are the first fields of these handles
// (bridge.View reads a handle's memory as its view). A change to a handle
// or to its view that moves where the view ends fails the build here, on
// an index out of range or a constant that overflows; TestViewLayouts
// checks the type of each field.
var (
	_ = [1]struct{}{}[unsafe.Offsetof(Backend{}.pool)-unsafe.Sizeof(bridge.Backend{})]
	_ = [1]struct{}{}[unsafe.Sizeof(BufferType{})-unsafe.Sizeof(bridge.BufferType{})]
	_ = [1]struct{}{}[unsafe.Offsetof(Device{}.reg)-unsafe.Sizeof(bridge.Device{})]
	_ = [1]struct{}{}[unsafe.Offsetof(HostMemory{}.buf)-unsafe.Sizeof(bridge.HostMemory{})]
)
