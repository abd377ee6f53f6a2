//go:build !race && cgo

package bridge

import "unsafe"

// raceCopy tells the race detector of a copy C makes; without -race there
// is none.
func raceCopy(dst, src unsafe.Pointer, size uint64) {}
