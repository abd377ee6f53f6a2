package modeltest

import (
	"fmt"
	"math"
	"strconv"

	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/model"
)

// EncoderReference is a BERT encoder's forward pass in float64, for tests:
// the file's weights as Reference reads them and the pass written from
// llama.cpp's llm_build_bert, every token at once, with no ggml op. It
// embeds (Embed) as model.Model.Embed does.
type EncoderReference struct {
	c                   model.Config
	emb, pos            matrix
	types, normW, normB []float64
	layers              []encoderLayer
	emulate             bool
}

type encoderLayer struct {
	wq, wk, wv, wo, up, down matrix
	bq, bk, bv, bo, bu, bd   []float64
	attnW, attnB, outW, outB []float64
}

// ReadEncoderReference reads the weights of a BERT file into an
// EncoderReference.
func ReadEncoderReference(f *gguf.File) (*EncoderReference, error) {
	c, err := model.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	if c.Arch != "bert" {
		return nil, fmt.Errorf("modeltest: the encoder reference runs bert, not %s", c.Arch)
	}
	tr := &tensorReader{f: f}
	must, vec, opt := tr.must, tr.vec, tr.opt
	r := &EncoderReference{c: c, emb: must("token_embd.weight"), pos: must("position_embd.weight"),
		types: opt("token_types.weight"), normW: vec("token_embd_norm.weight"), normB: vec("token_embd_norm.bias")}
	for i := range c.BlockCount {
		p := "blk." + strconv.Itoa(i) + "."
		r.layers = append(r.layers, encoderLayer{
			wq: must(p + "attn_q.weight"), wk: must(p + "attn_k.weight"), wv: must(p + "attn_v.weight"), wo: must(p + "attn_output.weight"),
			bq: opt(p + "attn_q.bias"), bk: opt(p + "attn_k.bias"), bv: opt(p + "attn_v.bias"), bo: opt(p + "attn_output.bias"),
			up: must(p + "ffn_up.weight"), bu: opt(p + "ffn_up.bias"), down: must(p + "ffn_down.weight"), bd: opt(p + "ffn_down.bias"),
			attnW: vec(p + "attn_output_norm.weight"), attnB: vec(p + "attn_output_norm.bias"),
			outW: vec(p + "layer_output_norm.weight"), outB: vec(p + "layer_output_norm.bias"),
		})
	}
	if tr.err != nil {
		return nil, tr.err
	}
	return r, nil
}

// EmulateCPU makes the reference round activations as ggml's CPU backend
// does (Reference.EmulateCPU).
func (r *EncoderReference) EmulateCPU() { r.emulate = true }

// layerNorm is LayerNorm: x less its mean, over its standard deviation
// (with eps), times w plus b.
func layerNorm(x, w, b []float64, eps float64) []float64 {
	mean, ss := 0.0, 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = (v-mean)*inv*w[i] + b[i]
	}
	return y
}

// States returns every token's final hidden state, the input being ids at
// positions 0, 1, ...: the embeddings (token, type 0, position) under
// LayerNorm, then per block x = LayerNorm(x + attention(x)) with attention
// that sees every token, and x = LayerNorm(x + down(gelu(up(x)))).
func (r *EncoderReference) States(ids []int32) [][]float64 {
	c := r.c
	e, hd, eps, n := c.EmbeddingLength, c.HeadDim, float64(c.NormEps), len(ids)
	xs := make([][]float64, n)
	for t, id := range ids {
		x := make([]float64, e)
		for i := range x {
			x[i] = r.emb.w[int(id)*e+i] + r.pos.w[t*e+i]
			if r.types != nil {
				x[i] += r.types[i]
			}
		}
		xs[t] = layerNorm(x, r.normW, r.normB, eps)
	}
	scale := 1 / math.Sqrt(float64(hd))
	for _, l := range r.layers {
		qs, ks, vs := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for t, x := range xs {
			qs[t], ks[t], vs[t] = mv(r.emulate, l.wq, l.bq, x), mv(r.emulate, l.wk, l.bk, x), mv(r.emulate, l.wv, l.bv, x)
		}
		group := c.HeadCount / c.HeadCountKV
		for t, x := range xs {
			attn := make([]float64, c.QDim())
			for h := range c.HeadCount {
				kvh := h / group
				q := qs[t][h*hd : (h+1)*hd]
				scores := make([]float64, n)
				top := math.Inf(-1)
				for j := range n {
					s := 0.0
					for d, v := range ks[j][kvh*hd : (kvh+1)*hd] {
						s += q[d] * v
					}
					scores[j] = s * scale
					top = math.Max(top, scores[j])
				}
				sum := 0.0
				for j := range scores {
					scores[j] = math.Exp(scores[j] - top)
					sum += scores[j]
				}
				for j, p := range scores {
					for d, v := range vs[j][kvh*hd : (kvh+1)*hd] {
						attn[h*hd+d] += p / sum * v
					}
				}
			}
			o := mv(r.emulate, l.wo, l.bo, attn)
			for i := range o {
				o[i] += x[i]
			}
			x = layerNorm(o, l.attnW, l.attnB, eps)
			u := mv(r.emulate, l.up, l.bu, x)
			for i := range u {
				u[i] = geluCPU(u[i])
			}
			d := mv(r.emulate, l.down, l.bd, u)
			for i := range d {
				d[i] += x[i]
			}
			xs[t] = layerNorm(d, l.outW, l.outB, eps)
		}
	}
	return xs
}

// Embed returns the embedding of ids as model.Model.Embed computes it:
// the final states pooled (the mean, the first token's or the last
// token's), then scaled to unit length.
func (r *EncoderReference) Embed(ids []int32, pool model.Pooling) []float64 {
	xs := r.States(ids)
	out := make([]float64, r.c.EmbeddingLength)
	switch pool {
	case model.PoolMean:
		for _, x := range xs {
			for i, v := range x {
				out[i] += v / float64(len(xs))
			}
		}
	case model.PoolCLS:
		copy(out, xs[0])
	case model.PoolLast:
		copy(out, xs[len(xs)-1])
	default:
		panic(fmt.Sprintf("modeltest: pooling %d", pool))
	}
	norm := 0.0
	for _, v := range out {
		norm += v * v
	}
	for i := range out {
		out[i] /= math.Sqrt(norm)
	}
	return out
}
