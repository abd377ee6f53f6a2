//go:build !ggml_system

package provider

/*
#cgo linux LDFLAGS: -rdynamic
#include "goggml.h"
*/
import "C"

// -rdynamic: binaries export ggml's symbols, so that a backend library
// loaded at run time (backend.Load) binds to this binary's ggml, the one
// its registry and handles live in, rather than to a second copy.

// Provider names the ggml this binary was linked with.
const Provider = "embedded (github.com/ollama/ollama v0.17.4)"
