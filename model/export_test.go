package model

import (
	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/gguf"
)

// CheckConst is checkConst, Load's check of a UseConst tensor's values.
var CheckConst = checkConst

// Internals the external tests (package model_test) set.
var (
	KVPad         = &kvPad
	ProductsKVPad = &productsKVPad
	FusedMaxBatch = &fusedMaxBatch
	AttnChunk     = &attnChunk
)

// CheckOps is checkOps with the uses of f's architecture's tensors.
func CheckOps(f *gguf.File, tied bool, batch int64, dev *backend.Device, extra bool) (map[string]bool, map[string]*backend.BufferType, error) {
	net, err := open(f)
	if err != nil {
		return nil, nil, err
	}
	uses := map[string]Use{}
	for _, s := range net.Tensors() {
		uses[s.Name] = s.Use
	}
	return checkOps(f, uses, tied, batch, dev, extra)
}

// TokEmbd and Output are the model's token embeddings and what its output
// layer multiplies by.
func (m *Model) TokEmbd() any { return m.tokEmbd }
func (m *Model) Output() any  { return m.output }

// BestGPU and DeviceOf are DefaultGPU and deviceOf.
var (
	BestGPU  = DefaultGPU
	DeviceOf = deviceOf
)

const MaxDim = maxDim
