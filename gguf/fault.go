package gguf

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"unsafe"
)

// touch reads one byte of each page of b, bytes of the file's mapping that
// start at file offset at, in Go with faults turned into panics
// (runtime/debug.SetPanicOnFault): a page lost because another process
// truncated the file is then an error here, before ggml's C code reads b
// (validating it, copying it), where it would be a SIGBUS that ends the
// process. A truncation between touch and ggml's read still faults there.
func touch(b []byte, at uint64) (err error) {
	if len(b) == 0 {
		return nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		fault, ok := r.(interface{ Addr() uintptr })
		if _, isRuntime := r.(runtime.Error); !ok || !isRuntime {
			panic(r)
		}
		off := at + uint64(fault.Addr()-uintptr(unsafe.Pointer(&b[0])))
		err = &FormatError{Offset: int64(off), Reason: "reading the file's mapped page faulted: the file is shorter than when it was opened (truncated by another process?)"}
	}()
	page := os.Getpagesize()
	var s byte
	for i := 0; i < len(b); i += page {
		s ^= b[i]
	}
	s ^= b[len(b)-1]
	runtime.KeepAlive(s) // the reads must happen
	return nil
}

// checkSize reports a file that is shorter now than when it was opened:
// its mapping's pages past the new end fault when read.
func (f *File) checkSize() error {
	if f.osf == nil {
		return nil
	}
	st, err := f.osf.Stat()
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if n := uint64(st.Size()); n < f.size {
		return &FormatError{Offset: int64(n), Reason: fmt.Sprintf("the file was truncated to %d bytes after it was opened (it had %d)", n, f.size)}
	}
	return nil
}
