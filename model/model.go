package model

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/cpu"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model/chat"
	"github.com/go-ggml/ggml/sched"
	"github.com/go-ggml/ggml/tokenizer"
)

// Options say how Load runs a model.
type Options struct {
	// ContextSize is the number of positions the KV cache holds: the most
	// tokens a sequence can have. 0 means the training context, at most
	// 4096.
	ContextSize int
	// BatchSize is the most tokens one compute processes; longer inputs
	// to Eval are cut into batches. 0 means 512 (at most ContextSize).
	BatchSize int
	// Sequences is the number of sequences the KV cache holds at once
	// (Decode, SeqRemove, SeqCopy), 1 to MaxSequences; 0 means 1. They
	// share the cache's ContextSize cells, and each may have up to
	// ContextSize positions.
	Sequences int
	// GPULayers is the number of blocks (from the last) that run on the
	// accelerator, if there is one; the output layer goes with the last
	// block. 0, the zero value, or a negative value puts all of them
	// there, as llama.cpp does by default; CPUOnly runs everything on the
	// CPU.
	GPULayers int
	// CPUOnly runs every layer on the CPU, whatever accelerator there is.
	CPUOnly bool
	// Device is the accelerator, a GPU or an integrated GPU; nil means the
	// first GPU (else integrated GPU) in ggml's registry.
	Device *backend.Device
	// Threads is the number of CPU threads; 0 means one per core.
	Threads int
	// Poll is how long the CPU's threads look for the next compute after
	// one ends before they sleep, 0 to 100 (ggml_threadpool_params.poll):
	// 0, the default, computes on the backend's own pool, which polls for
	// a few milliseconds (poll 1) and then sleeps, so that an idle program
	// burns no CPU; llama.cpp's tools use 50, which spins for up to a few
	// tenths of a second. Polling makes each generated token start sooner (5 %
	// faster generation of a small model on 2 threads, measured) and
	// keeps cores busy meanwhile; Rest stops it early.
	Poll int
	// CacheType is the type of the KV cache's cells: f16 by default
	// (CacheDefault, the zero value, as llama.cpp), or f32 (twice the
	// memory, no rounding).
	CacheType CacheType
	// NoMmap copies the CPU's weights out of the file instead of using
	// them in place (gguf.LoadOptions.NoMmap).
	NoMmap bool
	// NoRepack keeps every CPU weight in the CPU's own buffer type. By
	// default each weight that a matrix product reads goes, as llama.cpp
	// places it, to the first of the CPU's extra buffer types whose
	// kernels take it (backend.Device.WeightBufferType): AMX tiles where
	// the CPU has them, else CPU_REPACK's interleaved blocks. Those are
	// much faster, and are copied out of the file at load.
	NoRepack bool
	// SmallPages keeps the weights copied into the CPU's buffers in the
	// system's default pages (gguf.LoadOptions.SmallPages); by default
	// they are in huge pages where the system grants them, which makes
	// generation faster.
	SmallPages bool
	// FlashAttn says whether attention is one fused op
	// (ggml.Context.FlashAttnExt, as llama.cpp runs it by default) or
	// matrix products around a softmax. FlashAttnAuto, the zero value,
	// fuses where every backend of the model supports it.
	FlashAttn FlashAttnMode
	// Progress, if set, reports the bytes of weights loaded so far.
	Progress func(done, total uint64)
}

// CacheType is Options.CacheType: the type of the KV cache.
type CacheType int

const (
	// CacheDefault is CacheF16.
	CacheDefault CacheType = iota
	// CacheF16 keeps keys and values in half precision (ggml.TypeF16).
	CacheF16
	// CacheF32 keeps them in single precision (ggml.TypeF32).
	CacheF32
	// CacheQ8_0 keeps them in blocks of 32 8-bit values and a scale
	// (ggml.TypeQ8_0): 8.5 bits a value, 53 % of f16's memory, as
	// llama.cpp's --cache-type-k/v q8_0. It needs flash attention (every
	// batch attends through the fused kernel) and heads of a multiple
	// of 32 values.
	CacheQ8_0
	// CacheQ4_0 keeps them in blocks of 32 4-bit values and a scale
	// (ggml.TypeQ4_0): 4.5 bits a value, 28 % of f16's memory, less
	// precise; as CacheQ8_0 otherwise.
	CacheQ4_0
)

// String returns the cache type's name: f16, f32, q8_0, q4_0 (ggml's
// names), or CacheType(N) for a value that is no constant.
func (c CacheType) String() string {
	if t, err := c.ggmlType(); err == nil {
		return t.String()
	}
	return fmt.Sprintf("CacheType(%d)", int(c))
}

// ParseCacheType returns the cache type of a name, as llama.cpp's
// --cache-type-k takes it: f16, f32, q8_0 or q4_0.
func ParseCacheType(name string) (CacheType, error) {
	for _, c := range []CacheType{CacheF16, CacheF32, CacheQ8_0, CacheQ4_0} {
		if c.String() == name {
			return c, nil
		}
	}
	return 0, fmt.Errorf("%w: model: cache type %q: want f16, f32, q8_0 or q4_0", ggml.ErrType, name)
}

// ggmlType returns the cache type's ggml type, or an error for a value
// that is not one of the constants.
func (c CacheType) ggmlType() (ggml.Type, error) {
	switch c {
	case CacheDefault, CacheF16:
		return ggml.TypeF16, nil
	case CacheF32:
		return ggml.TypeF32, nil
	case CacheQ8_0:
		return ggml.TypeQ8_0, nil
	case CacheQ4_0:
		return ggml.TypeQ4_0, nil
	}
	return 0, fmt.Errorf("%w: model: Options.CacheType %d: want CacheF16, CacheF32, CacheQ8_0 or CacheQ4_0", ggml.ErrType, int(c))
}

// FlashAttnMode is Options.FlashAttn: whether attention runs as one fused
// op.
type FlashAttnMode int

const (
	// FlashAttnAuto fuses attention where every backend of the model
	// supports ggml's fused attention for its cache type and head size.
	FlashAttnAuto FlashAttnMode = iota
	// FlashAttnOn fuses attention, or fails Load where a backend cannot.
	FlashAttnOn
	// FlashAttnOff computes attention as two matrix products around a
	// softmax.
	FlashAttnOff
)

// Errors of Eval.
var (
	// ErrContextFull: the tokens do not fit in the KV cache.
	ErrContextFull = errors.New("model: context full")
	// ErrToken: a token ID outside the vocabulary.
	ErrToken = errors.New("model: invalid token")
)

// MemoryError reports a model that does not fit on a device. It is
// returned by Load before anything is allocated, and wraps
// ggml.ErrNoMemory.
type MemoryError struct {
	Device string
	Need   uint64 // weights, KV cache and an estimate of the compute buffer
	Free   uint64 // what the device reports free
}

// Error says what the model needs on which device, and what it has free.
func (e *MemoryError) Error() string {
	return fmt.Sprintf("model: the model needs %d MiB on %s, which has %d MiB free", e.Need>>20, e.Device, e.Free>>20)
}

// Unwrap returns ggml.ErrNoMemory: errors.Is(err, ggml.ErrNoMemory) holds.
func (e *MemoryError) Unwrap() error { return ggml.ErrNoMemory }

// Model is a model loaded into backend buffers, with its KV cache and a
// scheduler that runs it over the accelerator and the CPU. Its
// architecture's Network builds its graphs. Its cache holds
// Options.Sequences sequences: Decode runs tokens of any of them in one
// batch; Eval, Generate and Chat append to sequence 0. A Model is used by
// one goroutine at a time: a call that finds another one of its methods
// that use the cache or the graphs running (Eval, Decode, Generate,
// Rewind, the Seq calls, Rest, WriteDot, Close) is an ggml.ErrBusy error,
// and after Close they are ggml.ErrClosed errors (Close again returns
// nil).
type Model struct {
	Config Config

	net     Network
	tok     *tokenizer.Tokenizer
	tokErr  error // why tok is nil
	tmpl    *chat.Template
	tmplErr error // why tmpl is nil

	nCtx, nBatch  int
	cacheType     ggml.Type
	kvRow, kvHead uint64 // bytes of a cell's keys (or values), and of one head's
	tied          bool
	flash         bool // attention is ggml_flash_attn_ext; the V cache is [KVDim, nCtx], not transposed
	capped        bool // the network caps its attention's scores (SoftCapper)

	weights *gguf.Model
	outCopy stateBuffer // a tied output layer's copy of token_embd in an extra buffer type, or none
	tokEmbd *ggml.Tensor
	output  *ggml.Tensor // output.weight, or what a tied output multiplies by
	layers  []layer

	gpu, cpu *backend.Backend
	pool     *cpu.ThreadPool // the CPU's pool where Options.Poll > 0, else nil (the backend's own)
	sched    *sched.Scheduler
	state    []stateBuffer // KV cache and per-device constants, one per buffer type

	kv   *cells // what each cell of the KV cache holds
	ub   ubatch // the batch being decoded, reused
	step *step  // the graph of the last compute, reused when the next has the same shape

	logits []float32 // the last compute's logits
	out    []float32 // the logits of a Decode of several computes

	busy   atomic.Bool // a call of Eval, Generate, Rewind, Rest, WriteDot or Close runs
	closed bool        // Close ran; read and written with busy held

	stats    Stats
	reserved map[*backend.Backend]uint64
	peak     map[*backend.Backend]uint64
	free     map[string][2]uint64 // device free and total memory at load
}

// layer is one block's slice of the KV cache, where its weights are, and
// its copies of the UseConst tensors.
type layer struct {
	k, v   *ggml.Tensor // the cache: k [KVDim, nCtx], v [nCtx, KVDim] (transposed; as k with flash attention)
	consts map[string]*ggml.Tensor
	bt     *backend.BufferType
}

// stateBuffer is a context's tensors in one buffer of a buffer type: the
// KV cache of the layers on that type and their copies of the UseConst
// tensors, or a tied output layer's copy of token_embd (Model.outCopy).
type stateBuffer struct {
	bt  *backend.BufferType
	ctx *ggml.Context
	buf *backend.Buffer
}

// Load opens a GGUF file and loads it with LoadFile.
func Load(ctx context.Context, path string, opts Options) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the weights keep the mapping alive
	return LoadFile(ctx, f, opts)
}

// LoadReader loads the model of the GGUF file of size bytes that r reads
// (gguf.Read) with LoadFile: a file in memory, or in an archive. The
// weights are copied out of r; the model does not keep it.
func LoadReader(ctx context.Context, r io.ReaderAt, size int64, opts Options) (*Model, error) {
	f, err := gguf.Read(r, size)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return LoadFile(ctx, f, opts)
}

// LoadFile loads the model of an open GGUF file, f, which the caller
// still closes (the model's weights keep what they use of it): it finds
// the architecture registered for f's general.architecture, reads the
// configuration and vocabulary, checks every tensor's name, shape and
// type against the architecture's layout, places the
// last Options.GPULayers blocks on the accelerator and the rest on the
// CPU, checks that weights, KV cache and compute buffers fit in each
// device's free memory (a *MemoryError before anything is allocated),
// loads the weights (gguf.Load, cancelled by ctx), allocates the KV cache
// and reserves the scheduler's compute buffers for the largest batch.
func LoadFile(ctx context.Context, f *gguf.File, opts Options) (m *Model, err error) {
	if f == nil {
		return nil, fmt.Errorf("%w: model: LoadFile of a nil file", ggml.ErrInvalid)
	}
	net, err := open(f)
	if err != nil {
		return nil, err
	}
	cfg := net.Config()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	specs := net.Tensors()
	tok, tokErr, err := readTokenizer(f, cfg.VocabSize)
	if err != nil {
		return nil, err
	}
	tied, err := checkTensors(f, cfg, specs)
	if err != nil {
		return nil, err
	}
	tmpl, tmplErr := chat.FromGGUF(f)
	uses := map[string]Use{}
	for _, s := range specs {
		uses[s.Name] = s.Use
	}

	sc, ok := net.(SoftCapper)
	m = &Model{Config: cfg, net: net, tok: tok, tokErr: tokErr, tied: tied, capped: ok && sc.SoftCapped(),
		tmpl: tmpl, tmplErr: tmplErr,
		reserved: map[*backend.Backend]uint64{}, peak: map[*backend.Backend]uint64{}, free: map[string][2]uint64{}}
	defer func() {
		if err != nil {
			m.Close()
			m = nil
		}
	}()
	m.nCtx = opts.ContextSize
	if m.nCtx == 0 {
		m.nCtx = min(cfg.ContextLength, 4096)
	}
	m.nBatch = opts.BatchSize
	if m.nBatch == 0 {
		m.nBatch = 512
	}
	m.nBatch = min(m.nBatch, m.nCtx)
	if m.nCtx < 1 || m.nCtx > maxDim || m.nBatch < 1 {
		return nil, fmt.Errorf("%w: context size %d, batch size %d: want 1 to %d", ggml.ErrInvalid, opts.ContextSize, opts.BatchSize, maxDim)
	}
	if opts.Poll < 0 || opts.Poll > 100 {
		return nil, fmt.Errorf("%w: model: Poll %d is not 0 to 100", ggml.ErrInvalid, opts.Poll)
	}
	if m.cacheType, err = opts.CacheType.ggmlType(); err != nil {
		return nil, err
	}
	if bs := m.cacheType.BlockSize(); cfg.HeadDim%int(bs) != 0 {
		return nil, fmt.Errorf("%w: model: a %v cache needs heads of a multiple of %d values, not %d", ggml.ErrType, m.cacheType, bs, cfg.HeadDim)
	}
	if m.quantCache() && opts.FlashAttn == FlashAttnOff {
		return nil, fmt.Errorf("%w: model: a %v cache needs flash attention (Options.FlashAttn), as in llama.cpp", ggml.ErrInvalid, m.cacheType)
	}
	row, err := m.cacheType.RowSize(int64(cfg.KVDim()))
	if err != nil {
		return nil, err
	}
	head, err := m.cacheType.RowSize(int64(cfg.HeadDim))
	if err != nil {
		return nil, err
	}
	m.kvRow, m.kvHead = uint64(row), uint64(head)
	nSeq := opts.Sequences
	if nSeq == 0 {
		nSeq = 1
	}
	if nSeq < 1 || nSeq > MaxSequences {
		return nil, fmt.Errorf("%w: model: Options.Sequences %d: want 1 to %d", ggml.ErrInvalid, opts.Sequences, MaxSequences)
	}
	m.kv = newCells(m.nCtx, nSeq)

	// Placement: the last gpuLayers blocks and the output layer on the
	// accelerator; the token embeddings on the CPU (a row lookup), unless
	// the output layer shares them and sits on the accelerator.
	dev := opts.Device
	if opts.CPUOnly {
		dev = nil
	} else if dev == nil {
		dev = DefaultGPU()
	}
	if dev != nil && dev.Type() != backend.DeviceGPU && dev.Type() != backend.DeviceIGPU {
		return nil, fmt.Errorf("%w: device %s is a %v, not a GPU", ggml.ErrInvalid, dev.Name(), dev.Type())
	}
	gpuLayers := opts.GPULayers
	if gpuLayers <= 0 || gpuLayers > cfg.BlockCount {
		gpuLayers = cfg.BlockCount
	}
	if dev == nil {
		gpuLayers = 0
	}
	cpuBT := backend.CPUBufferType()
	layerBT := func(il int) *backend.BufferType { // il == BlockCount: the output layer
		if gpuLayers > 0 && il >= cfg.BlockCount-gpuLayers {
			return dev.BufferType()
		}
		return cpuBT
	}
	var placeOn func(name string) *backend.BufferType // the device's own types only
	probe := dev
	if gpuLayers == 0 {
		probe = nil
	}
	cpuOnly, cpuExtra, err := checkOps(f, uses, tied, int64(m.nBatch), probe, !opts.NoRepack)
	if err != nil {
		return nil, err
	}
	place := func(name string) *backend.BufferType {
		bt := placeOn(name)
		if bt == cpuBT && cpuExtra[name] != nil {
			return cpuExtra[name]
		}
		return bt
	}
	placeOn = func(name string) *backend.BufferType {
		switch {
		case cpuOnly[name]:
			return cpuBT // a type the accelerator cannot multiply (or look up)
		case name == "token_embd.weight":
			if tied {
				return layerBT(cfg.BlockCount)
			}
			return cpuBT
		case uses[name] == UseConst:
			return cpuBT // copied to each device's state (see newState)
		}
		if il, ok := blockOf(name); ok {
			return layerBT(il)
		}
		return layerBT(cfg.BlockCount)
	}

	if err := m.checkMemory(f, place, layerBT, dev); err != nil {
		return nil, err
	}
	if m.flash, err = m.flashAttn(opts.FlashAttn, probe); err != nil {
		return nil, err
	}
	if m.quantCache() && !m.flash {
		return nil, fmt.Errorf("%w: model: a %v cache needs flash attention, which the model's devices do not have for it", backend.ErrUnsupported, m.cacheType)
	}

	m.weights, err = gguf.Load(ctx, f, gguf.LoadOptions{
		BufferType: func(ti gguf.TensorInfo) *backend.BufferType { return place(ti.Name) },
		NoMmap:     opts.NoMmap,
		SmallPages: opts.SmallPages,
		Progress:   opts.Progress,
	})
	if err != nil {
		return nil, err
	}
	w := m.weights.Tensor
	m.tokEmbd, m.output = w("token_embd.weight"), w("output.weight")
	if tied {
		m.output = m.tokEmbd
		if bt := outputCopyType(tied, place); bt != nil {
			if m.output, err = m.copyOutput(bt); err != nil {
				return nil, err
			}
		}
	}
	m.layers = make([]layer, cfg.BlockCount)
	for i := range m.layers {
		m.layers[i].bt = layerBT(i)
	}
	consts := map[string][]float32{}
	for _, s := range specs {
		if t := w(s.Name); t != nil && s.Use == UseConst {
			if consts[s.Name], err = ggml.Data[float32](t); err != nil {
				return nil, err
			}
			if err := checkConst(s.Name, consts[s.Name]); err != nil {
				return nil, err
			}
		}
	}
	if err := m.newState(consts); err != nil {
		return nil, err
	}
	if err := net.Bind(&Weights{m}); err != nil {
		return nil, err
	}

	// Backends, the accelerator first; the scheduler's compute buffers
	// sized for the largest graph: a full batch over the whole cache, with
	// every token's logits.
	if m.cpu, err = cpu.New(opts.Threads); err != nil {
		return nil, err
	}
	if opts.Poll != 0 {
		p := cpu.DefaultThreadPoolParams(m.cpu.Threads()) // cpu.New resolved 0 to one per core
		p.Poll = opts.Poll
		if m.pool, err = cpu.NewThreadPool(p); err != nil {
			return nil, err
		}
		if err := cpu.SetThreadPool(m.cpu, m.pool); err != nil {
			return nil, err
		}
	}
	backends := []*backend.Backend{m.cpu}
	if gpuLayers > 0 {
		if m.gpu, err = dev.Init(""); err != nil {
			return nil, err
		}
		backends = []*backend.Backend{m.gpu, m.cpu}
	}
	if m.sched, err = sched.New(backends, sched.Options{GraphSize: m.graphSize()}); err != nil {
		return nil, err
	}
	worst, err := m.build(m.nBatch, m.nCtx, m.nBatch, false)
	if err != nil {
		return nil, err
	}
	err = m.sched.Reserve(worst.g)
	worst.ctx.Close()
	if err != nil {
		return nil, fmt.Errorf("model: reserving the compute buffers: %w", err)
	}
	for _, be := range backends {
		size, err := m.sched.BufferSize(be)
		if err != nil {
			return nil, err
		}
		m.reserved[be] = size
		m.peak[be] = size
	}
	return m, nil
}

// DefaultGPU returns the device Load puts layers on where Options.Device
// is nil: the first GPU in ggml's registry, else the first integrated
// GPU, else nil.
func DefaultGPU() *backend.Device {
	var igpu *backend.Device
	for d := range backend.Devices() {
		switch d.Type() {
		case backend.DeviceGPU:
			return d
		case backend.DeviceIGPU:
			if igpu == nil {
				igpu = d
			}
		}
	}
	return igpu
}

var blockName = regexp.MustCompile(`^blk\.(\d+)\.`)

// blockOf returns the block number of a block tensor's name, "blk.N.*".
func blockOf(name string) (int, bool) {
	s := blockName.FindStringSubmatch(name)
	if s == nil {
		return 0, false
	}
	n, err := strconv.Atoi(s[1])
	return n, err == nil && n <= maxDim
}

// checkBlocks checks that f holds tensors of each of c.BlockCount blocks
// (ReadConfig), before an architecture lists their tensors: a file that
// claims more blocks than it holds costs what it holds, not what it
// claims.
func checkBlocks(f *gguf.File, c Config) error {
	have := map[int]bool{}
	for _, ti := range f.Tensors() {
		if il, ok := blockOf(ti.Name); ok {
			have[il] = true
		}
	}
	for il := range c.BlockCount {
		if !have[il] {
			return fmt.Errorf("%w: no tensor of block %d (blk.%d.*), and %s.block_count is %d", ErrModel, il, il, c.Arch, c.BlockCount)
		}
	}
	return nil
}

// checkTensors checks that f has exactly the tensors of specs, the
// network's layout for configuration c, with their shapes, and that
// vectors (norms, biases, UseConst tensors) are f32. It returns whether
// the output layer is tied to the token embeddings (an Optional
// output.weight the file leaves out). The types of the matrices are
// checked against the ops that use them by checkOps.
func checkTensors(f *gguf.File, c Config, specs []TensorSpec) (tied bool, err error) {
	byName := make(map[string]TensorSpec, len(specs))
	for _, s := range specs {
		byName[s.Name] = s
	}
	for _, ti := range f.Tensors() {
		w, ok := byName[ti.Name]
		if !ok {
			return false, fmt.Errorf("%w: tensor %s is not part of the %s model this package runs (%s.block_count is %d)", ErrModel, ti.Name, c.Arch, c.Arch, c.BlockCount)
		}
		// Trailing dimensions of 1 are no dimensions: writers (gguf's,
		// ggml's) leave them out, as a one-expert stack's, and some keep
		// them.
		if !slices.Equal(trimOnes(ti.Shape), trimOnes(w.Shape)) {
			return false, fmt.Errorf("%w: tensor %s has shape %v, want %v", ErrModel, ti.Name, ti.Shape, w.Shape)
		}
		if (w.Use == UseVector || w.Use == UseConst) && ti.Type != ggml.TypeF32 {
			return false, fmt.Errorf("%w: tensor %s is %v, want f32", ErrModel, ti.Name, ti.Type)
		}
	}
	// Every required tensor is there: the first missing one is named.
	for _, s := range specs {
		if _, ok := f.Tensor(s.Name); !ok && !s.Optional {
			return false, fmt.Errorf("%w: tensor %s is missing", ErrModel, s.Name)
		}
	}
	_, hasOutput := f.Tensor("output.weight")
	out, ok := byName["output.weight"]
	return ok && out.Optional && !hasOutput, nil
}

// outputCopyType returns the extra buffer type of the CPU that a tied
// output layer's copy of token_embd goes to (copyOutput), or nil: the
// output layer is not tied, runs on the accelerator, or no extra type
// takes the product. place is Load's placement.
func outputCopyType(tied bool, place func(string) *backend.BufferType) *backend.BufferType {
	if !tied {
		return nil
	}
	if bt := place("output.weight"); bt != nil && bt.IsCPUExtra() {
		return bt
	}
	return nil
}

// copyOutput returns a copy of the token embeddings in bt, one of the CPU's
// extra buffer types, for a tied output layer's product, as llama.cpp's
// loader makes one (TENSOR_DUPLICATED): the extra types re-lay a weight for
// matrix products, which the embeddings' row lookup cannot read, so the
// lookup keeps the file's tensor and the product gets the re-laid copy
// (on Llama 3.2 1B a fifth of a token's weights).
func (m *Model) copyOutput(bt *backend.BufferType) (*ggml.Tensor, error) {
	e := m.tokEmbd
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	if err != nil {
		return nil, err
	}
	m.outCopy = stateBuffer{bt: bt, ctx: c}
	ne := e.Ne()
	t := c.NewTensor(e.Type(), ne[0], ne[1]).SetName("output.weight")
	if err := c.Err(); err != nil {
		return nil, err
	}
	if m.outCopy.buf, err = backend.AllocContextTensorsFromType(c, bt); err != nil {
		return nil, fmt.Errorf("model: allocating the output layer's copy of token_embd on %s: %w", bt.Name(), err)
	}
	if err := m.outCopy.buf.SetUsage(backend.UsageWeights); err != nil {
		return nil, err
	}
	if err := backend.TensorCopy(e, t); err != nil {
		return nil, fmt.Errorf("model: copying token_embd for the output layer: %w", err)
	}
	return t, nil
}

// checkOps checks each weight matrix of f against the ops the model runs
// with it, as uses says — MulMat, or GetRows (both for token_embd when the
// output is tied to it) — and returns the names of those the accelerator dev
// cannot run, which Load then keeps on the CPU as llama.cpp does. The
// CPU must run every one: a type it cannot (no dot product, no
// conversion to f32, as ggml's op checks say) is an ErrModel error that
// also wraps ggml's error. batch is the most tokens of a compute.
//
// With extra, it also returns, for each weight that the CPU's extra buffer
// types take in every one of its ops, the first such type (llama.cpp's
// choice, backend.Device.WeightBufferType): the buffer type of that weight
// where it stays on the CPU. For a tied output it gives, as
// "output.weight", the type that takes token_embd's product alone: that of
// the output layer's copy (copyOutput).
func checkOps(f *gguf.File, uses map[string]Use, tied bool, batch int64, dev *backend.Device, extra bool) (cpuOnly map[string]bool, cpuExtra map[string]*backend.BufferType, err error) {
	cpuOnly, cpuExtra = map[string]bool{}, map[string]*backend.BufferType{}
	var cpuDev *backend.Device
	if extra {
		if cpuDev, err = backend.DeviceByType(backend.DeviceCPU); err != nil {
			return nil, nil, err
		}
	}
	for _, ti := range f.Tensors() {
		use := uses[ti.Name]
		if use != UseMatMul && use != UseRows && use != UseMatMulID {
			continue // f32 vectors, checked by checkTensors
		}
		rows := use == UseRows
		mul := !rows || (tied && ti.Name == "token_embd.weight")
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
		if err != nil {
			return nil, nil, err
		}
		w := c.NewTensor(ti.Type, ti.Shape...)
		var ops []*ggml.Tensor
		if rows {
			ops = append(ops, c.GetRows(w, c.NewTensor(ggml.TypeI32, batch)))
		}
		switch {
		case use == UseMatMulID && len(ti.Shape) == 3:
			// Each token by up to all the experts: the ids a router picks.
			used := ti.Shape[2]
			ops = append(ops, c.MulMatID(w, c.NewTensor(ggml.TypeF32, ti.Shape[0], used, batch), c.NewTensor(ggml.TypeI32, used, batch)))
		case mul:
			ops = append(ops, c.MulMat(w, c.NewTensor(ggml.TypeF32, ti.Shape[0], batch)))
		}
		if err := c.Err(); err != nil {
			c.Close()
			return nil, nil, fmt.Errorf("%w: tensor %s of type %v: %w", ErrModel, ti.Name, ti.Type, err)
		}
		if cpuDev != nil {
			bt, err := cpuDev.WeightBufferType(0, ops...)
			if err != nil {
				c.Close()
				return nil, nil, err
			}
			if bt.IsCPUExtra() {
				cpuExtra[ti.Name] = bt
			}
			if rows && mul {
				// The tied output layer's own copy (copyOutput): the
				// product alone decides its type.
				if bt, err = cpuDev.WeightBufferType(0, ops[len(ops)-1]); err != nil {
					c.Close()
					return nil, nil, err
				}
				if bt.IsCPUExtra() {
					cpuExtra["output.weight"] = bt
				}
			}
		}
		if dev != nil {
			for _, op := range ops {
				if !dev.SupportsOp(op) {
					cpuOnly[ti.Name] = true
				}
			}
		}
		c.Close()
	}
	return cpuOnly, cpuExtra, nil
}

// newState allocates the KV cache of each layer on its layer's buffer
// type, cleared (masked cells are read too, and NaN·0 is NaN), and a copy
// of each UseConst tensor (consts, by name) on each of those buffer types,
// so that no layer reads a tensor on another device.
func (m *Model) newState(consts map[string][]float32) error {
	kvDim := int64(m.Config.KVDim())
	names := slices.Sorted(maps.Keys(consts))
	for i := range m.layers {
		l := &m.layers[i]
		j := slices.IndexFunc(m.state, func(s stateBuffer) bool { return s.bt == l.bt })
		if j < 0 {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2*len(m.layers) + len(consts), NoAlloc: true})
			if err != nil {
				return err
			}
			m.state = append(m.state, stateBuffer{bt: l.bt, ctx: c})
			j = len(m.state) - 1
		}
		c := m.state[j].ctx
		l.k = c.NewTensor(m.cacheType, kvDim, int64(m.nCtx)).SetName(fmt.Sprintf("cache_k_l%d", i))
		if m.flash {
			l.v = c.NewTensor(m.cacheType, kvDim, int64(m.nCtx)).SetName(fmt.Sprintf("cache_v_l%d", i))
		} else {
			l.v = c.NewTensor(m.cacheType, int64(m.nCtx), kvDim).SetName(fmt.Sprintf("cache_v_l%d", i))
		}
		l.consts = map[string]*ggml.Tensor{}
		for _, name := range names {
			t := c.Tensor(name)
			if t == nil {
				t = c.NewTensor(ggml.TypeF32, int64(len(consts[name]))).SetName(name)
			}
			l.consts[name] = t
		}
		if err := c.Err(); err != nil {
			return err
		}
	}
	for i := range m.state {
		s := &m.state[i]
		buf, err := backend.AllocContextTensorsFromType(s.ctx, s.bt)
		if err != nil {
			return fmt.Errorf("model: allocating the KV cache on %s: %w", s.bt.Name(), err)
		}
		s.buf = buf
		if err := buf.Clear(0); err != nil {
			return err
		}
		for _, name := range names {
			if t := s.ctx.Tensor(name); t != nil {
				if err := ggml.SetData(t, consts[name]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// flashAttn decides Options.FlashAttn: whether the CPU, and gpu where
// layers run there, support ggml's fused attention for this model's head
// size, cache type and batch.
func (m *Model) flashAttn(mode FlashAttnMode, gpu *backend.Device) (bool, error) {
	switch mode {
	case FlashAttnOff:
		return false, nil
	case FlashAttnAuto, FlashAttnOn:
	default:
		return false, fmt.Errorf("%w: Options.FlashAttn %d", ggml.ErrInvalid, mode)
	}
	c := m.Config
	ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
	if err != nil {
		return false, err
	}
	defer ctx.Close()
	hd, n, nkv := int64(c.HeadDim), int64(m.nBatch), int64(min(m.nCtx, kvPad))
	q := ctx.NewTensor(ggml.TypeF32, hd, n, int64(c.HeadCount))
	k := ctx.NewTensor(m.cacheType, hd, nkv, int64(c.HeadCountKV))
	v := ctx.NewTensor(m.cacheType, hd, nkv, int64(c.HeadCountKV))
	mask := ctx.NewTensor(ggml.TypeF16, nkv, n)
	op := ctx.FlashAttnExt(q, k, v, mask, ggml.FlashAttnParams{Scale: 1, Precision: ggml.PrecF32})
	if err := ctx.Err(); err != nil {
		if mode == FlashAttnOn {
			return false, fmt.Errorf("model: flash attention: %w", err)
		}
		return false, nil
	}
	cpuDev, err := backend.DeviceByType(backend.DeviceCPU)
	if err != nil {
		return false, err
	}
	for _, d := range []*backend.Device{cpuDev, gpu} {
		if d != nil && !d.SupportsOp(op) {
			if mode == FlashAttnOn {
				return false, fmt.Errorf("%w: model: %s has no flash attention for a %v cache and heads of %d", backend.ErrUnsupported, d.Name(), m.cacheType, hd)
			}
			return false, nil
		}
	}
	return true, nil
}

// quantCache reports whether the cache's type is a quantized one, whose
// cells only the fused attention reads.
func (m *Model) quantCache() bool { return m.cacheType.BlockSize() > 1 }

// FlashAttn reports whether the model's attention is one fused op
// (Options.FlashAttn).
func (m *Model) FlashAttn() bool { return m.flash }

// checkMemory adds up what each device will hold (weights, KV cache and
// an estimate of the compute buffer) and compares it with the device's
// free memory, before anything is allocated.
func (m *Model) checkMemory(f *gguf.File, place func(string) *backend.BufferType, layerBT func(int) *backend.BufferType, gpu *backend.Device) error {
	need := map[*backend.Device]uint64{}
	var order []*backend.Device
	add := func(bt *backend.BufferType, n uint64) error {
		d := deviceOf(bt)
		if _, ok := need[d]; !ok {
			order = append(order, d)
		}
		s, ok := addU64(need[d], n)
		if !ok {
			return &MemoryError{Device: d.Name(), Need: math.MaxUint64, Free: 0}
		}
		need[d] = s
		return nil
	}
	addTensor := func(bt *backend.BufferType, size uint64) error {
		a := max(bt.Alignment(), 1)
		return add(bt, (size+a-1)/a*a)
	}
	for _, ti := range f.Tensors() {
		if err := addTensor(place(ti.Name), ti.Size); err != nil {
			return err
		}
		if ti.Name != "token_embd.weight" {
			continue
		}
		if bt := outputCopyType(m.tied, place); bt != nil { // its copy (copyOutput)
			if err := addTensor(bt, ti.Size); err != nil {
				return err
			}
		}
	}
	kv, ok := m.kvBytesPerLayer()
	if !ok {
		return &MemoryError{Device: "the KV cache", Need: math.MaxUint64}
	}
	for il := range m.Config.BlockCount {
		if err := add(layerBT(il), kv); err != nil {
			return err
		}
	}
	compute, ok := m.computeEstimate()
	if !ok {
		return &MemoryError{Device: "the compute buffer", Need: math.MaxUint64}
	}
	if err := add(backend.CPUBufferType(), compute); err != nil {
		return err
	}
	if gpu != nil && layerBT(m.Config.BlockCount) != backend.CPUBufferType() {
		if err := add(gpu.BufferType(), compute); err != nil {
			return err
		}
	}
	for _, d := range order {
		free, total := d.Memory()
		m.free[d.Name()] = [2]uint64{free, total}
		if free > 0 && need[d] > free {
			return &MemoryError{Device: d.Name(), Need: need[d], Free: free}
		}
	}
	return nil
}

// deviceOf returns the device of a buffer type; ggml gives the CPU's
// buffer type no device.
func deviceOf(bt *backend.BufferType) *backend.Device {
	if d := bt.Device(); d != nil {
		return d
	}
	d, _ := backend.DeviceByType(backend.DeviceCPU)
	return d
}

// kvBytesPerLayer is the size of one layer's K and V cache.
func (m *Model) kvBytesPerLayer() (uint64, bool) {
	row, err := m.cacheType.RowSize(int64(m.Config.KVDim()))
	if err != nil {
		return 0, false
	}
	return mulU64(2*row, uint64(m.nCtx))
}

// computeEstimate is a generous estimate of the largest compute buffer:
// the activations of a full batch (f32), its attention scores over the
// whole cache and every token's logits. Reserve measures the real size.
func (m *Model) computeEstimate() (uint64, bool) {
	c := m.Config
	perToken := uint64(6*c.EmbeddingLength+2*c.QDim()+4*c.KVDim()+3*c.FeedForward+c.VocabSize) * 4
	scores, ok := mulU64(uint64(m.nCtx)*uint64(c.HeadCount), 8)
	if !ok {
		return 0, false
	}
	tok, ok := addU64(perToken, scores)
	if !ok {
		return 0, false
	}
	return mulU64(tok, uint64(m.nBatch))
}

func addU64(a, b uint64) (uint64, bool) { return a + b, a+b >= a }

func mulU64(a, b uint64) (uint64, bool) {
	if a != 0 && b > math.MaxUint64/a {
		return 0, false
	}
	return a * b, true
}

// ContextSize is the number of positions of the KV cache.
func (m *Model) ContextSize() int { return m.nCtx }

// BatchSize is the most tokens one compute processes.
func (m *Model) BatchSize() int { return m.nBatch }

// Pos is the position of sequence 0's next token: the number of its
// tokens in the KV cache (SeqLen(0)).
func (m *Model) Pos() int { return m.kv.next[0] }

// Tied reports whether the output layer uses the token embeddings.
func (m *Model) Tied() bool { return m.tied }

// enter starts a call that uses the model (Eval, Generate, Rewind, Rest,
// WriteDot, Close): ggml.ErrBusy while another runs, ggml.ErrClosed after
// Close. what names the call in the error. leave ends it.
func (m *Model) enter(what string) error {
	if !m.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: model: %s: the model is in use by another call (a Model is used by one goroutine at a time)", ggml.ErrBusy, what)
	}
	if m.closed {
		m.busy.Store(false)
		return fmt.Errorf("%w: model: %s: the model is closed", ggml.ErrClosed, what)
	}
	return nil
}

func (m *Model) leave() { m.busy.Store(false) }

// Rewind forgets sequence 0's tokens from position pos on (0: all), so
// that the next Eval continues from there.
func (m *Model) Rewind(pos int) error {
	if err := m.enter("Rewind"); err != nil {
		return err
	}
	defer m.leave()
	if pos < 0 || pos > m.kv.next[0] {
		return fmt.Errorf("%w: rewind to %d with %d tokens in the cache", ggml.ErrInvalid, pos, m.kv.next[0])
	}
	m.kv.remove(0, pos, maxDim)
	return nil
}

// WeightTypes returns how many of the model's tensors are of each type,
// as "q4_K ×25, q6_K ×5, f32 ×9", the most frequent first.
func (m *Model) WeightTypes() string {
	n := map[ggml.Type]int{}
	for _, t := range m.weights.Tensors() {
		n[t.Type()]++
	}
	types := slices.Collect(maps.Keys(n))
	slices.SortFunc(types, func(a, b ggml.Type) int {
		if n[a] != n[b] {
			return n[b] - n[a]
		}
		return int(a) - int(b)
	})
	var s []string
	for _, t := range types {
		s = append(s, fmt.Sprintf("%v ×%d", t, n[t]))
	}
	return strings.Join(s, ", ")
}

// Params returns the number of weights in the file: the elements of all
// its tensors.
func (m *Model) Params() int64 {
	var n int64
	for _, t := range m.weights.Tensors() {
		n += t.Elements()
	}
	return n
}

// WeightBuffers says where the weights are: the buffer types of the
// weights' buffers with their sizes, largest first, such as
// "CPU_REPACK 512.0 MiB, CPU 262.5 MiB".
func (m *Model) WeightBuffers() string {
	size := map[string]uint64{}
	for _, b := range m.weightBuffers() {
		size[b.Name()] += b.Size()
	}
	names := slices.Collect(maps.Keys(size))
	slices.SortFunc(names, func(a, b string) int {
		if size[a] != size[b] {
			return cmp.Compare(size[b], size[a])
		}
		return strings.Compare(a, b)
	})
	var s []string
	for _, n := range names {
		s = append(s, fmt.Sprintf("%s %.1f MiB", n, float64(size[n])/(1<<20)))
	}
	return strings.Join(s, ", ")
}

// weightBuffers returns the buffers of the weights: the file's, and the
// output layer's copy of token_embd if it has one (copyOutput).
func (m *Model) weightBuffers() []*backend.Buffer {
	bufs := m.weights.Buffers()
	if m.outCopy.buf != nil {
		bufs = append(bufs, m.outCopy.buf)
	}
	return bufs
}

// Backends returns the model's backends, the accelerator (if any) first.
func (m *Model) Backends() []*backend.Backend {
	if m.gpu != nil {
		return []*backend.Backend{m.gpu, m.cpu}
	}
	return []*backend.Backend{m.cpu}
}

// Close frees the scheduler, the graphs, the KV cache, the weights and the
// backends. It is idempotent; where something could not be closed (a
// backend still in use elsewhere) it returns that error, and Close again
// retries.
func (m *Model) Close() error {
	if m == nil {
		return nil
	}
	if err := m.enter("Close"); err != nil {
		if errors.Is(err, ggml.ErrClosed) {
			return nil
		}
		return err
	}
	defer m.leave()
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if m.step != nil {
		keep(m.step.ctx.Close())
		m.step = nil
	}
	keep(m.sched.Close())
	for _, s := range m.state {
		keep(s.buf.Close())
		keep(s.ctx.Close())
	}
	m.state = nil
	keep(m.outCopy.buf.Close())
	keep(m.outCopy.ctx.Close())
	m.outCopy = stateBuffer{}
	keep(m.weights.Close())
	keep(m.gpu.Close())
	if m.pool != nil {
		// Detached first: a pool in use by a backend does not close.
		keep(cpu.SetThreadPool(m.cpu, nil))
	}
	keep(m.cpu.Close())
	keep(m.pool.Close())
	m.pool = nil
	// Closed for good when everything closed: otherwise (a backend the
	// caller still uses, say) Close again retries what failed.
	m.closed = len(errs) == 0
	return errors.Join(errs...)
}

// Rest stops the CPU threads' polling for work now, where Options.Poll
// made them poll (ggml_threadpool_pause): they sleep until the next Eval,
// which wakes them. Without Poll it does nothing.
func (m *Model) Rest() error {
	if err := m.enter("Rest"); err != nil {
		return err
	}
	defer m.leave()
	if m.pool == nil {
		return nil
	}
	return m.pool.Pause()
}

// Stats are the model's cumulative timings since Load (or ResetStats).
type Stats struct {
	Computes int // computes run (batches)
	Tokens   int // tokens evaluated
	Graphs   int // graphs built; the other computes reused the previous graph

	Build   time.Duration // building graphs in Go and allocating them (scheduler split and allocation)
	Input   time.Duration // filling the inputs (tokens, positions, cache indices, mask) and copying them in
	Compute time.Duration // ggml computing the graph: inside ggml's compute call (sched.Scheduler.ComputeTime)
	Checks  time.Duration // the rest of sched.Compute: go-ggml's checks before and after ggml's call
	Output  time.Duration // copying the logits out
}

// Overhead is the time spent outside ggml's compute.
func (s Stats) Overhead() time.Duration { return s.Build + s.Input + s.Checks + s.Output }

// Stats returns the cumulative timings.
func (m *Model) Stats() Stats { return m.stats }

// ResetStats sets the timings to zero.
func (m *Model) ResetStats() { m.stats = Stats{} }

// MemoryUse is what a model holds on one backend.
type MemoryUse struct {
	Backend         string
	Weights         uint64 // weight buffers (mapped from the file or copied)
	KVCache         uint64 // the KV cache (and RoPE factors) on this backend
	ComputeReserved uint64 // the compute buffer the scheduler reserved at Load
	ComputePeak     uint64 // the largest compute buffer since Load: above ComputeReserved if a graph needed more
	Free, Total     uint64 // the device's memory when the model was loaded
}

// Memory returns, per backend, the buffers the model holds and the compute
// buffer the scheduler reserved against the largest it has had
// (sched.Scheduler.BufferSize after each compute).
func (m *Model) Memory() []MemoryUse {
	var out []MemoryUse
	for _, be := range m.Backends() {
		d := be.Device()
		u := MemoryUse{Backend: be.Name(), ComputeReserved: m.reserved[be], ComputePeak: m.peak[be]}
		if ft, ok := m.free[d.Name()]; ok {
			u.Free, u.Total = ft[0], ft[1]
		}
		for _, b := range m.weightBuffers() {
			if deviceOf(b.Type()).Name() == d.Name() {
				u.Weights += b.Size()
			}
		}
		for _, s := range m.state {
			if deviceOf(s.bt).Name() == d.Name() {
				u.KVCache += s.buf.Size()
			}
		}
		out = append(out, u)
	}
	return out
}

// checkConst refuses a UseConst tensor with a value that is not a finite
// positive number: RoPE's frequency factors divide the frequencies, and a
// zero or NaN one gives NaN attention that flash attention's kernel turns
// into finite, wrong numbers.
func checkConst(name string, v []float32) error {
	for i, x := range v {
		if !(x > 0) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: tensor %s: value %d is %g, want a finite number above 0", ErrModel, name, i, x)
		}
	}
	return nil
}

// trimOnes returns shape without its trailing dimensions of 1 (but the
// first).
func trimOnes(shape []int64) []int64 {
	for len(shape) > 1 && shape[len(shape)-1] == 1 {
		shape = shape[:len(shape)-1]
	}
	return shape
}
