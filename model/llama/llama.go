package llama

import (
	"fmt"
	"math"
	"strconv"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model"
)

// Arch is the general.architecture of the files this package runs.
const Arch = "llama"

func init() {
	model.Register(model.Architecture{Name: Arch, Open: Open})
}

// Open reads a Llama file's hyperparameters (model.ReadConfig) and returns
// the network that runs it. Mixture-of-experts files (llama.expert_count
// above 0: Mixtral) are refused with a model.ErrModel error naming the
// key.
func Open(f *gguf.File) (model.Network, error) {
	c, err := model.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	if c.Arch != Arch {
		return nil, fmt.Errorf("%w: general.architecture is %q, not %q", model.ErrModel, c.Arch, Arch)
	}
	k := model.NewKeys(f, Arch)
	if n := k.Int("expert_count", 0); n > 0 {
		return nil, fmt.Errorf("%w: llama.expert_count is %d: mixture-of-experts models (Mixtral) are not supported", model.ErrModel, n)
	}
	if err := k.Err(); err != nil {
		return nil, err
	}
	return &network{c: c}, nil
}

// network is a Llama model: its configuration and, once bound, its
// weights.
type network struct {
	c       model.Config
	tokEmbd *ggml.Tensor
	outNorm *ggml.Tensor
	output  *ggml.Tensor
	layers  []layer
}

// layer holds one block's weights.
type layer struct {
	attnNorm, wq, wk, wv, wo   *ggml.Tensor
	ffnNorm, wGate, wUp, wDown *ggml.Tensor
	bq, bk, bv, bo             *ggml.Tensor // optional biases (nil when absent)
	bGate, bUp, bDown          *ggml.Tensor
	ropeFreqs                  *ggml.Tensor // rope_freqs.weight on this layer's device, or nil
}

func (n *network) Config() model.Config { return n.c }

// Tensors lists the tensors of a Llama file: token_embd, output_norm and
// output (absent: tied to token_embd), Llama 3.1's rope_freqs, and per
// block attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
// ffn_gate, ffn_up and ffn_down, with the optional biases llama.cpp takes.
func (n *network) Tensors() []model.TensorSpec {
	c := n.c
	e, q, k, ff, v := int64(c.EmbeddingLength), int64(c.QDim()), int64(c.KVDim()), int64(c.FeedForward), int64(c.VocabSize)
	specs := []model.TensorSpec{
		{Name: "token_embd.weight", Shape: []int64{e, v}, Use: model.UseRows},
		{Name: "output_norm.weight", Shape: []int64{e}},
		{Name: "output.weight", Shape: []int64{e, v}, Optional: true, Use: model.UseMatMul},
		{Name: "rope_freqs.weight", Shape: []int64{int64(c.RopeDim / 2)}, Optional: true, Use: model.UseConst},
	}
	for il := range c.BlockCount {
		p := "blk." + strconv.Itoa(il) + "."
		mat := func(name string, in, out int64) {
			specs = append(specs,
				model.TensorSpec{Name: p + name + ".weight", Shape: []int64{in, out}, Use: model.UseMatMul},
				model.TensorSpec{Name: p + name + ".bias", Shape: []int64{out}, Optional: true})
		}
		specs = append(specs, model.TensorSpec{Name: p + "attn_norm.weight", Shape: []int64{e}})
		mat("attn_q", e, q)
		mat("attn_k", e, k)
		mat("attn_v", e, k)
		mat("attn_output", q, e)
		specs = append(specs, model.TensorSpec{Name: p + "ffn_norm.weight", Shape: []int64{e}})
		mat("ffn_gate", e, ff)
		mat("ffn_up", e, ff)
		mat("ffn_down", ff, e)
	}
	return specs
}

func (n *network) Bind(w *model.Weights) error {
	n.tokEmbd, n.outNorm, n.output = w.Get("token_embd.weight"), w.Get("output_norm.weight"), w.Get("output.weight")
	n.layers = make([]layer, n.c.BlockCount)
	for i := range n.layers {
		p := "blk." + strconv.Itoa(i) + "."
		n.layers[i] = layer{
			attnNorm: w.Get(p + "attn_norm.weight"), wq: w.Get(p + "attn_q.weight"), wk: w.Get(p + "attn_k.weight"),
			wv: w.Get(p + "attn_v.weight"), wo: w.Get(p + "attn_output.weight"),
			ffnNorm: w.Get(p + "ffn_norm.weight"), wGate: w.Get(p + "ffn_gate.weight"), wUp: w.Get(p + "ffn_up.weight"),
			wDown: w.Get(p + "ffn_down.weight"),
			bq:    w.Get(p + "attn_q.bias"), bk: w.Get(p + "attn_k.bias"), bv: w.Get(p + "attn_v.bias"), bo: w.Get(p + "attn_output.bias"),
			bGate: w.Get(p + "ffn_gate.bias"), bUp: w.Get(p + "ffn_up.bias"), bDown: w.Get(p + "ffn_down.bias"),
			ropeFreqs: w.OnLayer("rope_freqs.weight", i),
		}
	}
	return nil
}

// Forward builds the graph of one batch from go-ggml's ops, the way
// llama.cpp's llm_build_llama does:
//
//	x = token_embd[tokens]
//	per block:  h = RMSNorm(x)·attn_norm
//	            q, k, v = h·Wq, h·Wk, h·Wv; RoPE (normal mode) on q and k
//	            x += Wo · attention(q, k, v)   (the KV cache: model.Batch.Attention)
//	            h = RMSNorm(x)·ffn_norm
//	            x += Wdown · (silu(h·Wgate) ⊙ h·Wup)
//	logits = output · RMSNorm(x)·output_norm
func (n *network) Forward(b *model.Batch) *ggml.Tensor {
	c, ctx := n.c, b.Ctx
	nt := int64(b.N)
	hd, nh, nhkv := int64(c.HeadDim), int64(c.HeadCount), int64(c.HeadCountKV)
	rope := c.Rope(ggml.RopeNormal)
	attn := model.AttentionParams{Scale: float32(1 / math.Sqrt(float64(c.HeadDim)))}

	x := ctx.GetRows(n.tokEmbd, b.Tokens) // [e, n]
	for il := range n.layers {
		l := &n.layers[il]
		rope.FreqFactors = l.ropeFreqs

		// Attention: RMS norm, Q K V, RoPE on Q and K.
		h := ctx.Mul(ctx.RMSNorm(x, c.RMSEps), l.attnNorm)
		q := ctx.Reshape(model.Linear(ctx, l.wq, l.bq, h), hd, nh, nt)   // [hd, heads, n]
		k := ctx.Reshape(model.Linear(ctx, l.wk, l.bk, h), hd, nhkv, nt) // [hd, kv heads, n]
		v := model.Linear(ctx, l.wv, l.bv, h)                            // [kvDim, n]
		q = ctx.Rope(q, b.Positions, rope)
		k = ctx.Rope(k, b.Positions, rope)
		a := b.Attention(il, q, k, v, attn) // [q, n]
		if il == len(n.layers)-1 {
			a, x = b.OutputRows(a), b.OutputRows(x)
		}
		x = ctx.Add(x, model.Linear(ctx, l.wo, l.bo, a))

		// Feed-forward: RMS norm, SwiGLU.
		h = ctx.Mul(ctx.RMSNorm(x, c.RMSEps), l.ffnNorm)
		ffn := ctx.GLUSplit(model.Linear(ctx, l.wGate, l.bGate, h), model.Linear(ctx, l.wUp, l.bUp, h), ggml.GLUSwiglu)
		x = ctx.Add(x, model.Linear(ctx, l.wDown, l.bDown, ffn))
	}
	x = ctx.Mul(ctx.RMSNorm(x, c.RMSEps), n.outNorm)
	return ctx.MulMat(n.output, x)
}
