package backend

/*
#include "goggml.h"

static void goggml_call_set_n_threads(void *fn, ggml_backend_t be, int n) {
	((ggml_backend_set_n_threads_t)fn)(be, n);
}
static void goggml_call_set_abort(void *fn, ggml_backend_t be, int *flag) {
	((ggml_backend_set_abort_callback_t)fn)(be, goggml_abort_flag, flag);
}
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// Backend is a stream of work on one device (ggml_backend_t): it computes
// graphs and moves tensor data. A Backend is used by one goroutine at a time.
// Close frees it; an unreachable Backend is freed by the garbage collector.
type Backend struct {
	_       noCopy
	c       C.ggml_backend_t
	dev     *Device
	abort   *C.int // flag read by the backend's abort callback; nil if it has none
	cleanup runtime.Cleanup
}

type backendRes struct {
	c     C.ggml_backend_t
	abort *C.int
}

func freeBackend(r backendRes) {
	C.ggml_backend_free(r.c)
	if r.abort != nil {
		C.free(unsafe.Pointer(r.abort))
	}
}

// newBackend wraps a backend that ggml created: it sets the thread count of
// CPU-like backends to the number of CPUs (ggml's default is 4) and installs
// the abort flag that Compute's context cancels through.
func newBackend(c C.ggml_backend_t) *Backend {
	b := &Backend{c: c, dev: deviceFromC(C.ggml_backend_get_device(c))}
	if b.dev != nil {
		if fn := b.dev.procAddress("ggml_backend_set_n_threads"); fn != nil {
			C.goggml_call_set_n_threads(fn, c, C.int(runtime.NumCPU()))
		}
		if fn := b.dev.procAddress("ggml_backend_set_abort_callback"); fn != nil {
			b.abort = (*C.int)(C.calloc(1, C.sizeof_int))
			C.goggml_call_set_abort(fn, c, b.abort)
		}
	}
	b.cleanup = runtime.AddCleanup(b, freeBackend, backendRes{c: c, abort: b.abort})
	return b
}

// InitByName starts a backend on the device of that name, e.g. "CPU", with
// optional backend-specific params ("" for none) (ggml_backend_init_by_name).
func InitByName(name, params string) (*Backend, error) {
	cn, freeName := cstring(name)
	defer freeName()
	cp, freeParams := cstring(params)
	defer freeParams()
	c := C.ggml_backend_init_by_name(cn, cp)
	if c == nil {
		return nil, fmt.Errorf("%w: no backend could be started on a device named %q", ErrNotFound, name)
	}
	return newBackend(c), nil
}

// InitByType starts a backend on the first device of type t
// (ggml_backend_init_by_type).
func InitByType(t DeviceType, params string) (*Backend, error) {
	cp, freeParams := cstring(params)
	defer freeParams()
	c := C.ggml_backend_init_by_type(C.enum_ggml_backend_dev_type(t), cp)
	if c == nil {
		return nil, fmt.Errorf("%w: no backend could be started on a %v device", ErrNotFound, t)
	}
	return newBackend(c), nil
}

// InitBest starts a backend on the best device in the registry: a GPU,
// else an integrated GPU, else the CPU (ggml_backend_init_best).
func InitBest() (*Backend, error) {
	c := C.ggml_backend_init_best()
	if c == nil {
		return nil, fmt.Errorf("%w: no device could start a backend", ErrNotFound)
	}
	return newBackend(c), nil
}

// Close frees the backend (ggml_backend_free). It is idempotent and safe on
// nil. Buffers allocated from it stay usable.
func (b *Backend) Close() error {
	if b == nil || b.c == nil {
		return nil
	}
	b.cleanup.Stop()
	freeBackend(backendRes{c: b.c, abort: b.abort})
	b.c, b.abort = nil, nil
	return nil
}

func (b *Backend) usable() error {
	if b == nil {
		return fmt.Errorf("%w: nil *Backend", ggml.ErrInvalid)
	}
	if b.c == nil {
		return fmt.Errorf("%w: the backend is closed", ggml.ErrClosed)
	}
	return nil
}

// Name returns the backend's name, e.g. "CPU" (ggml_backend_name), or ""
// once closed.
func (b *Backend) Name() string {
	if b.usable() != nil {
		return ""
	}
	defer runtime.KeepAlive(b)
	return C.GoString(C.ggml_backend_name(b.c))
}

// Device returns the device the backend runs on (ggml_backend_get_device).
func (b *Backend) Device() *Device {
	if b == nil {
		return nil
	}
	return b.dev
}

// IsCPU reports whether this is ggml's CPU backend (ggml_backend_is_cpu).
func (b *Backend) IsCPU() bool {
	if b.usable() != nil {
		return false
	}
	defer runtime.KeepAlive(b)
	return bool(C.ggml_backend_is_cpu(b.c))
}

// SetThreads sets the number of threads the backend computes with
// (ggml_backend_set_n_threads, through the registry). Backends created by
// this package start with one per CPU. ErrUnsupported when the backend has
// no thread setting.
func (b *Backend) SetThreads(n int) error {
	if err := b.usable(); err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("%w: thread count must be >= 1, got %d", ggml.ErrInvalid, n)
	}
	fn := b.dev.procAddress("ggml_backend_set_n_threads")
	if fn == nil {
		return fmt.Errorf("%w: backend %s has no thread setting", ErrUnsupported, b.Name())
	}
	C.goggml_call_set_n_threads(fn, b.c, C.int(n))
	runtime.KeepAlive(b)
	return nil
}

// SupportsOp reports whether the backend can compute tensor t's op
// (ggml_backend_supports_op).
func (b *Backend) SupportsOp(t *ggml.Tensor) bool {
	if b.usable() != nil {
		return false
	}
	tc, err := tensorPtr(t)
	if err != nil {
		return false
	}
	defer runtime.KeepAlive(t)
	defer runtime.KeepAlive(b)
	return bool(C.ggml_backend_supports_op(b.c, tc))
}

// checkTensor tells whether the backend can read and write tensor t where
// its data lives.
func (b *Backend) checkTensor(t *C.struct_ggml_tensor) error {
	buf := t.buffer
	if t.view_src != nil {
		buf = t.view_src.buffer
	}
	if buf == nil {
		// Data in a context pool: plain host memory.
		if b.dev == nil || b.dev.Type() != DeviceCPU {
			return fmt.Errorf("%w: tensor %q lives in a context's memory, which backend %s cannot use; allocate it with AllocContextTensors",
				ErrUnsupported, C.GoString(&t.name[0]), b.Name())
		}
		return nil
	}
	if !bool(C.ggml_backend_supports_buft(b.c, C.ggml_backend_buffer_get_type(buf))) {
		return fmt.Errorf("%w: backend %s cannot use tensor %q in a %s buffer", ErrUnsupported,
			b.Name(), C.GoString(&t.name[0]), C.GoString(C.ggml_backend_buffer_name(buf)))
	}
	return nil
}

// Compute runs graph g on the backend and waits for it
// (ggml_backend_graph_compute). Every tensor of the graph must be allocated
// where the backend can use it, and the backend must support every op.
// When ctx is cancelled, a backend with an abort hook (the CPU) stops between
// nodes and Compute returns ctx.Err(); other backends finish the graph. A ctx
// that can never be cancelled costs nothing.
func (b *Backend) Compute(ctx context.Context, g *ggml.Graph) (err error) {
	if err := b.usable(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	gp, err := bridge.GraphForCompute(g, func(p unsafe.Pointer, isNode bool) error {
		t := (*C.struct_ggml_tensor)(p)
		if isNode && !bool(C.ggml_backend_supports_op(b.c, t)) {
			return fmt.Errorf("%w: backend %s cannot compute %s (node %q, %s)", ErrUnsupported,
				b.Name(), C.GoString(C.ggml_op_desc(t)), C.GoString(&t.name[0]), C.GoString(C.ggml_type_name(t._type)))
		}
		return b.checkTensor(t)
	})
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(b)
	defer bridge.Catch(&err)

	if b.abort != nil {
		atomic.StoreInt32((*int32)(unsafe.Pointer(b.abort)), 0) // a cancelled compute left it set
	}
	if done := ctx.Done(); done != nil && b.abort != nil {
		flag := (*int32)(unsafe.Pointer(b.abort))
		finished, exited := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(exited)
			select {
			case <-done:
				atomic.StoreInt32(flag, 1)
			case <-finished:
			}
		}()
		defer func() {
			close(finished)
			<-exited // the goroutine must not touch the flag once we return
		}()
	}
	st := C.ggml_backend_graph_compute(b.c, (*C.struct_ggml_cgraph)(gp))
	if st == C.GGML_STATUS_ABORTED && ctx.Err() != nil {
		return ctx.Err()
	}
	return statusErr(st)
}
