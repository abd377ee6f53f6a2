package backend

// #include "goggml.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// storage returns the C tensor of t if its data can be accessed now, and
// holds its memory in h (release h when done).
func storage(t *ggml.Tensor, h *bridge.Holds) (*C.struct_ggml_tensor, error) {
	p, err := bridge.TensorOf(t).Storage(h)
	return (*C.struct_ggml_tensor)(p), err
}

// checkRange checks that [offset, offset+size) lies within t's bytes, as
// ggml asserts.
func checkRange(op string, t *C.struct_ggml_tensor, offset, size uint64) error {
	n := uint64(C.ggml_nbytes(t))
	if offset > n || size > n-offset {
		return fmt.Errorf("%w: %s: bytes [%d, %d) are outside tensor %q of %d bytes", ggml.ErrShape, op, offset, offset+size, C.GoString(&t.name[0]), n)
	}
	return nil
}

// TensorSet copies data into tensor t's memory starting offset bytes in
// (ggml_backend_tensor_set). The bytes are written as they are, whatever
// the tensor's layout; offset+len(data) must not pass t.Bytes().
func TensorSet(t *ggml.Tensor, data []byte, offset uint64) (err error) {
	var h bridge.Holds
	defer h.Release()
	tc, err := storage(t, &h)
	if err != nil {
		return err
	}
	unlock, err := bridge.TensorOf(t).WriteLock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := checkRange("TensorSet", tc, offset, uint64(len(data))); err != nil {
		return err
	}
	if err := bridge.MetaTransfer(unsafe.Pointer(tc), offset, uint64(len(data)), true); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	defer runtime.KeepAlive(t)
	if bridge.TensorOf(t).Buffer() == nil { // a context pool: host memory
		copy(unsafe.Slice((*byte)(unsafe.Add(tc.data, offset)), len(data)), data)
		return nil
	}
	defer bridge.Catch(&err)
	C.ggml_backend_tensor_set(tc, unsafe.Pointer(unsafe.SliceData(data)), C.size_t(offset), C.size_t(len(data)))
	return nil
}

// TensorGet copies len(dst) bytes of tensor t's memory, starting offset
// bytes in, into dst (ggml_backend_tensor_get).
func TensorGet(t *ggml.Tensor, dst []byte, offset uint64) (err error) {
	var h bridge.Holds
	defer h.Release()
	tc, err := storage(t, &h)
	if err != nil {
		return err
	}
	if err := checkRange("TensorGet", tc, offset, uint64(len(dst))); err != nil {
		return err
	}
	if err := bridge.MetaTransfer(unsafe.Pointer(tc), offset, uint64(len(dst)), false); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	defer runtime.KeepAlive(t)
	if bridge.TensorOf(t).Buffer() == nil {
		copy(dst, unsafe.Slice((*byte)(unsafe.Add(tc.data, offset)), len(dst)))
		return nil
	}
	defer bridge.Catch(&err)
	C.ggml_backend_tensor_get(tc, unsafe.Pointer(unsafe.SliceData(dst)), C.size_t(offset), C.size_t(len(dst)))
	return nil
}

// TensorMemset sets size bytes of tensor t's memory, starting offset bytes
// in, to value (ggml_backend_tensor_memset).
func TensorMemset(t *ggml.Tensor, value byte, offset, size uint64) (err error) {
	var h bridge.Holds
	defer h.Release()
	tc, err := storage(t, &h)
	if err != nil {
		return err
	}
	unlock, err := bridge.TensorOf(t).WriteLock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := checkRange("TensorMemset", tc, offset, size); err != nil {
		return err
	}
	if C.goggml_buffer_is_meta(C.ggml_backend_buffer_t(bridge.TensorOf(t).Buffer())) {
		return fmt.Errorf("%w: TensorMemset: ggml's meta buffer has no memset", ErrUnsupported)
	}
	if size == 0 {
		return nil
	}
	defer runtime.KeepAlive(t)
	if bridge.TensorOf(t).Buffer() == nil {
		C.memset(unsafe.Add(tc.data, offset), C.int(value), C.size_t(size))
		return nil
	}
	defer bridge.Catch(&err) // a buffer without memset asserts: an *AssertError
	C.ggml_backend_tensor_memset(tc, C.uint8_t(value), C.size_t(offset), C.size_t(size))
	return nil
}

// sameLayout reports whether a and b have the same type, shape and strides
// (ggml_are_same_layout).
func sameLayout(a, b *C.struct_ggml_tensor) bool {
	if a._type != b._type {
		return false
	}
	for i := range 4 {
		if a.ne[i] != b.ne[i] || a.nb[i] != b.nb[i] {
			return false
		}
	}
	return true
}

// TensorCopy copies src's data into dst, between any two buffers (or
// context pools) (ggml_backend_tensor_copy). They must have the same type,
// shape and strides.
func TensorCopy(src, dst *ggml.Tensor) (err error) {
	var h bridge.Holds
	defer h.Release()
	sc, err := storage(src, &h)
	if err != nil {
		return fmt.Errorf("TensorCopy: src: %w", err)
	}
	dc, err := storage(dst, &h)
	if err != nil {
		return fmt.Errorf("TensorCopy: dst: %w", err)
	}
	unlock, err := bridge.TensorOf(dst).WriteLock()
	if err != nil {
		return fmt.Errorf("TensorCopy: dst: %w", err)
	}
	defer unlock()
	if !sameLayout(sc, dc) {
		return fmt.Errorf("%w: TensorCopy: src %v and dst %v have different layouts (type, shape or strides)", ggml.ErrShape, src, dst)
	}
	if sc == dc {
		return nil
	}
	defer runtime.KeepAlive(src)
	defer runtime.KeepAlive(dst)
	defer bridge.Catch(&err)
	n := C.size_t(C.ggml_nbytes(sc))
	sb, db := C.ggml_backend_buffer_t(bridge.TensorOf(src).Buffer()), C.ggml_backend_buffer_t(bridge.TensorOf(dst).Buffer())
	if err := bridge.MetaTransfer(unsafe.Pointer(sc), 0, uint64(n), false); err != nil {
		return err
	}
	if err := bridge.MetaTransfer(unsafe.Pointer(dc), 0, uint64(n), true); err != nil {
		return err
	}
	// A meta buffer of host devices says it is host memory, but its
	// tensors' addresses are placeholders: InHostMemory says no, and the
	// copy goes through ggml's calls.
	hostSrc := sb == nil || bridge.TensorOf(src).InHostMemory()
	hostDst := db == nil || bridge.TensorOf(dst).InHostMemory()
	switch {
	case hostSrc:
		if db == nil {
			C.memcpy(dc.data, sc.data, n)
		} else {
			C.ggml_backend_tensor_set(dc, sc.data, 0, n)
		}
	case hostDst:
		C.ggml_backend_tensor_get(sc, dc.data, 0, n)
	default:
		// Two device buffers: through host memory (ggml's own fallback).
		tmp := C.malloc(n)
		if tmp == nil {
			return fmt.Errorf("%w: TensorCopy: %d bytes of staging memory", ggml.ErrNoMemory, n)
		}
		defer C.free(tmp)
		C.ggml_backend_tensor_get(sc, tmp, 0, n)
		C.ggml_backend_tensor_set(dc, tmp, 0, n)
	}
	return nil
}
