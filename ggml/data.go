package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// Element is a Go type that SetData and Data move to and from a tensor:
// float32 (f32), float64 (f64), int8 (i8), int16 (i16), int32 (i32),
// int64 (i64), and uint16 for the raw bits of f16 and bf16. Quantized data
// moves as bytes (SetBytes, Bytes).
type Element interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 | ~uint16
}

// elementTypes returns the tensor types whose elements are T.
func elementTypes[T Element]() (Type, Type) {
	var z T
	switch any(z).(type) {
	case float32:
		return TypeF32, TypeF32
	case float64:
		return TypeF64, TypeF64
	case int8:
		return TypeI8, TypeI8
	case int16:
		return TypeI16, TypeI16
	case int32:
		return TypeI32, TypeI32
	case int64:
		return TypeI64, TypeI64
	case uint16:
		return TypeF16, TypeBF16
	}
	// A named type: judge by size and kind through a conversion.
	switch unsafe.Sizeof(z) {
	case 1:
		return TypeI8, TypeI8
	case 2:
		if T(1)/T(2) == 0 && T(0)-T(1) > 0 { // unsigned
			return TypeF16, TypeBF16
		}
		return TypeI16, TypeI16
	case 4:
		if T(1)/T(2) != 0 {
			return TypeF32, TypeF32
		}
		return TypeI32, TypeI32
	default:
		if T(1)/T(2) != 0 {
			return TypeF64, TypeF64
		}
		return TypeI64, TypeI64
	}
}

// checkTransfer checks that n elements of T (or bytes when raw) can move to
// or from t, and returns the byte count. It holds t's memory in h: release h
// when the transfer is over.
func checkTransfer[T Element](op string, t *Tensor, n int, raw bool, h *life.Holds) (uint64, error) {
	if err := bridge.View[bridge.Tensor](t).Hold(h); err != nil {
		return 0, opErr(op, err)
	}
	if !isContiguousOf(t.c) {
		return 0, fmt.Errorf("%w: %s: tensor %s is not contiguous; copy it with Cont first", ErrInvalid, op, t.describe())
	}
	size := nbytesOf(t.c)
	if raw {
		if uint64(n) != size {
			return 0, fmt.Errorf("%w: %s: tensor %s has %d bytes, the slice %d", ErrShape, op, t.describe(), size, n)
		}
		return size, nil
	}
	a, b := elementTypes[T]()
	if ty := t.Type(); ty != a && ty != b {
		var z T
		hint := ""
		switch {
		case ty.IsQuantized() && (op == "SetData" || op == "SetBytes"):
			hint = "; quantize the values with Quantize and write the blocks with SetBytes"
		case ty.IsQuantized():
			hint = "; read quantized data with Bytes and convert it with Dequantize"
		}
		return 0, fmt.Errorf("%w: %s: tensor %s is %v; %T elements fit %v%s", ErrType, op, t.describe(), ty, z, a, hint)
	}
	if int64(n) != t.Elements() {
		return 0, fmt.Errorf("%w: %s: tensor %s has %d elements, the slice %d", ErrShape, op, t.describe(), t.Elements(), n)
	}
	return size, nil
}

// SetData copies data into tensor t. The element type must match t's type
// (see Element), len(data) must equal t.Elements(), and t must be
// contiguous and allocated. It works for tensors in a context's pool and in
// any backend buffer (ggml_backend_tensor_set).
func SetData[T Element](t *Tensor, data []T) (err error) {
	var h life.Holds
	defer h.Release()
	size, err := checkTransfer[T]("SetData", t, len(data), false, &h)
	if err != nil {
		return err
	}
	if err := bridge.View[bridge.Tensor](t).LockWrite(); err != nil {
		return opErr("SetData", err)
	}
	defer bridge.View[bridge.Tensor](t).UnlockWrite()
	return t.write(unsafe.Pointer(unsafe.SliceData(data)), size)
}

// SetBytes copies raw bytes into tensor t: len(data) must equal t.Bytes().
// This is how quantized data is set (ggml_backend_tensor_set).
func SetBytes(t *Tensor, data []byte) error {
	var h life.Holds
	defer h.Release()
	size, err := checkTransfer[int8]("SetBytes", t, len(data), true, &h)
	if err != nil {
		return err
	}
	if err := bridge.View[bridge.Tensor](t).LockWrite(); err != nil {
		return opErr("SetBytes", err)
	}
	defer bridge.View[bridge.Tensor](t).UnlockWrite()
	return t.write(unsafe.Pointer(unsafe.SliceData(data)), size)
}

// Data returns a copy of tensor t's data as a new slice of T
// (ggml_backend_tensor_get). The same rules as SetData apply.
func Data[T Element](t *Tensor) ([]T, error) {
	var h life.Holds
	defer h.Release()
	if err := bridge.View[bridge.Tensor](t).Hold(&h); err != nil { // before reading t: a Close may be racing
		return nil, opErr("Data", err)
	}
	out := make([]T, max(t.Elements(), 0))
	if err := dataInto(t, out, &h); err != nil {
		return nil, err
	}
	return out, nil
}

// DataInto copies tensor t's data into dst, which must have exactly
// t.Elements() elements: Data without the allocation.
func DataInto[T Element](t *Tensor, dst []T) error {
	var h life.Holds
	defer h.Release()
	return dataInto(t, dst, &h)
}

// dataInto is DataInto with the holds of the caller (Data holds first).
func dataInto[T Element](t *Tensor, dst []T, h *life.Holds) error {
	size, err := checkTransfer[T]("Data", t, len(dst), false, h)
	if err != nil {
		return err
	}
	return t.read(unsafe.Pointer(unsafe.SliceData(dst)), size)
}

// Bytes returns a copy of tensor t's data as raw bytes
// (ggml_backend_tensor_get).
func Bytes(t *Tensor) ([]byte, error) {
	var h life.Holds
	defer h.Release()
	if err := bridge.View[bridge.Tensor](t).Hold(&h); err != nil { // before reading t: a Close may be racing
		return nil, opErr("Bytes", err)
	}
	out := make([]byte, t.Bytes())
	size, err := checkTransfer[int8]("Bytes", t, len(out), true, &h)
	if err != nil {
		return nil, err
	}
	if err := t.read(unsafe.Pointer(unsafe.SliceData(out)), size); err != nil {
		return nil, err
	}
	return out, nil
}

func (t *Tensor) write(p unsafe.Pointer, size uint64) (err error) {
	defer runtime.KeepAlive(t)
	if size == 0 {
		return nil
	}
	if t.buffer() == nil || bridge.View[bridge.Tensor](t).InHostMemory() {
		// A context's memory, or a buffer in host memory: copied here, as
		// ggml_backend_tensor_set would (memcpy).
		bridge.HostCopy(t.c.data, p, size)
		return nil
	}
	if err := bridge.CheckTransfer(unsafe.Pointer(t.c), 0, size, true); err != nil {
		return err
	}
	defer life.Catch(&err)
	C.ggml_backend_tensor_set(t.c, p, 0, C.size_t(size))
	return nil
}

func (t *Tensor) read(p unsafe.Pointer, size uint64) (err error) {
	defer runtime.KeepAlive(t)
	if size == 0 {
		return nil
	}
	if t.buffer() == nil || bridge.View[bridge.Tensor](t).InHostMemory() {
		bridge.HostCopy(p, t.c.data, size)
		return nil
	}
	if err := bridge.CheckTransfer(unsafe.Pointer(t.c), 0, size, false); err != nil {
		return err
	}
	defer life.Catch(&err)
	C.ggml_backend_tensor_get(t.c, p, 0, C.size_t(size))
	return nil
}

// opErr names op in err, with one "ggml: " prefix however many err's own
// text has (the error kinds' texts begin with it).
func opErr(op string, err error) error { return life.Prefixed(op, err) }
