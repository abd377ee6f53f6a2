// Package gemma is the Gemma 2 and Gemma 3 architectures for package
// model (general.architecture "gemma2" and "gemma3", text models), as
// llama.cpp's convert_hf_to_gguf.py writes them. Importing it registers
// both with model.Load.
//
// What sets them apart from the Llama family, as llama.cpp's
// llm_build_gemma2_iswa and llm_build_gemma3 run them:
//
//   - the token embeddings scaled by √EmbeddingLength, and the output
//     layer tied to them;
//   - RMS norms before and after each sub-layer (attn_norm and
//     post_attention_norm, ffn_norm and post_ffw_norm; the converter stores
//     Gemma's norm weights plus one);
//   - GELU-gated feed-forwards (GeGLU, the tanh approximation);
//   - the queries scaled by 1/√HeadDim before attention (27B models:
//     1/√(EmbeddingLength/HeadCount));
//   - sliding-window layers: attention.sliding_window cells (Gemma 2: 4096
//     by default), on the layers attention.sliding_window_pattern says
//     (every 2nd layer but the last of each pair for Gemma 2, 5 of each 6
//     for Gemma 3), with their own RoPE base (rope.freq_base_swa; Gemma 3:
//     10000 by default);
//   - Gemma 2: attention logits capped at attn_logit_softcapping (50) and
//     the output's at final_logit_softcapping (30), c·tanh(x/c); Gemma 3:
//     per-head RMS norms of q and k (attn_q_norm, attn_k_norm), and the
//     output's cap only where the file gives one.
//
// A per-layer array for the sliding-window pattern is refused with a
// model.ErrModel error naming the key.
package gemma

import (
	"fmt"
	"math"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model"
)

// The architectures this package runs.
const (
	Gemma2 = "gemma2"
	Gemma3 = "gemma3"
)

func init() {
	model.Register(model.Architecture{Name: Gemma2, Open: func(f *gguf.File) (model.Network, error) { return Open(f, Gemma2) }})
	model.Register(model.Architecture{Name: Gemma3, Open: func(f *gguf.File) (model.Network, error) { return Open(f, Gemma3) }})
}

// Params are what a Gemma file sets beyond model.Config, read by Open.
type Params struct {
	Window       int     // attention.sliding_window: the cells a sliding-window layer sees; 0: none
	Pattern      int     // attention.sliding_window_pattern: layer il slides when il%Pattern < Pattern-1
	RopeBaseSWA  float32 // rope.freq_base_swa: the sliding-window layers' RoPE base
	RopeScaleSWA float32 // their RoPE frequency scale: Gemma 2's all layers', Gemma 3's 1
	AttnSoftcap  float32 // attn_logit_softcapping, 0: none
	FinalSoftcap float32 // final_logit_softcapping, 0: none
	QScale       float32 // what the queries are multiplied by
}

// Sliding reports whether layer il is a sliding-window layer.
func (p Params) Sliding(il int) bool {
	return p.Window > 0 && (p.Pattern == 0 || il%p.Pattern < p.Pattern-1)
}

// ReadParams reads a Gemma file's own keys, with llama.cpp's defaults for
// arch (Gemma2 or Gemma3), given its configuration.
func ReadParams(f *gguf.File, c model.Config, arch string) (Params, error) {
	k := model.NewKeys(f, arch)
	p := Params{Pattern: 2, RopeBaseSWA: c.RopeFreqBase, RopeScaleSWA: c.RopeFreqScale, AttnSoftcap: 50, FinalSoftcap: 30}
	if arch == Gemma3 {
		p = Params{Pattern: 6, RopeBaseSWA: 10000, RopeScaleSWA: 1}
	}
	switch {
	case arch == Gemma2:
		p.Window = k.Int("attention.sliding_window", 4096)
	case k.Has("attention.sliding_window"):
		p.Window = k.Int("attention.sliding_window", 0)
	}
	p.Pattern = k.Int("attention.sliding_window_pattern", p.Pattern)
	p.RopeBaseSWA = k.Float("rope.freq_base_swa", p.RopeBaseSWA)
	if arch == Gemma2 {
		p.AttnSoftcap = k.Float("attn_logit_softcapping", p.AttnSoftcap)
	}
	p.FinalSoftcap = k.Float("final_logit_softcapping", p.FinalSoftcap)
	if err := k.Err(); err != nil {
		return Params{}, err
	}
	for _, v := range []struct {
		key string
		x   float32
	}{{"rope.freq_base_swa", p.RopeBaseSWA}, {"attn_logit_softcapping", p.AttnSoftcap}, {"final_logit_softcapping", p.FinalSoftcap}} {
		if !(v.x >= 0) || math.IsInf(float64(v.x), 0) || v.key == "rope.freq_base_swa" && v.x == 0 {
			return Params{}, fmt.Errorf("%w: %s.%s is %g", model.ErrModel, arch, v.key, v.x)
		}
	}
	// llama.cpp's query scale: the 27B models' (46 and 62 layers) by the
	// width per head, the others by the head size.
	p.QScale = float32(1 / math.Sqrt(float64(c.HeadDim)))
	if arch == Gemma2 && c.BlockCount == 46 || arch == Gemma3 && c.BlockCount == 62 {
		if c.EmbeddingLength < c.HeadCount {
			return Params{}, fmt.Errorf("%w: %s: %d heads in a width of %d: the query scale (by the width per head) would be infinite",
				model.ErrModel, arch, c.HeadCount, c.EmbeddingLength)
		}
		p.QScale = float32(1 / math.Sqrt(float64(c.EmbeddingLength/c.HeadCount)))
	}
	return p, nil
}

// Open reads a Gemma 2 or Gemma 3 file's hyperparameters and returns the
// network that runs it.
func Open(f *gguf.File, arch string) (model.Network, error) {
	c, err := model.ReadArchConfig(f, arch)
	if err != nil {
		return nil, err
	}
	if err := c.NeedRMSEps(); err != nil {
		return nil, err
	}
	p, err := ReadParams(f, c, arch)
	if err != nil {
		return nil, err
	}
	e := int64(c.EmbeddingLength)
	specs := model.OutputSpecs(c)
	for il := range c.BlockCount {
		b := model.Block(il)
		specs = append(specs, model.AttnSpecs(c, il, model.AttnParts{QKNorm: arch == Gemma3})...)
		specs = append(specs, model.FFNSpecs(c, il, false)...)
		specs = append(specs, model.Vector(b+"post_attention_norm.weight", e), model.Vector(b+"post_ffw_norm.weight", e))
	}
	return &network{c: c, p: p, specs: specs}, nil
}

type network struct {
	c     model.Config
	p     Params
	specs []model.TensorSpec

	tokEmbd           *ggml.Tensor
	out               model.Output
	attn              []model.Attn
	ffn               []model.FFN
	attnPost, ffnPost []*ggml.Tensor
}

func (n *network) Config() model.Config        { return n.c }
func (n *network) Tensors() []model.TensorSpec { return n.specs }

// SoftCapped reports whether the attention caps its scores (Gemma 2's).
func (n *network) SoftCapped() bool { return n.p.AttnSoftcap > 0 }

func (n *network) Bind(w *model.Weights) error {
	n.tokEmbd, n.out = w.Get("token_embd.weight"), model.BindOutput(w)
	for il := range n.c.BlockCount {
		b := model.Block(il)
		n.attn = append(n.attn, model.BindAttn(w, il))
		n.ffn = append(n.ffn, model.BindFFN(w, il))
		n.attnPost = append(n.attnPost, w.Get(b+"post_attention_norm.weight"))
		n.ffnPost = append(n.ffnPost, w.Get(b+"post_ffw_norm.weight"))
	}
	return nil
}

// ShiftRope returns block il's RoPE parameters (the sliding-window
// layers' base and scale where il slides), for Forward and for
// model.Model.SeqShift (model.Shifter).
func (n *network) ShiftRope(il int) ggml.RopeParams {
	rope := n.c.Rope(ggml.RopeNeoX)
	if n.p.Sliding(il) {
		rope.FreqBase, rope.FreqScale = n.p.RopeBaseSWA, n.p.RopeScaleSWA
	}
	return rope
}

// Forward builds the graph of one batch:
//
//	x = token_embd[tokens]·√e
//	per block:  q, k, v = Attn.Project(RMSNorm(x)·attn_norm)   (Gemma 3: q/k norms; RoPE NeoX)
//	            x += RMSNorm(Wo · attention(q·QScale, k, v))·post_attention_norm
//	            x += RMSNorm(Wdown · (gelu(h·Wgate) ⊙ h·Wup))·post_ffw_norm,  h = RMSNorm(x)·ffn_norm
//	logits = softcap(token_embd · RMSNorm(x)·output_norm)
func (n *network) Forward(b *model.Batch) *ggml.Tensor {
	c, p, ctx := n.c, n.p, b.Ctx
	eps := c.RMSEps
	x := ctx.Scale(ctx.GetRows(n.tokEmbd, b.Tokens), float32(math.Sqrt(float64(c.EmbeddingLength))))
	for il := range n.attn {
		a, f := &n.attn[il], &n.ffn[il]
		rope := n.ShiftRope(il)
		attn := model.AttentionParams{Scale: 1, Softcap: p.AttnSoftcap}
		if p.Sliding(il) {
			attn.Window = p.Window
		}
		q, k, v := a.Project(b, c, model.RMSNorm(ctx, x, a.Norm, eps), rope)
		q = ctx.Scale(q, p.QScale)
		y := b.Attention(il, q, k, v, attn)
		if il == len(n.attn)-1 {
			y, x = b.OutputRows(y), b.OutputRows(x)
		}
		x = ctx.Add(x, model.RMSNorm(ctx, ctx.MulMat(a.O, y), n.attnPost[il], eps))
		h := f.Forward(ctx, model.RMSNorm(ctx, x, f.Norm, eps), ggml.GLUGeglu)
		x = ctx.Add(x, model.RMSNorm(ctx, h, n.ffnPost[il], eps))
	}
	logits := ctx.MulMat(n.out.W, model.RMSNorm(ctx, x, n.out.Norm, eps))
	if p.FinalSoftcap > 0 {
		logits = ctx.Scale(ctx.Tanh(ctx.Scale(logits, 1/p.FinalSoftcap)), p.FinalSoftcap)
	}
	return logits
}
