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
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	_ "github.com/go-ggml/ggml/internal/gpulink" // the GPU backends of -tags vulkan, cuda
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
	// (bridge.BackendOf; TestViewLayouts checks the match).
	backendKind
	c C.ggml_backend_t // set at birth, never changed
	// life: computes are exclusive work (Enter); schedulers over the
	// backend are users, so the C object outlives them (ggml frees a
	// scheduler by reading its backends).
	life  *bridge.Life
	abort *C.int           // flag read by the backend's abort callback; nil if it has none
	pool  *bridge.PoolSlot // the CPU thread pool it computes on, if any
	// lavapipe: the device is Mesa's software Vulkan driver, on which some
	// nodes are refused (bridge.Backend.Refusal).
	lavapipe bool
	link     linkSet // the RPC connections it computes over, if any (bridge.Backend.Links)
	_        bridge.NoCopy
	meta     *metaState // the meta device it computes on, if any
	dev      *Device
	plans    *planSet
	threads  atomic.Int64 // thread setting of a CPU-like backend; 0: none
	cleanup  runtime.Cleanup

	// Until Synchronize: Go memory that async transfers use (pinned, as
	// C may hold it; the cleanup unpins it too), and what queued work reads.
	pins    *runtime.Pinner
	pending []any
	held    bridge.Holds // what queued work reads and writes, kept alive
	events  *waitedEvents
}

// backendKind marks Backend for bridge.BackendOf; it has no size, and
// users see neither it nor a method of it.
type backendKind = bridge.BackendKind

type backendRes struct {
	c      C.ggml_backend_t
	abort  *C.int
	plans  *planSet
	pool   *bridge.PoolSlot
	pins   *runtime.Pinner
	reg    *Reg          // counts its live backends, for Unload
	events *waitedEvents // released once the backend is freed
}

func freeBackend(r backendRes) {
	C.ggml_backend_synchronize(r.c) // async transfers may still read pinned memory
	r.plans.freeAll(r.c)
	C.ggml_backend_free(r.c)
	r.events.releaseAll()
	r.pins.Unpin()
	r.pool.Release()
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
	b := &Backend{c: c, dev: deviceFromC(C.ggml_backend_get_device(c)), plans: &planSet{m: map[C.ggml_backend_graph_plan_t]bridge.PoolRef{}},
		pool: &bridge.PoolSlot{}, pins: new(runtime.Pinner), events: &waitedEvents{}}
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
	res := backendRes{c: c, abort: b.abort, plans: b.plans, pool: b.pool, pins: b.pins, events: b.events}
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
	b.life = bridge.NewLife(b.link.Parent(), fmt.Errorf("%w: the backend is closed", ggml.ErrClosed), func() { freeBackend(res) })
	b.cleanup = runtime.AddCleanup(b, bridge.CloseCollected, b.life)
	bridge.Leaks.Opened("Backend", b.life)
	// The linked CPU backend (not one of a loaded module, whose structs
	// may not be this ggml's) computes on a thread pool of its own.
	if b.dev != nil && C.ggml_backend_dev_backend_reg(b.dev.c) == C.ggml_backend_cpu_reg() {
		bridge.BackendOf(b).WantOwnPool(int(b.threads.Load()))
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
		return nil, fmt.Errorf("%w: no backend could be started on a device named %q", ErrNotFound, name)
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
			bridge.Leaks.Closed(b.life)
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
	bridge.Leaks.Closed(b.life)
	return b.life.Close("the backend", false)
}

// release drops what queued work needed, once it is done.
func (b *Backend) release() {
	b.events.releaseAll()
	b.pins.Unpin()
	clear(b.pending)
	b.pending = b.pending[:0]
	b.held.Release()
}

func (b *Backend) usable() error { return bridge.BackendOf(b).Usable() }

// enter starts exclusive work on the backend (a compute, a plan, a
// transfer queued on its stream): ErrBusy while other work runs. Call leave
// when it is over.
func (b *Backend) enter() error { return bridge.BackendOf(b).Enter() }

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

// MaxThreads is the most threads a CPU backend or thread pool takes
// (GGML_MAX_N_THREADS).
const MaxThreads = 512

// SetThreads sets the number of threads the backend computes with
// (ggml_backend_set_n_threads, through the registry). Backends created by
// this package start with one per CPU. A CPU backend's own thread pool is
// replaced by one of n threads; a pool the user attached stays, and caps
// the count (Threads). ErrUnsupported when the backend has no thread
// setting.
func (b *Backend) SetThreads(n int) error {
	if err := b.enter(); err != nil { // not while a compute plans with the old count
		return err
	}
	defer b.leave()
	if n < 1 || n > MaxThreads {
		return fmt.Errorf("%w: thread count must be 1 to %d, got %d", ggml.ErrInvalid, MaxThreads, n)
	}
	fn := b.dev.procAddress("ggml_backend_set_n_threads")
	if fn == nil {
		return fmt.Errorf("%w: backend %s has no thread setting", ErrUnsupported, b.Name())
	}
	C.goggml_call_set_n_threads(fn, b.c, C.int(n))
	b.threads.Store(int64(n))
	runtime.KeepAlive(b)
	return bridge.BackendOf(b).ResizeOwnPool(n) // a pool the user attached stays
}

// Threads returns the number of threads the backend computes with: its
// thread setting, capped by the size of an attached CPU thread pool. It is
// 0 for backends without a thread setting (GPUs).
func (b *Backend) Threads() int {
	if b.usable() != nil {
		return 0
	}
	n := int(b.threads.Load())
	if p := b.pool.Threads(); p > 0 && n > int(p) {
		n = int(p)
	}
	return n
}

// checkThreads refuses a node whose CPU kernel cannot run on the backend's
// thread count.
func (b *Backend) checkThreads(t *C.struct_ggml_tensor) error {
	limit := bridge.NodeThreadLimit(unsafe.Pointer(t))
	if limit <= 0 {
		return nil
	}
	if n := b.Threads(); int64(n) > limit {
		return fmt.Errorf("%w: ggml's CPU kernel of %s (node %q) computes its %d heads on at most %d threads and hangs or loses heads with more; this backend computes with %d (SetThreads)",
			ErrUnsupported, C.GoString(C.ggml_op_desc(t)), C.GoString(&t.name[0]), limit, limit, n)
	}
	return nil
}

// SupportsOp reports whether the backend can compute tensor t's op
// (ggml_backend_supports_op), less what the binding refuses on the device
// (on Mesa's lavapipe, a mul_mat of an im2col: see the vulkan package).
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
	return bool(C.ggml_backend_supports_op(b.c, tc)) && b.refuses(tc) == nil
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
	// A meta buffer of host devices says it is host memory, so the CPU
	// backend accepts it, but its tensors' addresses are placeholders.
	if b.meta == nil && bool(C.goggml_buffer_is_meta(buf)) {
		return fmt.Errorf("%w: backend %s cannot use tensor %q: it is in a meta buffer, which only the meta device's backend computes", ErrUnsupported,
			b.Name(), C.GoString(&t.name[0]))
	}
	return nil
}

// Compute runs graph g on the backend and waits for it
// (ggml_backend_graph_compute). Every tensor of the graph must be allocated
// where the backend can use it, and the backend must support every op.
// When ctx is cancelled, a backend with an abort hook (the CPU) stops between
// nodes and Compute returns ctx.Err(); other backends finish the graph. A ctx
// that can never be cancelled costs nothing. Cancellation acts between
// nodes only: one long node (a large mul_mat) runs to its end first, and a
// custom op runs until its function returns (it can poll
// ggml.CustomView.Cancelled). A cancel reaches the compute through a
// goroutine, a little later: a compute that ends in the meantime returns
// nil, its work done. Compute holds what the graph reads (contexts,
// buffers, allocations) until it returns: a Close of one of them in the
// meantime waits for it or returns ggml.ErrBusy (see each Close).
func (b *Backend) Compute(ctx context.Context, g *ggml.Graph) (err error) {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	if err := ctx.Err(); err != nil {
		return err
	}
	var h bridge.Holds
	defer h.Release()
	gp, err := b.checkGraph(g, &h)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(g)
	defer runtime.KeepAlive(b)
	if err := bridge.BackendOf(b).EnsurePool(); err != nil {
		return err
	}
	end, err := b.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer end()
	stop := bridge.BackendOf(b).Watch(ctx)
	defer stop()
	bridge.ArmCustom(bridge.GraphOf(g), unsafe.Pointer(b.abort))
	err = b.onThread(func() (err error) {
		defer bridge.Catch(&err)
		st := C.ggml_backend_graph_compute(b.c, gp)
		if st == C.GGML_STATUS_ABORTED && ctx.Err() != nil {
			return ctx.Err()
		}
		return statusErr(st)
	})
	if err == nil {
		err = g.CustomError()
	}
	return err
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
	if bridge.TensorOf(t).Buffer() == nil {
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
		unlock, err := bridge.TensorOf(t).WriteLock()
		if err != nil {
			return err
		}
		defer unlock()
	}
	p := unsafe.SliceData(data)
	b.pins.Pin(p)
	b.pending = append(b.pending, t)
	defer runtime.KeepAlive(b)
	defer bridge.Catch(&err)
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
	unlock, err := bridge.TensorOf(dst).WriteLock()
	if err != nil {
		return fmt.Errorf("CopyTensorAsync: dst: %w", err)
	}
	defer unlock()
	if !sameLayout(sc, dc) {
		return fmt.Errorf("%w: CopyTensorAsync: src %v and dst %v have different layouts (type, shape or strides)", ggml.ErrShape, src, dst)
	}
	if sc.buffer == nil || dc.buffer == nil {
		return fmt.Errorf("%w: CopyTensorAsync: both tensors must be allocated in backend buffers (views: through AllocContextTensors)", ErrUnsupported)
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
	defer bridge.Catch(&err)
	C.ggml_backend_tensor_copy_async(b.c, dstBackend.c, sc, dc)
	return nil
}

// ComputeAsync starts graph g on the backend and returns; Synchronize waits
// for it (ggml_backend_graph_compute_async). It checks g as Compute does.
// Use Compute for cancellation through a context. What the graph reads
// stays held until Synchronize (or Close of the backend): until then its
// context and graph report ggml.ErrBusy to Close and changes, and its
// buffers are freed only afterwards.
func (b *Backend) ComputeAsync(g *ggml.Graph) (err error) {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	gp, err := b.checkGraph(g, &b.held)
	if err != nil {
		return err
	}
	if b.abort != nil {
		atomic.StoreInt32((*int32)(unsafe.Pointer(b.abort)), 0)
	}
	if err := bridge.BackendOf(b).EnsurePool(); err != nil {
		return err
	}
	end, err := b.pool.Begin(context.Background()) // the CPU computes before returning
	if err != nil {
		return err
	}
	defer end()
	b.pending = append(b.pending, g)
	defer runtime.KeepAlive(b)
	return b.onThread(func() (err error) {
		defer bridge.Catch(&err)
		return statusErr(C.goggml_graph_compute_async(b.c, gp))
	})
}

// onThread runs a compute, on a thread of its own if the backend's thread
// pool changes the computing thread (bridge.OnThread).
func (b *Backend) onThread(f func() error) error { return bridge.OnThread(b.pool.Isolate(), f) }

// checkGraph validates g for computing on b (see Compute) and holds in h
// what the compute reads.
func (b *Backend) checkGraph(g *ggml.Graph, h *bridge.Holds) (*C.struct_ggml_cgraph, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	gp, err := bridge.PrepareGraph(bridge.GraphOf(g), h, func(p unsafe.Pointer, isNode bool) error {
		t := (*C.struct_ggml_tensor)(p)
		if isNode && !bool(C.ggml_backend_supports_op(b.c, t)) {
			return fmt.Errorf("%w: backend %s cannot compute %s (node %q, %s)", ErrUnsupported,
				b.Name(), C.GoString(C.ggml_op_desc(t)), C.GoString(&t.name[0]), C.GoString(C.ggml_type_name(t._type)))
		}
		if isNode {
			if err := b.checkThreads(t); err != nil {
				return err
			}
			if err := b.refuses(t); err != nil {
				return err
			}
		}
		return b.checkTensor(t)
	})
	if err == nil && b.meta != nil {
		err = b.meta.checkPlaced(g) // what ggml's meta backend asserts
	}
	return (*C.struct_ggml_cgraph)(gp), err
}
