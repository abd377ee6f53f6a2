//go:build unix

package gguf

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of f into memory, or returns nil where it cannot
// (Load then copies). The mapping is private and writable: the file never
// changes, and a write to a tensor loaded over it (a SetData, an in-place
// op) copies the page for this process instead of faulting.
func mapFile(f *os.File, size int) *mapping {
	if size == 0 {
		return nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|mapNoReserve)
	if err != nil {
		return nil
	}
	return newMapping(b, func(b []byte) { unix.Munmap(b) })
}

// dropPages tells the system the process no longer needs b's pages
// (MADV_DONTNEED): a later read of a private file mapping's page reads
// the file again.
func dropPages(b []byte) { unix.Madvise(b, unix.MADV_DONTNEED) }
