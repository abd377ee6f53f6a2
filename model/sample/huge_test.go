//go:build linux

package sample

import (
	"math"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestTooManyLogits: more logits than token IDs reach are an ErrLogits
// error, found before any is read (the slice is 8 GiB of address space
// that no page backs).
func TestTooManyLogits(t *testing.T) {
	n := math.MaxInt32 + 1
	mem, err := syscall.Mmap(-1, 0, 4*n, syscall.PROT_NONE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		t.Skipf("no 8 GiB of address space: %v", err)
	}
	defer syscall.Munmap(mem)
	logits := unsafe.Slice((*float32)(unsafe.Pointer(&mem[0])), n)
	for _, p := range []Params{{}, Defaults()} {
		s, err := New(p)
		require.NoError(t, err)
		id, err := s.Sample(logits)
		require.ErrorIs(t, err, ErrLogits)
		require.ErrorContains(t, err, "2147483648 logits")
		require.Equal(t, int32(-1), id)
	}
}
