package model

import (
	"math"
	"strconv"

	"github.com/go-ggml/ggml/ggml"
)

// The parts most architectures share, as llama.cpp's graph helpers
// (build_norm, build_qkv, build_ffn) share them: tensor specs under
// llama.cpp's names, their weights bound by those names, and the ops that
// use them. An architecture's package lists and binds the parts it has
// and writes its own forward pass with them.

// Block returns the prefix of block il's tensor names, "blk.N.".
func Block(il int) string { return "blk." + strconv.Itoa(il) + "." }

// Matrix is the spec of a weight matrix the graph multiplies by
// (UseMatMul), [in, out].
func Matrix(name string, in, out int64) TensorSpec {
	return TensorSpec{Name: name, Shape: []int64{in, out}, Use: UseMatMul}
}

// Vector is the spec of an f32 vector of n values (a norm's weight).
func Vector(name string, n int64) TensorSpec {
	return TensorSpec{Name: name, Shape: []int64{n}}
}

// Optional returns s as a tensor a file may leave out.
func Optional(s TensorSpec) TensorSpec {
	s.Optional = true
	return s
}

// RMSNorm is x normalized by its root mean square (eps added to the
// mean square) times the weight w, row by row (ggml_rms_norm, ggml_mul).
func RMSNorm(ctx *ggml.Context, x, w *ggml.Tensor, eps float32) *ggml.Tensor {
	return ctx.Mul(ctx.RMSNorm(x, eps), w)
}

// AttnParts says which of the attention's optional tensors a layout has.
type AttnParts struct {
	// Biases: the file may have biases for q, k and v (attn_q.bias, ...),
	// each optional, as llama.cpp takes them.
	Biases bool
	// OutBias: the file may have attn_output.bias.
	OutBias bool
	// QKNorm: per-head RMS norms of the queries and keys before RoPE
	// (attn_q_norm, attn_k_norm: Qwen3, Gemma 3), required.
	QKNorm bool
	// Fused: one matrix attn_qkv [e, q+2k] (and an optional bias) in
	// place of attn_q, attn_k and attn_v (Phi-3).
	Fused bool
}

// Attn is one block's attention weights, bound by llama.cpp's names
// (BindAttn): the input norm, the projections and their optional biases,
// and optional per-head norms of the queries and keys.
type Attn struct {
	Norm           *ggml.Tensor // attn_norm
	Q, K, V, O     *ggml.Tensor // attn_q, attn_k, attn_v, attn_output
	BQ, BK, BV, BO *ggml.Tensor // their biases, nil when absent
	QKV, BQKV      *ggml.Tensor // attn_qkv and its bias, in place of Q, K and V where fused
	QNorm, KNorm   *ggml.Tensor // attn_q_norm, attn_k_norm, nil when absent
}

// AttnSpecs lists the attention tensors of block il in configuration c:
// attn_norm, attn_q, attn_k, attn_v and attn_output, and the parts p asks
// for.
func AttnSpecs(c Config, il int, p AttnParts) []TensorSpec {
	b := Block(il)
	e, q, k := int64(c.EmbeddingLength), int64(c.QDim()), int64(c.KVDim())
	s := []TensorSpec{Vector(b+"attn_norm.weight", e), Matrix(b+"attn_output.weight", q, e)}
	if p.Fused {
		s = append(s, Matrix(b+"attn_qkv.weight", e, q+2*k), Optional(Vector(b+"attn_qkv.bias", q+2*k)))
	} else {
		s = append(s, Matrix(b+"attn_q.weight", e, q), Matrix(b+"attn_k.weight", e, k), Matrix(b+"attn_v.weight", e, k))
	}
	if p.Biases {
		s = append(s, Optional(Vector(b+"attn_q.bias", q)), Optional(Vector(b+"attn_k.bias", k)), Optional(Vector(b+"attn_v.bias", k)))
	}
	if p.OutBias {
		s = append(s, Optional(Vector(b+"attn_output.bias", e)))
	}
	if p.QKNorm {
		hd := int64(c.HeadDim)
		s = append(s, Vector(b+"attn_q_norm.weight", hd), Vector(b+"attn_k_norm.weight", hd))
	}
	return s
}

// BindAttn binds block il's attention weights; absent ones are nil.
func BindAttn(w *Weights, il int) Attn {
	b := Block(il)
	return Attn{
		Norm: w.Get(b + "attn_norm.weight"),
		Q:    w.Get(b + "attn_q.weight"), K: w.Get(b + "attn_k.weight"), V: w.Get(b + "attn_v.weight"), O: w.Get(b + "attn_output.weight"),
		BQ: w.Get(b + "attn_q.bias"), BK: w.Get(b + "attn_k.bias"), BV: w.Get(b + "attn_v.bias"), BO: w.Get(b + "attn_output.bias"),
		QNorm: w.Get(b + "attn_q_norm.weight"), KNorm: w.Get(b + "attn_k_norm.weight"),
		QKV: w.Get(b + "attn_qkv.weight"), BQKV: w.Get(b + "attn_qkv.bias"),
	}
}

// Project returns the queries, keys and values of h, [width, N], after
// the attention's input has been normalized: q [HeadDim, HeadCount, N]
// and k [HeadDim, HeadCountKV, N], each through its per-head RMS norm
// where the layer has one and then RoPE with rope, and v [KVDim, N].
func (a *Attn) Project(b *Batch, c Config, h *ggml.Tensor, rope ggml.RopeParams) (q, k, v *ggml.Tensor) {
	q, k, v = a.project(b, c, h)
	return b.Ctx.Rope(q, b.Positions, rope), b.Ctx.Rope(k, b.Positions, rope), v
}

// ProjectNoRope returns the queries, keys and values of h as Project
// does, without RoPE (an architecture whose positions are embeddings).
func (a *Attn) ProjectNoRope(b *Batch, c Config, h *ggml.Tensor) (q, k, v *ggml.Tensor) {
	return a.project(b, c, h)
}

// project is Project without RoPE: the queries, keys and values of h, [width, N], after
// the attention's input has been normalized: q [HeadDim, HeadCount, N]
// and k [HeadDim, HeadCountKV, N], each through its per-head RMS norm
// where the layer has one and then RoPE with rope, and v [KVDim, N].
func (a *Attn) project(b *Batch, c Config, h *ggml.Tensor) (q, k, v *ggml.Tensor) {
	ctx, n := b.Ctx, int64(b.N)
	hd, nh, nhkv := int64(c.HeadDim), int64(c.HeadCount), int64(c.HeadCountKV)
	if a.QKV != nil {
		// One product, and views of its rows: q, then k, then v.
		qkv := Linear(ctx, a.QKV, a.BQKV, h) // [q+2k, n] f32
		qd, kd := uint64(c.QDim())*4, uint64(c.KVDim())*4
		row := qkv.Nb()[1]
		q = ctx.View3D(qkv, hd, nh, n, uint64(hd)*4, row, 0)
		k = ctx.View3D(qkv, hd, nhkv, n, uint64(hd)*4, row, qd)
		v = ctx.Cont(ctx.View2D(qkv, int64(c.KVDim()), n, row, qd+kd))
	} else {
		q = ctx.Reshape(Linear(ctx, a.Q, a.BQ, h), hd, nh, n)
		k = ctx.Reshape(Linear(ctx, a.K, a.BK, h), hd, nhkv, n)
		v = Linear(ctx, a.V, a.BV, h)
	}
	if a.QNorm != nil {
		q = RMSNorm(ctx, q, a.QNorm, c.RMSEps)
	}
	if a.KNorm != nil {
		k = RMSNorm(ctx, k, a.KNorm, c.RMSEps)
	}
	return q, k, v
}

// FFN is one block's gated feed-forward weights, bound by llama.cpp's
// names (BindFFN): the input norm, ffn_gate, ffn_up and ffn_down, and
// their optional biases.
type FFN struct {
	Norm              *ggml.Tensor // ffn_norm
	Gate, Up, Down    *ggml.Tensor
	BGate, BUp, BDown *ggml.Tensor // nil when absent
}

// FFNSpecs lists the feed-forward tensors of block il: ffn_norm,
// ffn_gate, ffn_up and ffn_down, with their optional biases when biases
// is set.
func FFNSpecs(c Config, il int, biases bool) []TensorSpec {
	return ffnSpecs(c, il, biases, false)
}

// FusedFFNSpecs lists the tensors of a feed-forward whose gate and up
// projections are one matrix, ffn_up [e, 2·ff], the gate's rows first
// (Phi-3): ffn_norm, ffn_up and ffn_down.
func FusedFFNSpecs(c Config, il int) []TensorSpec { return ffnSpecs(c, il, false, true) }

func ffnSpecs(c Config, il int, biases, fused bool) []TensorSpec {
	if fused {
		b := Block(il)
		e, ff := int64(c.EmbeddingLength), int64(c.FeedForward)
		return []TensorSpec{Vector(b+"ffn_norm.weight", e), Matrix(b+"ffn_up.weight", e, 2*ff), Matrix(b+"ffn_down.weight", ff, e)}
	}
	b := Block(il)
	e, ff := int64(c.EmbeddingLength), int64(c.FeedForward)
	s := []TensorSpec{
		Vector(b+"ffn_norm.weight", e),
		Matrix(b+"ffn_gate.weight", e, ff), Matrix(b+"ffn_up.weight", e, ff), Matrix(b+"ffn_down.weight", ff, e),
	}
	if biases {
		s = append(s, Optional(Vector(b+"ffn_gate.bias", ff)), Optional(Vector(b+"ffn_up.bias", ff)), Optional(Vector(b+"ffn_down.bias", e)))
	}
	return s
}

// BindFFN binds block il's feed-forward weights; absent ones are nil.
func BindFFN(w *Weights, il int) FFN {
	b := Block(il)
	return FFN{
		Norm: w.Get(b + "ffn_norm.weight"),
		Gate: w.Get(b + "ffn_gate.weight"), Up: w.Get(b + "ffn_up.weight"), Down: w.Get(b + "ffn_down.weight"),
		BGate: w.Get(b + "ffn_gate.bias"), BUp: w.Get(b + "ffn_up.bias"), BDown: w.Get(b + "ffn_down.bias"),
	}
}

// Forward returns down·(act(gate·h) ⊙ up·h) for the activation glu
// (ggml.GLUSwiglu: SwiGLU; ggml.GLUGeglu: GELU's), h being the
// normalized input. Without Gate, Up is the fused gate and up (the
// gate's rows first: ggml_swiglu of one tensor).
func (f *FFN) Forward(ctx *ggml.Context, h *ggml.Tensor, glu ggml.GLUOp) *ggml.Tensor {
	if f.Gate == nil {
		return Linear(ctx, f.Down, f.BDown, ctx.GLU(Linear(ctx, f.Up, f.BUp, h), glu, false))
	}
	return Linear(ctx, f.Down, f.BDown, ctx.GLUSplit(Linear(ctx, f.Gate, f.BGate, h), Linear(ctx, f.Up, f.BUp, h), glu))
}

// Output is the output layer, bound by llama.cpp's names (BindOutput):
// output_norm and output (token_embd when tied).
type Output struct {
	Norm, W *ggml.Tensor
}

// OutputSpecs lists token_embd, output_norm and output (optional: tied
// to token_embd when absent).
func OutputSpecs(c Config) []TensorSpec {
	e, v := int64(c.EmbeddingLength), int64(c.VocabSize)
	return []TensorSpec{
		{Name: "token_embd.weight", Shape: []int64{e, v}, Use: UseRows},
		Vector("output_norm.weight", e),
		Optional(Matrix("output.weight", e, v)),
	}
}

// BindOutput binds the output layer.
func BindOutput(w *Weights) Output {
	return Output{Norm: w.Get("output_norm.weight"), W: w.Get("output.weight")}
}

// Decoder is the forward pass the Llama family shares (Llama, Mistral,
// Qwen2, Qwen3, ...), as llama.cpp's llm_build_llama and its kin build it:
//
//	x = token_embd[tokens]
//	per block:  q, k, v = Attn.Project(RMSNorm(x)·attn_norm)  (biases, q/k norms, RoPE)
//	            x += Wo · attention(q, k, v) + bo   (the KV cache: Batch.Attention)
//	            x += FFN.Forward(RMSNorm(x)·ffn_norm)
//	logits = output · RMSNorm(x)·output_norm + OutBias
//
// An architecture's package binds its weights into one and calls Forward.
type Decoder struct {
	Config  Config
	TokEmbd *ggml.Tensor
	Attn    []Attn
	FFN     []FFN
	MoE     []*MoE // a block's mixture of experts in place of its FFN, or nil
	Out     Output
	OutBias *ggml.Tensor // output.bias (Qwen2's optional one), or nil
	// Rope gives block il's RoPE parameters.
	Rope func(il int) ggml.RopeParams
	// GLU is the feed-forward's gate activation (ggml.GLUSwiglu for the
	// Llama family).
	GLU ggml.GLUOp
}

// Forward builds the graph of one batch and returns its logits.
func (d *Decoder) Forward(b *Batch) *ggml.Tensor {
	c, ctx := d.Config, b.Ctx
	scale := AttentionParams{Scale: float32(1 / math.Sqrt(float64(c.HeadDim)))}
	x := ctx.GetRows(d.TokEmbd, b.Tokens) // [e, n]
	for il := range d.Attn {
		a, f := &d.Attn[il], &d.FFN[il]
		q, k, v := a.Project(b, c, RMSNorm(ctx, x, a.Norm, c.RMSEps), d.Rope(il))
		attn := b.Attention(il, q, k, v, scale) // [q, n]
		if il == len(d.Attn)-1 {
			attn, x = b.OutputRows(attn), b.OutputRows(x)
		}
		x = ctx.Add(x, Linear(ctx, a.O, a.BO, attn))
		if il < len(d.MoE) && d.MoE[il] != nil {
			moe := d.MoE[il]
			x = ctx.Add(x, moe.Forward(ctx, RMSNorm(ctx, x, moe.Norm, c.RMSEps)))
		} else {
			x = ctx.Add(x, f.Forward(ctx, RMSNorm(ctx, x, f.Norm, c.RMSEps), d.GLU))
		}
	}
	return Linear(ctx, d.Out.W, d.OutBias, RMSNorm(ctx, x, d.Out.Norm, c.RMSEps))
}

// BindDecoder binds the weights of a Decoder with blocks of llama.cpp's
// names (BindAttn, BindFFN) and the output layer (BindOutput, output.bias
// where the file has one), for configuration c.
func BindDecoder(w *Weights, c Config, glu ggml.GLUOp, rope func(il int) ggml.RopeParams) *Decoder {
	d := &Decoder{Config: c, TokEmbd: w.Get("token_embd.weight"), Out: BindOutput(w), OutBias: w.Get("output.bias"), Rope: rope, GLU: glu}
	for il := range c.BlockCount {
		d.Attn = append(d.Attn, BindAttn(w, il))
		d.FFN = append(d.FFN, BindFFN(w, il))
	}
	return d
}

// DecoderNetwork is the Network of a Decoder architecture: its package
// gives the configuration, the tensor layout and the RoPE mode, and
// DecoderNetwork binds the weights by llama.cpp's names and builds the
// Decoder's graph.
type DecoderNetwork struct {
	C     Config
	Specs []TensorSpec
	Mode  ggml.RopeMode // RoPE's mode: ggml.RopeNormal (Llama) or ggml.RopeNeoX (Qwen)
	GLU   ggml.GLUOp    // the feed-forward's gate: ggml.GLUSwiglu
	// FreqFactors names a UseConst tensor of RoPE frequency factors
	// (Llama 3.1's rope_freqs.weight) each layer reads on its device, or
	// is empty.
	FreqFactors string
	// ExpertsUsed, if > 0, makes every block's feed-forward a mixture of
	// experts (BindMoE), each token through this many of them.
	ExpertsUsed int

	d *Decoder
}

// Config returns the configuration.
func (n *DecoderNetwork) Config() Config { return n.C }

// Tensors returns the layout.
func (n *DecoderNetwork) Tensors() []TensorSpec { return n.Specs }

// Bind binds the weights into a Decoder (BindDecoder).
func (n *DecoderNetwork) Bind(w *Weights) error {
	rope := n.C.Rope(n.Mode)
	n.d = BindDecoder(w, n.C, n.GLU, func(il int) ggml.RopeParams {
		r := rope
		if n.FreqFactors != "" {
			r.FreqFactors = w.OnLayer(n.FreqFactors, il)
		}
		return r
	})
	if n.ExpertsUsed > 0 {
		for il := range n.C.BlockCount {
			n.d.MoE = append(n.d.MoE, BindMoE(w, il, n.ExpertsUsed))
		}
	}
	return nil
}

// Forward builds the Decoder's graph of one batch.
func (n *DecoderNetwork) Forward(b *Batch) *ggml.Tensor { return n.d.Forward(b) }

// ShiftRope returns block il's RoPE parameters (Shifter).
func (n *DecoderNetwork) ShiftRope(il int) ggml.RopeParams { return n.d.Rope(il) }

// MoE is one block's mixture-of-experts feed-forward, bound by llama.cpp's
// names (BindMoE): the input norm ffn_norm, the router ffn_gate_inp
// [e, Experts], and the experts' ffn_gate_exps and ffn_up_exps
// [e, ff, Experts] and ffn_down_exps [ff, e, Experts].
type MoE struct {
	Norm, Router, Gate, Up, Down *ggml.Tensor
	// Used is how many experts each token goes through
	// (expert_used_count).
	Used int
}

// MoESpecs lists the mixture-of-experts tensors of block il: experts
// experts of ff wide each.
func MoESpecs(c Config, il, experts, ff int) []TensorSpec {
	b := Block(il)
	e, f, n := int64(c.EmbeddingLength), int64(ff), int64(experts)
	exps := func(name string, in, out int64) TensorSpec {
		return TensorSpec{Name: b + name, Shape: []int64{in, out, n}, Use: UseMatMulID}
	}
	return []TensorSpec{
		Vector(b+"ffn_norm.weight", e), Matrix(b+"ffn_gate_inp.weight", e, n),
		exps("ffn_gate_exps.weight", e, f), exps("ffn_up_exps.weight", e, f), exps("ffn_down_exps.weight", f, e),
	}
}

// BindMoE binds block il's mixture-of-experts weights, used experts a
// token.
func BindMoE(w *Weights, il, used int) *MoE {
	b := Block(il)
	return &MoE{
		Norm: w.Get(b + "ffn_norm.weight"), Router: w.Get(b + "ffn_gate_inp.weight"),
		Gate: w.Get(b + "ffn_gate_exps.weight"), Up: w.Get(b + "ffn_up_exps.weight"), Down: w.Get(b + "ffn_down_exps.weight"),
		Used: used,
	}
}

// Forward returns the mixture of h's (the normalized input, [e, N])
// experts, as llama.cpp's build_moe_ffn with softmax gating and
// normalized weights (Mixtral, Qwen3-MoE): the router's softmax over the
// experts, the Used largest chosen, their probabilities divided by their
// sum, and the sum over the chosen experts of each one's weight times its
// SwiGLU feed-forward of h (MulMatID).
func (m *MoE) Forward(ctx *ggml.Context, h *ggml.Tensor) *ggml.Tensor {
	ne := h.Ne()
	e, n, k := ne[0], ne[1], int64(m.Used)
	nExp := m.Router.Ne()[1]
	probs := ctx.SoftMax(ctx.MulMat(m.Router, h))            // [experts, n]
	chosen := ctx.ArgsortTopK(probs, m.Used)                 // [k, n] i32
	w := ctx.GetRows(ctx.Reshape(probs, 1, nExp, n), chosen) // [1, k, n]
	w = ctx.Reshape(w, k, n)
	w = ctx.Div(w, ctx.Clamp(ctx.SumRows(w), 6.103515625e-5, float32(math.Inf(1)))) // llama.cpp's floor: f16's smallest normal
	w = ctx.Reshape(w, 1, k, n)
	x := ctx.Reshape(h, e, 1, n)
	up := ctx.MulMatID(m.Up, x, chosen)                                                         // [ff, k, n]
	gate := ctx.MulMatID(m.Gate, x, chosen)                                                     // [ff, k, n]
	experts := ctx.Mul(ctx.MulMatID(m.Down, ctx.GLUSplit(gate, up, ggml.GLUSwiglu), chosen), w) // [e, k, n]
	out := ctx.View2D(experts, e, n, experts.Nb()[2], 0)
	for i := int64(1); i < k; i++ {
		out = ctx.Add(out, ctx.View2D(experts, e, n, experts.Nb()[2], uint64(i)*experts.Nb()[1]))
	}
	if k == 1 {
		out = ctx.Cont(out)
	}
	return out
}
