package ggml

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
	_ = [1]struct{}{}[unsafe.Sizeof(Tensor{})-unsafe.Sizeof(bridge.Tensor{})]
	_ = [1]struct{}{}[unsafe.Offsetof(Context{}.pool)-unsafe.Sizeof(bridge.Context{})]
	_ = [1]struct{}{}[unsafe.Offsetof(Graph{}.size)-unsafe.Sizeof(bridge.Graph{})]
)
