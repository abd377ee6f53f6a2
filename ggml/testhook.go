package ggml

/*
#include <stdlib.h>
#include "goggml.h"

static void goggml_log_feed(int level, const char *text) {
	ggml_log_callback cb;
	void *ud;
	ggml_log_get(&cb, &ud);
	cb((enum ggml_log_level)level, text, ud);
}
*/
import "C"

import "unsafe"

// This file holds small hooks the package's internal tests call: test files
// cannot use cgo themselves. None of them aborts: the one that does is in
// internal/cabort, which only tests import.

// ggml log levels, for feeding the log callback as ggml would.
const (
	levelWarn  = int(C.GGML_LOG_LEVEL_WARN)
	levelError = int(C.GGML_LOG_LEVEL_ERROR)
	levelCont  = int(C.GGML_LOG_LEVEL_CONT)
)

type logPiece struct {
	level int
	text  string
}

// feedLog passes pieces to the log callback that ggml calls
// (ggml_log_get), as ggml would.
func feedLog(pieces []logPiece) {
	for _, p := range pieces {
		cs := C.CString(p.text)
		C.goggml_log_feed(C.int(p.level), cs)
		C.free(unsafe.Pointer(cs))
	}
}

// cGraphOverhead is ggml_graph_overhead_custom, for comparing with
// graphOverhead.
func cGraphOverhead(size uint64, grads bool) uint64 {
	return uint64(C.ggml_graph_overhead_custom(C.size_t(size), C.bool(grads)))
}

// swapData points t's C struct at other data and returns the old address:
// a new placement of t, as an allocator makes one, for the index plan's
// tests.
func swapData(t *Tensor, p unsafe.Pointer) unsafe.Pointer {
	old := t.c.data
	t.c.data = p
	return old
}

// dataPtr returns t's data address.
func dataPtr(t *Tensor) unsafe.Pointer { return t.c.data }
