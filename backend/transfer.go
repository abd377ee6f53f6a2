package backend

// #include "goggml.h"
import "C"

import (
	"fmt"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// storage returns the C tensor of t if its data can be accessed now, and
// holds its memory in h (release h when done).
func storage(t *ggml.Tensor, h *life.Holds) (*C.struct_ggml_tensor, error) {
	p, err := bridge.View[bridge.Tensor](t).Storage(h)
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
	var h life.Holds
	defer h.Release()
	tc, err := storage(t, &h)
	if err != nil {
		return err
	}
	w := bridge.View[bridge.Tensor](t)
	if err := w.LockWrite(); err != nil {
		return err
	}
	defer w.UnlockWrite()
	if err := checkRange("TensorSet", tc, offset, uint64(len(data))); err != nil {
		return err
	}
	if err := bridge.CheckTransfer(unsafe.Pointer(tc), offset, uint64(len(data)), true); err != nil {
		return err
	}
	if len(data) == 0 {
		return nil
	}
	defer runtime.KeepAlive(t)
	if bridge.View[bridge.Tensor](t).Buffer() == nil { // a context pool: host memory
		bridge.HostCopy(unsafe.Add(tc.data, offset), unsafe.Pointer(unsafe.SliceData(data)), uint64(len(data)))
		return nil
	}
	defer life.Catch(&err)
	C.ggml_backend_tensor_set(tc, unsafe.Pointer(unsafe.SliceData(data)), C.size_t(offset), C.size_t(len(data)))
	return nil
}

// TensorGet copies len(dst) bytes of tensor t's memory, starting offset
// bytes in, into dst (ggml_backend_tensor_get).
func TensorGet(t *ggml.Tensor, dst []byte, offset uint64) (err error) {
	var h life.Holds
	defer h.Release()
	tc, err := storage(t, &h)
	if err != nil {
		return err
	}
	if err := checkRange("TensorGet", tc, offset, uint64(len(dst))); err != nil {
		return err
	}
	if err := bridge.CheckTransfer(unsafe.Pointer(tc), offset, uint64(len(dst)), false); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	defer runtime.KeepAlive(t)
	if bridge.View[bridge.Tensor](t).Buffer() == nil {
		bridge.HostCopy(unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Add(tc.data, offset), uint64(len(dst)))
		return nil
	}
	defer life.Catch(&err)
	C.ggml_backend_tensor_get(tc, unsafe.Pointer(unsafe.SliceData(dst)), C.size_t(offset), C.size_t(len(dst)))
	return nil
}

// TensorMemset sets size bytes of tensor t's memory, starting offset bytes
// in, to value (ggml_backend_tensor_memset).
func TensorMemset(t *ggml.Tensor, value byte, offset, size uint64) (err error) {
	var h life.Holds
	defer h.Release()
	tc, err := storage(t, &h)
	if err != nil {
		return err
	}
	w := bridge.View[bridge.Tensor](t)
	if err := w.LockWrite(); err != nil {
		return err
	}
	defer w.UnlockWrite()
	if err := checkRange("TensorMemset", tc, offset, size); err != nil {
		return err
	}
	if C.goggml_buffer_is_meta(C.ggml_backend_buffer_t(bridge.View[bridge.Tensor](t).Buffer())) {
		return fmt.Errorf("%w: TensorMemset: ggml's meta buffer has no memset", ErrUnsupported)
	}
	if buf := tc.buffer; anyExtra.Load() {
		if buf == nil && tc.view_src != nil {
			buf = tc.view_src.buffer // a view made after its source was placed
		}
		if buft := C.goggml_buffer_cpu_extra(buf); buft != nil {
			return fmt.Errorf("%w: TensorMemset: tensor %v is in a %s buffer, which holds it re-laid for the CPU's kernels: bytes set there are not the tensor's; write the whole tensor (TensorSet)",
				ErrUnsupported, t, C.GoString(C.ggml_backend_buft_name(buft)))
		}
	}
	if size == 0 {
		return nil
	}
	defer runtime.KeepAlive(t)
	if bridge.View[bridge.Tensor](t).Buffer() == nil {
		C.memset(unsafe.Add(tc.data, offset), C.int(value), C.size_t(size))
		return nil
	}
	defer life.Catch(&err) // a buffer without memset asserts: an *AssertError
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
	var h life.Holds
	defer h.Release()
	sc, err := storage(src, &h)
	if err != nil {
		return fmt.Errorf("TensorCopy: src: %w", err)
	}
	dc, err := storage(dst, &h)
	if err != nil {
		return fmt.Errorf("TensorCopy: dst: %w", err)
	}
	w := bridge.View[bridge.Tensor](dst)
	if err := w.LockWrite(); err != nil {
		return fmt.Errorf("TensorCopy: dst: %w", err)
	}
	defer w.UnlockWrite()
	if !sameLayout(sc, dc) {
		return fmt.Errorf("%w: TensorCopy: src %v and dst %v have different layouts (type, shape or strides)", ggml.ErrShape, src, dst)
	}
	if sc == dc {
		return nil
	}
	defer runtime.KeepAlive(src)
	defer runtime.KeepAlive(dst)
	defer life.Catch(&err)
	n := C.size_t(C.ggml_nbytes(sc))
	sb, db := C.ggml_backend_buffer_t(bridge.View[bridge.Tensor](src).Buffer()), C.ggml_backend_buffer_t(bridge.View[bridge.Tensor](dst).Buffer())
	if err := bridge.CheckTransfer(unsafe.Pointer(sc), 0, uint64(n), false); err != nil {
		return err
	}
	if err := bridge.CheckTransfer(unsafe.Pointer(dc), 0, uint64(n), true); err != nil {
		return err
	}
	// A meta buffer of host devices says it is host memory, but its
	// tensors' addresses are placeholders: InHostMemory says no, and the
	// copy goes through ggml's calls.
	hostSrc := sb == nil || bridge.View[bridge.Tensor](src).InHostMemory()
	hostDst := db == nil || bridge.View[bridge.Tensor](dst).InHostMemory()
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

// Rows2D is the geometry of a 2-D transfer (TensorSet2D, TensorGet2D,
// Backend.SetTensor2DAsync, Backend.GetTensor2DAsync): Count rows of Size
// bytes each; row i lies Offset+i*TensorStride bytes into the tensor and
// i*DataStride bytes into the Go slice. With Count > 1 both strides must
// be at least Size (rows do not overlap, as ggml's strided copies
// require). A transfer of no rows or of empty rows copies nothing.
type Rows2D struct {
	Offset       uint64 // the first row's byte offset in the tensor
	Size         uint64 // bytes per row
	Count        uint64 // number of rows
	TensorStride uint64 // bytes from one row to the next in the tensor
	DataStride   uint64 // bytes from one row to the next in the Go slice
}

// extent returns the bytes a transfer of r spans from its start, with
// stride between rows: (Count-1)*stride + Size, or false on overflow.
func (r Rows2D) extent(stride uint64) (uint64, bool) {
	hi, lo := bits.Mul64(r.Count-1, stride)
	if hi != 0 {
		return 0, false
	}
	n, carry := bits.Add64(lo, r.Size, 0)
	return n, carry == 0
}

// empty reports whether r copies nothing.
func (r Rows2D) empty() bool { return r.Count == 0 || r.Size == 0 }

// check checks r against tensor t and a Go slice of dataLen bytes, with
// overflow checks, as ggml asserts (and what its strided copies assume).
func (r Rows2D) check(op string, t *C.struct_ggml_tensor, dataLen int) error {
	if r.empty() {
		return nil
	}
	if r.Count > 1 && (r.TensorStride < r.Size || r.DataStride < r.Size) {
		return fmt.Errorf("%w: %s: strides %d (tensor) and %d (data) must be at least the row size %d", ggml.ErrInvalid, op, r.TensorStride, r.DataStride, r.Size)
	}
	ext, ok := r.extent(r.TensorStride)
	if !ok {
		return fmt.Errorf("%w: %s: %d rows of %d bytes with stride %d overflow 64 bits", ggml.ErrShape, op, r.Count, r.Size, r.TensorStride)
	}
	if err := checkRange(op, t, r.Offset, ext); err != nil {
		return err
	}
	dext, ok := r.extent(r.DataStride)
	if !ok || dext > uint64(dataLen) {
		return fmt.Errorf("%w: %s: %d rows of %d bytes with stride %d need %d bytes of data, the slice has %d", ggml.ErrShape, op, r.Count, r.Size, r.DataStride, dext, dataLen)
	}
	return nil
}

// checkMetaRows checks each row of a transfer into or out of a meta
// buffer: ggml's meta buffer has no 2-D copy, so ggml transfers row by row,
// each as a 1-D transfer that the meta buffer asserts on.
//
// A buffer of one of the CPU's extra buffer types (repacked weights, AMX)
// has no 2-D copy either, and its rows must each be the whole tensor (see
// checkExtraTransfer).
func (r Rows2D) checkMetaRows(t *C.struct_ggml_tensor, write bool, check func(t *C.struct_ggml_tensor, offset, size uint64, write bool) error) error {
	if !r.empty() && anyExtra.Load() {
		for i := range r.Count {
			if err := checkExtraTransfer(unsafe.Pointer(t), r.Offset+i*r.TensorStride, r.Size, write); err != nil {
				return err
			}
		}
	}
	if r.empty() || !bool(C.goggml_buffer_is_meta(t.buffer)) {
		return nil
	}
	for i := range r.Count {
		if err := check(t, r.Offset+i*r.TensorStride, r.Size, write); err != nil {
			return err
		}
	}
	return nil
}

func checkMetaRow(t *C.struct_ggml_tensor, offset, size uint64, write bool) error {
	return checkMetaTransfer(unsafe.Pointer(t), offset, size, write)
}

// hostRows copies r's rows between a tensor's host memory at base and data.
func (r Rows2D) hostRows(base unsafe.Pointer, data []byte, write bool) {
	for i := range r.Count {
		tp := unsafe.Slice((*byte)(unsafe.Add(base, r.Offset+i*r.TensorStride)), r.Size)
		dp := data[i*r.DataStride : i*r.DataStride+r.Size]
		if write {
			copy(tp, dp)
		} else {
			copy(dp, tp)
		}
	}
}

// TensorSet2D copies r.Count rows of r.Size bytes from data into tensor t's
// memory (ggml_backend_tensor_set_2d): row i goes from
// data[i*r.DataStride:] to byte r.Offset+i*r.TensorStride of t. The bytes
// are written as they are, whatever the tensor's layout. Buffers that have a
// strided copy (a GPU's) make it one transfer. Only upstream ggml has it:
// with another provider it returns an ErrUnsupported error that names
// -tags ggml_system.
func TensorSet2D(t *ggml.Tensor, data []byte, r Rows2D) (err error) {
	if !haveUpstream {
		return upstreamOnly("TensorSet2D (ggml_backend_tensor_set_2d)")
	}
	var h life.Holds
	defer h.Release()
	tc, err := storage(t, &h)
	if err != nil {
		return err
	}
	w := bridge.View[bridge.Tensor](t)
	if err := w.LockWrite(); err != nil {
		return err
	}
	defer w.UnlockWrite()
	if err := r.check("TensorSet2D", tc, len(data)); err != nil {
		return err
	}
	if err := r.checkMetaRows(tc, true, checkMetaRow); err != nil {
		return err
	}
	if r.empty() {
		return nil
	}
	defer runtime.KeepAlive(t)
	if bridge.View[bridge.Tensor](t).Buffer() == nil { // a context pool: host memory
		r.hostRows(tc.data, data, true)
		return nil
	}
	defer life.Catch(&err)
	C.goggml_tensor_set_2d(tc, unsafe.Pointer(unsafe.SliceData(data)), C.size_t(r.Offset), C.size_t(r.Size),
		C.size_t(r.Count), C.size_t(r.TensorStride), C.size_t(r.DataStride))
	return nil
}

// TensorGet2D copies r.Count rows of r.Size bytes of tensor t's memory into
// dst (ggml_backend_tensor_get_2d): row i goes from byte
// r.Offset+i*r.TensorStride of t to dst[i*r.DataStride:]; the bytes of dst
// between rows are left as they are. Only upstream ggml has it: with
// another provider it returns an ErrUnsupported error that names
// -tags ggml_system.
func TensorGet2D(t *ggml.Tensor, dst []byte, r Rows2D) (err error) {
	if !haveUpstream {
		return upstreamOnly("TensorGet2D (ggml_backend_tensor_get_2d)")
	}
	var h life.Holds
	defer h.Release()
	tc, err := storage(t, &h)
	if err != nil {
		return err
	}
	if err := r.check("TensorGet2D", tc, len(dst)); err != nil {
		return err
	}
	if err := r.checkMetaRows(tc, false, checkMetaRow); err != nil {
		return err
	}
	if r.empty() {
		return nil
	}
	defer runtime.KeepAlive(t)
	if bridge.View[bridge.Tensor](t).Buffer() == nil {
		r.hostRows(tc.data, dst, false)
		return nil
	}
	defer life.Catch(&err)
	C.goggml_tensor_get_2d(tc, unsafe.Pointer(unsafe.SliceData(dst)), C.size_t(r.Offset), C.size_t(r.Size),
		C.size_t(r.Count), C.size_t(r.TensorStride), C.size_t(r.DataStride))
	return nil
}

// SetTensor2DAsync queues TensorSet2D's copy of r's rows of data into
// tensor t on backend b's stream (ggml_backend_tensor_set_2d_async). data
// must not change until Synchronize; it is pinned until then. Backends
// without async transfers copy at once. Only upstream ggml has it: with
// another provider it returns an ErrUnsupported error that names
// -tags ggml_system.
func (b *Backend) SetTensor2DAsync(t *ggml.Tensor, data []byte, r Rows2D) error {
	return b.transfer2DAsync("SetTensor2DAsync", "ggml_backend_tensor_set_2d_async", t, data, r, true)
}

// GetTensor2DAsync queues TensorGet2D's copy of r's rows of tensor t into
// dst on backend b's stream (ggml_backend_tensor_get_2d_async). dst holds
// the data after Synchronize; it is pinned until then. Only upstream ggml
// has it: with another provider it returns an ErrUnsupported error that
// names -tags ggml_system.
func (b *Backend) GetTensor2DAsync(t *ggml.Tensor, dst []byte, r Rows2D) error {
	return b.transfer2DAsync("GetTensor2DAsync", "ggml_backend_tensor_get_2d_async", t, dst, r, false)
}

// transfer2DAsync is SetTensor2DAsync (write) and GetTensor2DAsync.
func (b *Backend) transfer2DAsync(op, cname string, t *ggml.Tensor, data []byte, r Rows2D, write bool) (err error) {
	if !haveUpstream {
		return upstreamOnly("Backend." + op + " (" + cname + ")")
	}
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	tc, err := b.asyncTarget2D(op, t, len(data), r, write)
	if err != nil || r.empty() {
		return err
	}
	return b.queue(t, data, write, func(p unsafe.Pointer) {
		if write {
			C.goggml_tensor_set_2d_async(b.c, tc, p, C.size_t(r.Offset), C.size_t(r.Size),
				C.size_t(r.Count), C.size_t(r.TensorStride), C.size_t(r.DataStride))
		} else {
			C.goggml_tensor_get_2d_async(b.c, tc, p, C.size_t(r.Offset), C.size_t(r.Size),
				C.size_t(r.Count), C.size_t(r.TensorStride), C.size_t(r.DataStride))
		}
	})
}

// asyncTarget2D checks a 2-D async transfer of r between tensor t and a
// slice of dataLen bytes on b, and holds t's memory until Synchronize.
// ggml's meta backend has no 2-D async copy: ggml queues each row as a
// 1-D async transfer, which it takes only whole.
func (b *Backend) asyncTarget2D(op string, t *ggml.Tensor, dataLen int, r Rows2D, write bool) (*C.struct_ggml_tensor, error) {
	tc, err := b.asyncTensor(op, t)
	if err != nil {
		return nil, err
	}
	if err := r.check(op, tc, dataLen); err != nil {
		return nil, err
	}
	if b.meta != nil {
		if err := r.checkMetaRows(tc, write, checkMetaAsync); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	return tc, nil
}
