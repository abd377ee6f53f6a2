package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// quantizable lists the types ggml_quantize_chunk has a case for; any other
// type reaches an assert in C.
var quantizable = map[string]bool{
	"f32": true, "f16": true, "bf16": true,
	"q4_0": true, "q4_1": true, "q5_0": true, "q5_1": true, "q8_0": true, "mxfp4": true,
	"nvfp4": true, "q1_0": true, "q2_0": true, // upstream ggml's (the system provider)
	"q2_K": true, "q3_K": true, "q4_K": true, "q5_K": true, "q6_K": true,
	"tq1_0": true, "tq2_0": true,
	"iq2_xxs": true, "iq2_xs": true, "iq3_xxs": true, "iq3_s": true, "iq2_s": true,
	"iq1_s": true, "iq1_m": true, "iq4_nl": true, "iq4_xs": true,
}

// validatable lists the types ggml_validate_row_data checks beyond the
// quantizable ones; it calls any other type invalid.
var validatable = map[string]bool{"f64": true, "q8_K": true, "i8": true, "i16": true, "i32": true, "i64": true}

// gridSearch lists the types whose quantizers search a lattice weighted by
// the importances: a block whose weights are all zero finds no point and
// ggml aborts ("found point not on grid"), so their importances must be > 0.
var gridSearch = map[string]bool{
	"iq2_xxs": true, "iq2_xs": true, "iq2_s": true, "iq3_xxs": true, "iq3_s": true, "iq1_s": true, "iq1_m": true,
}

// gridMin and gridMax bound what a grid type quantizes: its searches
// square, multiply and sum weighted values in float32. Huge values overflow
// the sums (ggml aborts: FuzzQuantize found 3e15); a group of 32 whose
// largest magnitude is small but above ggml's own zero threshold
// (GROUP_MAX_EPS*, 1e-15 to 1e-7) underflows them, and ggml aborts or reads
// outside its tables (a segfault in iq3_xxs at 1e-8, in iq3_s at 1e-45).
// Weights are of order 1e-3 to 1; the bounds keep float32's limits far.
const (
	gridMin = 1e-5
	gridMax = 1e8
)

// CanQuantize reports whether Quantize can produce t: ggml_quantize_chunk
// covers f32, f16, bf16 and the block types made for weights, not q8_1,
// q8_K (the CPU's internal formats) or the integer types.
func (t Type) CanQuantize() bool { return t.Valid() && quantizable[types[t].name] }

// RequiresImatrix reports whether quantizing to t needs an importance
// matrix (ggml_quantize_requires_imatrix): iq2_xxs, iq2_xs and iq1_s.
func (t Type) RequiresImatrix() bool {
	return t.Valid() && bool(C.ggml_quantize_requires_imatrix(C.enum_ggml_type(t)))
}

// CanDequantize reports whether Dequantize can read t: f32, or a type with
// a to-float conversion in ggml (ggml_get_type_traits(t)->to_float).
func (t Type) CanDequantize() bool {
	return t == TypeF32 || (t.Valid() && C.ggml_get_type_traits(C.enum_ggml_type(t)).to_float != nil)
}

// QuantizeInit builds the tables type t's quantizer needs, once per
// process (ggml_quantize_init): the iq1, iq2 and iq3 types search grids
// that ggml builds on their first use, which took 9 s for iq1_s on a
// 2-vCPU Sapphire Rapids (later calls: microseconds). Quantize does it
// by itself; call this to pay for it at a time of the program's choosing.
// Types without tables return at once. It is safe to call from several
// goroutines.
func QuantizeInit(t Type) error {
	if !t.CanQuantize() {
		return typeError(t, "quantize: ggml cannot quantize to %v", t)
	}
	C.ggml_quantize_init(C.enum_ggml_type(t))
	return nil
}

// Quantize converts src, rows of nPerRow float32 values each, to type t
// and returns the rows in ggml's layout, t.RowSize(nPerRow) bytes a row
// (ggml_quantize_chunk, which also runs ggml_quantize_init: a type's first
// call may take seconds, see QuantizeInit).
//
// nPerRow must be a positive multiple of t's block size and divide
// len(src). imatrix, the importance of each column, is nil or has nPerRow
// finite, non-negative values (positive for the iq1, iq2 and iq3 types,
// which also take values below 1e8 in magnitude only, in groups of 32 whose
// largest magnitude is 0 or at least 1e-5);
// types for which RequiresImatrix is true need one. Block types take finite values only. Violations are ErrShape,
// ErrType or ErrInvalid errors; nothing reaches ggml's asserts.
func Quantize(t Type, src []float32, nPerRow int64, imatrix []float32) ([]byte, error) {
	if !t.CanQuantize() {
		return nil, typeError(t, "quantize: ggml cannot quantize to %v", t)
	}
	if nPerRow <= 0 || nPerRow%t.BlockSize() != 0 {
		return nil, fmt.Errorf("%w: quantize: nPerRow (%d) must be a positive multiple of %v's block size %d", ErrShape, nPerRow, t, t.BlockSize())
	}
	if int64(len(src))%nPerRow != 0 {
		return nil, fmt.Errorf("%w: quantize: len(src) (%d) is not a whole number of rows of %d", ErrShape, len(src), nPerRow)
	}
	nrows := int64(len(src)) / nPerRow
	grid := gridSearch[types[t].name]
	if imatrix == nil && t.RequiresImatrix() {
		return nil, fmt.Errorf("%w: quantize: %v needs an importance matrix (ggml_quantize_requires_imatrix)", ErrInvalid, t)
	}
	if imatrix != nil {
		if int64(len(imatrix)) != nPerRow {
			return nil, fmt.Errorf("%w: quantize: imatrix has %d values, want one per column (%d)", ErrShape, len(imatrix), nPerRow)
		}
		for i, w := range imatrix {
			if !(w >= 0) || math.IsInf(float64(w), 0) {
				return nil, fmt.Errorf("%w: quantize: imatrix[%d] = %v: importances must be finite and >= 0", ErrInvalid, i, w)
			}
			if grid && w == 0 {
				return nil, fmt.Errorf("%w: quantize: imatrix[%d] = 0: %v searches a grid weighted by importance and aborts when a block weighs nothing; use a small positive value", ErrInvalid, i, t)
			}
		}
	}
	if t.IsQuantized() {
		hi := math.Inf(1)
		if grid {
			hi = gridMax
		}
		for i, v := range src {
			if a := math.Abs(float64(v)); !(a < hi) {
				return nil, fmt.Errorf("%w: quantize: src[%d] = %v: %v takes finite magnitudes below %g", ErrInvalid, i, v, t, hi)
			}
		}
		if grid {
			for g := 0; g < len(src); g += 32 { // the types' groups; a row is whole groups
				var m float64
				for _, v := range src[g : g+32] {
					m = max(m, math.Abs(float64(v)))
				}
				if m != 0 && m < gridMin {
					return nil, fmt.Errorf("%w: quantize: src[%d:%d] peaks at %g: %v takes groups of 32 whose largest magnitude is 0 or at least %g", ErrInvalid, g, g+32, m, t, gridMin)
				}
			}
		}
	}
	rowSize, err := t.RowSize(nPerRow)
	if err != nil {
		return nil, err
	}
	dst := make([]byte, uint64(nrows)*rowSize)
	if len(src) == 0 {
		return dst, nil
	}
	var im *C.float
	if imatrix != nil {
		im = (*C.float)(unsafe.Pointer(&imatrix[0]))
	}
	n := C.ggml_quantize_chunk(C.enum_ggml_type(t), (*C.float)(unsafe.Pointer(&src[0])), unsafe.Pointer(&dst[0]),
		0, C.int64_t(nrows), C.int64_t(nPerRow), im)
	runtime.KeepAlive(src)
	runtime.KeepAlive(imatrix)
	if uint64(n) != uint64(len(dst)) {
		return nil, fmt.Errorf("quantize: ggml wrote %d bytes, want %d", uint64(n), len(dst))
	}
	return dst, nil
}

// Dequantize converts data, whole blocks of type t, to float32 with ggml's
// to-float conversion (ggml_get_type_traits(t)->to_float). Any bytes are
// read without harm; ValidateRowData tells whether they hold NaN or Inf
// scales. A length that is not a whole number of blocks is an ErrShape
// error.
func Dequantize(t Type, data []byte) ([]float32, error) {
	if !t.CanDequantize() {
		return nil, typeError(t, "dequantize: ggml has no float conversion for %v", t)
	}
	if uint64(len(data))%t.Size() != 0 {
		return nil, fmt.Errorf("%w: dequantize: %d bytes is not a whole number of %v blocks of %d bytes", ErrShape, len(data), t, t.Size())
	}
	n := int64(uint64(len(data))/t.Size()) * t.BlockSize()
	out := make([]float32, n)
	if n == 0 {
		return out, nil
	}
	if t == TypeF32 { // ggml has no to_float for f32 itself
		copy(out, unsafe.Slice((*float32)(unsafe.Pointer(&data[0])), n))
		return out, nil
	}
	C.goggml_to_float(C.enum_ggml_type(t), unsafe.Pointer(&data[0]), (*C.float)(unsafe.Pointer(&out[0])), C.int64_t(n))
	runtime.KeepAlive(data)
	return out, nil
}

// ValidateRowData reports whether data, whole blocks of type t, is free of
// NaN and Inf in its values or block scales (ggml_validate_row_data, which
// also logs what it found to stderr). It is the check to run on tensor data
// read from a file before computing with it.
func ValidateRowData(t Type, data []byte) error {
	if !t.CanQuantize() && !validatable[t.String()] {
		return typeError(t, "validate: ggml cannot validate %v data", t)
	}
	if uint64(len(data))%t.Size() != 0 {
		return fmt.Errorf("%w: validate: %d bytes is not a whole number of %v blocks of %d bytes", ErrShape, len(data), t, t.Size())
	}
	if len(data) == 0 {
		return nil
	}
	ok := C.ggml_validate_row_data(C.enum_ggml_type(t), unsafe.Pointer(&data[0]), C.size_t(len(data)))
	runtime.KeepAlive(data)
	if !ok {
		return fmt.Errorf("%w: validate: %v data holds NaN or Inf", ErrInvalid, t)
	}
	return nil
}
