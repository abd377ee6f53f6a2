package modeltest

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"

	"github.com/go-ggml/ggml/model"
)

// Reference is a model's forward pass in float64, for tests: the weights
// of the file (quantized ones dequantized with ggml's own to-float
// conversion, the values ggml computes with) and a forward pass written
// from the architecture's definition, one token at a time, with no ggml op.
type Reference struct {
	c              model.Config
	emb, out       matrix
	outN           []float64
	ropeFreqs      []float64
	neox           bool      // RoPE's NeoX mode: pairs (i, i+RopeDim/2), as Qwen's
	ropeLong       []float64 // Phi-3's long RoPE factors (UseLongRopeFactors)
	gemma          *gemmaRef
	layers         []refLayer
	cacheK, cacheV [][][]float64 // [layer][entry][kvDim]
	cachePos       []int         // each entry's position
	next           int           // the next token's position
	// RoundCacheToHalf rounds keys and values to f16 as a model with an
	// f16 cache (model.CacheF16) does.
	RoundCacheToHalf bool
	// QuantCache, if q8_0 or q4_0, rounds keys and values to that type,
	// and the queries to q8_0 unless F32Queries is set, as ggml's CPU
	// flash attention does with a model of that cache (model.CacheQ8_0,
	// model.CacheQ4_0): the provider's kernel multiplies q8_0 queries
	// with the keys' blocks, go-ggml's tiled kernel (ggml.OwnCPUKernels)
	// f32 ones with the dequantized keys; both sum the values in f32.
	QuantCache ggml.Type
	F32Queries bool
	// RouterGap is the smallest gap, since Reset, between the router
	// logits of the last expert a token used and the first it did not
	// (mixtures of experts): where it is small, a rounding may pick the
	// other expert.
	RouterGap float64
	// emulate rounds the activations before each product with a weight
	// matrix to the type ggml's CPU backend converts them to for that
	// matrix's type (activationType): the CPU's numerics, which a tight
	// tolerance needs (set with EmulateCPU).
	emulate bool
}

// matrix is a weight matrix, dequantized, and its type in the file.
type matrix struct {
	w []float64
	t ggml.Type
	// mins are the blocks' f16 minimums m, row by row, for the types
	// whose values are d·q + m (q4_1, q5_1): the CPU's dot product
	// multiplies m with the activations' f16 sum instead (mvQ8_1).
	mins []float64
}

// experts adds to x the mixture of layer l's experts of h, as llama.cpp's
// build_moe_ffn with softmax gating and normalized weights: the router's
// softmax, the used most likely experts (the lower index first among
// equals), their probabilities over their sum, each times its SwiGLU
// feed-forward.
func (r *Reference) experts(l refLayer, h, x []float64) {
	logits := r.mv(l.router, nil, h)
	top := math.Inf(-1)
	for _, v := range logits {
		top = math.Max(top, v)
	}
	probs := make([]float64, len(logits))
	sum := 0.0
	for i, v := range logits {
		probs[i] = math.Exp(v - top)
		sum += probs[i]
	}
	order := make([]int, len(probs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return probs[order[a]] > probs[order[b]] })
	chosen := order[:l.used]
	if l.used < len(order) {
		r.RouterGap = min(r.RouterGap, logits[order[l.used-1]]-logits[order[l.used]])
	}
	wsum := 0.0
	for _, j := range chosen {
		wsum += probs[j] / sum
	}
	wsum = math.Max(wsum, 6.103515625e-5)
	for _, j := range chosen {
		g, u := r.mv(l.eg[j], nil, h), r.mv(l.eu[j], nil, h)
		for i := range g {
			g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
		w := probs[j] / sum / wsum
		for i, d := range r.mv(l.ed[j], nil, g) {
			x[i] += w * d
		}
	}
}

// rows returns rows [from, to) of m, a matrix of rows of in values (a
// fused matrix's part).
func (m matrix) rows(from, to, in int) matrix {
	if len(m.w) < to*in {
		return matrix{t: m.t}
	}
	out := matrix{w: m.w[from*in : to*in], t: m.t}
	if m.mins != nil {
		per := len(m.mins) / (len(m.w) / in)
		out.mins = m.mins[from*per : to*per]
	}
	return out
}

// UseLongRopeFactors makes the reference rotate with Phi-3's long RoPE
// factors (rope_factors_long), as a model whose context is longer than
// the original one does; by default it takes the short ones.
func (r *Reference) UseLongRopeFactors() { r.ropeFreqs = r.ropeLong }

// EmulateCPU makes the reference round activations as ggml's CPU backend
// does.
func (r *Reference) EmulateCPU() { r.emulate = true }

// mv is w·x + b (b may be nil) with the activations rounded as
// configured.
func (r *Reference) mv(w matrix, b, x []float64) []float64 { return mv(r.emulate, w, b, x) }

// mv is w·x + b (b may be nil), with the activations rounded as ggml's
// CPU rounds them when emulate is set.
func mv(emulate bool, w matrix, b, x []float64) []float64 {
	var y []float64
	switch {
	case emulate && activationType(w.t) == ggml.TypeQ8_1:
		y = mvQ8_1(w, x)
	case emulate:
		y = matVec(w.w, roundTo(activationType(w.t), x))
	default:
		y = matVec(w.w, x)
	}
	for i := range b {
		y[i] += b[i]
	}
	return y
}

type refLayer struct {
	attnN, ffnN                []float64
	wq, wk, wv, wo, wg, wu, wd matrix
	bq, bk, bv, bo, bg, bu, bd []float64 // biases, nil when the file has none
	qNorm, kNorm               []float64 // per-head RMS norms of q and k (qwen3), or nil
	attnPost, ffnPost          []float64 // norms after the sub-layers (gemma), or nil
	router                     matrix    // a mixture of experts' router (ffn_gate_inp), or none
	eg, eu, ed                 []matrix  // each expert's gate, up and down
	used                       int       // experts a token
}

// gemmaRef is what Gemma 2 and 3 do beyond the Llama family, read from
// the file's keys with llama.cpp's defaults: the embeddings scaled by
// √e, norms after each sub-layer, GELU gates, the queries scaled,
// sliding-window layers with their own RoPE base and scale, attention and
// output logits capped.
type gemmaRef struct {
	window, pattern           int
	baseSWA, scaleSWA         float64
	attnCap, finalCap, qScale float64
}

func readGemma(f *gguf.File, c model.Config) (*gemmaRef, error) {
	arch := c.Arch
	g := &gemmaRef{pattern: 2, baseSWA: float64(c.RopeFreqBase), scaleSWA: float64(c.RopeFreqScale), attnCap: 50, finalCap: 30}
	if arch == "gemma3" {
		g = &gemmaRef{pattern: 6, baseSWA: 10000, scaleSWA: 1}
	} else {
		g.window = 4096
	}
	num := func(key string, into *float64) error {
		v, ok := f.Value(arch + "." + key)
		if !ok {
			return nil
		}
		switch x := v.Any().(type) {
		case float32:
			*into = float64(x)
		case uint32:
			*into = float64(x)
		default:
			return fmt.Errorf("%s.%s is a %v", arch, key, v.Type())
		}
		return nil
	}
	w, pat := float64(g.window), float64(g.pattern)
	for _, k := range []struct {
		key  string
		into *float64
	}{{"attention.sliding_window", &w}, {"attention.sliding_window_pattern", &pat}, {"rope.freq_base_swa", &g.baseSWA}, {"final_logit_softcapping", &g.finalCap}} {
		if err := num(k.key, k.into); err != nil {
			return nil, err
		}
	}
	if arch == "gemma2" {
		if err := num("attn_logit_softcapping", &g.attnCap); err != nil {
			return nil, err
		}
	}
	g.window, g.pattern = int(w), int(pat)
	g.qScale = 1 / math.Sqrt(float64(c.HeadDim))
	if arch == "gemma2" && c.BlockCount == 46 || arch == "gemma3" && c.BlockCount == 62 {
		g.qScale = 1 / math.Sqrt(float64(c.EmbeddingLength/c.HeadCount))
	}
	return g, nil
}

// sliding reports whether layer il attends through a sliding window.
func (g *gemmaRef) sliding(il int) bool {
	return g != nil && g.window > 0 && (g.pattern == 0 || il%g.pattern < g.pattern-1)
}

// softcap is c·tanh(x/c), or x for c = 0.
func softcap(x, c float64) float64 {
	if c == 0 {
		return x
	}
	return c * math.Tanh(x/c)
}

// geluCPU is GELU's tanh approximation as ggml's CPU computes it: from a
// table of f16 inputs to f16 outputs (GGML_GELU_FP16), x itself from 10 on
// and 0 up to -10.
func geluCPU(x float64) float64 {
	switch {
	case x <= -10:
		return 0
	case x >= 10:
		return x
	}
	h := roundTo(ggml.TypeF16, []float64{x})[0]
	y := 0.5 * h * (1 + math.Tanh(math.Sqrt(2/math.Pi)*h*(1+0.044715*h*h)))
	return roundTo(ggml.TypeF16, []float64{y})[0]
}

// ReadReference reads the weights of a file of a Llama-family
// architecture (llama, qwen2, qwen3, gemma2, gemma3) into a Reference.
func ReadReference(f *gguf.File) (*Reference, error) {
	c, err := model.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	r := &Reference{c: c, neox: c.Arch != "llama"}
	if c.Arch == "gemma2" || c.Arch == "gemma3" {
		if r.gemma, err = readGemma(f, c); err != nil {
			return nil, err
		}
	}
	tr := &tensorReader{f: f}
	must, vec, opt := tr.must, tr.vec, tr.opt
	r.emb = must("token_embd.weight")
	r.outN = vec("output_norm.weight")
	r.out = r.emb
	if _, ok := f.Tensor("output.weight"); ok {
		r.out = must("output.weight")
	}
	r.ropeFreqs = opt("rope_freqs.weight")
	if c.Arch == "phi3" {
		r.ropeFreqs, r.ropeLong = opt("rope_factors_short.weight"), opt("rope_factors_long.weight")
	}
	for i := range c.BlockCount {
		p := "blk." + strconv.Itoa(i) + "."
		l := refLayer{
			attnN: vec(p + "attn_norm.weight"), wo: must(p + "attn_output.weight"),
			ffnN: vec(p + "ffn_norm.weight"),
			bq:   opt(p + "attn_q.bias"), bk: opt(p + "attn_k.bias"), bv: opt(p + "attn_v.bias"), bo: opt(p + "attn_output.bias"),
			bg: opt(p + "ffn_gate.bias"), bu: opt(p + "ffn_up.bias"), bd: opt(p + "ffn_down.bias"),
			qNorm: opt(p + "attn_q_norm.weight"), kNorm: opt(p + "attn_k_norm.weight"),
			attnPost: opt(p + "post_attention_norm.weight"), ffnPost: opt(p + "post_ffw_norm.weight"),
		}
		e, q, k, ff := c.EmbeddingLength, c.QDim(), c.KVDim(), c.FeedForward
		if _, fused := f.Tensor(p + "attn_qkv.weight"); fused { // phi3: q, k, v as rows of one matrix
			qkv := must(p + "attn_qkv.weight")
			l.wq, l.wk, l.wv = qkv.rows(0, q, e), qkv.rows(q, q+k, e), qkv.rows(q+k, q+2*k, e)
		} else {
			l.wq, l.wk, l.wv = must(p+"attn_q.weight"), must(p+"attn_k.weight"), must(p+"attn_v.weight")
		}
		if _, moe := f.Tensor(p + "ffn_gate_inp.weight"); moe {
			l.router = must(p + "ffn_gate_inp.weight")
			ti, _ := f.Tensor(p + "ffn_gate_exps.weight")
			g, u, d := must(p+"ffn_gate_exps.weight"), must(p+"ffn_up_exps.weight"), must(p+"ffn_down_exps.weight")
			if len(ti.Shape) == 3 {
				ffx := int(ti.Shape[1])
				for j := range int(ti.Shape[2]) {
					l.eg = append(l.eg, g.rows(j*ffx, (j+1)*ffx, e))
					l.eu = append(l.eu, u.rows(j*ffx, (j+1)*ffx, e))
					l.ed = append(l.ed, d.rows(j*e, (j+1)*e, ffx))
				}
			}
			if v, ok := f.Value(c.Arch + ".expert_used_count"); ok {
				if n, ok := v.Any().(uint32); ok {
					l.used = int(n)
				}
			}
		} else if _, gate := f.Tensor(p + "ffn_gate.weight"); gate {
			l.wg, l.wu, l.wd = must(p+"ffn_gate.weight"), must(p+"ffn_up.weight"), must(p+"ffn_down.weight")
		} else { // phi3: the gate's rows, then the up projection's
			up := must(p + "ffn_up.weight")
			l.wg, l.wu, l.wd = up.rows(0, ff, e), up.rows(ff, 2*ff, e), must(p+"ffn_down.weight")
		}
		r.layers = append(r.layers, l)
	}
	if tr.err != nil {
		return nil, tr.err
	}
	r.Reset()
	return r, nil
}

// tensorReader reads a file's tensors for a reference, keeping the first
// error.
type tensorReader struct {
	f   *gguf.File
	err error
}

// must reads tensor name (readMatrix).
func (t *tensorReader) must(name string) matrix {
	m, err := readMatrix(t.f, name)
	if err != nil && t.err == nil {
		t.err = err
	}
	return m
}

// vec reads tensor name's values.
func (t *tensorReader) vec(name string) []float64 { return t.must(name).w }

// opt reads tensor name's values, or returns nil where the file has none.
func (t *tensorReader) opt(name string) []float64 {
	if _, ok := t.f.Tensor(name); !ok {
		return nil
	}
	return t.vec(name)
}

// readMatrix reads tensor name of f as a matrix: its values as float64,
// quantized ones dequantized by ggml's own to-float conversion.
func readMatrix(f *gguf.File, name string) (matrix, error) {
	ti, ok := f.Tensor(name)
	if !ok {
		return matrix{}, fmt.Errorf("no tensor %s", name)
	}
	data, err := f.TensorData(name)
	if err != nil {
		return matrix{}, err
	}
	var vals []float32
	if ti.Type == ggml.TypeF32 {
		vals = make([]float32, len(data)/4)
		for i := range vals {
			vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	} else if vals, err = ggml.Dequantize(ti.Type, data); err != nil {
		return matrix{}, err
	}
	out := make([]float64, len(vals))
	for i, v := range vals {
		out[i] = float64(v)
	}
	m := matrix{w: out, t: ti.Type}
	if ti.Type == ggml.TypeQ4_1 || ti.Type == ggml.TypeQ5_1 {
		m.mins, err = blockMins(ti.Type, data)
	}
	return m, err
}

// Reset empties the reference's KV cache.
func (r *Reference) Reset() {
	r.cacheK = make([][][]float64, r.c.BlockCount)
	r.cacheV = make([][][]float64, r.c.BlockCount)
	r.cachePos, r.next = nil, 0
	r.RouterGap = math.Inf(1)
}

// Remove takes the tokens at positions [p0, p1) out of the reference's
// KV cache, as model.Model.SeqRemove does: the later tokens keep their
// positions, and the next goes after the highest kept.
func (r *Reference) Remove(p0, p1 int) {
	r.keepOnly(func(i int) bool { return r.cachePos[i] < p0 || r.cachePos[i] >= p1 })
}

// keepOnly keeps the cache's entries i where keep(i), and sets the next
// position after the highest kept.
func (r *Reference) keepOnly(keep func(i int) bool) {
	for il := range r.cacheK {
		var k, v [][]float64
		for i := range r.cacheK[il] {
			if keep(i) {
				k, v = append(k, r.cacheK[il][i]), append(v, r.cacheV[il][i])
			}
		}
		r.cacheK[il], r.cacheV[il] = k, v
	}
	var pos []int
	r.next = 0
	for i, p := range r.cachePos {
		if keep(i) {
			pos = append(pos, p)
			r.next = max(r.next, p+1)
		}
	}
	r.cachePos = pos
}

// Shift adds delta to the positions [p0, p1) of the reference's KV cache
// and rotates those tokens' cached keys by delta, as model.Model.SeqShift
// does (tokens moved below 0 leave it): RoPE's angles add, so each key
// becomes its own rotation at the new position, and what the token took
// in from tokens since removed stays in it. The rotated keys are rounded
// as the model's cache rounds them (RoundCacheToHalf, QuantCache).
func (r *Reference) Shift(p0, p1, delta int) {
	c := r.c
	gone := map[int]bool{} // cache indices
	for i, p := range r.cachePos {
		if p < p0 || p >= p1 {
			continue
		}
		if p+delta < 0 {
			gone[i] = true
			continue
		}
		r.cachePos[i] = p + delta
		for il := range r.cacheK {
			k := slices.Clone(r.cacheK[il][i])
			r.rotate(k, c.HeadCountKV, delta, il, false)
			if r.RoundCacheToHalf {
				k = roundTo(ggml.TypeF16, k)
			}
			if r.QuantCache == ggml.TypeQ8_0 || r.QuantCache == ggml.TypeQ4_0 {
				k = roundTo(r.QuantCache, k)
			}
			r.cacheK[il][i] = k
		}
	}
	r.keepOnly(func(i int) bool { return !gone[i] })
}

// matVec returns w·x for w stored as ggml does: rows of len(x) values, one
// per output.
func matVec(w, x []float64) []float64 {
	n := len(w) / len(x)
	y := make([]float64, n)
	for o := range n {
		row := w[o*len(x) : (o+1)*len(x)]
		s := 0.0
		for i, v := range x {
			s += row[i] * v
		}
		y[o] = s
	}
	return y
}

func rmsNorm(x, w []float64, eps float64) []float64 {
	ss := 0.0
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = v * inv * w[i]
	}
	return y
}

// rope rotates each head's pairs (2i, 2i+1) (NeoX: (i, i+RopeDim/2)), i < RopeDim/2, by pos·θ_i with
// θ_i = scale·base^(-2i/RopeDim) / factor_i: RoPE's "normal" mode, the one
// llama.cpp uses for Llama (its converter permutes Q and K to match). With
// YaRN (RopeExtFactor), as ggml's rope_yarn: θ mixes the interpolated and
// the extrapolated angle by a ramp over the correction dimensions, and sin
// and cos are scaled by RopeAttnFactor·(1+0.1·ln(1/scale)).
func (r *Reference) rope(x []float64, heads int, pos int, il int) { r.rotate(x, heads, pos, il, true) }

// rotate is rope; without scaled, sin and cos are not scaled (the
// rotation alone, which Shift applies to keys that have been scaled).
func (r *Reference) rotate(x []float64, heads int, pos int, il int, scaled bool) {
	c := r.c
	d := float64(c.RopeDim)
	base, scale := float64(c.RopeFreqBase), float64(c.RopeFreqScale)
	if r.gemma.sliding(il) {
		base, scale = r.gemma.baseSWA, r.gemma.scaleSWA
	}
	corrDim := func(beta float64) float64 {
		return d * math.Log(float64(c.RopeCtxOrig)/(beta*2*math.Pi)) / (2 * math.Log(base))
	}
	lo, hi := max(0, math.Floor(corrDim(32))), min(d-1, math.Ceil(corrDim(1)))
	for h := range heads {
		v := x[h*c.HeadDim : (h+1)*c.HeadDim]
		for i := range c.RopeDim / 2 {
			extrap := float64(pos) * math.Pow(base, -2*float64(i)/d)
			if r.ropeFreqs != nil {
				extrap /= r.ropeFreqs[i]
			}
			theta, mscale := scale*extrap, float64(c.RopeAttnFactor)
			if ext := float64(c.RopeExtFactor); ext != 0 {
				y := (float64(i) - lo) / max(0.001, hi-lo)
				ramp := (1 - min(1, max(0, y))) * ext
				theta = theta*(1-ramp) + extrap*ramp
				mscale *= 1 + 0.1*math.Log(1/scale)
			}
			sin, cos := math.Sincos(theta)
			if scaled {
				sin, cos = sin*mscale, cos*mscale
			}
			i0, i1 := 2*i, 2*i+1
			if r.neox {
				i0, i1 = i, i+c.RopeDim/2
			}
			a, b := v[i0], v[i1]
			v[i0], v[i1] = a*cos-b*sin, a*sin+b*cos
		}
	}
}

// roundTo returns x rounded to type t and back, as ggml rounds the
// activations it multiplies with weights of a type whose dot product
// takes another type (activationType).
func roundTo(t ggml.Type, x []float64) []float64 {
	switch t {
	case ggml.TypeF32:
		return x
	case ggml.TypeQ8_K:
		return roundQ8K(x)
	}
	f := make([]float32, len(x))
	for i, v := range x {
		f[i] = float32(v)
	}
	q, err := ggml.Quantize(t, f, int64(len(f)), nil)
	if err != nil {
		panic(err)
	}
	if f, err = ggml.Dequantize(t, q); err != nil {
		panic(err)
	}
	y := make([]float64, len(x))
	for i, v := range f {
		y[i] = float64(v)
	}
	return y
}

// roundQ8K rounds x as ggml's q8_K does, the CPU's format for activations
// multiplied with k-quant weights, which Quantize does not produce: per
// block of 256, with m the value of largest magnitude, each value v
// becomes min(127, round(v·s))/s with s = -127/m in float32 (round half to
// even), so m itself becomes -127/s.
func roundQ8K(x []float64) []float64 {
	const block = 256
	if len(x)%block != 0 {
		panic(fmt.Sprintf("q8_K rounds rows of multiples of %d, not %d", block, len(x)))
	}
	y := make([]float64, len(x))
	for b := 0; b < len(x); b += block {
		var amax, m float32
		for _, v := range x[b : b+block] {
			if a := float32(math.Abs(v)); a > amax {
				amax, m = a, float32(v)
			}
		}
		if amax == 0 {
			continue
		}
		s := float32(-127) / m
		d := 1 / s
		for i, v := range x[b : b+block] {
			q := math.RoundToEven(float64(float32(s * float32(v))))
			y[b+i] = min(q, 127) * float64(d)
		}
	}
	return y
}

// blockMins returns the f16 minimum m of each block of data, of type t:
// q4_1 or q5_1, whose blocks begin with their f16 scale d and then m.
func blockMins(t ggml.Type, data []byte) ([]float64, error) {
	size := int(t.Size())
	if len(data)%size != 0 {
		return nil, fmt.Errorf("%d bytes of %v: not whole blocks of %d", len(data), t, size)
	}
	half := make([]byte, 0, 2*len(data)/size)
	for b := 0; b < len(data); b += size {
		half = append(half, data[b+2:b+4]...)
	}
	f, err := ggml.Dequantize(ggml.TypeF16, half)
	if err != nil {
		return nil, err
	}
	mins := make([]float64, len(f))
	for i, v := range f {
		mins[i] = float64(v)
	}
	return mins, nil
}

// roundQ8_1 rounds x as ggml's CPU backend (x86, AVX2) does to q8_1, its
// format for activations multiplied with q4_1 and q5_1 weights: per block
// of 32, with a the largest magnitude in float32, each value v becomes
// q·f16(d) with d = a/127 and q = round(v·(127/a)) (float32, round half to
// even), and the block keeps s = f16(d·Σq), the sum of its rounded values
// in f16, d there still in float32. It returns the rounded values and
// each block's s.
func roundQ8_1(x []float64) (y, s []float64) {
	const block = 32
	if len(x)%block != 0 {
		panic(fmt.Sprintf("q8_1 rounds rows of multiples of %d, not %d", block, len(x)))
	}
	d := make([]float64, len(x)/block)
	s = make([]float64, len(x)/block)
	q := make([]float64, len(x))
	for b := range d {
		var amax float32
		for _, v := range x[b*block : (b+1)*block] {
			amax = max(amax, float32(math.Abs(v)))
		}
		if amax == 0 {
			continue
		}
		db, id := amax/127, 127/amax
		sum := 0.0
		for i, v := range x[b*block : (b+1)*block] {
			q[b*block+i] = math.RoundToEven(float64(float32(v) * id))
			sum += q[b*block+i]
		}
		d[b], s[b] = float64(db), float64(db*float32(sum))
	}
	d, s = roundTo(ggml.TypeF16, d), roundTo(ggml.TypeF16, s)
	y = make([]float64, len(x))
	for i, v := range q {
		y[i] = v * d[i/block]
	}
	return y, s
}

// mvQ8_1 is w·x as ggml's CPU backend computes it for q4_1 and q5_1
// weights (vec_dot_q4_1_q8_1, vec_dot_q5_1_q8_1): x rounded to q8_1
// (roundQ8_1), and per block d·q of the weights times the rounded
// activations plus m·s, the block's minimum times the activations' f16
// sum s in place of the sum of the rounded values.
func mvQ8_1(w matrix, x []float64) []float64 {
	const block = 32
	xr, s := roundQ8_1(x)
	// w.w holds d·q + m: take m·Σ(rounded x) back out, put m·s in.
	diff := make([]float64, len(s))
	for b := range diff {
		diff[b] = s[b]
		for _, v := range xr[b*block : (b+1)*block] {
			diff[b] -= v
		}
	}
	y := matVec(w.w, xr)
	for o := range y {
		for b, e := range diff {
			y[o] += w.mins[o*len(diff)+b] * e
		}
	}
	return y
}

// activationType is the type ggml's CPU backend converts activations to
// before multiplying them with weights of type t (the vec_dot_type of its
// type traits): q8_K for the k-quants and iq4_xs, q8_0 for the other
// 32-blocks, q8_1 for q4_1 and q5_1 (whose values are q8_0's, plus each
// block's f16 sum: mvQ8_1), the type itself for f16 and bf16.
func activationType(t ggml.Type) ggml.Type {
	switch t {
	case ggml.TypeF16, ggml.TypeBF16:
		return t
	case ggml.TypeQ8_0, ggml.TypeQ4_0, ggml.TypeQ5_0, ggml.TypeIQ4_NL:
		return ggml.TypeQ8_0
	case ggml.TypeQ4_1, ggml.TypeQ5_1:
		return ggml.TypeQ8_1
	case ggml.TypeQ2_K, ggml.TypeQ3_K, ggml.TypeQ4_K, ggml.TypeQ5_K, ggml.TypeQ6_K, ggml.TypeIQ4_XS:
		return ggml.TypeQ8_K
	case ggml.TypeF32:
		return ggml.TypeF32
	}
	panic(fmt.Sprintf("the reference does not know the CPU's activation type for %v weights", t))
}

// Next runs one token at the next position and returns its logits.
func (r *Reference) Next(tok int32) []float64 {
	c := r.c
	e, hd, eps := c.EmbeddingLength, c.HeadDim, float64(c.RMSEps)
	pos := r.next
	r.next++
	r.cachePos = append(r.cachePos, pos)
	x := append([]float64(nil), r.emb.w[int(tok)*e:(int(tok)+1)*e]...)
	g := r.gemma
	if g != nil {
		s := float64(float32(math.Sqrt(float64(e))))
		for i := range x {
			x[i] *= s
		}
	}
	var attnCap float64
	if g != nil {
		attnCap = g.attnCap
	}
	for il, l := range r.layers {
		h := rmsNorm(x, l.attnN, eps)
		q, k, v := r.mv(l.wq, l.bq, h), r.mv(l.wk, l.bk, h), r.mv(l.wv, l.bv, h)
		if l.qNorm != nil {
			for hh := range c.HeadCount {
				copy(q[hh*hd:], rmsNorm(q[hh*hd:(hh+1)*hd], l.qNorm, eps))
			}
			for hh := range c.HeadCountKV {
				copy(k[hh*hd:], rmsNorm(k[hh*hd:(hh+1)*hd], l.kNorm, eps))
			}
		}
		r.rope(q, c.HeadCount, pos, il)
		r.rope(k, c.HeadCountKV, pos, il)
		qScale := 1 / math.Sqrt(float64(hd))
		if g != nil {
			for i := range q {
				q[i] *= g.qScale
			}
			qScale = 1
		}
		if r.RoundCacheToHalf {
			k, v = roundTo(ggml.TypeF16, k), roundTo(ggml.TypeF16, v)
		}
		if r.QuantCache == ggml.TypeQ8_0 || r.QuantCache == ggml.TypeQ4_0 {
			k, v = roundTo(r.QuantCache, k), roundTo(r.QuantCache, v)
			if !r.F32Queries {
				q = roundTo(ggml.TypeQ8_0, q)
			}
		}
		r.cacheK[il] = append(r.cacheK[il], k)
		r.cacheV[il] = append(r.cacheV[il], v)
		attn := make([]float64, c.QDim())
		group := c.HeadCount / c.HeadCountKV
		for hh := range c.HeadCount {
			kvh := hh / group
			qh := q[hh*hd : (hh+1)*hd]
			scores := make([]float64, len(r.cacheK[il]))
			top := math.Inf(-1)
			for j := range scores {
				if g.sliding(il) && pos-r.cachePos[j] >= g.window {
					scores[j] = math.Inf(-1)
					continue
				}
				kj := r.cacheK[il][j][kvh*hd : (kvh+1)*hd]
				s := 0.0
				for d := range hd {
					s += qh[d] * kj[d]
				}
				scores[j] = softcap(s, attnCap) * qScale
				top = math.Max(top, scores[j])
			}
			sum := 0.0
			for j := range scores {
				scores[j] = math.Exp(scores[j] - top)
				sum += scores[j]
			}
			for j, p := range scores {
				vj := r.cacheV[il][j][kvh*hd : (kvh+1)*hd]
				for d := range hd {
					attn[hh*hd+d] += p / sum * vj[d]
				}
			}
		}
		o := r.mv(l.wo, l.bo, attn)
		if l.attnPost != nil {
			o = rmsNorm(o, l.attnPost, eps)
		}
		for i := range o {
			x[i] += o[i]
		}
		h = rmsNorm(x, l.ffnN, eps)
		if l.router.w != nil {
			r.experts(l, h, x)
			continue
		}
		gate, u := r.mv(l.wg, l.bg, h), r.mv(l.wu, l.bu, h)
		for i := range gate {
			if g != nil {
				gate[i] = geluCPU(gate[i]) * u[i]
			} else {
				gate[i] = gate[i] / (1 + math.Exp(-gate[i])) * u[i]
			}
		}
		d := r.mv(l.wd, l.bd, gate)
		if l.ffnPost != nil {
			d = rmsNorm(d, l.ffnPost, eps)
		}
		for i := range d {
			x[i] += d[i]
		}
	}
	logits := r.mv(r.out, nil, rmsNorm(x, r.outN, eps))
	if g != nil {
		for i := range logits {
			logits[i] = softcap(logits[i], g.finalCap)
		}
	}
	return logits
}

// RopeFreqs returns the RoPE frequency factors the reference read
// (rope_freqs.weight), or nil.
func (r *Reference) RopeFreqs() []float64 { return r.ropeFreqs }
