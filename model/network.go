package model

import (
	"fmt"
	"slices"
	"sync"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
)

// An Architecture is a model family, by the general.architecture of its
// files: Open reads a file's hyperparameters and returns the Network that
// runs it. Each architecture's package (model/llama, ...) registers its
// own in an init function, as image/png registers a format: a program
// imports the packages of the architectures it runs.
type Architecture struct {
	Name string // general.architecture, such as "llama"
	// Open reads f's hyperparameters (ReadConfig, then Keys for the
	// architecture's own) and returns its Network, or an ErrModel error
	// that names the key it refuses.
	Open func(f *gguf.File) (Network, error)
}

var (
	archMu sync.RWMutex
	archs  = map[string]Architecture{}
)

// Register makes an architecture known to Load. Registering a name twice,
// or an Architecture without a name or Open, panics: it is a programming
// error of an init function.
func Register(a Architecture) {
	archMu.Lock()
	defer archMu.Unlock()
	if a.Name == "" || a.Open == nil {
		panic("model: Register of an Architecture without Name or Open")
	}
	if _, dup := archs[a.Name]; dup {
		panic("model: Register called twice for architecture " + a.Name)
	}
	archs[a.Name] = a
}

// Architectures returns the names of the registered architectures, sorted.
func Architectures() []string {
	archMu.RLock()
	defer archMu.RUnlock()
	var names []string
	for n := range archs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// open returns the Network of f through its registered architecture.
func open(f *gguf.File) (Network, error) {
	name, err := FileArchitecture(f)
	if err != nil {
		return nil, err
	}
	archMu.RLock()
	a, ok := archs[name]
	archMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: general.architecture is %q; the registered architectures are %v (import their packages, such as github.com/go-ggml/ggml/model/llama)", ErrModel, name, Architectures())
	}
	return a.Open(f)
}

// A Network is one architecture's model of one file: the tensors it
// reads and the graph it builds from them. Load checks the file against
// Tensors before it loads anything, hands the loaded weights to Bind, and
// calls Forward for each shape of batch. The runtime (placement, the KV
// cache, batches, scheduling, sampling) is package model's.
type Network interface {
	// Config returns the hyperparameters every architecture has.
	Config() Config
	// Tensors lists every tensor a file of this architecture may hold,
	// with its shape and how the graph uses it. A file tensor not listed,
	// a required one missing, or one of another shape is an ErrModel
	// error.
	Tensors() []TensorSpec
	// Bind receives the loaded weights.
	Bind(w *Weights) error
	// Forward builds the graph of one batch (b's inputs and cache) and
	// returns the logits, [VocabSize, b.Outputs()].
	Forward(b *Batch) *ggml.Tensor
}

// An Encoder is a Network whose output is each token's hidden state,
// [EmbeddingLength, N], not logits: an embedding model (BERT). Model.Embed
// pools the states into one vector per input.
type Encoder interface {
	Network
	// Pooling returns how Model.Embed pools the states by default (the
	// file's pooling_type).
	Pooling() Pooling
}

// Pooling is how Model.Embed makes one vector of a sequence's states
// (llama.cpp's enum llama_pooling_type).
type Pooling int

const (
	// PoolDefault is the model's own pooling (Encoder.Pooling), for
	// Model.Embed.
	PoolDefault Pooling = iota
	// PoolMean averages the tokens' states.
	PoolMean
	// PoolCLS takes the first token's (BERT's [CLS]).
	PoolCLS
	// PoolLast takes the last token's.
	PoolLast
)

// A Shifter is a Network whose keys carry their positions by RoPE: it
// gives block il's RoPE parameters (those Forward rotates its keys with),
// by which Model.SeqShift rotates the cached keys of the tokens it moves.
// A Network without it refuses SeqShift. DecoderNetwork is one.
type Shifter interface {
	ShiftRope(il int) ggml.RopeParams
}

// A SoftCapper is a Network whose attention caps its scores
// (AttentionParams.Softcap): its prompts attend by matrix products past
// 32 tokens, since go-ggml's tiled fused kernel takes no cap (the
// provider's goes query by query).
type SoftCapper interface {
	SoftCapped() bool
}

// Use says how a graph uses a tensor, which decides the buffer type it is
// placed in and the types it may have.
type Use int

const (
	// UseVector: an f32 vector the graph adds or multiplies (a norm, a
	// bias). Vectors must be f32.
	UseVector Use = iota
	// UseMatMul: a matrix the graph multiplies activations by (MulMat).
	UseMatMul
	// UseRows: a matrix whose rows the graph looks up (GetRows): the
	// token embeddings.
	UseRows
	// UseConst: a small f32 vector every layer reads (Llama 3.1's RoPE
	// frequency factors): Load copies it to each device that runs layers,
	// and Weights.OnLayer gives a layer its own device's copy. Load
	// refuses one with a value that is not a finite positive number.
	UseConst // UseMatMulID: a stack of experts' matrices [in, out, experts] the
	// graph multiplies by, each token by the experts a router chose
	// (MulMatID: mixture-of-experts feed-forwards).
	UseMatMulID
)

// TensorSpec is a tensor of an architecture's layout: its GGUF name, its
// shape (ggml's order, innermost first; a file's trailing dimensions of 1
// are ignored), whether a file may leave it out, and its use. Block
// tensors are named "blk.N." as llama.cpp's converter names them: they
// are placed with block N. "token_embd.weight" and "output.weight" are
// llama.cpp's input and output tensors: a network whose output.weight is
// Optional and absent from the file multiplies by token_embd (a tied
// output layer), and Weights.Get("output.weight") gives what to multiply
// by.
type TensorSpec struct {
	Name     string
	Shape    []int64
	Optional bool
	Use      Use
}

// Weights are a loaded model's tensors, handed to Network.Bind.
type Weights struct {
	m *Model
}

// Get returns the weight named name, or nil when the file does not have
// it (an Optional TensorSpec). For "output.weight" of a tied model it
// returns the tensor the output layer multiplies by: token_embd, or its
// copy in one of the CPU's extra buffer types.
func (w *Weights) Get(name string) *ggml.Tensor {
	if name == "output.weight" {
		return w.m.output
	}
	return w.m.weights.Tensor(name)
}

// OnLayer returns layer il's copy of the UseConst tensor name, on the
// device that runs the layer, or nil when the file does not have it.
func (w *Weights) OnLayer(name string, il int) *ggml.Tensor {
	if il < 0 || il >= len(w.m.layers) {
		return nil
	}
	return w.m.layers[il].consts[name]
}

// ContextSize returns the number of positions of the model's KV cache
// (Options.ContextSize): Phi-3 picks its RoPE factors by it.
func (w *Weights) ContextSize() int { return w.m.nCtx }
