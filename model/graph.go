package model

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/go-ggml/ggml/ggml"
)

// kvPad rounds the number of cache cells a graph attends to: graphs for
// positions within the same multiple of kvPad have the same shape, so
// token-by-token generation reuses one graph for kvPad tokens (the mask
// hides the cells not filled yet), as llama.cpp does.
var kvPad = 256

// productsKVPad rounds the cells of a batch that attends by matrix
// products (prompts): those compute every cell they are given, masked or
// not, where the fused kernels skip masked cells, and a prompt's graph is
// rarely reused. A 64-token prompt from position 0 attends to 64 cells,
// not 256 (1b q8_0, one thread: the attention's products and softmax
// took a quarter of the time they took over 256 cells, and the prompt went
// from 1.12 to 1.0 times llama.cpp's time).
var productsKVPad = 32

// fusedMaxBatch is the largest batch whose attention runs as one fused op
// where the model has flash attention (Options.FlashAttn); larger batches
// (prompts) run it as two matrix products around a softmax over the same
// cache. Where the CPU's fused kernel is tiled (ggml.CPUTiledFlashAttn:
// upstream ggml's, or go-ggml's own on AVX-512 CPUs) it is the faster for
// prompts too, and there is no limit: on a 2-core Sapphire Rapids, 1b q4_0,
// a 512-token prompt on two threads, go-ggml's tiled kernel ran at 237-250
// tokens/s against the products' 222-231 (3 runs each, alternated), and
// upstream's at 119 against 108 (the system provider, no AMX). The
// embedded provider's own fused kernel works query row by query row: it
// was slower than the products for prompts (the small model's 512-token
// prompt 684 against 838 tokens/s on one thread) and faster for generation
// (1b: 39.6 against 37.4 tokens/s), so without a tiled kernel batches
// above 32 use the products.
var fusedMaxBatch = func() int {
	if ggml.CPUTiledFlashAttn() {
		return math.MaxInt
	}
	return untiledFusedMaxBatch
}()

// fusedBatch reports whether a batch of n tokens attends by the fused
// kernel: with flash attention, up to fusedMaxBatch tokens, and up to
// untiledFusedMaxBatch where the network caps its attention's scores
// (SoftCapper) and go-ggml's tiled kernel, which takes the cap, does not
// run (cappedSlow).
func (m *Model) fusedBatch(n int) bool {
	if m.quantCache() {
		return true // the products cannot read a quantized cache's V (and m.flash holds)
	}
	if m.capped && cappedSlow {
		return m.flash && n <= min(fusedMaxBatch, untiledFusedMaxBatch)
	}
	return m.flash && n <= fusedMaxBatch
}

// untiledFusedMaxBatch is fusedMaxBatch where the fused kernel is not
// tiled, and for attention with a soft cap where go-ggml's own tiled
// kernel does not run (cappedSlow).
const untiledFusedMaxBatch = 32

// cappedSlow: the fused kernel goes query by query for attention with a
// soft cap (Gemma 2's), so a capped prompt attends by products: where
// go-ggml's own kernels do not run (ggml.OwnCPUKernels). Upstream's tiled
// kernel (the system provider) is not used with a cap here either, as
// before its speed with one was measured.
var cappedSlow = !ggml.OwnCPUKernels()

// attnChunk is the most queries one attention product takes in batches
// that attend by matrix products: a prompt of 512 tokens attends in 4
// chunks, chunk j to the cells up to its last token only, so the products
// and the softmax skip most of the causal mask's upper triangle (62.5 %
// of the work of one product over all cells) and each chunk's scores
// ([cells, 128, heads] floats) stay small. On a 2-core Sapphire Rapids
// (1b q4_0, a 512-token prompt, one thread, perf's samples of the whole
// run) the attention's products and softmax took 0.43 s in chunks of 128
// against 0.87 s in one, and the prompt 8 % less time; chunks of 64 were
// no faster.
var attnChunk = 128

// step is a graph for one shape of batch: nTokens new tokens attending to
// the first nKV cells of the cache, with the logits of nOut of them (all
// when nOut is nTokens). Its inputs change from compute to compute, its
// shape does not.
type step struct {
	nTokens, nKV, nOut int
	// limited: each chunk of attnChunk queries sees no cell from
	// nKV-nTokens+(its end) on (a sequence's new tokens in the last cells,
	// in order), so attention by products gives it those cells alone.
	limited bool
	fused   bool // attention is one fused op, with an f16 mask

	ctx *ggml.Context
	g   *ggml.Graph

	// Inputs.
	tokens   *ggml.Tensor // i32 [nTokens]: token IDs
	pos      *ggml.Tensor // i32 [nTokens]: positions, for RoPE
	kIdx     *ggml.Tensor // i64 [nTokens]: the cache row of each token's key
	outIDs   *ggml.Tensor // i32 [nOut]: the tokens whose logits are computed; nil when all are
	vIdx     *ggml.Tensor // i64 [nTokens·KVDim]: the cache element of each value (V is stored transposed); nil with flash attention
	mask     *ggml.Tensor // f32 [nKV, nTokens] (f16 for the fused kernel): 0 where a token sees a cell, -Inf elsewhere
	maskUsed bool         // some layer attends with mask (an encoder's do not)
	// windows are the masks of sliding-window layers, by window: mask's
	// shape, and a token sees only the cells less than window before it.
	windows map[int]*ggml.Tensor

	logits *ggml.Tensor // f32 [VocabSize, nTokens or 1]

	// Host copies of the inputs, reused.
	hKIdx, hVIdx []int64
	hOut         []int32
	hMask        []float32
	hMask16      []uint16
}

// graphSize is the most nodes and leafs one graph has: a batch of nBatch
// tokens attends in chunks of attnChunk queries, each some 12 nodes.
func (m *Model) graphSize() int {
	chunks := (max(m.nBatch, 1) + attnChunk - 1) / attnChunk
	return (80+12*chunks)*m.Config.BlockCount + 256
}

// Linear is w·x, plus the bias b (broadcast over the tokens) when b is
// not nil: the file's optional bias.
func Linear(ctx *ggml.Context, w, b, x *ggml.Tensor) *ggml.Tensor {
	y := ctx.MulMat(w, x)
	if b != nil {
		y = ctx.Add(y, b)
	}
	return y
}

// Batch is the graph of one batch as a Network's Forward builds it: the
// context its ops go in, the batch's inputs, and the KV cache through
// Attention.
//
// Shapes are ggml's, innermost first: a batch of activations is [width,
// tokens]; MulMat(w, x) with w [in, out] is [out, tokens].
type Batch struct {
	// Ctx is the context of the graph's ops.
	Ctx *ggml.Context
	// Tokens are the batch's token IDs, i32 [N].
	Tokens *ggml.Tensor
	// Positions are the tokens' positions in their sequence, i32 [N], for
	// RoPE.
	Positions *ggml.Tensor
	// N is the number of tokens.
	N int

	m      *Model
	s      *step
	stores []*ggml.Tensor
}

// Outputs is the number of tokens whose logits the batch computes: N, or
// fewer (a prompt's last token, or each sequence's last).
func (b *Batch) Outputs() int { return b.s.nOut }

// OutputRows returns the rows (tokens) of x, [width, N], whose logits are
// wanted, [width, Outputs()]: x itself, or those rows gathered. A Network
// calls it in its last layer once the attention has stored every token's
// key and value: the rest is per token, so the output projection, the
// feed-forward and the output layer run on the wanted tokens alone, as
// llama.cpp's graphs do (inp_out_ids): about 5 % of a prompt's products
// on a 16-layer model.
func (b *Batch) OutputRows(x *ggml.Tensor) *ggml.Tensor {
	if b.s.outIDs == nil {
		return x
	}
	return b.Ctx.GetRows(x, b.s.outIDs)
}

// AttentionParams are Batch.Attention's settings.
type AttentionParams struct {
	// Scale multiplies the scores q·k before the softmax, usually
	// 1/√HeadDim.
	Scale float32
	// Softcap, if > 0, caps the scores: softcap·tanh(score/softcap)
	// (Gemma 2's attention logit soft-capping), applied to q·k before
	// Scale, as llama.cpp's graphs do (ggml's fused kernel applies Scale
	// first: the two agree for a Scale of 1, as Gemma 2's).
	Softcap float32
	// Window, if > 0, makes the layer a sliding-window one: a token at
	// position p sees the cells at positions p-Window+1 to p (llama.cpp's
	// LLAMA_SWA_TYPE_STANDARD). The cache keeps every cell.
	Window int
	// NonCausal lets every token see every cell of its batch and before,
	// the later tokens too (an encoder's attention: BERT).
	NonCausal bool
}

// Attention stores the batch's keys and values in layer il's KV cache at
// their positions and returns the attention of the queries to the cells
// of the cache they see (their own and the earlier positions):
// softmax(q·Kᵀ·scale + causal mask)·V, [QDim, N]. q is [HeadDim,
// HeadCount, N] and k [HeadDim, HeadCountKV, N], both after RoPE; v is
// [KVDim, N]. Grouped-query attention: each KV head serves
// HeadCount/HeadCountKV query heads. It runs as one fused op
// (FlashAttnExt) where the model has flash attention and the batch is
// small enough, else as two matrix products around a softmax, the queries
// in chunks.
func (b *Batch) Attention(il int, q, k, v *ggml.Tensor, p AttentionParams) *ggml.Tensor {
	m, s, ctx := b.m, b.s, b.Ctx
	c := m.Config
	l := &m.layers[il]
	n := int64(b.N)
	nKV := s.nKV
	hd, nh, nhkv := int64(c.HeadDim), int64(c.HeadCount), int64(c.HeadCountKV)
	kvDim := int64(c.KVDim())
	// Strides in bytes: a cell's row of kvDim values, a head's hd of them
	// (whole blocks: newState checks that hd is a multiple of the
	// quantized cache types' blocks), one value of the transposed V
	// (f32 or f16 only: a quantized cache needs flash attention).
	row, head, esize := m.kvRow, m.kvHead, m.cacheType.Size()
	scale := p.Scale

	// The new keys and values go into the cache: K's row kIdx[t] is
	// token t's key. Without flash attention V is stored transposed
	// ([nCtx, kvDim]), so each value element is a row of one in a
	// flat view of it; with it, V is stored as K is.
	kStore := ctx.SetRows(l.k, ctx.Reshape(k, kvDim, n), s.kIdx)
	var vStore *ggml.Tensor
	if m.flash {
		vStore = ctx.SetRows(l.v, v, s.kIdx)
	} else {
		vFlat := ctx.Reshape(l.v, 1, int64(m.nCtx)*kvDim)
		vStore = ctx.SetRows(vFlat, ctx.Reshape(v, 1, n*kvDim), s.vIdx)
	}
	b.stores = append(b.stores, kStore, vStore)

	// Grouped-query attention over the first nKV cells: MulMat (and
	// FlashAttnExt) broadcast each KV head over heads/kvHeads query
	// heads.
	kView := ctx.View3D(l.k, hd, int64(nKV), nhkv, row, head, 0) // [hd, nKV, kv heads]
	window := p.Window
	if p.NonCausal {
		window = nonCausal
	}
	fullMask := b.mask(window)
	// Where go-ggml's tiled kernel does not run (cappedSlow), a capped
	// prompt's batch would go to the provider's kernel, query by query
	// (Gemma 2's 512-token prompts took 1.25 of llama.cpp's time): it
	// attends by products, over the same cache and the f16 mask.
	if s.fused && (m.quantCache() || !(cappedSlow && p.Softcap > 0 && n > untiledFusedMaxBatch)) {
		vView := ctx.View3D(l.v, hd, int64(nKV), nhkv, row, head, 0) // [hd, nKV, kv heads]
		fa := ctx.FlashAttnExt(ctx.Permute(q, 0, 2, 1, 3), kView, vView, fullMask,
			ggml.FlashAttnParams{Scale: scale, LogitSoftcap: p.Softcap, Precision: ggml.PrecF32}) // [hd, heads, n]
		return ctx.Reshape(fa, int64(c.QDim()), n) // [q, n]
	}
	var vAll *ggml.Tensor // [nKV, hd, kv heads]
	if m.flash {
		// The cache holds V as K ([kvDim, nCtx]): the product wants
		// it transposed, a copy of the attended cells.
		vAll = ctx.Cont(ctx.Permute(ctx.View3D(l.v, hd, int64(nKV), nhkv, row, head, 0), 1, 0, 2, 3))
	} else {
		vAll = ctx.View3D(l.v, int64(nKV), hd, nhkv, uint64(m.nCtx)*esize, uint64(m.nCtx)*uint64(hd)*esize, 0)
	}
	// The queries in chunks of attnChunk: where the batch is a
	// sequence's next tokens in the last cells (s.limited), chunk j's
	// tokens see no cell from nKV-n+j1 on, so it attends to those cells
	// only, the causal mask's lower triangle, and its scores stay small
	// enough for the cache.
	var attn *ggml.Tensor
	for j0 := int64(0); j0 < n; j0 += int64(attnChunk) {
		j1 := min(n, j0+int64(attnChunk))
		cells := int64(nKV)
		if s.limited && !p.NonCausal {
			cells = min(int64(nKV), int64(nKV)-n+j1)
		}
		qj := q
		mask := fullMask
		if j0 > 0 || j1 < n {
			qj = ctx.View3D(q, hd, nh, j1-j0, q.Nb()[1], q.Nb()[2], uint64(j0)*q.Nb()[2])
			mask = ctx.Cont(ctx.View2D(fullMask, cells, j1-j0, fullMask.Nb()[1], uint64(j0)*fullMask.Nb()[1]))
		}
		kj := ctx.View3D(l.k, hd, cells, nhkv, row, head, 0)                   // [hd, cells, kv heads]
		vj := ctx.View3D(vAll, cells, hd, nhkv, vAll.Nb()[1], vAll.Nb()[2], 0) // [cells, hd, kv heads]
		kq := ctx.MulMat(kj, ctx.Permute(qj, 0, 2, 1, 3))                      // [cells, j1-j0, heads]
		if p.Softcap > 0 {
			kq = ctx.Scale(ctx.Tanh(ctx.Scale(kq, 1/p.Softcap)), p.Softcap)
		}
		kq = ctx.SoftMaxExt(kq, mask, scale, 0)
		kqv := ctx.MulMat(vj, kq)                                             // [hd, j1-j0, heads]
		a := ctx.ContND(ctx.Permute(kqv, 0, 2, 1, 3), int64(c.QDim()), j1-j0) // [q, j1-j0]
		if attn == nil {
			attn = a
		} else {
			attn = ctx.Concat(attn, a, 1)
		}
	}
	return attn
}

// mask returns the batch's mask for a sliding window of window cells, or
// the causal mask for window 0; a window's mask is an input made at its
// first use, which setInputs then fills.
func (b *Batch) mask(window int) *ggml.Tensor {
	s := b.s
	if window == 0 {
		s.maskUsed = true
		return s.mask
	}
	if t, ok := s.windows[window]; ok {
		return t
	}
	ne := s.mask.Ne()
	name := fmt.Sprintf("inp_mask_swa%d", window)
	if window == nonCausal {
		name = "inp_mask_noncausal"
	}
	t := b.Ctx.NewTensor(s.mask.Type(), ne[0], ne[1]).SetName(name).SetInput()
	if s.windows == nil {
		s.windows = map[int]*ggml.Tensor{}
	}
	s.windows[window] = t
	return t
}

// build makes the graph of one batch: its inputs, which setInputs fills
// before each compute, and the Network's forward pass over them.
func (m *Model) build(nTokens, nKV, nOut int, limited bool) (*step, error) {
	c := m.Config
	ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: m.graphSize(), NoAlloc: true, Graph: true, GraphSize: m.graphSize()})
	if err != nil {
		return nil, err
	}
	s := &step{nTokens: nTokens, nKV: nKV, nOut: nOut, limited: limited, ctx: ctx}
	n := int64(nTokens)
	kvDim := int64(c.KVDim())

	// The index inputs are also marked as outputs, which keeps the
	// allocator from reusing their memory for later nodes: go-ggml checks
	// indices before compute and refuses a graph where another node
	// writes over them (whether before or after their reader).
	s.tokens = ctx.NewTensor(ggml.TypeI32, n).SetName("inp_tokens").SetInput().SetOutput()
	s.pos = ctx.NewTensor(ggml.TypeI32, n).SetName("inp_pos").SetInput()
	s.kIdx = ctx.NewTensor(ggml.TypeI64, n).SetName("inp_k_idx").SetInput().SetOutput()
	if nOut < nTokens {
		s.outIDs = ctx.NewTensor(ggml.TypeI32, int64(nOut)).SetName("inp_out_ids").SetInput().SetOutput()
	}
	// The fused kernel takes an f16 mask; the softmax of the products an
	// f32 one, which the CPU's softmax adds in a vector loop where an f16
	// mask is converted element by element (a fifth of a prompt's softmax).
	s.fused = m.fusedBatch(nTokens)
	if !m.flash {
		s.vIdx = ctx.NewTensor(ggml.TypeI64, n*kvDim).SetName("inp_v_idx").SetInput().SetOutput()
	}
	if s.fused {
		s.mask = ctx.NewTensor(ggml.TypeF16, int64(nKV), n).SetName("inp_mask").SetInput()
	} else {
		s.mask = ctx.NewTensor(ggml.TypeF32, int64(nKV), n).SetName("inp_mask").SetInput()
	}

	b := &Batch{Ctx: ctx, Tokens: s.tokens, Positions: s.pos, N: nTokens, m: m, s: s}
	s.logits = m.net.Forward(b)
	if err := ctx.Err(); err != nil {
		ctx.Close()
		return nil, err
	}
	if s.logits == nil {
		ctx.Close()
		return nil, fmt.Errorf("%w: model: the %s network's Forward returned no logits", ggml.ErrInvalid, c.Arch)
	}
	s.logits.SetName("logits").SetOutput()
	width := m.outWidth()
	if ne := s.logits.Ne(); ne[0] != int64(width) || ne[1] != int64(b.Outputs()) || ne[2] != 1 || ne[3] != 1 {
		ctx.Close()
		return nil, fmt.Errorf("%w: model: the %s network's output is %v, want [%d %d]", ggml.ErrInvalid, c.Arch, ne, width, b.Outputs())
	}
	// The stores into the cache are no source of what reads the cache
	// (those read the cache tensors themselves): the graph is expanded
	// with them first, layer by layer, so that ggml orders each layer's
	// stores before its attention, as llama.cpp does.
	if s.g, err = ctx.BuildGraph(append(b.stores, s.logits)...); err != nil {
		ctx.Close()
		return nil, err
	}
	return s, nil
}

// setInputs fills the inputs of a batch: its tokens, which have their
// cells and positions in the cache already.
func (m *Model) setInputs(s *step, u *ubatch) error {
	kvDim := m.Config.KVDim()
	s.hKIdx = s.hKIdx[:0]
	for _, c := range u.cell {
		s.hKIdx = append(s.hKIdx, int64(c))
	}
	// Value element (channel ch, token t) of the batch is element t·kvDim+ch
	// of v; in the transposed cache it lives at ch·nCtx + cell.
	s.hVIdx = s.hVIdx[:0]
	if s.vIdx != nil { // else flash attention: V's rows are K's
		for _, c := range u.cell {
			for ch := range kvDim {
				s.hVIdx = append(s.hVIdx, int64(ch)*int64(m.nCtx)+int64(c))
			}
		}
	}
	errs := []error{
		ggml.SetData(s.tokens, u.ids), ggml.SetData(s.pos, u.pos), ggml.SetData(s.kIdx, s.hKIdx),
	}
	if s.outIDs != nil {
		s.hOut = s.hOut[:0]
		for t, o := range u.out {
			if o {
				s.hOut = append(s.hOut, int32(t))
			}
		}
		errs = append(errs, ggml.SetData(s.outIDs, s.hOut))
	}
	if s.maskUsed {
		errs = append(errs, m.setMask(s, s.mask, u, 0))
	}
	if s.vIdx != nil {
		errs = append(errs, ggml.SetData(s.vIdx, s.hVIdx))
	}
	for w, t := range s.windows {
		errs = append(errs, m.setMask(s, t, u, w))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// nonCausal is the window key of the non-causal mask (Batch.mask).
const nonCausal = -1

// setMask fills the mask t of the batch's tokens: token t sees the cells
// of its sequence at its position and before (kvcache.visible), with a
// window only those fewer than window positions before it; with the
// window nonCausal, every cell of its sequence.
func (m *Model) setMask(s *step, t *ggml.Tensor, u *ubatch, window int) error {
	n, nKV := s.nTokens, s.nKV
	if cap(s.hMask) < n*nKV {
		s.hMask = make([]float32, n*nKV)
	}
	s.hMask = s.hMask[:n*nKV]
	inf := float32(math.Inf(-1))
	causal := window != nonCausal
	for tok := range n {
		row := s.hMask[tok*nKV : (tok+1)*nKV]
		seq, p := u.seq[tok], u.pos[tok]
		for j := range row {
			if m.kv.visible(j, seq, p, causal, window) {
				row[j] = 0
			} else {
				row[j] = inf
			}
		}
	}
	if t.Type() != ggml.TypeF16 {
		return ggml.SetData(t, s.hMask)
	}
	// 0 and -Inf in f16.
	s.hMask16 = slices.Grow(s.hMask16[:0], len(s.hMask))[:len(s.hMask)]
	for i, v := range s.hMask {
		s.hMask16[i] = 0
		if v != 0 {
			s.hMask16[i] = 0xfc00
		}
	}
	return ggml.SetData(t, s.hMask16)
}

// Eval runs the model on tokens, which follow sequence 0's tokens in the
// KV cache, and returns the logits: of the last token (VocabSize values),
// or, with all set, of every token (len(tokens)·VocabSize values, token by
// token). Without all, the slice is the model's own, overwritten by the
// next Eval: copy it to keep it. Up to BatchSize tokens go through the
// model in one compute.
// A graph is built only when the batch's shape changes; computes with the
// same shape (token-by-token generation within kvPad positions) reuse it
// and only copy in new inputs. ctx cancels the compute. On error the KV
// cache keeps the tokens it had before the call.
func (m *Model) Eval(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	if err := m.enter("Eval"); err != nil {
		return nil, err
	}
	defer m.leave()
	return m.eval(ctx, tokens, all)
}

// A Token is one token of a batch that Decode runs: its ID, the sequence
// it continues (0 to Sequences()-1), and whether Decode returns its
// logits.
type Token struct {
	ID     int32
	Seq    int
	Logits bool
}

// Decode runs a batch of tokens of any of the KV cache's sequences, as
// llama.cpp's llama_decode does: each token goes at its sequence's next
// position (SeqLen), the tokens of one sequence in the batch's order, and
// sees the tokens of its sequence before it and itself. The tokens of
// several sequences go through the model together, up to BatchSize in one
// compute, so that each weight read serves them all.
//
// It returns the logits of the tokens with Logits set, in the batch's
// order, VocabSize values each (an encoder's: each token's hidden state,
// of every token). The slice is the model's own, overwritten by the next
// call: copy it to keep it. ctx cancels the compute. On error the KV
// cache keeps the tokens it had before the call: a batch that does not
// fit in the cache's free cells, or takes a sequence past ContextSize
// positions, is an ErrContextFull error, and nothing runs.
func (m *Model) Decode(ctx context.Context, batch []Token) ([]float32, error) {
	if err := m.enter("Decode"); err != nil {
		return nil, err
	}
	defer m.leave()
	u := &m.ub
	u.reset()
	for _, t := range batch {
		if err := m.checkSeq("Decode", t.Seq); err != nil {
			return nil, err
		}
		u.ids, u.seq, u.out = append(u.ids, t.ID), append(u.seq, t.Seq), append(u.out, t.Logits)
	}
	return m.decode(ctx, u)
}

// ubatch is a batch's tokens as Decode runs them: their IDs, sequences
// and whether their logits are wanted, and once placed their positions
// and cells.
type ubatch struct {
	ids  []int32
	seq  []int
	out  []bool
	pos  []int32
	cell []int
}

func (u *ubatch) reset() {
	u.ids, u.seq, u.out, u.pos, u.cell = u.ids[:0], u.seq[:0], u.out[:0], u.pos[:0], u.cell[:0]
}

// slice returns tokens [i, j) of u.
func (u *ubatch) slice(i, j int) *ubatch {
	return &ubatch{ids: u.ids[i:j], seq: u.seq[i:j], out: u.out[i:j], pos: u.pos[i:j], cell: u.cell[i:j]}
}

// eval is Eval, in a call that entered the model.
func (m *Model) eval(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	u := &m.ub
	u.reset()
	for i, id := range tokens {
		u.ids, u.seq, u.out = append(u.ids, id), append(u.seq, 0), append(u.out, all || i == len(tokens)-1)
	}
	out, err := m.decode(ctx, u)
	if err != nil || !all {
		return out, err
	}
	return slices.Clone(out), nil
}

// decode is Decode, in a call that entered the model: it checks the
// batch, places its tokens in free cells, and runs it in computes of up
// to BatchSize tokens.
func (m *Model) decode(ctx context.Context, u *ubatch) ([]float32, error) {
	n := len(u.ids)
	if n == 0 {
		return nil, fmt.Errorf("%w: no tokens", ggml.ErrInvalid)
	}
	kv := m.kv
	if n > kv.free() {
		return nil, fmt.Errorf("%w: %d tokens, %d free cells in a cache of %d", ErrContextFull, n, kv.free(), m.nCtx)
	}
	if _, ok := m.net.(Encoder); ok {
		for i := range u.out {
			u.out[i] = true // an encoder's output is every token's state
		}
	}
	// Each token's position, its sequence's next; the sequences' state
	// before, to put back on error.
	next := slices.Clone(kv.next)
	hist := make([]int, len(kv.hist))
	for s, h := range kv.hist {
		hist[s] = len(h)
	}
	for i, id := range u.ids {
		if id < 0 || int(id) >= m.Config.VocabSize {
			return nil, fmt.Errorf("%w: token %d (at %d) outside the vocabulary of %d", ErrToken, id, i, m.Config.VocabSize)
		}
		s := u.seq[i]
		if next[s] >= m.nCtx {
			return nil, fmt.Errorf("%w: sequence %d: %d tokens after %d, in a context of %d", ErrContextFull, s, n, kv.next[s], m.nCtx)
		}
		u.pos = append(u.pos, int32(next[s]))
		next[s]++
	}
	copy(next, kv.next)
	// The cells: each sequence's next in its page of cells (kvcache.place),
	// in the batch's order; where they were before, to put back on error.
	cur := slices.Clone(kv.cur)
	for i := range u.ids {
		u.cell = append(u.cell, kv.place(u.seq[i]))
	}
	kv.unreserve(u.cell)
	undo := func() {
		copy(kv.cur, cur)
		for i, c := range u.cell {
			kv.drop(c, u.seq[i])
		}
		copy(kv.next, next)
		for s, l := range hist {
			kv.hist[s] = kv.hist[s][:l]
		}
	}
	nOut := 0
	for _, o := range u.out {
		if o {
			nOut++
		}
	}
	var out []float32
	for i := 0; i < n; i += m.nBatch {
		part := u.slice(i, min(n, i+m.nBatch))
		for t, c := range part.cell {
			s, p := part.seq[t], part.pos[t]
			kv.take(c, s, p)
			kv.next[s] = int(p) + 1
			if len(kv.hist[s]) == int(p) {
				kv.hist[s] = append(kv.hist[s], part.ids[t])
			}
		}
		logits, err := m.compute(ctx, part)
		if err != nil {
			undo()
			return nil, err
		}
		if i == 0 && len(part.ids) == n {
			return logits, nil // one compute: its logits as they are
		}
		if out == nil {
			out = slices.Grow(m.out[:0], nOut*m.outWidth())
		}
		out = append(out, logits...)
	}
	m.out = out
	return out, nil
}

// outWidth is the width of a token's output: the vocabulary's logits, or
// an Encoder's hidden state.
func (m *Model) outWidth() int {
	if _, ok := m.net.(Encoder); ok {
		return m.Config.EmbeddingLength
	}
	return m.Config.VocabSize
}

// compute runs one batch, its tokens in their cells already, and returns
// the logits of those with out set.
func (m *Model) compute(ctx context.Context, u *ubatch) ([]float32, error) {
	t0 := time.Now()
	n := len(u.ids)
	nOut := 0
	for _, o := range u.out {
		if o {
			nOut++
		}
	}
	if nOut == 0 {
		// Nothing wanted: the last token's logits are computed anyway
		// (a graph needs an output), and not returned.
		nOut = -1
	}
	pad := kvPad
	fused := m.fusedBatch(n)
	if n > 1 && !fused {
		pad = productsKVPad // a batch that attends by products: every cell it is given costs
	}
	nKV := min(m.nCtx, (m.kv.top()+pad-1)/pad*pad)
	limited := !fused && n > attnChunk && m.limited(u, nKV)
	graphOut := max(nOut, 1)
	s := m.step
	if s == nil || s.nTokens != n || s.nKV != nKV || s.nOut != graphOut || s.limited != limited {
		if s != nil {
			m.step = nil
			if err := m.sched.Reset(); err != nil {
				return nil, err
			}
			if err := s.ctx.Close(); err != nil {
				return nil, err
			}
		}
		var err error
		if s, err = m.build(n, nKV, graphOut, limited); err != nil {
			return nil, err
		}
		if err := m.sched.AllocGraph(s.g); err != nil {
			s.ctx.Close()
			return nil, fmt.Errorf("llama: allocating the graph: %w", err)
		}
		m.step = s
		m.stats.Graphs++
	}
	t1 := time.Now()
	if nOut < 0 {
		u.out[n-1] = true
		defer func() { u.out[n-1] = false }()
	}
	if err := m.setInputs(s, u); err != nil {
		return nil, err
	}
	t2 := time.Now()
	inGGML := m.sched.ComputeTime()
	if err := m.sched.Compute(ctx, s.g); err != nil {
		return nil, err
	}
	t3 := time.Now()
	inGGML = m.sched.ComputeTime() - inGGML
	// Into a buffer of the model's, reused: a fresh slice of the
	// vocabulary's size per token costs more than the copy (allocation,
	// zeroing, garbage collection).
	if n := int(s.logits.Elements()); cap(m.logits) < n {
		m.logits = make([]float32, n)
	}
	logits := m.logits[:s.logits.Elements()]
	if err := ggml.DataInto(s.logits, logits); err != nil {
		return nil, err
	}
	if nOut < 0 {
		logits = logits[:0]
	}
	for _, be := range m.Backends() {
		if size, err := m.sched.BufferSize(be); err == nil && size > m.peak[be] {
			m.peak[be] = size
		}
	}
	t4 := time.Now()
	m.stats.Computes++
	m.stats.Tokens += n
	m.stats.Build += t1.Sub(t0)
	m.stats.Input += t2.Sub(t1)
	m.stats.Compute += inGGML
	m.stats.Checks += t3.Sub(t2) - inGGML
	m.stats.Output += t4.Sub(t3)
	return logits, nil
}

// limited reports whether a batch attending by products over nKV cells
// may give each chunk of attnChunk queries only the cells before
// nKV-n+(the chunk's end) (step.limited): whether no token sees a cell
// from there on. It holds for a sequence's next tokens in the last cells,
// a prompt's.
func (m *Model) limited(u *ubatch, nKV int) bool {
	n := len(u.ids)
	for t := range n {
		end := nKV - n + (t/attnChunk+1)*attnChunk // the first cell its chunk does not get
		for j := nKV - 1; j >= end && j >= 0; j-- {
			if m.kv.visible(j, u.seq[t], u.pos[t], true, 0) {
				return false
			}
		}
	}
	return true
}

// WriteDot writes the graph of the last batch computed (after generation,
// one token's) in Graphviz's dot language to w, each node coloured by the
// backend the scheduler placed it on (ggml.Graph.WriteDot).
func (m *Model) WriteDot(w io.Writer) error {
	if err := m.enter("WriteDot"); err != nil {
		return err
	}
	defer m.leave()
	if m.step == nil {
		return fmt.Errorf("%w: WriteDot: nothing computed yet", ggml.ErrInvalid)
	}
	return m.step.g.WriteDot(w, &ggml.DotOptions{Placement: func(t *ggml.Tensor) string {
		if be := m.sched.TensorBackend(t); be != nil {
			return be.Name()
		}
		return ""
	}})
}
