//go:build ggml_system

package ggml

/*
#cgo CPPFLAGS: -I${SRCDIR}/include -DGOGGML_SYSTEM
#include "goggml.h"
*/
import "C"

// Provider names the ggml this binary was linked with.
const Provider = "system (pkg-config)"
