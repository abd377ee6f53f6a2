package model

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/go-ggml/ggml/ggml"
)

// Sampler picks the next token from logits: the most likely one when
// Temperature is 0 (greedy), else a random draw from the softmax of
// logits/Temperature restricted to the TopK most likely tokens (0: all)
// and then to the smallest set of them whose probabilities add up to TopP
// (0 or 1: all). The draws come from a generator seeded with Seed, so the
// same seed gives the same tokens.
type Sampler struct {
	Temperature float32
	TopK        int
	TopP        float32

	rng  *rand.Rand
	cand []candidate
}

type candidate struct {
	id    int32
	logit float32
	p     float64
}

// NewSampler returns a Sampler with these settings, seeded with seed.
func NewSampler(temperature float32, topK int, topP float32, seed uint64) *Sampler {
	return &Sampler{Temperature: temperature, TopK: topK, TopP: topP, rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))}
}

// Sample returns the ID of the next token: an index of logits. Empty
// logits are an ggml.ErrInvalid error.
func (s *Sampler) Sample(logits []float32) (int32, error) {
	if len(logits) == 0 {
		return 0, fmt.Errorf("%w: llama: Sample: no logits", ggml.ErrInvalid)
	}
	if len(logits) > math.MaxInt32 {
		return 0, fmt.Errorf("%w: llama: Sample: %d logits, more than token IDs reach", ggml.ErrInvalid, len(logits))
	}
	if s.Temperature <= 0 || s.TopK == 1 {
		return argmax(logits), nil
	}
	c := s.topK(logits)
	// Softmax over the candidates, most likely first.
	inv := 1 / float64(s.Temperature)
	top := float64(c[0].logit)
	sum := 0.0
	for i := range c {
		c[i].p = math.Exp((float64(c[i].logit) - top) * inv)
		sum += c[i].p
	}
	if s.TopP > 0 && s.TopP < 1 {
		acc, cut := 0.0, len(c)
		for i := range c {
			acc += c[i].p / sum
			if acc >= float64(s.TopP) {
				cut = i + 1
				break
			}
		}
		c = c[:cut]
		sum = 0
		for i := range c {
			sum += c[i].p
		}
	}
	r := s.rng.Float64() * sum
	for _, x := range c {
		if r < x.p {
			return x.id, nil
		}
		r -= x.p
	}
	return c[len(c)-1].id, nil
}

// topK returns the TopK candidates with the largest logits (all when TopK
// is 0), largest first.
func (s *Sampler) topK(logits []float32) []candidate {
	c := s.cand[:0]
	k := s.TopK
	if k <= 0 || k >= len(logits) {
		for i, l := range logits {
			c = append(c, candidate{id: int32(i), logit: l})
		}
	} else {
		h := minHeap(c)
		for i, l := range logits {
			if len(h) < k {
				heap.Push(&h, candidate{id: int32(i), logit: l})
			} else if l > h[0].logit {
				h[0] = candidate{id: int32(i), logit: l}
				heap.Fix(&h, 0)
			}
		}
		c = h
	}
	slices.SortFunc(c, func(a, b candidate) int {
		switch {
		case a.logit > b.logit:
			return -1
		case a.logit < b.logit:
			return 1
		}
		return int(a.id - b.id)
	})
	s.cand = c
	return c
}

type minHeap []candidate

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i].logit < h[j].logit }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(candidate)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// argmax returns the index of the largest value (the first of equals).
func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// Generate evaluates prompt in one batch (BatchSize tokens a compute) and
// then generates up to n tokens one by one, each from the logits of the
// one before, calling emit with each new token; it stops early when emit
// returns false, and returns the tokens it generated. ctx cancels it
// between and during computes. emit runs while Generate holds the model:
// the model's own calls from it (Eval, Rewind, ...) are ggml.ErrBusy.
func (m *Model) Generate(ctx context.Context, prompt []int32, n int, s *Sampler, emit func(id int32) bool) ([]int32, error) {
	if err := m.enter("Generate"); err != nil {
		return nil, err
	}
	defer m.leave()
	logits, err := m.eval(ctx, prompt, false)
	if err != nil {
		return nil, err
	}
	var out []int32
	for len(out) < n {
		id, err := s.Sample(logits)
		if err != nil {
			return out, err
		}
		out = append(out, id)
		if emit != nil && !emit(id) || len(out) == n {
			break
		}
		if logits, err = m.eval(ctx, []int32{id}, false); err != nil {
			return out, err
		}
	}
	return out, nil
}
