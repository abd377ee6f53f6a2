package backend

/*
#include "goggml.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// This file holds a backend's asynchronous transfers and Synchronize.

// Synchronize waits for the backend's queued work: async transfers,
// copies and computes (ggml_backend_synchronize). Memory given to async
// calls may be reused afterwards.
func (b *Backend) Synchronize() error {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	defer runtime.KeepAlive(b)
	C.ggml_backend_synchronize(b.c)
	b.release()
	return nil
}

// asyncTarget checks that tensor t can take an async transfer on b, and
// holds its memory until Synchronize.
func (b *Backend) asyncTarget(op string, t *ggml.Tensor, offset, size uint64) (*C.struct_ggml_tensor, error) {
	tc, err := b.asyncTensor(op, t)
	if err != nil {
		return nil, err
	}
	if err := checkRange(op, tc, offset, size); err != nil {
		return nil, err
	}
	if anyExtra.Load() {
		if err := checkExtraTransfer(unsafe.Pointer(tc), offset, size, op == "SetTensorAsync"); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	if b.meta != nil {
		if err := checkMetaAsync(tc, offset, size, op == "SetTensorAsync"); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	return tc, nil
}

// asyncTensor checks that tensor t lives in a buffer that b can use, and
// holds its memory until Synchronize.
func (b *Backend) asyncTensor(op string, t *ggml.Tensor) (*C.struct_ggml_tensor, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	tc, err := storage(t, &b.held)
	if err != nil {
		return nil, err
	}
	if bridge.View[bridge.Tensor](t).Buffer() == nil {
		return nil, fmt.Errorf("%w: %s: tensor %v lives in a context's memory, not in a buffer of backend %s", ErrUnsupported, op, t, b.Name())
	}
	if err := b.checkTensor(tc); err != nil {
		return nil, err
	}
	return tc, nil
}

// SetTensorAsync queues a copy of data into tensor t, offset bytes in
// (ggml_backend_tensor_set_async). data must not change until Synchronize;
// it is pinned until then. Backends without async transfers copy at once.
func (b *Backend) SetTensorAsync(t *ggml.Tensor, data []byte, offset uint64) (err error) {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	tc, err := b.asyncTarget("SetTensorAsync", t, offset, uint64(len(data)))
	if err != nil || len(data) == 0 {
		return err
	}
	return b.queue(t, data, true, func(p unsafe.Pointer) {
		C.ggml_backend_tensor_set_async(b.c, tc, p, C.size_t(offset), C.size_t(len(data)))
	})
}

// GetTensorAsync queues a copy of len(dst) bytes of tensor t, offset bytes
// in, into dst (ggml_backend_tensor_get_async). dst holds the data after
// Synchronize; it is pinned until then.
func (b *Backend) GetTensorAsync(t *ggml.Tensor, dst []byte, offset uint64) (err error) {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	tc, err := b.asyncTarget("GetTensorAsync", t, offset, uint64(len(dst)))
	if err != nil || len(dst) == 0 {
		return err
	}
	return b.queue(t, dst, false, func(p unsafe.Pointer) {
		C.ggml_backend_tensor_get_async(b.c, tc, p, C.size_t(offset), C.size_t(len(dst)))
	})
}

// queue runs call, which queues an async transfer between tensor t and the
// memory of data (passed as p) on b's stream. A write into t (write) holds
// t's write lock while it is queued; data is pinned, and t held, until
// Synchronize. A ggml abort in call comes back as an error.
func (b *Backend) queue(t *ggml.Tensor, data []byte, write bool, call func(p unsafe.Pointer)) (err error) {
	if write {
		w := bridge.View[bridge.Tensor](t)
		if err := w.LockWrite(); err != nil {
			return err
		}
		defer w.UnlockWrite()
	}
	p := unsafe.SliceData(data)
	b.pins.Pin(p)
	b.pending = append(b.pending, t)
	defer runtime.KeepAlive(b)
	defer life.Catch(&err)
	call(unsafe.Pointer(p))
	return nil
}

// CopyTensorAsync queues a copy of src (on backend b) into dst (on backend
// dstBackend) (ggml_backend_tensor_copy_async). Backends that cannot copy
// asynchronously between each other synchronize both and copy at once.
// src and dst must have the same type, shape and strides.
func (b *Backend) CopyTensorAsync(dstBackend *Backend, src, dst *ggml.Tensor) (err error) {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	if err := dstBackend.usable(); err != nil {
		return fmt.Errorf("CopyTensorAsync: destination backend: %w", err)
	}
	if dstBackend != b {
		if err := dstBackend.enter(); err != nil {
			return fmt.Errorf("CopyTensorAsync: destination backend: %w", err)
		}
		defer dstBackend.leave()
	}
	sc, err := storage(src, &b.held)
	if err != nil {
		return fmt.Errorf("CopyTensorAsync: src: %w", err)
	}
	dc, err := storage(dst, &b.held)
	if err != nil {
		return fmt.Errorf("CopyTensorAsync: dst: %w", err)
	}
	w := bridge.View[bridge.Tensor](dst)
	if err := w.LockWrite(); err != nil {
		return fmt.Errorf("CopyTensorAsync: dst: %w", err)
	}
	defer w.UnlockWrite()
	if !sameLayout(sc, dc) {
		return fmt.Errorf("%w: CopyTensorAsync: src %v and dst %v have different layouts (type, shape or strides)", ggml.ErrShape, src, dst)
	}
	if sc.buffer == nil || dc.buffer == nil {
		return fmt.Errorf("%w: CopyTensorAsync: both tensors must be allocated in backend buffers (views: through AllocContextTensors)", ErrUnsupported)
	}
	if anyExtra.Load() {
		// ggml's copy reads and writes through the buffers' own calls,
		// which the CPU's extra buffer types lack or restrict.
		n := uint64(C.ggml_nbytes(sc))
		if err := checkExtraTransfer(unsafe.Pointer(sc), 0, n, false); err != nil {
			return fmt.Errorf("CopyTensorAsync: src: %w", err)
		}
		if err := checkExtraTransfer(unsafe.Pointer(dc), 0, n, true); err != nil {
			return fmt.Errorf("CopyTensorAsync: dst: %w", err)
		}
	}
	if err := b.checkTensor(sc); err != nil {
		return err
	}
	if err := dstBackend.checkTensor(dc); err != nil {
		return err
	}
	if bool(C.goggml_buffer_is_meta(sc.buffer)) || bool(C.goggml_buffer_is_meta(dc.buffer)) {
		// ggml's copy would read a meta buffer of host devices at its
		// placeholder addresses: TensorCopy goes through ggml's reads.
		return fmt.Errorf("%w: CopyTensorAsync: a tensor in a meta buffer: use TensorCopy", ErrUnsupported)
	}
	b.pending = append(b.pending, src, dst)
	dstBackend.pending = append(dstBackend.pending, src, dst)
	defer runtime.KeepAlive(b)
	defer runtime.KeepAlive(dstBackend)
	defer life.Catch(&err)
	C.ggml_backend_tensor_copy_async(b.c, dstBackend.c, sc, dc)
	return nil
}
