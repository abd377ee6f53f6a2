//go:build cgo

package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/go-ggml/ggml/internal/hashsize"
)

// MaxGraphSize is the largest node capacity of a graph: ggml keeps it in an
// int (struct ggml_cgraph's size).
const MaxGraphSize = math.MaxInt32

// cgraphSize is the size of struct ggml_cgraph (ggml-impl.h), whose size
// ggml_graph_nbytes counts; the header is not public, and the struct differs
// between providers: goggml.h mirrors the linked provider's.
// TestGraphOverhead checks the sizes computed with it against
// ggml_graph_overhead_custom.
const cgraphSize = uint64(C.sizeof_struct_goggml_cgraph_layout)

// bytesAdder sums sizes with ggml's alignment steps (incr_ptr_aligned),
// remembering an overflow.
type bytesAdder struct {
	n        uint64
	overflow bool
}

// add pads the sum to align and adds count items of elem bytes.
func (b *bytesAdder) add(count, elem, align uint64) {
	b.n = padChecked(b.n, align, &b.overflow)
	hi, lo := bits.Mul64(count, elem)
	var carry uint64
	b.n, carry = bits.Add64(b.n, lo, 0)
	if hi != 0 || carry != 0 {
		b.overflow = true
	}
}

// padChecked is pad that records an overflow.
func padChecked(n, align uint64, overflow *bool) uint64 {
	if n > math.MaxUint64-(align-1) {
		*overflow = true
		return n
	}
	return pad(n, align)
}

// graphNBytes is ggml_graph_nbytes: the bytes of a graph of size nodes and
// leafs, its hash set of ggml_hash_size(2*size) slots and, with grads, its
// gradient tables. ok is false on overflow.
func graphNBytes(size uint64, grads bool) (n uint64, ok bool) {
	if size > math.MaxUint64/2 {
		return 0, false
	}
	const ptr = uint64(unsafe.Sizeof(uintptr(0)))
	h := hashsize.Of(2 * size)
	var b bytesAdder
	b.add(1, cgraphSize, 1)
	b.add(size, ptr, ptr) // nodes
	b.add(size, ptr, ptr) // leafs
	b.add(h, 4, 4)        // use_counts
	b.add(h, ptr, ptr)    // hash keys
	if grads {
		b.add(h, ptr, ptr) // grads
		b.add(h, ptr, ptr) // grad_accs
	}
	b.add((h+31)/32, 4, 4) // the hash set's bitset
	return b.n, !b.overflow
}

// graphOverhead is ggml_graph_overhead_custom: what a graph takes in a
// context's pool, its object header included.
func graphOverhead(size uint64, grads bool) (uint64, bool) {
	n, ok := graphNBytes(size, grads)
	if !ok {
		return 0, false
	}
	overflow := false
	n = padChecked(n, memAlign, &overflow)
	n, carry := bits.Add64(n, objectSize, 0)
	return n, !overflow && carry == 0
}

// GraphOverhead returns the bytes a graph of size nodes takes in a
// context's pool (ggml_graph_overhead_custom, without gradients), computed
// in Go with overflow checks: ErrInvalid unless 1 <= size <= MaxGraphSize.
func GraphOverhead(size int) (uint64, error) {
	if size <= 0 || size > MaxGraphSize {
		return 0, fmt.Errorf("%w: graph size must be 1 to %d, got %d", ErrInvalid, MaxGraphSize, size)
	}
	n, ok := graphOverhead(uint64(size), false)
	if !ok {
		return 0, fmt.Errorf("%w: a graph of %d nodes is larger than 2^64 bytes", ErrNoMemory, size)
	}
	return n, nil
}
