//go:build cgo

package ggml

// #include "goggml.h"
import "C"

// nbytesOf, isContiguousOf and isContiguous1Of are ggml_nbytes,
// ggml_is_contiguous and ggml_is_contiguous_1 computed in Go from the C
// struct's type, ne and nb: the same rules as ggml's, without a cgo call
// (~30 ns) each. SetData, Data and Bytes ask the first two on every call,
// the row-walking ops (the unary ops among them) the third.
// TestLayoutMatchesGGML compares them with ggml's functions over views,
// permutations and every type, on each provider.

// nbytesOf returns ggml_nbytes of c: 0 for an empty tensor, else the
// bytes from its first to past its last element.
func nbytesOf(c *C.struct_ggml_tensor) uint64 {
	ty := Type(c._type)
	if !ty.Valid() {
		return 0
	}
	for i := range MaxDims {
		if int64(c.ne[i]) <= 0 {
			return 0
		}
	}
	size, blck := types[ty].size, uint64(types[ty].blockSize)
	var n uint64
	if blck == 1 {
		n = size + uint64(int64(c.ne[0])-1)*uint64(c.nb[0])
	} else {
		n = uint64(c.ne[0]) * uint64(c.nb[0]) / blck
	}
	for i := 1; i < MaxDims; i++ {
		n += uint64(int64(c.ne[i])-1) * uint64(c.nb[i])
	}
	return n
}

// isContiguousOf returns ggml_is_contiguous of c: every dimension of more
// than one element lies right after the previous ones.
func isContiguousOf(c *C.struct_ggml_tensor) bool { return isContiguousN(c, 0) }

// isContiguous1Of returns ggml_is_contiguous_1 of c: dimension 0 as for
// ggml_is_contiguous, dimension 1 free, and every dimension above it right
// after the ones below.
func isContiguous1Of(c *C.struct_ggml_tensor) bool { return isContiguousN(c, 1) }

// isContiguousN is the embedded ggml's ggml_is_contiguous_n(c, n) and
// upstream's ggml_is_contiguous_m_n(c, n, 4): dimensions 1 to n need not
// follow the ones below. The two differ where such a dimension has one
// element: the embedded ggml then measures the next from the row's size,
// upstream's from the free dimension's stride.
func isContiguousN(c *C.struct_ggml_tensor, n int) bool {
	ty := Type(c._type)
	if !ty.Valid() {
		return false
	}
	next, blck := types[ty].size, types[ty].blockSize
	ne0 := int64(c.ne[0])
	if ne0 != blck && uint64(c.nb[0]) != next {
		return false
	}
	next *= uint64(ne0 / blck)
	for i := 1; i < MaxDims; i++ {
		ne := int64(c.ne[i])
		switch {
		case i <= n:
			if ne != 1 || haveUpstream {
				next = uint64(ne) * uint64(c.nb[i])
			}
		case ne != 1:
			if uint64(c.nb[i]) != next {
				return false
			}
			next *= uint64(ne)
		}
	}
	return true
}

// cNbytes, cIsContiguous and cIsContiguous1 are ggml's own, for the test.
func cNbytes(t *Tensor) uint64      { return uint64(C.ggml_nbytes(t.c)) }
func cIsContiguous(t *Tensor) bool  { return bool(C.ggml_is_contiguous(t.c)) }
func cIsContiguous1(t *Tensor) bool { return bool(C.ggml_is_contiguous_1(t.c)) }
