package gguf

import (
	"errors"
	"fmt"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// Error kinds; test them with errors.Is. Errors about ggml objects (a
// tensor, a buffer, allocation) carry package ggml's kinds (ggml.ErrClosed,
// ggml.ErrNoMemory, ...).
var (
	// ErrFormat: the bytes are not a GGUF file this package reads, or they
	// lie (a count larger than the file, data past its end, overlapping
	// tensors). Such errors are *FormatError.
	ErrFormat = errors.New("gguf: invalid file")
	// ErrNotFound: no metadata key or tensor of that name.
	ErrNotFound = errors.New("gguf: not found")
	// ErrType: a value of another type than the one asked for, or a Go
	// value that has no GGUF type.
	ErrType = errors.New("gguf: wrong type")
	// ErrInvalid: an invalid argument (a bad tensor name or shape, a
	// duplicate, data of the wrong size).
	ErrInvalid = errors.New("gguf: invalid argument")
	// ErrClosed is ggml.ErrClosed: the File or Model is closed.
	ErrClosed = ggml.ErrClosed
	// ErrCallback: a function of the caller's (LoadOptions.Progress, a
	// Source's open function) panicked, or broke its contract; the
	// operation stopped and undid what it had done.
	ErrCallback = errors.New("gguf: callback failed")
)

// FormatError says where a file stops being a GGUF file this package reads,
// and why. It wraps ErrFormat, and Err where set.
type FormatError struct {
	Offset int64  // the byte offset in the file where the problem is
	Reason string // what is wrong there
	// Err is a further kind, nil for most reasons: ggml.ErrUnsupported for
	// a tensor type only upstream ggml has (needs -tags ggml_system).
	Err error
}

// Error returns "gguf: invalid file at byte N: reason".
func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: invalid file at byte %d: %s", e.Offset, e.Reason)
}

// Unwrap returns ErrFormat, and Err where set.
func (e *FormatError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrFormat, e.Err}
	}
	return []error{ErrFormat}
}

// upstreamTypes are upstream ggml's names of the types only it has: with
// another ggml (the embedded provider) they are not Valid, and ggml has no
// name for them.
var upstreamTypes = map[ggml.Type]string{ggml.TypeNVFP4: "nvfp4", ggml.TypeQ1_0: "q1_0", ggml.TypeQ2_0: "q2_0"}

// needsUpstream returns, for a type the linked ggml does not know that
// upstream ggml has, why it cannot be used and true; else "" and false.
func needsUpstream(t ggml.Type) (string, bool) {
	name, ok := upstreamTypes[t]
	if !ok || t.Valid() {
		return "", false
	}
	return bridge.NeedsUpstream(fmt.Sprintf("type %d (%s)", int32(t), name)), true
}

// KeyError is the error of a metadata getter: the key is missing
// (ErrNotFound) or holds another type (ErrType).
type KeyError struct {
	Key  string
	Want string // the type asked for, e.g. "u32" or "[]str"
	Got  string // the type found, "" when the key is missing
	Err  error  // ErrNotFound or ErrType
}

// Error describes the failed lookup.
func (e *KeyError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("gguf: no metadata key %q", e.Key)
	}
	return fmt.Sprintf("gguf: metadata key %q is %s, not %s", e.Key, e.Got, e.Want)
}

// Unwrap returns the kind, ErrNotFound or ErrType.
func (e *KeyError) Unwrap() error { return e.Err }
