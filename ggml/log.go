package ggml

/*
#include "goggml.h"
extern void goggmlAbort(char *message);
*/
import "C"

import (
	"log/slog"

	"github.com/go-ggml/ggml/internal/life"
)

// SetLogger routes ggml's log to l; nil restores slog.Default(). ggml's
// levels map to slog's: debug, info, warn and error. The route is in place
// before any backend starts, so a GPU backend's start-up lines go there
// too.
func SetLogger(l *slog.Logger) { life.SetLogger(l) }

func currentLogger() *slog.Logger { return life.Logger() }

//export goggmlAbort
func goggmlAbort(message *C.char) {
	// Unwinds through ggml's C frames to the nearest life.Catch of the
	// goroutine that called into C; see AssertError.
	panic(life.AssertPanic{Err: &AssertError{Message: C.GoString(message)}})
}
