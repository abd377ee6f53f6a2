package backend

/*
#include "goggml.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	_ "github.com/go-ggml/ggml/internal/provider"
)

// Error kinds of this package; errors from ggml's kinds (ggml.ErrClosed,
// ggml.ErrNoMemory, ...) are used where they fit.
var (
	// ErrNotFound: no backend or device of that name or type.
	ErrNotFound = errors.New("ggml backend: not found")
	// ErrUnsupported: the backend cannot run an op, use a buffer type, or
	// offer a feature. The same value as ggml.ErrUnsupported.
	ErrUnsupported = ggml.ErrUnsupported
	// ErrComputeFailed: the backend reported GGML_STATUS_FAILED.
	ErrComputeFailed = errors.New("ggml backend: compute failed")
	// ErrAborted: the compute was aborted (GGML_STATUS_ABORTED) other than
	// by the caller's context.
	ErrAborted = errors.New("ggml backend: compute aborted")
)

// statusErr maps enum ggml_status to an error.
func statusErr(s C.enum_ggml_status) error {
	switch s {
	case C.GGML_STATUS_SUCCESS:
		return nil
	case C.GGML_STATUS_ALLOC_FAILED:
		return fmt.Errorf("%w: %s", ggml.ErrNoMemory, C.GoString(C.ggml_status_to_string(s)))
	case C.GGML_STATUS_ABORTED:
		return ErrAborted
	default:
		return fmt.Errorf("%w: %s", ErrComputeFailed, C.GoString(C.ggml_status_to_string(s)))
	}
}

// tensorPtr returns the C tensor of a usable tensor (bridge.Tensor.Ptr).
func tensorPtr(t *ggml.Tensor) (*C.struct_ggml_tensor, error) {
	p, err := bridge.View[bridge.Tensor](t).Ptr()
	return (*C.struct_ggml_tensor)(p), err
}

// contextPtr returns the C context of an open context without a sticky
// error (bridge.Context.Ptr).
func contextPtr(c *ggml.Context) (*C.struct_ggml_context, error) {
	p, err := bridge.View[bridge.Context](c).Ptr()
	return (*C.struct_ggml_context)(p), err
}

// cstring returns a C copy of s, or nil for "", and its free function.
func cstring(s string) (*C.char, func()) {
	if s == "" {
		return nil, func() {}
	}
	p := C.CString(s)
	return p, func() { C.free(unsafe.Pointer(p)) }
}

// haveOllamaExtras reports whether the linked ggml has the embedded
// provider's extra calls (ollama's patches): attempted sizes, batch-size
// hints, device reset and the extra device properties.
const haveOllamaExtras = C.GOGGML_HAVE_OLLAMA_EXTRAS != 0

// haveUpstream reports whether the linked ggml has what only upstream ggml
// has: 2-D transfers, the mmap capability, the newer ops and types.
const haveUpstream = C.GOGGML_HAVE_UPSTREAM != 0

// upstreamOnly is the error of a call that only upstream ggml has, in a
// binary linked with another provider.
func upstreamOnly(call string) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, bridge.NeedsUpstream(call))
}

// embeddedOnly is the error of a call that only the embedded provider's
// ggml has, in a binary linked with another provider.
func embeddedOnly(call string) error {
	return fmt.Errorf("%w: %s needs the embedded provider (github.com/ollama/ollama v0.17.4, the default build); this binary links %s",
		ErrUnsupported, call, ggml.Provider())
}
