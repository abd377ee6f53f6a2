package backend

// #include "goggml.h"
import "C"

import (
	"fmt"
	"runtime"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// Buffer is memory on a device that holds tensor data
// (ggml_backend_buffer_t). Tensors placed in it keep it alive; Close frees
// it at once, after which those tensors report ggml.ErrClosed. An unreachable
// Buffer is freed by the garbage collector.
type Buffer struct {
	_       noCopy
	c       C.ggml_backend_buffer_t
	from    any // what it was allocated from, kept alive
	cleanup runtime.Cleanup
}

func newBuffer(c C.ggml_backend_buffer_t, from any) *Buffer {
	b := &Buffer{c: c, from: from}
	b.cleanup = runtime.AddCleanup(b, freeBuffer, c)
	return b
}

func freeBuffer(c C.ggml_backend_buffer_t) { C.ggml_backend_buffer_free(c) }

// Close frees the buffer (ggml_backend_buffer_free). It is idempotent and
// safe on nil.
func (b *Buffer) Close() error {
	if b == nil || b.c == nil {
		return nil
	}
	b.cleanup.Stop()
	freeBuffer(b.c)
	b.c = nil
	b.from = nil
	return nil
}

// LeaseErr is ggml.ErrClosed once the buffer is closed: tensors in it check
// this before touching their data.
func (b *Buffer) LeaseErr() error {
	if b.c == nil {
		return fmt.Errorf("%w: the tensor's buffer is closed", ggml.ErrClosed)
	}
	return nil
}

// Name returns the buffer's name, e.g. "CPU" (ggml_backend_buffer_name), or
// "" once closed.
func (b *Buffer) Name() string {
	if b == nil || b.c == nil {
		return ""
	}
	defer runtime.KeepAlive(b)
	return C.GoString(C.ggml_backend_buffer_name(b.c))
}

// Size returns the buffer's size in bytes (ggml_backend_buffer_get_size).
func (b *Buffer) Size() uint64 {
	if b == nil || b.c == nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return uint64(C.ggml_backend_buffer_get_size(b.c))
}

// IsHost reports whether the buffer is in host memory
// (ggml_backend_buffer_is_host).
func (b *Buffer) IsHost() bool {
	if b == nil || b.c == nil {
		return false
	}
	defer runtime.KeepAlive(b)
	return bool(C.ggml_backend_buffer_is_host(b.c))
}

// AllocContextTensors allocates every tensor of ctx that has no memory yet
// in one new buffer of the backend's default buffer type, and sets up the
// views of those tensors (ggml_backend_alloc_ctx_tensors). ctx must be a
// NoAlloc context. The tensors keep the buffer alive; close it when done.
func AllocContextTensors(ctx *ggml.Context, be *Backend) (buf *Buffer, err error) {
	if err := be.usable(); err != nil {
		return nil, err
	}
	cc, err := contextPtr(ctx)
	if err != nil {
		return nil, err
	}
	if !ctx.NoAlloc() {
		return nil, fmt.Errorf("%w: AllocContextTensors needs a NoAlloc context; this one keeps data in its own memory", ggml.ErrInvalid)
	}
	var pending []*ggml.Tensor
	for _, t := range ctx.Tensors() {
		if t.ViewSource() == nil && !t.IsAllocated() {
			pending = append(pending, t)
		}
	}
	buft := C.ggml_backend_get_default_buffer_type(be.c)
	size := uint64(C.ggml_backend_alloc_ctx_tensors_from_buft_size(cc, buft))
	if len(pending) == 0 || size == 0 {
		return nil, fmt.Errorf("%w: the context has no tensor left to allocate", ggml.ErrInvalid)
	}
	defer runtime.KeepAlive(ctx)
	defer runtime.KeepAlive(be)
	defer bridge.Catch(&err)
	c := C.ggml_backend_alloc_ctx_tensors_from_buft(cc, buft)
	if c == nil {
		return nil, fmt.Errorf("%w: could not allocate %d bytes in a %s buffer", ggml.ErrNoMemory, size, C.GoString(C.ggml_backend_buft_name(buft)))
	}
	buf = newBuffer(c, be)
	for _, t := range pending {
		bridge.SetLease(t, buf)
	}
	return buf, nil
}
