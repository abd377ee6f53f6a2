//go:build !ggml_system

package ggml

/*
#cgo CPPFLAGS: -I${SRCDIR}/include
#include "goggml.h"
*/
import "C"

import (
	// The embedded provider: compiles ggml's core and its CPU backend.
	_ "github.com/ollama/ollama/ml/backend/ggml/ggml/src"
)

// Provider names the ggml this binary was linked with.
const Provider = "embedded (github.com/ollama/ollama v0.17.4)"
