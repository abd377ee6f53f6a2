// Package bert is the BERT architecture for package model (BERT-style
// sentence embedding models, general.architecture "bert": all-MiniLM,
// bge, ...), as llama.cpp's convert_hf_to_gguf.py writes them. Importing
// it registers the architecture with model.Load; its models embed
// (model.Model.Embed), they do not generate.
//
// The file: the bert.* hyperparameters model.ReadConfig reads, with
// LayerNorm's attention.layer_norm_epsilon, and pooling_type (1 mean, 2
// the [CLS] token's, 3 the last token's; mean where absent); the tensors
// token_embd, token_types (its first row is added: every token of type
// 0, as llama.cpp does), position_embd, token_embd_norm (weight and
// bias), and per block attn_q, attn_k, attn_v (or the fused attn_qkv) and
// attn_output, each with its bias, attn_output_norm, ffn_up, ffn_down (and
// biases) and layer_output_norm. The forward pass is llama.cpp's
// llm_build_bert: post-norm blocks, attention that sees the whole input
// (not causal), GELU feed-forwards. Its vocabulary is WordPiece
// (tokenizer.ggml.model "bert"), which package tokenizer encodes as
// llama.cpp does ([CLS] first, [SEP] last).
package bert

import (
	"math"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model"
)

// Arch is the general.architecture of the files this package runs.
const Arch = "bert"

func init() {
	model.Register(model.Architecture{Name: Arch, Open: Open})
}

// Open reads a BERT file's hyperparameters and returns the network that
// runs it.
func Open(f *gguf.File) (model.Network, error) {
	c, err := model.ReadArchConfig(f, Arch)
	if err != nil {
		return nil, err
	}
	if err := c.NeedNormEps(); err != nil {
		return nil, err
	}
	k := model.NewKeys(f, Arch)
	pool := model.Pooling(k.Int("pooling_type", int(model.PoolMean)))
	if err := k.Err(); err != nil {
		return nil, err
	}
	if pool < model.PoolMean || pool > model.PoolLast {
		pool = model.PoolMean
	}
	e, ff := int64(c.EmbeddingLength), int64(c.FeedForward)
	specs := []model.TensorSpec{
		{Name: "token_embd.weight", Shape: []int64{e, int64(c.VocabSize)}, Use: model.UseRows},
		{Name: "position_embd.weight", Shape: []int64{e, int64(c.ContextLength)}, Use: model.UseRows},
		model.Optional(model.TensorSpec{Name: "token_types.weight", Shape: []int64{e, 2}}),
		model.Vector("token_embd_norm.weight", e), model.Vector("token_embd_norm.bias", e),
	}
	_, fused := f.Tensor("blk.0.attn_qkv.weight")
	for il := range c.BlockCount {
		b := model.Block(il)
		specs = append(specs, model.AttnSpecs(c, il, model.AttnParts{Fused: fused, Biases: !fused, OutBias: true})[1:]...) // no attn_norm: norms come after
		specs = append(specs,
			model.Vector(b+"attn_output_norm.weight", e), model.Vector(b+"attn_output_norm.bias", e),
			model.Matrix(b+"ffn_up.weight", e, ff), model.Optional(model.Vector(b+"ffn_up.bias", ff)),
			model.Matrix(b+"ffn_down.weight", ff, e), model.Optional(model.Vector(b+"ffn_down.bias", e)),
			model.Vector(b+"layer_output_norm.weight", e), model.Vector(b+"layer_output_norm.bias", e))
	}
	return &network{c: c, pool: pool, specs: specs}, nil
}

type network struct {
	c     model.Config
	pool  model.Pooling
	specs []model.TensorSpec

	tokEmbd, posEmbd, types, normW, normB *ggml.Tensor
	layers                                []layer
}

// layer is one block's weights.
type layer struct {
	attn                 model.Attn
	attnNormW, attnNormB *ggml.Tensor
	up, upB, down, downB *ggml.Tensor
	outNormW, outNormB   *ggml.Tensor
}

func (n *network) Config() model.Config        { return n.c }
func (n *network) Tensors() []model.TensorSpec { return n.specs }
func (n *network) Pooling() model.Pooling      { return n.pool }

func (n *network) Bind(w *model.Weights) error {
	n.tokEmbd, n.posEmbd, n.types = w.Get("token_embd.weight"), w.Get("position_embd.weight"), w.Get("token_types.weight")
	n.normW, n.normB = w.Get("token_embd_norm.weight"), w.Get("token_embd_norm.bias")
	for il := range n.c.BlockCount {
		b := model.Block(il)
		n.layers = append(n.layers, layer{
			attn:      model.BindAttn(w, il),
			attnNormW: w.Get(b + "attn_output_norm.weight"), attnNormB: w.Get(b + "attn_output_norm.bias"),
			up: w.Get(b + "ffn_up.weight"), upB: w.Get(b + "ffn_up.bias"),
			down: w.Get(b + "ffn_down.weight"), downB: w.Get(b + "ffn_down.bias"),
			outNormW: w.Get(b + "layer_output_norm.weight"), outNormB: w.Get(b + "layer_output_norm.bias"),
		})
	}
	return nil
}

// layerNorm is LayerNorm: x normalized to mean 0 and variance 1, times w
// plus b (ggml_norm).
func layerNorm(ctx *ggml.Context, x, w, b *ggml.Tensor, eps float32) *ggml.Tensor {
	return ctx.Add(ctx.Mul(ctx.Norm(x, eps), w), b)
}

// Forward builds the graph of one batch, every token's final state:
//
//	x = LayerNorm(token_embd[tokens] + token_types[0] + position_embd[positions])
//	per block:  x = LayerNorm(x + Wo · attention(Wq·x+bq, Wk·x+bk, Wv·x+bv) + bo)   (not causal)
//	            x = LayerNorm(x + Wdown · gelu(Wup·x + bup) + bdown)
func (n *network) Forward(b *model.Batch) *ggml.Tensor {
	c, ctx, eps := n.c, b.Ctx, n.c.NormEps
	x := ctx.GetRows(n.tokEmbd, b.Tokens)
	if n.types != nil {
		x = ctx.Add(x, ctx.View1D(n.types, int64(c.EmbeddingLength), 0))
	}
	x = ctx.Add(ctx.GetRows(n.posEmbd, b.Positions), x)
	x = layerNorm(ctx, x, n.normW, n.normB, eps)
	attn := model.AttentionParams{Scale: float32(1 / math.Sqrt(float64(c.HeadDim))), NonCausal: true}
	for il := range n.layers {
		l := &n.layers[il]
		q, k, v := l.attn.ProjectNoRope(b, c, x)
		y := b.Attention(il, q, k, v, attn)
		x = layerNorm(ctx, ctx.Add(model.Linear(ctx, l.attn.O, l.attn.BO, y), x), l.attnNormW, l.attnNormB, eps)
		h := model.Linear(ctx, l.down, l.downB, ctx.Gelu(model.Linear(ctx, l.up, l.upB, x)))
		x = layerNorm(ctx, ctx.Add(h, x), l.outNormW, l.outNormB, eps)
	}
	return x
}
