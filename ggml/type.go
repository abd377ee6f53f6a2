package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"

	"github.com/go-ggml/ggml/internal/bridge"
)

// Type is a ggml tensor element type (enum ggml_type).
type Type int32

// The ggml types. Numbers are ggml's (enum ggml_type, checked against the
// linked provider's ggml.h at compile time); gaps are types ggml removed.
// ggml adds types with each version: TypeCount is 40 with the embedded
// provider, 43 with upstream v0.21.0. Type.String gives a type's name and
// int(t) its number, the one GGUF files store.
const (
	TypeF32     Type = 0
	TypeF16     Type = 1
	TypeQ4_0    Type = 2
	TypeQ4_1    Type = 3
	TypeQ5_0    Type = 6
	TypeQ5_1    Type = 7
	TypeQ8_0    Type = 8
	TypeQ8_1    Type = 9
	TypeQ2_K    Type = 10
	TypeQ3_K    Type = 11
	TypeQ4_K    Type = 12
	TypeQ5_K    Type = 13
	TypeQ6_K    Type = 14
	TypeQ8_K    Type = 15
	TypeIQ2_XXS Type = 16
	TypeIQ2_XS  Type = 17
	TypeIQ3_XXS Type = 18
	TypeIQ1_S   Type = 19
	TypeIQ4_NL  Type = 20
	TypeIQ3_S   Type = 21
	TypeIQ2_S   Type = 22
	TypeIQ4_XS  Type = 23
	TypeI8      Type = 24
	TypeI16     Type = 25
	TypeI32     Type = 26
	TypeI64     Type = 27
	TypeF64     Type = 28
	TypeIQ1_M   Type = 29
	TypeBF16    Type = 30
	TypeTQ1_0   Type = 34
	TypeTQ2_0   Type = 35
	TypeMXFP4   Type = 39

	// Types only upstream ggml has (the system provider): with the embedded
	// provider they are not Valid, and a call given one returns an
	// ErrUnsupported error that names -tags ggml_system. Their numbers are
	// upstream's, the ones GGUF files store.
	TypeNVFP4 Type = 40 // 4-bit E2M1 values in blocks of 64, an E4M3 scale per 16
	TypeQ1_0  Type = 41 // 1 bit (±d) per value in blocks of 128, an f16 scale d
	TypeQ2_0  Type = 42 // 2 bits (-d, 0, d, 2d) per value in blocks of 64, an f16 scale d

)

type typeInfo struct {
	name      string
	size      uint64 // bytes per block
	blockSize int64  // elements per block
	quantized bool
	vecDot    bool // the CPU has a dot product for it: mul_mat takes it as a
	fromFloat bool // the CPU converts f32 rows to it (set_rows, mul_mat's b)
}

// types caches ggml's type traits, read once at init: Type methods are then
// plain Go and cost no cgo call.
var types [TypeCount]typeInfo

func init() {
	for t := range TypeCount {
		ct := C.enum_ggml_type(t)
		bs := int64(C.ggml_blck_size(ct))
		if bs <= 0 {
			continue // removed from ggml
		}
		types[t] = typeInfo{
			name:      C.GoString(C.ggml_type_name(ct)),
			size:      uint64(C.ggml_type_size(ct)),
			blockSize: bs,
			quantized: bool(C.ggml_is_quantized(ct)),
			vecDot:    C.ggml_get_type_traits_cpu(ct).vec_dot != nil,
			fromFloat: C.ggml_get_type_traits_cpu(ct).from_float != nil,
		}
	}
}

// upstreamOnlyType reports whether t is a type that only upstream ggml
// has and the linked ggml lacks.
func upstreamOnlyType(t Type) bool {
	return !haveUpstream && (t == TypeNVFP4 || t == TypeQ1_0 || t == TypeQ2_0)
}

// typeError is the error of a call given type t that this ggml does not
// know, or cannot use for what: ErrUnsupported naming -tags ggml_system for
// a type only upstream ggml has, else ErrType.
func typeError(t Type, format string, args ...any) error {
	if upstreamOnlyType(t) {
		return fmt.Errorf("%w: %s: %s", ErrUnsupported, fmt.Sprintf(format, args...), bridge.NeedsUpstream(upstreamTypeNames[t]))
	}
	return fmt.Errorf("%w: %s", ErrType, fmt.Sprintf(format, args...))
}

// upstreamTypeNames are upstream ggml's names of its types, for errors in
// a binary whose ggml has no name for them.
var upstreamTypeNames = map[Type]string{TypeNVFP4: "nvfp4", TypeQ1_0: "q1_0", TypeQ2_0: "q2_0"}

// Types returns every type this ggml supports, in ggml's order.
func Types() []Type {
	var out []Type
	for t := range TypeCount {
		if t.Valid() {
			out = append(out, t)
		}
	}
	return out
}

// Valid reports whether t is a type this ggml supports.
func (t Type) Valid() bool { return t >= 0 && t < TypeCount && types[t].blockSize > 0 }

// String returns ggml's name of the type, e.g. "f32" or "q4_0"
// (ggml_type_name); upstream ggml's own types have their names with either
// provider.
func (t Type) String() string {
	if !t.Valid() {
		if name, ok := upstreamTypeNames[t]; ok {
			return name // a type of upstream ggml's, with the embedded provider
		}
		return fmt.Sprintf("Type(%d)", int32(t))
	}
	return types[t].name
}

// Size returns the size in bytes of one block of the type (ggml_type_size);
// for non-quantized types a block is one element.
func (t Type) Size() uint64 {
	if !t.Valid() {
		return 0
	}
	return types[t].size
}

// BlockSize returns the number of elements in one block (ggml_blck_size):
// 1 for plain types, 32 for q4_0, 256 for the k-quants.
func (t Type) BlockSize() int64 {
	if !t.Valid() {
		return 0
	}
	return types[t].blockSize
}

// IsQuantized reports whether t is a block-quantized type (ggml_is_quantized).
func (t Type) IsQuantized() bool { return t.Valid() && types[t].quantized }

// RowSize returns the size in bytes of a row of ne elements (ggml_row_size).
// ne must be a multiple of the block size; otherwise RowSize returns an
// ErrShape error.
func (t Type) RowSize(ne int64) (uint64, error) {
	if !t.Valid() {
		return 0, typeError(t, "%v is not a ggml type", t)
	}
	if ne < 0 || ne%types[t].blockSize != 0 {
		return 0, fmt.Errorf("%w: row of %d elements of %v: must be a non-negative multiple of the block size %d",
			ErrShape, ne, t, types[t].blockSize)
	}
	return t.Size() * uint64(ne/t.BlockSize()), nil
}
