package gguf

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// LoadOptions says how Load places and copies the tensors.
type LoadOptions struct {
	// BufferType chooses the buffer type of each tensor (for example a
	// GPU's for the layers that fit, the CPU's for the rest); nil, or a nil
	// result, means the CPU's (backend.CPUBufferType). It is called once per
	// tensor, in file order, on the goroutine that called Load. One of
	// the CPU's extra buffer types (backend.Device.ExtraBufferTypes,
	// chosen per weight by backend.Device.WeightBufferType) works too:
	// its tensors are set whole, from the file's mapping where there is
	// one, and re-laid by ggml as they are set, which Progress counts.
	BufferType func(TensorInfo) *backend.BufferType
	// NoMmap copies every tensor, even where a buffer over the file's
	// mapping would do.
	NoMmap bool
	// Validate checks the data of every tensor whose type ggml can check
	// for NaN and Inf (ggml_validate_row_data, through
	// ggml.ValidateRowData) and fails the load on the first bad block.
	// It reads every byte, mapped tensors included.
	Validate bool
	// Progress, if set, is called as data is copied (and validated) with
	// the bytes done so far and the total: first with the bytes that need
	// no copy, last with done == total. Calls come from the loading
	// goroutines, one at a time, done never decreasing; keep it quick.
	Progress func(done, total uint64)
	// Workers is how many goroutines copy at once; 0 means
	// min(GOMAXPROCS, 4).
	Workers int
	// SmallPages keeps the buffers that weights are copied into on the
	// CPU (its own buffer type's and its extra ones: AMX, CPU_REPACK) in
	// the system's default pages. By default Load asks for transparent
	// huge pages there before copying (backend.Buffer.AdviseHugePages):
	// generation streams every weight for each token, and huge pages
	// made it 10-15 % faster. Weights over the file's mapping are not
	// affected either way.
	SmallPages bool
}

// Model is the tensors of a GGUF file loaded into backend buffers: a
// NoAlloc ggml.Context that holds them (named as in the file) and the
// buffers that hold their data. The tensors keep the buffers alive, and a
// buffer over the file's mapping keeps the mapping alive, past the File's
// Close. Close frees everything; a Model that is no longer reachable (nor
// any of its tensors) is freed by the garbage collector.
type Model struct {
	mu      sync.Mutex
	ctx     *ggml.Context
	tensors []*ggml.Tensor
	names   map[string]int
	bufs    []*backend.Buffer
	mem     *backend.HostMemory
	mapped  uint64
	copied  uint64
}

// Load loads every tensor of f into backend buffers: it makes a NoAlloc
// context with one tensor per tensor info, places each tensor in the buffer
// type opts.BufferType chooses, allocates one buffer per buffer type (more
// where one would pass the type's largest buffer), marks them as holding
// weights, and fills them.
//
// Where f was opened with Open, the buffer type is host memory that can be
// made over caller memory (the CPU's: ggml_backend_dev_buffer_from_host_ptr)
// and a tensor's place in the file is aligned for the buffer, the tensor is
// not copied: it lives in a buffer over the file's mapping (zero-copy).
// Everything else is read from the file in chunks, by opts.Workers
// goroutines, each tensor's chunks by one of them in order: straight into
// host buffers, through a staging chunk into device buffers
// (ggml_backend_tensor_set).
//
// Cancelling ctx stops the copy between chunks; Load then frees what it
// made and returns ctx.Err(). Any error frees everything too.
func Load(ctx context.Context, f *File, opts LoadOptions) (m *Model, err error) {
	if err := f.usable(); err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("%w: LoadOptions.Workers %d", ErrInvalid, opts.Workers)
	}
	infos := f.h.tensors
	gctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: max(len(infos), 1), NoAlloc: true})
	if err != nil {
		return nil, err
	}
	m = &Model{ctx: gctx, names: make(map[string]int, len(infos))}
	defer func() {
		if err != nil {
			m.Close()
			m = nil
		}
	}()
	for i, ti := range infos {
		ne := ti.Ne()
		t := gctx.NewTensor(ti.Type, ne[:max(len(ti.Shape), 1)]...).SetName(ti.Name)
		if err := gctx.Err(); err != nil {
			return nil, fmt.Errorf("gguf: tensor %q: %w", ti.Name, err)
		}
		m.tensors = append(m.tensors, t)
		m.names[ti.Name] = i
	}

	plan, err := m.place(f, opts)
	if err != nil {
		return nil, err
	}
	for _, b := range m.bufs {
		if err := b.SetUsage(backend.UsageWeights); err != nil {
			return nil, err
		}
	}
	return m, m.fill(ctx, f, opts, plan)
}

// placement is where one tensor's data goes.
type placement struct {
	mapped bool           // lives over the file's mapping: nothing to copy
	host   unsafe.Pointer // the data's address in a host buffer, or nil
	// whole: the buffer re-lays the tensor as it is set (one of the CPU's
	// extra buffer types: repacked weights, AMX), so it is set in one
	// piece, from the mapping where there is one.
	whole bool
}

// place allocates the buffers and places every tensor in one.
func (m *Model) place(f *File, opts LoadOptions) ([]placement, error) {
	infos := f.h.tensors
	type group struct {
		bt             *backend.BufferType
		mapped, copied []int
	}
	var groups []*group
	byName := map[string]*group{}
	cpu := backend.CPUBufferType()
	for i, ti := range infos {
		bt := cpu
		if opts.BufferType != nil {
			if b := opts.BufferType(ti.clone()); b != nil {
				bt = b
			}
		}
		g := byName[bt.Name()]
		if g == nil {
			g = &group{bt: bt}
			byName[bt.Name()] = g
			groups = append(groups, g)
		}
		g.copied = append(g.copied, i)
	}

	// Zero-copy candidates: tensors with data, aligned in the file for a
	// buffer over host memory of their buffer type's device.
	var mapData []byte
	if f.m != nil && !opts.NoMmap {
		if err := f.checkSize(); err != nil {
			return nil, err
		}
		for _, g := range groups {
			mk, align := overHost(g.bt)
			if mk == nil {
				continue
			}
			var rest []int
			for _, i := range g.copied {
				if ti := infos[i]; ti.Size > 0 && (f.h.dataOffset+ti.Offset)%align == 0 {
					g.mapped = append(g.mapped, i)
				} else {
					rest = append(rest, i)
				}
			}
			g.copied = rest
		}
		for _, g := range groups {
			if len(g.mapped) > 0 && mapData == nil {
				var ok bool
				if mapData, ok = f.m.acquire(); !ok {
					return nil, fmt.Errorf("%w: the GGUF file is closed", ErrClosed)
				}
				mem, err := backend.ExternalHostMemory(mapData, f.m.release)
				if err != nil {
					f.m.release()
					return nil, err
				}
				m.mem = mem
			}
		}
	}

	plan := make([]placement, len(infos))
	for _, g := range groups {
		if len(g.mapped) > 0 {
			if err := m.placeMapped(f, g.bt, g.mapped, plan); err != nil {
				return nil, err
			}
		}
		if len(g.copied) > 0 {
			if err := m.placeCopied(g.bt, g.copied, plan, opts.SmallPages); err != nil {
				return nil, err
			}
		}
	}
	return plan, nil
}

// overHost returns how to make a buffer of type bt over host memory, and
// the alignment such a buffer needs, or nil when bt cannot be: the CPU's
// buffer type (ggml_backend_cpu_buffer_from_ptr; ggml gives it no device),
// or the own buffer type of a device that makes buffers over host memory
// (ggml_backend_dev_buffer_from_host_ptr).
func overHost(bt *backend.BufferType) (func(mem *backend.HostMemory, off, size uint64) (*backend.Buffer, error), uint64) {
	if !bt.IsHost() {
		return nil, 0
	}
	if bt.Name() == backend.CPUBufferType().Name() {
		return backend.CPUBufferFromHostMemory, max(bt.Alignment(), 32)
	}
	dev := bt.Device()
	if dev == nil || dev.BufferType().Name() != bt.Name() {
		return nil, 0
	}
	if p, err := dev.Props(); err != nil || !p.Caps.BufferFromHostPtr {
		return nil, 0
	}
	return func(mem *backend.HostMemory, off, size uint64) (*backend.Buffer, error) {
		return dev.BufferFromHostMemory(mem, off, size, size)
	}, max(bt.Alignment(), 32)
}

// placeMapped makes one buffer over the part of the mapping that holds the
// tensors idx and places them in it.
func (m *Model) placeMapped(f *File, bt *backend.BufferType, idx []int, plan []placement) error {
	infos := f.h.tensors
	lo, hi := ^uint64(0), uint64(0)
	for _, i := range idx {
		at := f.h.dataOffset + infos[i].Offset
		lo, hi = min(lo, at), max(hi, at+infos[i].Size)
	}
	mk, _ := overHost(bt)
	buf, err := mk(m.mem, lo, hi-lo)
	if err != nil {
		return fmt.Errorf("gguf: a %s buffer over the file: %w", bt.Name(), err)
	}
	m.bufs = append(m.bufs, buf)
	for _, i := range idx {
		at := f.h.dataOffset + infos[i].Offset
		f.m.lend(at, at+infos[i].Size)
		if err := backend.TensorAlloc(buf, m.tensors[i], f.h.dataOffset+infos[i].Offset-lo); err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", infos[i].Name, err)
		}
		plan[i].mapped = true
		m.mapped += infos[i].Size
	}
	return nil
}

// placeCopied allocates buffers of type bt for the tensors idx, as few as
// the type's largest buffer allows, and places them; the buffers of the
// CPU's types ask for huge pages unless smallPages.
func (m *Model) placeCopied(bt *backend.BufferType, idx []int, plan []placement, smallPages bool) error {
	align, maxSize := max(bt.Alignment(), 1), bt.MaxSize()
	var part []int
	var offs []uint64
	size := uint64(0)
	flush := func() error {
		if len(part) == 0 {
			return nil
		}
		buf, err := bt.AllocBuffer(max(size, align))
		if err != nil {
			return err
		}
		m.bufs = append(m.bufs, buf)
		if !smallPages && (bt.IsCPUExtra() || bt.Name() == backend.CPUBufferType().Name()) {
			// Advice: where the system has no huge pages, the load goes on.
			_ = buf.AdviseHugePages()
		}
		var base unsafe.Pointer
		if buf.IsHost() && !copyThroughStaging {
			if base, err = buf.Base(); err != nil {
				return err
			}
		}
		whole := bt.IsCPUExtra()
		for k, i := range part {
			if err := backend.TensorAlloc(buf, m.tensors[i], offs[k]); err != nil {
				return fmt.Errorf("gguf: tensor %q: %w", m.tensors[i].Name(), err)
			}
			plan[i].whole = whole
			if base != nil {
				plan[i].host = unsafe.Add(base, offs[k])
			}
			m.copied += m.tensors[i].Bytes()
		}
		part, offs, size = part[:0], offs[:0], 0
		return nil
	}
	for _, i := range idx {
		t := m.tensors[i]
		need, err := bt.AllocSize(t)
		if err != nil {
			return err
		}
		if need > maxSize {
			return fmt.Errorf("%w: tensor %q needs %d bytes, the largest %s buffer holds %d", ggml.ErrNoMemory, t.Name(), need, bt.Name(), maxSize)
		}
		off := pad(size, align)
		if off+need > maxSize || off+need < off {
			if err := flush(); err != nil {
				return err
			}
			off = 0
		}
		part, offs = append(part, i), append(offs, off)
		size = off + need
	}
	return flush()
}

// copyThroughStaging makes Load copy into host buffers as into device
// buffers, through a staging chunk: the tests' way to run that path where
// there is no device.
var copyThroughStaging = false

// loadChunk is how many bytes one step of the copy moves.
const loadChunk = 8 << 20

// job is one step of the copy: bytes [off, off+n) of tensor t.
type job struct {
	t      int
	off, n uint64
}

// The steps of one tensor go to one worker, in order: TensorSet refuses a
// second writer of a tensor (ErrBusy) while one is writing, even into
// another range, so two workers must never copy into the same tensor at
// once. A device buffer's tensors larger than loadChunk (most weight
// matrices of a real model) have several steps.

// fill copies (and validates) the tensors' data.
func (m *Model) fill(ctx context.Context, f *File, opts LoadOptions, plan []placement) error {
	infos := f.h.tensors
	var jobs []job
	var firsts []int // jobs[firsts[k]:firsts[k+1]] are one tensor's steps
	var total, free uint64
	validate := make([]bool, len(infos))
	for i, ti := range infos {
		total += ti.Size
		validate[i] = opts.Validate && ggml.ValidateRowData(ti.Type, nil) == nil
		if plan[i].mapped && !validate[i] {
			free += ti.Size
			continue
		}
		step := uint64(loadChunk) - loadChunk%ti.Type.Size() // whole blocks, for validation
		if plan[i].whole {
			step = max(ti.Size, 1)
		}
		firsts = append(firsts, len(jobs))
		for off := uint64(0); off < ti.Size; off += step {
			jobs = append(jobs, job{i, off, min(step, ti.Size-off)})
		}
	}
	firsts = append(firsts, len(jobs))
	// Tensors set whole are read from the mapping where there is one (no
	// staging copy of a whole tensor).
	var src []byte
	if f.m != nil && !opts.NoMmap {
		for i := range plan {
			if plan[i].whole {
				var ok bool
				if src, ok = f.m.acquire(); !ok {
					return fmt.Errorf("%w: the GGUF file is closed", ErrClosed)
				}
				defer f.m.release()
				break
			}
		}
	}
	var mu sync.Mutex
	done := uint64(0)
	// report calls Progress; a panic in it is the load's error (on the
	// copy goroutines nothing else could recover it).
	report := func(n uint64) (err error) {
		if opts.Progress == nil {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		done += n
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%w: LoadOptions.Progress panicked: %v", ErrCallback, r)
			}
		}()
		opts.Progress(done, total)
		return nil
	}
	if err := report(free); err != nil {
		return err
	}

	workers := opts.Workers
	if workers == 0 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	workers = min(workers, len(firsts)-1)
	var next atomic.Int64
	var failed atomic.Bool
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var staging []byte
			for {
				k := next.Add(1) - 1
				if k >= int64(len(firsts)-1) {
					return
				}
				for _, j := range jobs[firsts[k]:firsts[k+1]] {
					if failed.Load() || ctx.Err() != nil {
						return
					}
					if err := m.step(f, j, plan[j.t], validate[j.t], src, &staging); err != nil {
						errOnce.Do(func() { firstErr = err })
						failed.Store(true)
						return
					}
					if err := report(j.n); err != nil {
						errOnce.Do(func() { firstErr = err })
						failed.Store(true)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// step does one job. src is the file's mapping, or nil.
func (m *Model) step(f *File, j job, p placement, validate bool, src []byte, staging *[]byte) error {
	ti := &f.h.tensors[j.t]
	at := f.h.dataOffset + ti.Offset + j.off
	var data []byte
	switch {
	case p.mapped:
		data = m.mem.Bytes()[at : at+j.n]
		if validate {
			if err := touch(data, at); err != nil {
				return fmt.Errorf("gguf: tensor %q: %w", ti.Name, err)
			}
		}
	case p.whole && src != nil:
		data = src[at : at+j.n]
		if err := touch(data, at); err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", ti.Name, err)
		}
	case p.whole:
		buf := make([]byte, j.n) // the whole tensor: not kept between jobs
		if err := readFull(f.src, buf, at); err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", ti.Name, err)
		}
		data = buf
	case p.host != nil:
		data = unsafe.Slice((*byte)(unsafe.Add(p.host, j.off)), j.n)
		if err := readFull(f.src, data, at); err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", ti.Name, err)
		}
	default:
		if uint64(cap(*staging)) < j.n {
			*staging = make([]byte, loadChunk)
		}
		data = (*staging)[:j.n]
		if err := readFull(f.src, data, at); err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", ti.Name, err)
		}
	}
	if validate {
		if err := ggml.ValidateRowData(ti.Type, data); err != nil {
			return fmt.Errorf("gguf: tensor %q, bytes [%d, %d): %w", ti.Name, j.off, j.off+j.n, err)
		}
	}
	if !p.mapped && p.host == nil {
		if err := backend.TensorSet(m.tensors[j.t], data, j.off); err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", ti.Name, err)
		}
	}
	if p.whole && src != nil {
		f.m.drop(at, at+j.n) // re-laid: the mapped copy is not needed
	}
	return nil
}

// Tensor returns the tensor called name, or nil.
func (m *Model) Tensor(name string) *ggml.Tensor {
	if m == nil {
		return nil
	}
	i, ok := m.names[name]
	if !ok {
		return nil
	}
	return m.tensors[i]
}

// Tensors returns the tensors in file order.
func (m *Model) Tensors() []*ggml.Tensor {
	if m == nil {
		return nil
	}
	return append([]*ggml.Tensor(nil), m.tensors...)
}

// Context returns the NoAlloc context that holds the tensors; the Model
// closes it.
func (m *Model) Context() *ggml.Context {
	if m == nil {
		return nil
	}
	return m.ctx
}

// Buffers returns the buffers that hold the tensors' data; the Model closes
// them.
func (m *Model) Buffers() []*backend.Buffer {
	if m == nil {
		return nil
	}
	return append([]*backend.Buffer(nil), m.bufs...)
}

// MappedBytes returns the bytes of tensor data that live over the file's
// mapping (not copied).
func (m *Model) MappedBytes() uint64 { return m.mapped }

// CopiedBytes returns the bytes of tensor data copied into buffers.
func (m *Model) CopiedBytes() uint64 { return m.copied }

// Close frees the tensors' context and buffers (ggml_free,
// ggml_backend_buffer_free) and lets go of the file's mapping. While a
// compute uses the tensors it changes nothing and returns ggml.ErrBusy.
// It is idempotent and safe on nil.
func (m *Model) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ctx.Close(); err != nil {
		return err
	}
	var errs []error
	for _, b := range m.bufs {
		errs = append(errs, b.Close())
	}
	m.bufs = nil
	if m.mem != nil {
		// Refused only while a buffer over it is still in use: it is then
		// released when that buffer is freed and the garbage collector
		// finds the memory unreachable.
		m.mem.Close()
		m.mem = nil
	}
	return errors.Join(errs...)
}
