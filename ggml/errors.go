package ggml

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-ggml/ggml/internal/life"
)

// Error kinds. Every error go-ggml returns wraps one of these, so callers
// test the kind with errors.Is. The five that packages below ggml report
// too are declared there (internal/bridge), once, and are these values.
var (
	// ErrClosed: the handle, or a parent it depends on, was closed.
	ErrClosed = life.ErrClosed
	// ErrBusy: the handle is in use by a compute or transfer on another
	// goroutine, or by the compute that runs the calling callback: a second
	// compute on a backend or scheduler while one runs, or a Close of a
	// context, backend or scheduler that work in flight still uses.
	ErrBusy = life.ErrBusy
	// ErrNotAllocated: the tensor has no memory yet (a NoAlloc context
	// whose tensors were not allocated in a backend buffer).
	ErrNotAllocated = life.ErrNotAllocated
	// ErrShape: shapes do not meet an op's rule.
	ErrShape = errors.New("ggml: invalid shape")
	// ErrType: a tensor type or Go element type does not fit.
	ErrType = errors.New("ggml: invalid type")
	// ErrInvalid: any other invalid argument (nil tensor, bad parameter).
	ErrInvalid = life.ErrInvalid
	// ErrNoMemory: a context's memory pool, a graph or an allocation is
	// too small.
	ErrNoMemory = errors.New("ggml: out of memory")
	// ErrGraphFull: the graph has no room for more nodes or leafs.
	ErrGraphFull = errors.New("ggml: graph full")
	// ErrUnsupported: the linked provider's ggml lacks the op, type or mode
	// (an op or type only upstream ggml has, in a build without -tags
	// ggml_system). The same value as backend.ErrUnsupported.
	ErrUnsupported = life.ErrUnsupported
)

// AssertError is a GGML_ASSERT or GGML_ABORT raised inside ggml on the
// calling goroutine's thread. go-ggml checks in Go what ggml asserts, so this
// error means a check is missing: please report it. The C object involved
// may be left inconsistent and should be discarded. An assert on one of
// ggml's own worker threads still ends the process.
type AssertError struct {
	// Message is ggml's own text: "file:line: condition".
	Message string
}

// Error returns ggml's message with a prefix that says it came from C.
func (e *AssertError) Error() string { return "ggml: assertion failed in C: " + e.Message }

// OpError is the error an op records on its context when its inputs break a
// rule of ggml. It names the op, describes the inputs and states the rule.
type OpError struct {
	Op     string   // ggml's op name, e.g. "mul_mat"
	Inputs []string // the inputs, e.g. "a f32[4 2]"
	Rule   string   // what ggml requires, e.g. "a.ne0 (4) != b.ne0 (3)"
	Err    error    // the kind (ErrShape, ErrType, ...) or an earlier error
}

// Error returns "ggml: op(inputs): rule" (a rule that is another error's
// text loses its own "ggml: ").
func (e *OpError) Error() string {
	return fmt.Sprintf("ggml: %s(%s): %s", e.Op, strings.Join(e.Inputs, ", "), strings.TrimPrefix(e.Rule, "ggml: "))
}

// Unwrap returns the kind of the error.
func (e *OpError) Unwrap() error { return e.Err }
