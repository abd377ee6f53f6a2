// Package cabort makes ggml abort, for the tests that check an abort
// comes back as an error. Only tests import it, so no user's binary
// carries a function whose one job is to abort. It is the same on both
// providers.
package cabort

/*
#include <stdlib.h>
#include "goggml.h"
static void goggml_raise_assert(const char *msg) { GGML_ABORT("%s", msg); }
*/
import "C"

import (
	"unsafe"

	"github.com/go-ggml/ggml/internal/life"
)

// Raise makes ggml abort with msg on the calling thread (GGML_ABORT), as a
// failed GGML_ASSERT would, and returns what life.Catch makes of it: the
// *ggml.AssertError, once package ggml has installed its abort callback.
func Raise(msg string) (err error) {
	cs := C.CString(msg)
	defer C.free(unsafe.Pointer(cs))
	defer life.Catch(&err)
	C.goggml_raise_assert(cs)
	return nil
}
