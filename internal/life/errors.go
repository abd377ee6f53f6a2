package life

import (
	"errors"
	"strings"
)

// The error kinds of handles that more than one package reports, declared
// here once: package ggml exports them as ggml.ErrClosed, ggml.ErrBusy,
// ggml.ErrInvalid, ggml.ErrNotAllocated and ggml.ErrUnsupported (which
// backend exports too), the values users test with errors.Is.
var (
	ErrClosed       = errors.New("ggml: use of closed handle")
	ErrBusy         = errors.New("ggml: handle in use")
	ErrInvalid      = errors.New("ggml: invalid argument")
	ErrNotAllocated = errors.New("ggml: tensor not allocated")
	ErrUnsupported  = errors.New("ggml backend: not supported")
)

// Prefixed returns err with what it is about before it, under one
// "ggml: " (err's own is dropped): Prefixed("graph input x f32[4]",
// ErrNotAllocated) reads "ggml: graph input x f32[4]: tensor not
// allocated". It unwraps to err.
func Prefixed(what string, err error) error { return &prefixed{what, err} }

type prefixed struct {
	what string
	err  error
}

func (e *prefixed) Error() string {
	return "ggml: " + e.what + ": " + strings.TrimPrefix(e.err.Error(), "ggml: ")
}

func (e *prefixed) Unwrap() error { return e.err }
