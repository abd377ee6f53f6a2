package model

import (
	"context"
	"fmt"
	"math"

	"github.com/go-ggml/ggml/ggml"
)

// Embed returns the embedding of tokens with an encoder (an Encoder
// architecture, such as BERT): the sequence evaluated in one batch from
// position 0 (the tokens the cache held are forgotten), each token's
// final state pooled by pool (PoolDefault: the model's own, its file's
// pooling_type) and scaled to unit length, as llama.cpp's embedding
// example normalizes it. A model that is no encoder, a pooling that is
// not one of the constants, or more tokens than one batch holds
// (Options.BatchSize) is an error.
func (m *Model) Embed(ctx context.Context, tokens []int32, pool Pooling) ([]float32, error) {
	if err := m.enter("Embed"); err != nil {
		return nil, err
	}
	defer m.leave()
	enc, ok := m.net.(Encoder)
	if !ok {
		return nil, fmt.Errorf("%w: model: Embed: the %s architecture is no encoder (an embedding model)", ErrModel, m.Config.Arch)
	}
	if pool == PoolDefault {
		pool = enc.Pooling()
	}
	if pool < PoolMean || pool > PoolLast {
		return nil, fmt.Errorf("%w: model: Embed: pooling %d", ggml.ErrInvalid, pool)
	}
	if len(tokens) > m.nBatch {
		return nil, fmt.Errorf("%w: model: Embed: %d tokens; an encoder sees its input in one batch of at most %d (Options.BatchSize)", ggml.ErrInvalid, len(tokens), m.nBatch)
	}
	m.kv.remove(0, 0, maxDim)
	states, err := m.eval(ctx, tokens, true)
	if err != nil {
		return nil, err
	}
	e, n := m.Config.EmbeddingLength, len(tokens)
	out := make([]float64, e)
	switch pool {
	case PoolMean:
		for t := range n {
			for i, v := range states[t*e : (t+1)*e] {
				out[i] += float64(v) / float64(n)
			}
		}
	case PoolCLS, PoolLast:
		t := 0
		if pool == PoolLast {
			t = n - 1
		}
		for i, v := range states[t*e : (t+1)*e] {
			out[i] = float64(v)
		}
	}
	norm := 0.0
	for _, v := range out {
		norm += v * v
	}
	norm = math.Sqrt(norm)
	res := make([]float32, e)
	for i, v := range out {
		if norm > 0 {
			v /= norm
		}
		res[i] = float32(v)
	}
	return res, nil
}

// Encoder reports whether the model is an encoder (an embedding model:
// Embed), whose Eval returns every token's hidden state, not logits.
func (m *Model) Encoder() bool {
	_, ok := m.net.(Encoder)
	return ok
}
