// Package sched is ggml's backend scheduler in Go (ggml_backend_sched): it
// runs one graph over several backends, assigning each node to a backend,
// splitting the graph where the backend changes, copying tensors between
// backends and allocating the compute buffers.
//
// The backends are given in priority order; the last must be a CPU backend
// (ggml runs there whatever no other backend can). Ops whose weights live
// in a buffer marked backend.UsageWeights run on that buffer's backend.
//
// Graphs are single-use for allocation and multi-use for computing, as in
// ggml: allocate a graph (or let Compute do it), compute it as often as you
// like with new inputs, then Reset before the scheduler takes another
// graph. After Reset the tensors the scheduler allocated report
// ggml.ErrNotAllocated instead of exposing reused memory. When a graph is
// split across backends, ggml redirects its nodes' inputs to copies the
// scheduler owns: such a graph is then computed only by that scheduler
// until it is built anew.
//
// AttemptedBufferSize and SetBatchSize exist only in the embedded
// provider's ggml: under -tags ggml_system they return an ErrUnsupported
// error.
// The embedded provider's ggml_backend_sched_new_ext is not wrapped: its
// alloc_buffers = false marks each buffer type no-alloc for the whole
// process, for good (docs/providers.md).
//
// A Scheduler is used by one goroutine at a time. Close frees it; an
// unreachable Scheduler is freed by the garbage collector. It keeps its
// backends alive.
package sched

/*
#include "goggml.h"

extern bool goggmlSchedEval(struct ggml_tensor *t, bool ask, uintptr_t handle);

// goggml_sched_state is what the eval callback reads: a cancel flag the Go
// side sets from a goroutine, and the handle of a Go callback (0: none).
typedef struct {
	int cancel;
	uintptr_t handle;
} goggml_sched_state;

// goggml_sched_eval observes nodes only once a cancel is asked for (so
// that ggml batches nodes as usual), then stops the compute; with a Go
// callback it asks Go.
static bool goggml_sched_eval(struct ggml_tensor *t, bool ask, void *ud) {
	goggml_sched_state *st = (goggml_sched_state *)ud;
	bool cancel = __atomic_load_n(&st->cancel, __ATOMIC_RELAXED) != 0;
	if (cancel) {
		return ask; // ask: observe this node; then: stop
	}
	if (st->handle != 0) {
		return goggmlSchedEval(t, ask, st->handle);
	}
	return ask ? false : true;
}

void goggml_sched_install_eval(ggml_backend_sched_t s, goggml_sched_state *st) {
	ggml_backend_sched_set_eval_callback(s, goggml_sched_eval, st);
}
*/
import "C"

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/hashsize"
	"github.com/go-ggml/ggml/internal/life"
	_ "github.com/go-ggml/ggml/internal/provider"
	"github.com/go-ggml/ggml/internal/sysmem"
)

// MaxBackends is the most backends a scheduler takes (GGML_SCHED_MAX_BACKENDS).
const MaxBackends = 16

// maxGraphInputs is GGML_SCHED_MAX_SPLIT_INPUTS: with Parallel, at most
// this many tensors marked as inputs may feed the graph.
const maxGraphInputs = 30

// maxCopies is GGML_SCHED_MAX_COPIES, the copies of the inputs with Parallel.
const maxCopies = 4

// MaxGraphSize is the largest Options.GraphSize: ggml compares the size of
// the scheduler's hash set, a prime above GraphSize, as an int.
const MaxGraphSize = 1 << 30

// availableMemory is sysmem.Available; tests replace it.
var availableMemory = sysmem.Available

// tablesSize returns the bytes ggml_backend_sched_new allocates for a
// scheduler of graphSize over n backends with copies copies of the inputs,
// as it computes them: a hash set of ggml_hash_size(graphSize) slots with
// a backend id and n·copies tensor pointers each, four arrays of node and
// leaf backend ids of graphSize·(1 + 2·GGML_SCHED_MAX_SPLIT_INPUTS)
// entries, and a context with room for one split per node, each with
// 2·GGML_SCHED_MAX_SPLIT_INPUTS input copies, and for a graph of
// graphSize. About 21 KB per node. ok is false on overflow.
func tablesSize(graphSize, n, copies int) (uint64, bool) {
	graph, err := ggml.GraphOverhead(graphSize)
	if err != nil {
		return 0, false
	}
	gs := uint64(graphSize)
	h := hashsize.Of(gs)
	const ptr = uint64(unsafe.Sizeof(uintptr(0)))
	var sum uint64
	ok := true
	add := func(factors ...uint64) {
		p := uint64(1)
		for _, f := range factors {
			hi, lo := bits.Mul64(p, f)
			ok = ok && hi == 0
			p = lo
		}
		var carry uint64
		sum, carry = bits.Add64(sum, p, 0)
		ok = ok && carry == 0
	}
	add(h, ptr)                            // the hash set's keys
	add((h+31)/32, 4)                      // and its bitset
	add(h, 4)                              // hv_tensor_backend_ids
	add(h, uint64(n), uint64(copies), ptr) // hv_tensor_copies
	add(4, gs, 1+2*maxGraphInputs, 4)      // node and leaf backend ids, and the previous ones
	add(gs, 2*maxGraphInputs, C.sizeof_struct_ggml_tensor)
	add(graph)
	return sum, ok
}

// Options configure a Scheduler.
type Options struct {
	// BufferTypes gives, per backend, the buffer type of its compute
	// buffer; nil means each backend's default. Each must be usable by
	// its backend.
	BufferTypes []*backend.BufferType
	// GraphSize is the most nodes plus leafs of a graph the scheduler
	// takes, at most MaxGraphSize; 0 means ggml.DefaultGraphSize. ggml
	// sizes the scheduler's tables for one split per node: about 21 KB
	// per unit of GraphSize (plus 8·backends·copies bytes), allocated in
	// New, which returns ggml.ErrNoMemory when they exceed the memory
	// available (on Linux, RAM plus swap, or the cgroup's limit).
	GraphSize int
	// Parallel pipelines copies between backends over several copies of
	// the inputs (GGML_SCHED_MAX_COPIES).
	Parallel bool
	// OpOffload lets backends take ops whose weights live elsewhere when
	// they ask to (Backend.OffloadOp).
	OpOffload bool
}

// Scheduler is ggml_backend_sched_t. See the package documentation.
type Scheduler struct {
	_         [0]func()
	c         C.ggml_backend_sched_t // set at birth, never changed
	life      *life.Life             // computes and allocations are exclusive work
	placed    *life.Life             // the lifetime of what the current allocation placed: a child of life
	backends  []*backend.Backend
	views     []*bridge.Backend // the backends seen through bridge, in order
	bts       []*backend.BufferType
	ptrs      []unsafe.Pointer // the backends' ggml_backend_t, in order
	graphSize int
	parallel  bool
	state     *C.goggml_sched_state
	eval      *evalState
	graph     *ggml.Graph             // the graph allocated now, if any
	failed    bool                    // the last allocation failed: ggml left a buffer NULL
	version   uint64                  // of the graph when allocated
	touched   map[unsafe.Pointer]bool // tensors pinned or asked about since the last reset
	limited   []threadLimit           // nodes of the allocated graph whose CPU kernel limits threads
	refused   error                   // why the allocated graph must not be computed as placed, or nil
	inGGML    atomic.Int64            // nanoseconds spent in ggml's compute calls (ComputeTime)
	res       schedRes
	cleanup   runtime.Cleanup
}

// schedRes is what the cleanup frees; it holds no Go pointer, so that it
// cannot keep the Scheduler reachable.
type schedRes struct {
	c        C.ggml_backend_sched_t
	state    *C.goggml_sched_state
	releases []func()     // let go of the backends' C objects, after the free
	links    []*life.Link // the RPC connections of its backends
}

func freeSched(r schedRes) {
	// Its compute buffers on a broken RPC connection cannot be freed (the
	// exchange would abort): the scheduler is leaked then.
	life.FreeOver(r.links, func() { C.ggml_backend_sched_free(r.c) })
	C.free(unsafe.Pointer(r.state))
	for _, f := range r.releases {
		f()
	}
}

// New creates a scheduler over backends, in priority order, the last a CPU
// backend (ggml_backend_sched_new).
func New(backends []*backend.Backend, opts Options) (*Scheduler, error) {
	n := len(backends)
	if n == 0 || n > MaxBackends {
		return nil, fmt.Errorf("%w: a scheduler takes 1 to %d backends, got %d", ggml.ErrInvalid, MaxBackends, n)
	}
	if opts.BufferTypes != nil && len(opts.BufferTypes) != n {
		return nil, fmt.Errorf("%w: %d buffer types for %d backends", ggml.ErrInvalid, len(opts.BufferTypes), n)
	}
	if opts.GraphSize < 0 || opts.GraphSize > MaxGraphSize {
		return nil, fmt.Errorf("%w: Options.GraphSize must be 0 to %d, got %d", ggml.ErrInvalid, MaxGraphSize, opts.GraphSize)
	}
	graphSize := opts.GraphSize
	if graphSize == 0 {
		graphSize = ggml.DefaultGraphSize
	}
	copies := 1
	if opts.Parallel {
		copies = maxCopies
	}
	// ggml aborts when one of these mallocs fails; on Linux a large one
	// succeeds and the process is killed once ggml clears the tables.
	need, ok := tablesSize(graphSize, n, copies)
	if !ok {
		return nil, fmt.Errorf("%w: a scheduler of graph size %d needs more than 2^64 bytes", ggml.ErrNoMemory, graphSize)
	}
	if avail, known := availableMemory(); known && need > avail {
		return nil, fmt.Errorf("%w: a scheduler of graph size %d over %d backends needs %d bytes of tables, %d are available; lower Options.GraphSize",
			ggml.ErrNoMemory, graphSize, n, need, avail)
	}
	ptrs := make([]unsafe.Pointer, n)
	views := make([]*bridge.Backend, n)
	for i, be := range backends {
		views[i] = bridge.View[bridge.Backend](be)
		p, err := views[i].Ptr()
		if err != nil {
			return nil, fmt.Errorf("sched.New: backend %d: %w", i, err)
		}
		for j := range i {
			if ptrs[j] == p {
				return nil, fmt.Errorf("%w: backend %d is backend %d again", ggml.ErrInvalid, i, j)
			}
		}
		ptrs[i] = p
	}
	if last := backends[n-1]; last.Device() == nil || last.Device().Type() != backend.DeviceCPU {
		return nil, fmt.Errorf("%w: the last backend must be a CPU backend, not %s", ggml.ErrInvalid, last.Name())
	}
	cb := (*C.ggml_backend_t)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.ggml_backend_t(nil)))))
	defer C.free(unsafe.Pointer(cb))
	cbs := unsafe.Slice(cb, n)
	for i, p := range ptrs {
		cbs[i] = C.ggml_backend_t(p)
	}
	var cbt *C.ggml_backend_buffer_type_t
	if opts.BufferTypes != nil {
		cbt = (*C.ggml_backend_buffer_type_t)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.ggml_backend_buffer_type_t(nil)))))
		defer C.free(unsafe.Pointer(cbt))
		bts := unsafe.Slice(cbt, n)
		for i, bt := range opts.BufferTypes {
			p, err := bridge.View[bridge.BufferType](bt).Ptr()
			if err != nil {
				return nil, fmt.Errorf("sched.New: buffer type %d: %w", i, err)
			}
			if !backends[i].SupportsBufferType(bt) {
				return nil, fmt.Errorf("%w: backend %s cannot use buffer type %s", backend.ErrUnsupported, backends[i].Name(), bt.Name())
			}
			if bt.IsCPUExtra() {
				return nil, fmt.Errorf("%w: sched.New: buffer type %d (%s) is one of the CPU's extra types, which hold weights re-laid for its kernels, not the tensors a graph computes; give the device's own buffer type", backend.ErrUnsupported, i, bt.Name())
			}
			bts[i] = C.ggml_backend_buffer_type_t(p)
		}
	}
	// ggml_backend_sched_free reads the backends: their C objects must
	// outlive the scheduler even if their handles are closed first.
	var releases []func()
	for _, be := range views {
		rel, err := be.Acquire()
		if err != nil {
			for _, f := range releases {
				f()
			}
			return nil, err
		}
		releases = append(releases, rel)
	}
	var c C.ggml_backend_sched_t
	err := func() (err error) {
		defer life.Catch(&err) // a check missing here: an error, not an abort
		bridge.MetaMu.RLock()  // C reads ggml's maps of meta devices
		defer bridge.MetaMu.RUnlock()
		c = C.ggml_backend_sched_new(cb, cbt, C.int(n), C.size_t(graphSize), C.bool(opts.Parallel), C.bool(opts.OpOffload))
		return nil
	}()
	if err == nil && c == nil {
		err = fmt.Errorf("%w: ggml_backend_sched_new", ggml.ErrNoMemory)
	}
	if err != nil {
		for _, f := range releases {
			f()
		}
		return nil, err
	}
	st := (*C.goggml_sched_state)(C.calloc(1, C.sizeof_goggml_sched_state))
	bts := opts.BufferTypes
	if bts == nil {
		for _, be := range backends {
			bts = append(bts, be.DefaultBufferType())
		}
	}
	s := &Scheduler{c: c, backends: append([]*backend.Backend(nil), backends...), views: views, bts: append([]*backend.BufferType(nil), bts...), ptrs: ptrs,
		graphSize: graphSize, parallel: opts.Parallel, state: st, eval: &evalState{state: st}}
	s.res = schedRes{c: c, state: st, releases: releases}
	for _, be := range backends {
		s.res.links = append(s.res.links, bridge.View[bridge.Backend](be).Links()...)
	}
	res := s.res
	s.life = life.New(nil, fmt.Errorf("%w: the scheduler that allocated the tensor is closed", ggml.ErrNotAllocated), func() { freeSched(res) })
	s.newPlacement()
	s.cleanup = runtime.AddCleanup(s, life.CloseCollected, s.life)
	life.Leaks.Opened("Scheduler", s.life)
	return s, nil
}

// newPlacement ends what the scheduler placed so far and starts the
// lifetime of what it places next.
func (s *Scheduler) newPlacement() {
	if s.placed != nil {
		s.placed.Close("", false)
	}
	s.placed = life.NewPlacement(s.life, fmt.Errorf("%w: the scheduler that allocated the tensor was reset since", ggml.ErrNotAllocated))
}

// change starts a change of where graph g's tensors live (g nil: of the
// tensors placed so far only): see bridge.Quiesce.
func (s *Scheduler) change(g *ggml.Graph) (done func(), err error) {
	return bridge.Quiesce(bridge.View[bridge.Graph](g), "the tensors the scheduler allocated", func() *life.Life { return s.placed })
}

// enter starts exclusive work on the scheduler: ErrBusy while a compute
// runs (on another goroutine, or the one whose eval callback calls).
func (s *Scheduler) enter() error {
	if err := s.usable(); err != nil {
		return err
	}
	return s.life.Enter("the scheduler")
}

func (s *Scheduler) leave() { s.life.Leave() }

func (s *Scheduler) usable() error {
	if s == nil {
		return fmt.Errorf("%w: nil *Scheduler", ggml.ErrInvalid)
	}
	if s.life.Closed() {
		return fmt.Errorf("%w: the scheduler is closed", ggml.ErrClosed)
	}
	for i, be := range s.views {
		if _, err := be.Ptr(); err != nil {
			return fmt.Errorf("scheduler backend %d: %w", i, err)
		}
	}
	return nil
}

// Close frees the scheduler and its compute buffers (ggml_backend_sched_free);
// tensors it allocated report ggml.ErrNotAllocated, and the graph it held
// may be allocated again by another scheduler or allocator. It is
// idempotent and safe on nil. While a compute runs on the scheduler, or a
// transfer reads a tensor it placed (on another goroutine, or from the eval
// callback), it changes nothing and returns ggml.ErrBusy.
func (s *Scheduler) Close() error {
	if s == nil || s.life.Closed() {
		return nil
	}
	if err := s.life.Close("the scheduler", true); err != nil {
		return err
	}
	s.cleanup.Stop()
	life.Leaks.Closed(s.life)
	s.release()
	return nil
}

// NumBackends returns the number of backends (ggml_backend_sched_get_n_backends).
func (s *Scheduler) NumBackends() int {
	if s == nil {
		return 0
	}
	return len(s.backends)
}

// Backend returns backend i, in the order given to New, or nil
// (ggml_backend_sched_get_backend).
func (s *Scheduler) Backend(i int) *backend.Backend {
	if s == nil || i < 0 || i >= len(s.backends) {
		return nil
	}
	return s.backends[i]
}

// index returns the position of be among the scheduler's backends.
func (s *Scheduler) index(be *backend.Backend) (int, error) {
	p, err := bridge.View[bridge.Backend](be).Ptr()
	if err != nil {
		return -1, err
	}
	for i, q := range s.ptrs {
		if q == p {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%w: backend %s is not one of the scheduler's", ggml.ErrInvalid, be.Name())
}

// NumSplits returns the number of splits of the last graph split
// (ggml_backend_sched_get_n_splits).
func (s *Scheduler) NumSplits() int {
	if s.usable() != nil {
		return 0
	}
	defer runtime.KeepAlive(s)
	return int(C.ggml_backend_sched_get_n_splits(s.c))
}

// NumCopies returns how many copies of the graph inputs the scheduler
// keeps to pipeline copies between backends: 1, or GGML_SCHED_MAX_COPIES
// (4) with Options.Parallel (ggml_backend_sched_get_n_copies).
func (s *Scheduler) NumCopies() int {
	if s.usable() != nil {
		return 0
	}
	defer runtime.KeepAlive(s)
	return int(C.ggml_backend_sched_get_n_copies(s.c))
}

// BufferType returns the buffer type of be's compute buffer
// (ggml_backend_sched_get_buffer_type).
func (s *Scheduler) BufferType(be *backend.Backend) (*backend.BufferType, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	i, err := s.index(be)
	if err != nil {
		return nil, err
	}
	return s.bts[i], nil
}

// BufferSize returns the size of be's compute buffer
// (ggml_backend_sched_get_buffer_size).
func (s *Scheduler) BufferSize(be *backend.Backend) (uint64, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	i, err := s.index(be)
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(s)
	return uint64(C.ggml_backend_sched_get_buffer_size(s.c, C.ggml_backend_t(s.ptrs[i]))), nil
}

// AttemptedBufferSize returns the size the scheduler last tried to give
// be's compute buffer, also when that failed
// (ggml_backend_sched_get_attempted_buffer_size). Only the embedded
// provider's ggml has it: with another provider it returns an
// ErrUnsupported error.
func (s *Scheduler) AttemptedBufferSize(be *backend.Backend) (uint64, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	if !haveOllamaExtras {
		return 0, embeddedOnly("Scheduler.AttemptedBufferSize (ggml_backend_sched_get_attempted_buffer_size)")
	}
	i, err := s.index(be)
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(s)
	return uint64(C.goggml_sched_get_attempted_buffer_size(s.c, C.ggml_backend_t(s.ptrs[i]))), nil
}

// SetBatchSize gives the scheduler a hint of the batch size the graphs
// process, which the embedded provider's ggml uses to decide on op offload
// (ggml_backend_sched_set_batch_size); -1 means guess. ggml keeps it in an
// int: n is -1 to math.MaxInt32. Only the embedded provider's ggml has it:
// with another provider it returns an ErrUnsupported error.
func (s *Scheduler) SetBatchSize(n int) error {
	if err := s.usable(); err != nil {
		return err
	}
	if n < -1 || n > math.MaxInt32 {
		return fmt.Errorf("%w: batch size must be -1 (guess) to %d, got %d", ggml.ErrInvalid, math.MaxInt32, n)
	}
	if !haveOllamaExtras {
		return embeddedOnly("Scheduler.SetBatchSize (ggml_backend_sched_set_batch_size)")
	}
	defer runtime.KeepAlive(s)
	C.goggml_sched_set_batch_size(s.c, C.int(n))
	return nil
}

// touch counts a tensor that pinning or asking puts into ggml's hash set,
// which holds about GraphSize tensors and aborts when full.
func (s *Scheduler) touch(tc *C.struct_ggml_tensor) error {
	if s.touched == nil {
		s.touched = map[unsafe.Pointer]bool{}
	}
	p := unsafe.Pointer(tc)
	if s.touched[p] {
		return nil
	}
	held := 0
	if s.graph != nil {
		held = s.graph.NumNodes() + s.graph.NumLeafs()
	}
	if held+len(s.touched)+1 > s.graphSize {
		return fmt.Errorf("%w: the scheduler's tensor set is full (Options.GraphSize %d); Reset it, or make it larger", ggml.ErrGraphFull, s.graphSize)
	}
	s.touched[p] = true
	return nil
}

// SetTensorBackend pins node t to backend be, which must be one of the
// scheduler's (ggml_backend_sched_set_tensor_backend). Pins last until Reset.
func (s *Scheduler) SetTensorBackend(t *ggml.Tensor, be *backend.Backend) error {
	if err := s.usable(); err != nil {
		return err
	}
	tp, err := bridge.View[bridge.Tensor](t).Ptr()
	if err != nil {
		return err
	}
	tc := (*C.struct_ggml_tensor)(tp)
	i, err := s.index(be)
	if err != nil {
		return err
	}
	if !be.SupportsOp(t) {
		return fmt.Errorf("%w: backend %s cannot compute %v (%s)", backend.ErrUnsupported, be.Name(), t, t.Op())
	}
	if err := s.touch(tc); err != nil {
		return err
	}
	defer runtime.KeepAlive(s)
	defer runtime.KeepAlive(t)
	C.ggml_backend_sched_set_tensor_backend(s.c, tc, C.ggml_backend_t(s.ptrs[i]))
	return nil
}

// TensorBackend returns the backend node t is assigned to, or nil when it
// is not assigned (ggml_backend_sched_get_tensor_backend).
func (s *Scheduler) TensorBackend(t *ggml.Tensor) *backend.Backend {
	if s.usable() != nil {
		return nil
	}
	tp, err := bridge.View[bridge.Tensor](t).Ptr()
	if err != nil {
		return nil
	}
	tc := (*C.struct_ggml_tensor)(tp)
	if s.touch(tc) != nil {
		return nil
	}
	defer runtime.KeepAlive(s)
	defer runtime.KeepAlive(t)
	p := unsafe.Pointer(C.ggml_backend_sched_get_tensor_backend(s.c, tc))
	for i, q := range s.ptrs {
		if q == p {
			return s.backends[i]
		}
	}
	return nil
}

// haveOllamaExtras reports whether the linked ggml has the embedded
// provider's extra scheduler calls (attempted sizes, batch-size hints).
const haveOllamaExtras = C.GOGGML_HAVE_OLLAMA_EXTRAS != 0

// embeddedOnly is the error of a call that only the embedded provider's
// ggml has, in a binary linked with another provider.
func embeddedOnly(call string) error {
	return fmt.Errorf("%w: %s needs the embedded provider (github.com/ollama/ollama v0.17.4, the default build); this binary links %s",
		backend.ErrUnsupported, call, ggml.Provider())
}
