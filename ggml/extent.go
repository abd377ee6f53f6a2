//go:build cgo

package ggml

import "math/bits"

// mulAdd returns acc + n*nb and whether it fits in 64 bits.
func mulAdd(acc, n, nb uint64) (uint64, bool) {
	hi, lo := bits.Mul64(n, nb)
	sum, carry := bits.Add64(acc, lo, 0)
	return sum, hi == 0 && carry == 0
}

// extent returns the end, in bytes from the start of the memory it lies in,
// of a tensor of type t and shape ne with strides nb placed offset bytes
// in: offset + the row of ne0 + sum of (ne_i-1)*nb_i for i >= 1, as
// ggml_nbytes counts it. An empty shape reaches offset. ok is false when a
// step overflows 64 bits, which also catches a stride that would wrap to
// a negative offset (size_t strides are unsigned).
func extent(t Type, ne [MaxDims]int64, nb [MaxDims]uint64, offset uint64) (end uint64, ok bool) {
	for _, n := range ne {
		if n < 0 {
			return 0, false
		}
		if n == 0 {
			return offset, true
		}
	}
	row, err := t.RowSize(ne[0])
	if err != nil {
		return 0, false
	}
	end, carry := bits.Add64(offset, row, 0)
	if carry != 0 {
		return 0, false
	}
	for i := 1; i < MaxDims; i++ {
		if end, ok = mulAdd(end, uint64(ne[i]-1), nb[i]); !ok {
			return 0, false
		}
	}
	return end, true
}
