//go:build race && cgo

package bridge

import (
	"runtime"
	"unsafe"
)

// raceCopy tells the race detector that size bytes are read at src and
// written at dst (C code does it: the detector does not see it). Addresses
// outside Go's memory are ignored.
func raceCopy(dst, src unsafe.Pointer, size uint64) {
	runtime.RaceReadRange(src, int(size))
	runtime.RaceWriteRange(dst, int(size))
}
