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
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	_ "github.com/go-ggml/ggml/internal/gpulink" // the GPU backends of -tags vulkan, cuda
	"github.com/go-ggml/ggml/internal/life"
)

// Backend is a stream of work on one device (ggml_backend_t): it computes
// graphs and moves tensor data. A Backend runs one compute at a time (ggml
// gives it one work buffer): a compute started while another runs, on
// another goroutine or through a scheduler, returns ggml.ErrBusy instead of
// computing garbage. Its other methods are for one goroutine at a time.
// Close frees it; an unreachable Backend is freed by the garbage collector.
type Backend struct {
	// The fields up to lavapipe are bridge.Backend's, in its order:
	// packages sched and cpu see a *Backend through that view
	// (bridge.View[bridge.Backend]; TestViewLayouts checks the match).
	backendKind
	c C.ggml_backend_t // set at birth, never changed
	// life: computes are exclusive work (Enter); schedulers over the
	// backend are users, so the C object outlives them (ggml frees a
	// scheduler by reading its backends).
	life  *life.Life
	abort *C.int // flag read by the backend's abort callback; nil if it has none
	// lavapipe: the device is Mesa's software Vulkan driver, on which some
	// nodes are refused (bridge.Backend.Refusal).
	lavapipe bool
	link     linkSet // the RPC connections it computes over, if any (bridge.Backend.Links)
	_        life.NoCopy
	pool     *poolSlot  // the CPU thread pool it computes on, if any (cpupool.go)
	meta     *metaState // the meta device it computes on, if any
	dev      *Device
	plans    *planSet
	threads  atomic.Int64 // thread setting of a CPU-like backend; 0: none
	cleanup  runtime.Cleanup

	// Until Synchronize: Go memory that async transfers use (pinned, as
	// C may hold it; the cleanup unpins it too), and what queued work reads.
	pins    *runtime.Pinner
	pending []any
	held    life.Holds // what queued work reads and writes, kept alive
	events  *waitedEvents
	// recorded: the events b recorded, synchronized (and released) when b
	// synchronizes or is freed (waitedEvents.syncRecorded).
	recorded *waitedEvents
}

// backendKind marks Backend for bridge.View[bridge.Backend]; it has no size, and
// users see neither it nor a method of it.
type backendKind = bridge.Kind[bridge.Backend]

type backendRes struct {
	c        C.ggml_backend_t
	abort    *C.int
	plans    *planSet
	pool     *poolSlot
	pins     *runtime.Pinner
	reg      *Reg          // counts its live backends, for Unload
	events   *waitedEvents // released once the backend is freed
	recorded *waitedEvents // synchronized and released before it is freed, if not before
}

func freeBackend(r backendRes) {
	C.ggml_backend_synchronize(r.c) // async transfers may still read pinned memory
	r.plans.freeAll(r.c)
	r.recorded.syncRecorded()
	C.ggml_backend_free(r.c)
	r.events.releaseAll()
	r.pins.Unpin()
	r.pool.release()
	if r.reg != nil {
		regs.Lock()
		r.reg.backends--
		regs.Unlock()
	}
	if r.abort != nil {
		C.free(unsafe.Pointer(r.abort))
	}
}

// newBackend wraps a backend that ggml created: it sets the thread count of
// CPU-like backends to the number of CPUs (ggml's default is 4), gives the
// CPU backend a thread pool of its own (see the package doc), and installs
// the abort flag that Compute's context cancels through.
func newBackend(c C.ggml_backend_t) *Backend {
	b := &Backend{c: c, dev: deviceFromC(C.ggml_backend_get_device(c)), plans: &planSet{m: map[C.ggml_backend_graph_plan_t]life.PoolRef{}},
		pool: &poolSlot{}, pins: new(runtime.Pinner), events: &waitedEvents{}, recorded: &waitedEvents{}}
	b.lavapipe = isLavapipe(b.dev)
	if b.dev != nil {
		if fn := b.dev.procAddress("ggml_backend_set_n_threads"); fn != nil {
			C.goggml_call_set_n_threads(fn, c, C.int(runtime.NumCPU()))
			b.threads.Store(int64(runtime.NumCPU()))
		}
		if fn := b.dev.procAddress("ggml_backend_set_abort_callback"); fn != nil {
			b.abort = (*C.int)(C.calloc(1, C.sizeof_int))
			C.goggml_call_set_abort(fn, c, b.abort)
		}
	}
	res := backendRes{c: c, abort: b.abort, plans: b.plans, pool: b.pool, pins: b.pins, events: b.events, recorded: b.recorded}
	if b.dev != nil && b.dev.reg != nil {
		res.reg = b.dev.reg
		regs.Lock()
		res.reg.backends++
		regs.Unlock()
	}
	if b.dev != nil {
		b.link = b.dev.link() // a backend on an RPC server lives on its connection
		b.meta = metaOf(b.dev.c)
	}
	b.life = life.New(b.link.Parent(), fmt.Errorf("%w: the backend is closed", ggml.ErrClosed), func() { freeBackend(res) })
	b.cleanup = runtime.AddCleanup(b, life.CloseCollected, b.life)
	life.Leaks.Opened("Backend", b.life)
	// The linked CPU backend (not one of a loaded module, whose structs
	// may not be this ggml's) computes on a thread pool of its own.
	if b.dev != nil && C.ggml_backend_dev_backend_reg(b.dev.c) == C.ggml_backend_cpu_reg() {
		b.pool.ownThreads = int(b.threads.Load())
	}
	return b
}

// InitByName starts a backend on the device of that name, e.g. "CPU", with
// optional backend-specific params ("" for none) (ggml_backend_init_by_name).
func InitByName(name, params string) (*Backend, error) {
	cn, freeName := cstring(name)
	defer freeName()
	cp, freeParams := cstring(params)
	defer freeParams()
	registryMu.RLock()
	c := C.ggml_backend_init_by_name(cn, cp)
	registryMu.RUnlock()
	if c == nil {
		return nil, fmt.Errorf("%w: no backend could be started on a device named %q; the devices are %s", ErrNotFound, name, deviceNames())
	}
	return newBackend(c), nil
}

// InitByType starts a backend on the first device of type t
// (ggml_backend_init_by_type).
func InitByType(t DeviceType, params string) (*Backend, error) {
	cp, freeParams := cstring(params)
	defer freeParams()
	registryMu.RLock()
	c := C.ggml_backend_init_by_type(C.enum_ggml_backend_dev_type(t), cp)
	registryMu.RUnlock()
	if c == nil {
		return nil, fmt.Errorf("%w: no backend could be started on a %v device", ErrNotFound, t)
	}
	return newBackend(c), nil
}

// InitBest starts a backend on the best device in the registry: a GPU,
// else an integrated GPU, else the CPU (ggml_backend_init_best).
func InitBest() (*Backend, error) {
	registryMu.RLock()
	c := C.ggml_backend_init_best()
	registryMu.RUnlock()
	if c == nil {
		return nil, fmt.Errorf("%w: no device could start a backend", ErrNotFound)
	}
	return newBackend(c), nil
}

// Close waits for queued work, frees the backend's plans and the backend
// (ggml_backend_synchronize, ggml_backend_free). It is idempotent and safe
// on nil. Buffers allocated from it stay usable. While a compute runs on the
// backend (on another goroutine, or the compute whose callback calls Close)
// it changes nothing and returns ggml.ErrBusy. A scheduler over the backend
// keeps its C object until the scheduler is freed.
func (b *Backend) Close() error {
	if b == nil || b.life.Closed() {
		return nil
	}
	if err := b.life.Enter("the backend"); err != nil {
		if b.link.Broken() && !b.life.Busy() {
			// Its RPC connection broke: nothing to wait for (an RPC
			// backend's synchronize and free talk to no server).
			b.cleanup.Stop()
			life.Leaks.Closed(b.life)
			return b.life.Close("the backend", false)
		}
		if errors.Is(err, ggml.ErrClosed) {
			return nil
		}
		return err
	}
	C.ggml_backend_synchronize(b.c)
	b.release()
	b.life.Leave()
	b.cleanup.Stop()
	life.Leaks.Closed(b.life)
	return b.life.Close("the backend", false)
}

// release drops what queued work needed, once it is done.
func (b *Backend) release() {
	b.recorded.syncRecorded()
	b.events.releaseAll()
	b.pins.Unpin()
	clear(b.pending)
	b.pending = b.pending[:0]
	b.held.Release()
}

func (b *Backend) usable() error { return bridge.View[bridge.Backend](b).Usable() }

// enter starts exclusive work on the backend (a compute, a plan, a
// transfer queued on its stream): ErrBusy while other work runs. Call leave
// when it is over.
func (b *Backend) enter() error { return bridge.View[bridge.Backend](b).Enter() }

func (b *Backend) leave() { b.life.Leave() }

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

// GUID returns the backend implementation's identifier (ggml_backend_guid).
func (b *Backend) GUID() [16]byte {
	var g [16]byte
	if b.usable() != nil {
		return g
	}
	defer runtime.KeepAlive(b)
	copy(g[:], unsafe.Slice((*byte)(unsafe.Pointer(C.ggml_backend_guid(b.c))), 16))
	return g
}

// DefaultBufferType returns the buffer type the backend allocates from by
// default (ggml_backend_get_default_buffer_type).
func (b *Backend) DefaultBufferType() *BufferType {
	if b.usable() != nil {
		return nil
	}
	defer runtime.KeepAlive(b)
	defer readMeta()()
	return bufferTypeFromC(C.ggml_backend_get_default_buffer_type(b.c))
}

// AllocBuffer allocates a buffer of size bytes of the backend's default type
// (ggml_backend_alloc_buffer).
func (b *Backend) AllocBuffer(size uint64) (*Buffer, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	buf, err := b.DefaultBufferType().AllocBuffer(size)
	if buf != nil {
		buf.from = b
	}
	return buf, err
}

// Alignment returns the alignment of the backend's default buffer type
// (ggml_backend_get_alignment).
func (b *Backend) Alignment() uint64 { return b.DefaultBufferType().Alignment() }

// MaxSize returns the largest buffer of the backend's default type
// (ggml_backend_get_max_size).
func (b *Backend) MaxSize() uint64 { return b.DefaultBufferType().MaxSize() }

// SupportsBufferType reports whether the backend can use buffers of type bt
// (ggml_backend_supports_buft).
func (b *Backend) SupportsBufferType(bt *BufferType) bool {
	if b.usable() != nil || bt.usable() != nil {
		return false
	}
	defer runtime.KeepAlive(b)
	return bool(C.ggml_backend_supports_buft(b.c, bt.c))
}

// OffloadOp reports whether the backend wants to run op t although its
// weights live elsewhere (ggml_backend_offload_op).
func (b *Backend) OffloadOp(t *ggml.Tensor) bool {
	if b.usable() != nil {
		return false
	}
	tc, err := tensorPtr(t)
	if err != nil {
		return false
	}
	defer runtime.KeepAlive(t)
	defer runtime.KeepAlive(b)
	return bool(C.ggml_backend_offload_op(b.c, tc))
}
