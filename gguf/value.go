package gguf

import (
	"fmt"
	"strconv"
	"strings"
)

// ValueType is the type of a metadata value (enum gguf_type). The numbers
// are the file format's, the same with every provider.
type ValueType uint32

// The value types of the GGUF format (GGUF_TYPE_*).
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12

	numValueTypes = 13
)

var valueTypeNames = [numValueTypes]string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"}

// String returns the type's name as ggml spells it (gguf_type_name): "u8",
// "i32", "f32", "bool", "str", "arr", ...
func (t ValueType) String() string {
	if t < numValueTypes {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("ValueType(%d)", uint32(t))
}

// valid reports whether t is a type of the format.
func (t ValueType) valid() bool { return t < numValueTypes }

// size returns the encoded size of a value of a fixed-size type, 0 for
// strings and arrays.
func (t ValueType) size() uint64 {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize returns the fewest bytes one value of type t takes in a file: an
// array's count is capped by what is left of the file divided by this.
func (t ValueType) minSize() uint64 {
	switch t {
	case TypeString:
		return 8 // the length
	case TypeArray:
		return 12 // the element type and the count
	}
	return t.size()
}

// Data lists the Go types a metadata value takes: one Go type per GGUF type
// (bool for GGUF's bool, string for str), a slice of it for an array, and
// []Value for an array of arrays.
type Data interface {
	uint8 | int8 | uint16 | int16 | uint32 | int32 | float32 | bool | string | uint64 | int64 | float64 |
		[]uint8 | []int8 | []uint16 | []int16 | []uint32 | []int32 | []float32 | []bool | []string | []uint64 | []int64 | []float64 |
		[]Value
}

// Value is one metadata value: a scalar, a string or an array (whose
// elements may be arrays themselves). Values are immutable: accessors
// return copies of arrays.
type Value struct {
	typ  ValueType
	elem ValueType // the element type of an array
	v    any       // one of the Data types
}

// NewValue returns the Value of x. An array of arrays ([]Value) must hold
// arrays only; Builder.Set checks it.
func NewValue[T Data](x T) Value {
	v, _ := valueOf(cloneData(any(x)))
	return v
}

// ValueOf returns the Value of x, which must be a Value or one of the Data
// types; any other type (int, []any, ...) is an error of kind ErrType, as
// is an array of arrays that holds something else than arrays.
func ValueOf(x any) (Value, error) {
	if v, ok := x.(Value); ok {
		return v, v.check(0)
	}
	v, ok := valueOf(cloneData(x))
	if !ok {
		return Value{}, fmt.Errorf("%w: %T is not a GGUF value type (uint8 to uint64, int8 to int64, float32, float64, bool, string, a slice of one of them, or []gguf.Value)", ErrType, x)
	}
	return v, v.check(0)
}

// valueOf wraps x without copying.
func valueOf(x any) (Value, bool) {
	switch x := x.(type) {
	case uint8:
		return Value{typ: TypeUint8, v: x}, true
	case int8:
		return Value{typ: TypeInt8, v: x}, true
	case uint16:
		return Value{typ: TypeUint16, v: x}, true
	case int16:
		return Value{typ: TypeInt16, v: x}, true
	case uint32:
		return Value{typ: TypeUint32, v: x}, true
	case int32:
		return Value{typ: TypeInt32, v: x}, true
	case float32:
		return Value{typ: TypeFloat32, v: x}, true
	case bool:
		return Value{typ: TypeBool, v: x}, true
	case string:
		return Value{typ: TypeString, v: x}, true
	case uint64:
		return Value{typ: TypeUint64, v: x}, true
	case int64:
		return Value{typ: TypeInt64, v: x}, true
	case float64:
		return Value{typ: TypeFloat64, v: x}, true
	case []uint8:
		return Value{typ: TypeArray, elem: TypeUint8, v: x}, true
	case []int8:
		return Value{typ: TypeArray, elem: TypeInt8, v: x}, true
	case []uint16:
		return Value{typ: TypeArray, elem: TypeUint16, v: x}, true
	case []int16:
		return Value{typ: TypeArray, elem: TypeInt16, v: x}, true
	case []uint32:
		return Value{typ: TypeArray, elem: TypeUint32, v: x}, true
	case []int32:
		return Value{typ: TypeArray, elem: TypeInt32, v: x}, true
	case []float32:
		return Value{typ: TypeArray, elem: TypeFloat32, v: x}, true
	case []bool:
		return Value{typ: TypeArray, elem: TypeBool, v: x}, true
	case []string:
		return Value{typ: TypeArray, elem: TypeString, v: x}, true
	case []uint64:
		return Value{typ: TypeArray, elem: TypeUint64, v: x}, true
	case []int64:
		return Value{typ: TypeArray, elem: TypeInt64, v: x}, true
	case []float64:
		return Value{typ: TypeArray, elem: TypeFloat64, v: x}, true
	case []Value:
		return Value{typ: TypeArray, elem: TypeArray, v: x}, true
	}
	return Value{}, false
}

// cloneData copies a slice, so that a Value never shares memory with its
// caller.
func cloneData(x any) any {
	switch x := x.(type) {
	case []uint8:
		return clone(x)
	case []int8:
		return clone(x)
	case []uint16:
		return clone(x)
	case []int16:
		return clone(x)
	case []uint32:
		return clone(x)
	case []int32:
		return clone(x)
	case []float32:
		return clone(x)
	case []bool:
		return clone(x)
	case []string:
		return clone(x)
	case []uint64:
		return clone(x)
	case []int64:
		return clone(x)
	case []float64:
		return clone(x)
	case []Value:
		return clone(x)
	}
	return x
}

// clone copies s; a nil slice becomes an empty one (an array of 0 elements).
func clone[T any](s []T) []T { return append(make([]T, 0, len(s)), s...) }

// maxDepth is how deeply arrays may nest: an array of arrays is depth 2.
// The format sets no limit; this one keeps a lying file from recursing
// without end.
const maxDepth = 16

// check reports whether v is well formed: a known type, and an array of
// arrays that holds arrays only, nested at most maxDepth deep.
func (v Value) check(depth int) error {
	if v.v == nil {
		return fmt.Errorf("%w: the zero Value holds nothing", ErrType)
	}
	if depth >= maxDepth {
		return fmt.Errorf("%w: arrays nested more than %d deep", ErrType, maxDepth)
	}
	if vs, ok := v.v.([]Value); ok {
		for i, e := range vs {
			if e.typ != TypeArray {
				return fmt.Errorf("%w: element %d of an array of arrays is a %v", ErrType, i, e.typ)
			}
			if err := e.check(depth + 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// Type returns the value's type; TypeArray for an array.
func (v Value) Type() ValueType { return v.typ }

// ElemType returns the type of an array's elements (TypeArray for an array
// of arrays); for a value that is not an array it returns Type().
func (v Value) ElemType() ValueType {
	if v.typ == TypeArray {
		return v.elem
	}
	return v.typ
}

// Len returns the number of elements of an array, 0 for other values.
func (v Value) Len() int {
	switch x := v.v.(type) {
	case []uint8:
		return len(x)
	case []int8:
		return len(x)
	case []uint16:
		return len(x)
	case []int16:
		return len(x)
	case []uint32:
		return len(x)
	case []int32:
		return len(x)
	case []float32:
		return len(x)
	case []bool:
		return len(x)
	case []string:
		return len(x)
	case []uint64:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	case []Value:
		return len(x)
	}
	return 0
}

// Index returns element i of an array as a Value. It panics if v is not an
// array or i is out of range, as indexing a slice does.
func (v Value) Index(i int) Value {
	var e any
	switch x := v.v.(type) {
	case []uint8:
		e = x[i]
	case []int8:
		e = x[i]
	case []uint16:
		e = x[i]
	case []int16:
		e = x[i]
	case []uint32:
		e = x[i]
	case []int32:
		e = x[i]
	case []float32:
		e = x[i]
	case []bool:
		e = x[i]
	case []string:
		e = x[i]
	case []uint64:
		e = x[i]
	case []int64:
		e = x[i]
	case []float64:
		e = x[i]
	case []Value:
		return x[i]
	default:
		panic(fmt.Sprintf("gguf: Index of a %v value, not an array", v.typ))
	}
	out, _ := valueOf(e)
	return out
}

// Any returns the value as its Go type (see Data): uint32 for a u32, string
// for a str, []float32 for an array of f32, []Value for an array of arrays.
// Arrays are copies.
func (v Value) Any() any { return cloneData(v.v) }

// As returns v as a T (a copy, for an array), or false when v holds another
// type.
func As[T Data](v Value) (T, bool) {
	x, ok := v.v.(T)
	if !ok {
		return x, false
	}
	return cloneData(any(x)).(T), true
}

// String formats the value: numbers and bools as Go prints them, strings
// quoted, arrays in brackets with every element.
func (v Value) String() string {
	var b strings.Builder
	v.format(&b, -1)
	return b.String()
}

// format writes v to b, arrays cut after max elements (max < 0: all).
func (v Value) format(b *strings.Builder, max int) {
	switch x := v.v.(type) {
	case nil:
		b.WriteString("<nil>")
	case string:
		b.WriteString(strconv.Quote(x))
	case float32:
		b.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	default:
		if v.typ != TypeArray {
			fmt.Fprint(b, x)
			return
		}
		n := v.Len()
		b.WriteByte('[')
		for i := range n {
			if max >= 0 && i == max {
				fmt.Fprintf(b, ", ... %d more", n-max)
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			v.Index(i).format(b, max)
		}
		b.WriteByte(']')
	}
}

// Abbrev formats the value as String does, with arrays cut after max
// elements ("[1, 2, 3, ... 97 more]").
func (v Value) Abbrev(max int) string {
	var b strings.Builder
	v.format(&b, max)
	return b.String()
}
