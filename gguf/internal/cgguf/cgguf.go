// Package cgguf reads and writes GGUF files with ggml's own C code (gguf.h),
// for the tests of package gguf: what go-ggml writes, ggml must read the
// same, and the other way round. It is only ever given valid files (the
// embedded provider's gguf.cpp asserts or divides by zero on some lies).
package cgguf

/*
#include "goggml.h"
#include "goggml/fwd-gguf.h"

// cg_read opens fname with ggml's reader, tensor data included.
static struct gguf_context * cg_read(const char * fname, struct ggml_context ** data) {
	struct gguf_init_params p = { false, data };
	return gguf_init_from_file(fname, p);
}

// cg_new_data makes a context that holds n tensors and bytes of data.
static struct ggml_context * cg_new_data(size_t n, size_t bytes) {
	struct ggml_init_params p = { (n + 1) * ggml_tensor_overhead() + bytes + 64 * (n + 1), NULL, false };
	return ggml_init(p);
}
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	_ "github.com/go-ggml/ggml/internal/provider"
)

// The value types of gguf.h, for a test that the Go package numbers them
// the same.
var ValueTypes = map[string]uint32{
	"u8": C.GGUF_TYPE_UINT8, "i8": C.GGUF_TYPE_INT8, "u16": C.GGUF_TYPE_UINT16, "i16": C.GGUF_TYPE_INT16,
	"u32": C.GGUF_TYPE_UINT32, "i32": C.GGUF_TYPE_INT32, "f32": C.GGUF_TYPE_FLOAT32, "bool": C.GGUF_TYPE_BOOL,
	"str": C.GGUF_TYPE_STRING, "arr": C.GGUF_TYPE_ARRAY, "u64": C.GGUF_TYPE_UINT64, "i64": C.GGUF_TYPE_INT64,
	"f64": C.GGUF_TYPE_FLOAT64,
}

// TypeName returns gguf_type_name(t).
func TypeName(t uint32) string { return C.GoString(C.gguf_type_name(C.enum_gguf_type(t))) }

// Format constants of gguf.h.
const (
	Version          = C.GGUF_VERSION
	DefaultAlignment = C.GGUF_DEFAULT_ALIGNMENT
	KeyAlignment     = C.GGUF_KEY_GENERAL_ALIGNMENT
)

// KV is one key-value pair. Value holds the Go type of the value: uint8 ...
// float64, bool, string, or a slice of one of them for an array (Type is
// then "arr" and Elem the element type).
type KV struct {
	Key        string
	Type, Elem uint32
	Value      any
}

// Tensor is one tensor: its info and data.
type Tensor struct {
	Name         string
	Type         int32
	Ne           [4]int64
	Offset, Size uint64
	Data         []byte
}

// Contents is a GGUF file as ggml reads it.
type Contents struct {
	Version               uint32
	Alignment, DataOffset uint64
	KVs                   []KV
	Tensors               []Tensor
}

var errRead = errors.New("cgguf: gguf_init_from_file failed")

// Read reads the file at path with gguf_init_from_file, data included.
func Read(path string) (*Contents, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var data *C.struct_ggml_context
	g := C.cg_read(cpath, &data)
	if g == nil {
		return nil, errRead
	}
	defer C.gguf_free(g)
	defer C.ggml_free(data)
	c := &Contents{
		Version:    uint32(C.gguf_get_version(g)),
		Alignment:  uint64(C.gguf_get_alignment(g)),
		DataOffset: uint64(C.gguf_get_data_offset(g)),
	}
	for i := range C.int64_t(C.gguf_get_n_kv(g)) {
		kv := KV{Key: C.GoString(C.gguf_get_key(g, i)), Type: uint32(C.gguf_get_kv_type(g, i))}
		switch kv.Type {
		case C.GGUF_TYPE_ARRAY:
			kv.Elem = uint32(C.gguf_get_arr_type(g, i))
			n := int(C.gguf_get_arr_n(g, i))
			if kv.Elem == C.GGUF_TYPE_STRING {
				s := make([]string, n)
				for j := range s {
					s[j] = C.GoString(C.gguf_get_arr_str(g, i, C.size_t(j)))
				}
				kv.Value = s
			} else {
				sz := size(kv.Elem)
				var b []byte
				if n > 0 {
					b = C.GoBytes(C.gguf_get_arr_data(g, i), C.int(n*sz))
				}
				kv.Value = decode(kv.Elem, b, n)
			}
		case C.GGUF_TYPE_STRING:
			kv.Value = C.GoString(C.gguf_get_val_str(g, i))
		default:
			b := C.GoBytes(C.gguf_get_val_data(g, i), C.int(size(kv.Type)))
			kv.Value = first(decode(kv.Type, b, 1))
		}
		c.KVs = append(c.KVs, kv)
	}
	for i := range C.int64_t(C.gguf_get_n_tensors(g)) {
		name := C.gguf_get_tensor_name(g, i)
		t := Tensor{
			Name:   C.GoString(name),
			Type:   int32(C.gguf_get_tensor_type(g, i)),
			Offset: uint64(C.gguf_get_tensor_offset(g, i)),
			Size:   uint64(C.gguf_get_tensor_size(g, i)),
		}
		ct := C.ggml_get_tensor(data, name)
		if ct == nil {
			return nil, fmt.Errorf("cgguf: tensor %q is not in the data context", t.Name)
		}
		for d := range 4 {
			t.Ne[d] = int64(ct.ne[d])
		}
		t.Data = C.GoBytes(ct.data, C.int(t.Size))
		c.Tensors = append(c.Tensors, t)
	}
	return c, nil
}

// Write writes c's key-value pairs and tensors to path with ggml's writer
// (gguf_set_val_*, gguf_set_arr_*, gguf_add_tensor, gguf_write_to_file).
// Offsets, sizes and the version are ggml's to choose.
func Write(path string, c *Contents) error {
	g := C.gguf_init_empty()
	defer C.gguf_free(g)
	var cstrs []*C.char
	defer func() {
		for _, s := range cstrs {
			C.free(unsafe.Pointer(s))
		}
	}()
	cs := func(s string) *C.char {
		p := C.CString(s)
		cstrs = append(cstrs, p)
		return p
	}
	for _, kv := range c.KVs {
		key := cs(kv.Key)
		switch v := kv.Value.(type) {
		case uint8:
			C.gguf_set_val_u8(g, key, C.uint8_t(v))
		case int8:
			C.gguf_set_val_i8(g, key, C.int8_t(v))
		case uint16:
			C.gguf_set_val_u16(g, key, C.uint16_t(v))
		case int16:
			C.gguf_set_val_i16(g, key, C.int16_t(v))
		case uint32:
			C.gguf_set_val_u32(g, key, C.uint32_t(v))
		case int32:
			C.gguf_set_val_i32(g, key, C.int32_t(v))
		case float32:
			C.gguf_set_val_f32(g, key, C.float(v))
		case uint64:
			C.gguf_set_val_u64(g, key, C.uint64_t(v))
		case int64:
			C.gguf_set_val_i64(g, key, C.int64_t(v))
		case float64:
			C.gguf_set_val_f64(g, key, C.double(v))
		case bool:
			C.gguf_set_val_bool(g, key, C.bool(v))
		case string:
			C.gguf_set_val_str(g, key, cs(v))
		case []string:
			arr := (**C.char)(C.malloc(C.size_t(max(len(v), 1)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
			ptrs := unsafe.Slice(arr, max(len(v), 1))
			for j, s := range v {
				ptrs[j] = cs(s)
			}
			C.gguf_set_arr_str(g, key, arr, C.size_t(len(v)))
			C.free(unsafe.Pointer(arr))
		default:
			et, b, n, ok := encode(v)
			if !ok {
				return fmt.Errorf("cgguf: key %q: cannot write a %T", kv.Key, v)
			}
			p := C.malloc(C.size_t(max(len(b), 1)))
			copy(unsafe.Slice((*byte)(p), len(b)), b)
			C.gguf_set_arr_data(g, key, C.enum_gguf_type(et), p, C.size_t(n))
			C.free(p)
		}
	}
	total := 0
	for _, t := range c.Tensors {
		total += len(t.Data)
	}
	data := C.cg_new_data(C.size_t(len(c.Tensors)), C.size_t(total))
	if data == nil {
		return errors.New("cgguf: ggml_init failed")
	}
	defer C.ggml_free(data)
	for _, t := range c.Tensors {
		var ne [4]C.int64_t
		for d := range 4 {
			ne[d] = C.int64_t(t.Ne[d])
		}
		ct := C.ggml_new_tensor(data, C.enum_ggml_type(t.Type), 4, &ne[0])
		if ct == nil {
			return fmt.Errorf("cgguf: tensor %q: ggml_new_tensor failed", t.Name)
		}
		C.ggml_set_name(ct, cs(t.Name))
		if uint64(C.ggml_nbytes(ct)) != uint64(len(t.Data)) {
			return fmt.Errorf("cgguf: tensor %q: %d bytes of data for %d", t.Name, len(t.Data), C.ggml_nbytes(ct))
		}
		if len(t.Data) > 0 {
			C.memcpy(ct.data, unsafe.Pointer(&t.Data[0]), C.size_t(len(t.Data)))
		}
		C.gguf_add_tensor(g, ct)
	}
	if !C.gguf_write_to_file(g, cs(path), false) {
		return errors.New("cgguf: gguf_write_to_file failed")
	}
	return nil
}

func size(t uint32) int {
	switch t {
	case C.GGUF_TYPE_UINT8, C.GGUF_TYPE_INT8, C.GGUF_TYPE_BOOL:
		return 1
	case C.GGUF_TYPE_UINT16, C.GGUF_TYPE_INT16:
		return 2
	case C.GGUF_TYPE_UINT32, C.GGUF_TYPE_INT32, C.GGUF_TYPE_FLOAT32:
		return 4
	}
	return 8
}

// first returns element 0 of a slice that decode made.
func first(x any) any {
	switch x := x.(type) {
	case []uint8:
		return x[0]
	case []int8:
		return x[0]
	case []uint16:
		return x[0]
	case []int16:
		return x[0]
	case []uint32:
		return x[0]
	case []int32:
		return x[0]
	case []float32:
		return x[0]
	case []bool:
		return x[0]
	case []uint64:
		return x[0]
	case []int64:
		return x[0]
	case []float64:
		return x[0]
	}
	panic(fmt.Sprintf("cgguf: first of %T", x))
}

// decode decodes n little-endian values of type t into a slice.
func decode(t uint32, b []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case C.GGUF_TYPE_UINT8:
		return append([]uint8{}, b[:n]...)
	case C.GGUF_TYPE_INT8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(b[i])
		}
		return out
	case C.GGUF_TYPE_BOOL:
		out := make([]bool, n)
		for i := range out {
			out[i] = b[i] != 0
		}
		return out
	case C.GGUF_TYPE_UINT16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = le.Uint16(b[2*i:])
		}
		return out
	case C.GGUF_TYPE_INT16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(le.Uint16(b[2*i:]))
		}
		return out
	case C.GGUF_TYPE_UINT32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = le.Uint32(b[4*i:])
		}
		return out
	case C.GGUF_TYPE_INT32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(le.Uint32(b[4*i:]))
		}
		return out
	case C.GGUF_TYPE_FLOAT32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
		return out
	case C.GGUF_TYPE_UINT64:
		out := make([]uint64, n)
		for i := range out {
			out[i] = le.Uint64(b[8*i:])
		}
		return out
	case C.GGUF_TYPE_INT64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(le.Uint64(b[8*i:]))
		}
		return out
	case C.GGUF_TYPE_FLOAT64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
		return out
	}
	panic(fmt.Sprintf("cgguf: decode of type %d", t))
}

// encode returns the gguf type, little-endian bytes and count of an array.
func encode(v any) (uint32, []byte, int, bool) {
	le := binary.LittleEndian
	switch v := v.(type) {
	case []uint8:
		return C.GGUF_TYPE_UINT8, v, len(v), true
	case []int8:
		b := make([]byte, len(v))
		for i, x := range v {
			b[i] = byte(x)
		}
		return C.GGUF_TYPE_INT8, b, len(v), true
	case []bool:
		b := make([]byte, len(v))
		for i, x := range v {
			if x {
				b[i] = 1
			}
		}
		return C.GGUF_TYPE_BOOL, b, len(v), true
	case []uint16:
		b := make([]byte, 2*len(v))
		for i, x := range v {
			le.PutUint16(b[2*i:], x)
		}
		return C.GGUF_TYPE_UINT16, b, len(v), true
	case []int16:
		b := make([]byte, 2*len(v))
		for i, x := range v {
			le.PutUint16(b[2*i:], uint16(x))
		}
		return C.GGUF_TYPE_INT16, b, len(v), true
	case []uint32:
		b := make([]byte, 4*len(v))
		for i, x := range v {
			le.PutUint32(b[4*i:], x)
		}
		return C.GGUF_TYPE_UINT32, b, len(v), true
	case []int32:
		b := make([]byte, 4*len(v))
		for i, x := range v {
			le.PutUint32(b[4*i:], uint32(x))
		}
		return C.GGUF_TYPE_INT32, b, len(v), true
	case []float32:
		b := make([]byte, 4*len(v))
		for i, x := range v {
			le.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return C.GGUF_TYPE_FLOAT32, b, len(v), true
	case []uint64:
		b := make([]byte, 8*len(v))
		for i, x := range v {
			le.PutUint64(b[8*i:], x)
		}
		return C.GGUF_TYPE_UINT64, b, len(v), true
	case []int64:
		b := make([]byte, 8*len(v))
		for i, x := range v {
			le.PutUint64(b[8*i:], uint64(x))
		}
		return C.GGUF_TYPE_INT64, b, len(v), true
	case []float64:
		b := make([]byte, 8*len(v))
		for i, x := range v {
			le.PutUint64(b[8*i:], math.Float64bits(x))
		}
		return C.GGUF_TYPE_FLOAT64, b, len(v), true
	}
	return 0, nil, 0, false
}
