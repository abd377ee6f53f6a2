package ggml

// #include "goggml.h"
import "C"

import (
	"github.com/go-ggml/ggml/third_party/ggml"
)

// Version returns ggml's version string (ggml_version), or "" when the
// provider did not set one (the embedded provider does not).
func Version() string { return goString(C.ggml_version()) }

// Commit returns the ggml commit the provider was built from (ggml_commit),
// or "" when the provider did not set one.
func Commit() string { return goString(C.ggml_commit()) }

// Provider names where this binary's ggml comes from, e.g.
// "embedded (github.com/ollama/ollama v0.17.4)".
func Provider() string { return ggml.Provider }

func goString(p *C.char) string {
	if p == nil {
		return ""
	}
	s := C.GoString(p)
	if s == "0x0" { // an unset version macro
		return ""
	}
	return s
}
