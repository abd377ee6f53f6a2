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
	var srcs [C.GGML_MAX_SRC]CustomView
	n := 0
	for i, s := range dst.src {
		if s != nil {
			srcs[i] = viewOf(s)
			n = i + 1
		}
	}
	dv := viewOf(dst)
	dv.cancel = op.cancel.Load()
	if op.tasks > 0 {
		if int(ith) >= op.tasks {
			return
		}
		nth = min(nth, C.int(op.tasks))
	}
	// The function runs on a goroutine of its own, so that nothing it does
	// reaches ggml's thread: a panic is recovered there, and so is
	// runtime.Goexit (t.FailNow, say), which on the thread ggml called from
	// would end that goroutine with C frames below it.
	done := make(chan struct{})
	go func() {
		returned := false
		defer func() {
			r := recover()
			if !returned && r == nil {
				r = "runtime.Goexit was called (t.FailNow or similar); a custom op's function must return"
			}
			if r != nil {
				buf := make([]byte, 8<<10)
				buf = buf[:runtime.Stack(buf, false)]
				op.mu.Lock()
				if op.panic == nil {
					op.panic = &CustomPanicError{Node: C.GoString(&dst.name[0]), Value: r, Stack: buf}
				}
				op.mu.Unlock()
			}
			close(done)
		}()
		op.fn(dv, srcs[:n:n], int(ith), int(nth))
		returned = true
	}()
	<-done
}
