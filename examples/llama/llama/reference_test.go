package llama

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
)

// refModel is the same Llama model in float64, for reference: the weights
// of the file (quantized ones dequantized with ggml's own to-float
// conversion, the values ggml computes with) and a forward pass written
// from the architecture's definition, one token at a time, with no ggml op.
type refModel struct {
	c                Config
	emb, out, outN   []float64
	ropeFreqs        []float64
	layers           []refLayer
	cacheK, cacheV   [][][]float64 // [layer][position][kvDim]
	roundCacheToHalf bool          // the model's cache is f16: round keys and values as it does
	// act, when not f32, is the type the activations are rounded to
	// before each product with a weight matrix: the CPU backend's
	// numerics, which a tight tolerance needs (set with emulateCPU).
	act ggml.Type
}

// emulateCPU makes the reference round activations as ggml's CPU backend
// does for weights of type t.
func (r *refModel) emulateCPU(t ggml.Type) { r.act = activationType(t) }

// mv is matVec with the activations rounded as configured.
func (r *refModel) mv(w, x []float64) []float64 { return matVec(w, roundTo(r.act, x)) }

type refLayer struct {
	attnN, wq, wk, wv, wo, ffnN, wg, wu, wd []float64
}

func readRef(f *gguf.File) (*refModel, error) {
	c, err := ReadConfig(f)
	if err != nil {
		return nil, err
	}
	get := func(name string) ([]float64, error) {
		ti, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("no tensor %s", name)
		}
		data, err := f.TensorData(name)
		if err != nil {
			return nil, err
		}
		var vals []float32
		if ti.Type == ggml.TypeF32 {
			vals = make([]float32, len(data)/4)
			for i := range vals {
				vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
		} else if vals, err = ggml.Dequantize(ti.Type, data); err != nil {
			return nil, err
		}
		out := make([]float64, len(vals))
		for i, v := range vals {
			out[i] = float64(v)
		}
		return out, nil
	}
	r := &refModel{c: c}
	var errs []error
	must := func(name string) []float64 {
		v, err := get(name)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	r.emb = must("token_embd.weight")
	r.outN = must("output_norm.weight")
	r.out = r.emb
	if _, ok := f.Tensor("output.weight"); ok {
		r.out = must("output.weight")
	}
	if _, ok := f.Tensor("rope_freqs.weight"); ok {
		r.ropeFreqs = must("rope_freqs.weight")
	}
	for i := range c.BlockCount {
		p := "blk." + strconv.Itoa(i) + "."
		r.layers = append(r.layers, refLayer{
			attnN: must(p + "attn_norm.weight"), wq: must(p + "attn_q.weight"), wk: must(p + "attn_k.weight"),
			wv: must(p + "attn_v.weight"), wo: must(p + "attn_output.weight"),
			ffnN: must(p + "ffn_norm.weight"), wg: must(p + "ffn_gate.weight"), wu: must(p + "ffn_up.weight"),
			wd: must(p + "ffn_down.weight"),
		})
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	r.reset()
	return r, nil
}

// reset empties the reference's KV cache.
func (r *refModel) reset() {
	r.cacheK = make([][][]float64, r.c.BlockCount)
	r.cacheV = make([][][]float64, r.c.BlockCount)
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

// rope rotates each head's pairs (2i, 2i+1), i < RopeDim/2, by pos·θ_i with
// θ_i = scale·base^(-2i/RopeDim) / factor_i: RoPE's "normal" mode, the one
// llama.cpp uses for Llama (its converter permutes Q and K to match).
func (r *refModel) rope(x []float64, heads int, pos int) {
	c := r.c
	for h := range heads {
		v := x[h*c.HeadDim : (h+1)*c.HeadDim]
		for i := range c.RopeDim / 2 {
			theta := float64(pos) * float64(c.RopeFreqScale) * math.Pow(float64(c.RopeFreqBase), -2*float64(i)/float64(c.RopeDim))
			if r.ropeFreqs != nil {
				theta /= r.ropeFreqs[i]
			}
			sin, cos := math.Sincos(theta)
			a, b := v[2*i], v[2*i+1]
			v[2*i], v[2*i+1] = a*cos-b*sin, a*sin+b*cos
		}
	}
}

// roundTo returns x rounded to type t and back, as ggml rounds the
// activations it multiplies with weights of a type whose dot product
// takes another type (f16 for f16, q8_0 for q8_0 and q4_0).
func roundTo(t ggml.Type, x []float64) []float64 {
	if t == ggml.TypeF32 {
		return x
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

// activationType is the type ggml's CPU backend converts activations to
// before multiplying them with weights of type t.
func activationType(t ggml.Type) ggml.Type {
	switch t {
	case ggml.TypeF16:
		return ggml.TypeF16
	case ggml.TypeQ8_0, ggml.TypeQ4_0:
		return ggml.TypeQ8_0
	}
	return ggml.TypeF32
}

// next runs one token at the next position and returns its logits.
func (r *refModel) next(tok int32) []float64 {
	c := r.c
	e, hd, eps := c.EmbeddingLength, c.HeadDim, float64(c.RMSEps)
	pos := len(r.cacheK[0])
	x := append([]float64(nil), r.emb[int(tok)*e:(int(tok)+1)*e]...)
	for il, l := range r.layers {
		h := rmsNorm(x, l.attnN, eps)
		q, k, v := r.mv(l.wq, h), r.mv(l.wk, h), r.mv(l.wv, h)
		r.rope(q, c.HeadCount, pos)
		r.rope(k, c.HeadCountKV, pos)
		if r.roundCacheToHalf {
			k, v = roundTo(ggml.TypeF16, k), roundTo(ggml.TypeF16, v)
		}
		r.cacheK[il] = append(r.cacheK[il], k)
		r.cacheV[il] = append(r.cacheV[il], v)
		attn := make([]float64, c.QDim())
		group := c.HeadCount / c.HeadCountKV
		for hh := range c.HeadCount {
			kvh := hh / group
			qh := q[hh*hd : (hh+1)*hd]
			scores := make([]float64, pos+1)
			top := math.Inf(-1)
			for j := range scores {
				kj := r.cacheK[il][j][kvh*hd : (kvh+1)*hd]
				s := 0.0
				for d := range hd {
					s += qh[d] * kj[d]
				}
				scores[j] = s / math.Sqrt(float64(hd))
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
		for i, o := range r.mv(l.wo, attn) {
			x[i] += o
		}
		h = rmsNorm(x, l.ffnN, eps)
		g, u := r.mv(l.wg, h), r.mv(l.wu, h)
		for i := range g {
			g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
		for i, d := range r.mv(l.wd, g) {
			x[i] += d
		}
	}
	return r.mv(r.out, rmsNorm(x, r.outN, eps))
}
