package ggml

// #include "goggml.h"
import "C"

import (
	"runtime"
	"runtime/cgo"
	"weak"
)

// goggmlCustom runs a custom op's Go function; the trampolines in custom.go
// call it from ggml's worker threads. (A file with //export may only
// declare C functions, hence this file of its own.)
//
//export goggmlCustom
func goggmlCustom(dst *C.struct_ggml_tensor, ith, nth C.int, hv C.uintptr_t) {
	h := cgo.Handle(hv)
	if _, ok := liveHandles.Load(h); !ok {
		return // the op's context was closed
	}
	wp, _ := h.Value().(weak.Pointer[customOp])
	op := wp.Value()
	if op == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			buf := make([]byte, 8<<10)
			buf = buf[:runtime.Stack(buf, false)]
			op.mu.Lock()
			if op.panic == nil {
				op.panic = &CustomPanicError{Node: C.GoString(&dst.name[0]), Value: r, Stack: buf}
			}
			op.mu.Unlock()
		}
	}()
	if op.tasks > 0 {
		if int(ith) >= op.tasks {
			return
		}
		nth = min(nth, C.int(op.tasks))
	}
	var srcs [C.GGML_MAX_SRC]CustomView
	n := 0
	for i, s := range dst.src {
		if s != nil {
			srcs[i] = viewOf(s)
			n = i + 1
		}
	}
	op.fn(viewOf(dst), srcs[:n:n], int(ith), int(nth))
}
