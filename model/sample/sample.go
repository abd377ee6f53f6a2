package sample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

var (
	// ErrParams is wrapped by the errors of Validate and New for
	// parameters outside their ranges: NaN, infinite, negative, or a
	// probability above 1.
	ErrParams = errors.New("sample: invalid parameters")
	// ErrLogits is wrapped by the errors of Sample for logits it cannot
	// pick from: none, more than math.MaxInt32 (more than token IDs
	// reach), or every one NaN or -Inf.
	ErrLogits = errors.New("sample: no token to pick")
)

// Params are the settings of a Sampler. The zero Params is greedy
// sampling: Temperature 0 and every other stage off. Defaults returns
// llama.cpp's default chain. Where llama.cpp reads 0 as "keep one token"
// (top_p 0) or as a division by zero (penalty_repeat 0), 0 here means off,
// so that the zero value is meaningful.
type Params struct {
	// Temperature divides the logits before the draw. 0 is greedy: the
	// token with the largest logit after the penalties. It must be 0 or a
	// positive finite number.
	Temperature float32
	// TopK keeps the TopK tokens with the largest logits; 0 is off, and
	// so is a TopK of at least the vocabulary's size. It must not be
	// negative.
	TopK int
	// TopP keeps the most likely tokens whose probabilities add up to at
	// least TopP (at temperature 1); 0 and 1 are off. It must be in [0, 1].
	TopP float32
	// MinP keeps the tokens whose probability is at least MinP times the
	// largest one; 0 is off, 1 keeps only the most likely token (and those
	// tied with it). It must be in [0, 1].
	MinP float32
	// RepeatPenalty divides the positive logits and multiplies the others
	// of the tokens among the last PenaltyLastN accepted ones
	// (llama.cpp's penalty_repeat); 0 and 1 are off. Above 1 it makes
	// them less likely, below 1 more likely. It must not be negative or
	// infinite.
	RepeatPenalty float32
	// FrequencyPenalty is subtracted from those tokens' logits once for
	// each time they occur there (llama.cpp's penalty_freq); 0 is off. A
	// negative one makes repeats more likely, as in OpenAI's API and
	// llama.cpp. It must be finite.
	FrequencyPenalty float32
	// PresencePenalty is subtracted from those tokens' logits once
	// (llama.cpp's penalty_present); 0 is off. Negative makes repeats
	// more likely. It must be finite.
	PresencePenalty float32
	// PenaltyLastN is how many of the last accepted tokens the three
	// penalties look at (llama.cpp's penalty_last_n). 0 turns the
	// penalties off, whatever their values, as in llama.cpp; llama.cpp's
	// -1 (the context's size) has no equivalent here: pass the context's
	// size. It must not be negative.
	PenaltyLastN int
	// Seed seeds the random draw. Every value, 0 included, is a fixed
	// seed: the same Params and the same calls give the same tokens.
	// (llama.cpp's LLAMA_DEFAULT_SEED draws a random seed; here, pass one
	// from crypto/rand for that.)
	Seed uint64
}

// Defaults returns llama.cpp's default sampling settings
// (common_params_sampling): top-k 40, top-p 0.95, min-p 0.05, temperature
// 0.8, penalties off (repeat 1 over the last 64 tokens, frequency and
// presence 0), and seed 0.
func Defaults() Params {
	return Params{
		Temperature:   0.8,
		TopK:          40,
		TopP:          0.95,
		MinP:          0.05,
		RepeatPenalty: 1,
		PenaltyLastN:  64,
	}
}

// Validate returns nil when p is usable, else an error wrapping ErrParams
// that names the first bad field.
func (p Params) Validate() error {
	bad := func(name string, v any, want string) error {
		return fmt.Errorf("%w: %s is %v, want %s", ErrParams, name, v, want)
	}
	finite := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	switch {
	case !finite(p.Temperature) || p.Temperature < 0:
		return bad("Temperature", p.Temperature, "0 (greedy) or a positive finite number")
	case p.TopK < 0:
		return bad("TopK", p.TopK, "0 (off) or more")
	case !(p.TopP >= 0 && p.TopP <= 1):
		return bad("TopP", p.TopP, "a number in [0, 1] (0 and 1: off)")
	case !(p.MinP >= 0 && p.MinP <= 1):
		return bad("MinP", p.MinP, "a number in [0, 1] (0: off)")
	case !finite(p.RepeatPenalty) || p.RepeatPenalty < 0:
		return bad("RepeatPenalty", p.RepeatPenalty, "0 or 1 (off) or another positive finite number")
	case !finite(p.FrequencyPenalty):
		return bad("FrequencyPenalty", p.FrequencyPenalty, "a finite number (0: off)")
	case !finite(p.PresencePenalty):
		return bad("PresencePenalty", p.PresencePenalty, "a finite number (0: off)")
	case p.PenaltyLastN < 0:
		return bad("PenaltyLastN", p.PenaltyLastN, "0 (penalties off) or more")
	}
	return nil
}

// penalized reports whether p's penalties change anything.
func (p Params) penalized() bool {
	return p.PenaltyLastN > 0 && (p.RepeatPenalty != 0 && p.RepeatPenalty != 1 || p.FrequencyPenalty != 0 || p.PresencePenalty != 0)
}

// Sampler picks tokens from logits with the chain of its Params (see the
// package documentation) and keeps the accepted tokens that the penalties
// look at. A Sampler is used by one goroutine at a time.
type Sampler struct {
	p   Params
	pcg *rand.PCG
	rng *rand.Rand

	// hist holds the last PenaltyLastN accepted tokens, a ring whose
	// oldest entry is hist[head] once it is full; counts counts them.
	hist   []int32
	head   int
	counts map[int32]int32

	pen  []candidate // the penalized tokens of a Sample, by ID
	cand []candidate // the candidates of a Sample
}

// candidate is a token still in the running: its logit after the
// penalties (at temperature 1) and, after the last stage, its weight.
type candidate struct {
	id int32
	l  float64
	w  float64
}

// New returns a Sampler with the settings p, or an error wrapping
// ErrParams when p.Validate fails.
func New(p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s := &Sampler{p: p, counts: map[int32]int32{}}
	s.pcg = rand.NewPCG(0, 0)
	s.rng = rand.New(s.pcg)
	s.Reset()
	return s, nil
}

// Params returns the Sampler's settings.
func (s *Sampler) Params() Params { return s.p }

// Reset forgets the accepted tokens and restarts the random draws from
// Seed: the Sampler then picks what a new one would.
func (s *Sampler) Reset() {
	s.pcg.Seed(s.p.Seed, s.p.Seed^0x5851f42d4c957f2d)
	s.hist = s.hist[:0]
	s.head = 0
	clear(s.counts)
}

// Accept records the token id as the latest one for the penalties: the
// prompt's tokens and each sampled token that is kept. Sample does not
// record what it returns. An id that is no index of the logits that
// Sample later gets (a negative one, say) is recorded too, takes its
// place among the last PenaltyLastN, and penalizes nothing, as in
// llama.cpp. Without penalties (PenaltyLastN 0, or every penalty off)
// Accept does nothing.
func (s *Sampler) Accept(id int32) {
	if !s.p.penalized() {
		return
	}
	n := s.p.PenaltyLastN
	if len(s.hist) < n {
		s.hist = append(s.hist, id)
	} else {
		old := s.hist[s.head]
		if s.counts[old]--; s.counts[old] == 0 {
			delete(s.counts, old)
		}
		s.hist[s.head] = id
		s.head = (s.head + 1) % n
	}
	s.counts[id]++
}

// Sample returns the token picked from logits (one per token of the
// vocabulary) by the chain; it does not record it (see Accept). It
// consumes one number of the random sequence when Temperature is not 0,
// and none when it is. Its error wraps ErrLogits when there is nothing to
// pick from: no logits, more than math.MaxInt32, or only NaN and -Inf
// ones; the ID is then -1.
func (s *Sampler) Sample(logits []float32) (int32, error) {
	c, total, err := s.chain(logits)
	if err != nil {
		return -1, err
	}
	if s.p.Temperature == 0 {
		return c[0].id, nil
	}
	r := s.rng.Float64() * total
	acc := 0.0
	last := -1
	for i := range c {
		if c[i].w > 0 {
			acc += c[i].w
			if r < acc {
				return c[i].id, nil
			}
			last = i
		}
	}
	// r rounded up to total: the last token that can be picked.
	return c[last].id, nil
}

// chain applies the stages to logits and returns the candidates left with
// their weights (one candidate, the greedy pick, when Temperature is 0)
// and the weights' sum, in the order the draw walks them.
func (s *Sampler) chain(logits []float32) ([]candidate, float64, error) {
	if len(logits) == 0 {
		return nil, 0, fmt.Errorf("%w: no logits", ErrLogits)
	}
	if len(logits) > math.MaxInt32 {
		return nil, 0, fmt.Errorf("%w: %d logits, more than token IDs reach", ErrLogits, len(logits))
	}
	s.penalize(logits)
	if s.p.Temperature == 0 {
		best := s.greedy(logits)
		if best.id < 0 {
			return nil, 0, allOut(len(logits))
		}
		best.w = 1
		s.cand = append(s.cand[:0], best)
		return s.cand, 1, nil
	}
	c := s.topK(logits)
	if len(c) == 0 {
		return nil, 0, allOut(len(logits))
	}
	c = plusInf(c)
	if p := s.p.TopP; p > 0 && p < 1 {
		c = topP(c, float64(p))
	}
	if p := s.p.MinP; p > 0 {
		c = minP(c, float64(p))
	}
	total := temperature(c, float64(s.p.Temperature))
	s.cand = c
	return c, total, nil
}

func allOut(n int) error {
	return fmt.Errorf("%w: all %d logits are NaN or -Inf", ErrLogits, n)
}

// penalize fills s.pen with the tokens that the penalties change and that
// index logits, by ID, with their penalized logits.
func (s *Sampler) penalize(logits []float32) {
	s.pen = s.pen[:0]
	if !s.p.penalized() {
		return
	}
	rep := float64(s.p.RepeatPenalty)
	if rep == 0 {
		rep = 1
	}
	freq, pres := float64(s.p.FrequencyPenalty), float64(s.p.PresencePenalty)
	for id, n := range s.counts {
		if id < 0 || int(id) >= len(logits) {
			continue
		}
		l := float64(logits[id])
		if l <= 0 {
			l *= rep
		} else {
			l /= rep
		}
		l -= float64(n)*freq + pres
		s.pen = append(s.pen, candidate{id: id, l: l})
	}
	slices.SortFunc(s.pen, func(a, b candidate) int { return int(a.id) - int(b.id) })
}

// scan calls seg for each run of logits that no penalty changes (v is
// logits[base:base+len(v)]) and one for each penalized token, in the
// order of the IDs.
func (s *Sampler) scan(logits []float32, seg func(base int, v []float32), one func(c candidate)) {
	i := 0
	for _, c := range s.pen {
		if int(c.id) > i {
			seg(i, logits[i:c.id])
		}
		one(c)
		i = int(c.id) + 1
	}
	if i < len(logits) {
		seg(i, logits[i:])
	}
}

// better reports whether a ranks before b: a larger logit, or the same
// and a lower ID.
func better(a, b candidate) bool {
	return a.l > b.l || a.l == b.l && a.id < b.id
}

// greedy returns the candidate with the largest penalized logit (the
// lowest ID of equals), NaN and -Inf left out; its id is -1 when there is
// none.
func (s *Sampler) greedy(logits []float32) candidate {
	best := candidate{id: -1, l: math.Inf(-1)}
	s.scan(logits, func(base int, v []float32) {
		for j, l := range v {
			// Ascending IDs: only a strictly larger logit beats an
			// earlier token of the run; an equal one beats a later
			// penalized token.
			if x := float64(l); x > best.l || x == best.l && best.id > int32(base+j) && x > math.Inf(-1) {
				best = candidate{id: int32(base + j), l: x}
			}
		}
	}, func(c candidate) {
		if c.l > math.Inf(-1) && better(c, best) {
			best = c
		}
	})
	return best
}

// topK returns the TopK best candidates (all when TopK is 0 or covers the
// vocabulary), NaN and -Inf left out, in no particular order. It selects
// with a heap of TopK entries: it does not sort the vocabulary.
func (s *Sampler) topK(logits []float32) []candidate {
	c := s.cand[:0]
	k := s.p.TopK
	if k <= 0 || k >= len(logits) {
		s.scan(logits, func(base int, v []float32) {
			for j, l := range v {
				if x := float64(l); x > math.Inf(-1) {
					c = append(c, candidate{id: int32(base + j), l: x})
				}
			}
		}, func(x candidate) {
			if x.l > math.Inf(-1) {
				c = append(c, x)
			}
		})
		return c
	}
	// c is a heap whose root is the worst of the best k so far.
	offer := func(x candidate) {
		if len(c) < k {
			c = append(c, x)
			heapUp(c, len(c)-1)
		} else if better(x, c[0]) {
			c[0] = x
			heapDown(c)
		}
	}
	s.scan(logits, func(base int, v []float32) {
		for j, l := range v {
			x := float64(l)
			if len(c) == k && !(x > c[0].l || x == c[0].l && int32(base+j) < c[0].id) {
				continue // the common case: no better than the worst kept
			}
			if x > math.Inf(-1) {
				offer(candidate{id: int32(base + j), l: x})
			}
		}
	}, func(x candidate) {
		if x.l > math.Inf(-1) {
			offer(x)
		}
	})
	return c
}

// heapUp restores the heap order (the worst candidate at the root) after
// c[i] was added.
func heapUp(c []candidate, i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !better(c[parent], c[i]) {
			return
		}
		c[parent], c[i] = c[i], c[parent]
		i = parent
	}
}

// heapDown restores the heap order after the root was replaced.
func heapDown(c []candidate) {
	i := 0
	for {
		worst := i
		if l := 2*i + 1; l < len(c) && better(c[worst], c[l]) {
			worst = l
		}
		if r := 2*i + 2; r < len(c) && better(c[worst], c[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		c[i], c[worst] = c[worst], c[i]
		i = worst
	}
}

// plusInf keeps, when some candidates have +Inf logits, only those, with
// the logit 0: equal finite logits, equal probabilities.
func plusInf(c []candidate) []candidate {
	if !slices.ContainsFunc(c, func(x candidate) bool { return math.IsInf(x.l, 1) }) {
		return c
	}
	c = slices.DeleteFunc(c, func(x candidate) bool { return !math.IsInf(x.l, 1) })
	for i := range c {
		c[i].l = 0
	}
	return c
}

// topP sorts c, best first, and keeps its shortest prefix whose
// probabilities (the softmax of the logits) add up to at least p, at
// least one candidate.
func topP(c []candidate, p float64) []candidate {
	slices.SortFunc(c, func(a, b candidate) int {
		if better(a, b) {
			return -1
		}
		return 1
	})
	top := c[0].l
	sum := 0.0
	for i := range c {
		c[i].w = math.Exp(c[i].l - top)
		sum += c[i].w
	}
	acc := 0.0
	for i := range c {
		acc += c[i].w
		if acc/sum >= p {
			return c[:i+1]
		}
	}
	return c
}

// minP keeps the candidates whose probability is at least p times the
// largest: whose logit is at least the largest plus log(p).
func minP(c []candidate, p float64) []candidate {
	top := math.Inf(-1)
	for _, x := range c {
		top = max(top, x.l)
	}
	floor := top + math.Log(p)
	return slices.DeleteFunc(c, func(x candidate) bool { return x.l < floor })
}

// temperature sets the weights of c to exp((l - max l)/t) and returns
// their sum.
func temperature(c []candidate, t float64) float64 {
	top := math.Inf(-1)
	for _, x := range c {
		top = max(top, x.l)
	}
	sum := 0.0
	for i := range c {
		c[i].w = math.Exp((c[i].l - top) / t)
		sum += c[i].w
	}
	return sum
}
