package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// refResult is what the float64 reference of the chain leaves: each
// surviving token's probability, and how close the closest decision came
// to going the other way (a top-k tie, a top-p sum or a min-p ratio at
// its limit), in the decision's own units; +Inf when none was close.
// tie is the gap between the last token that top-k, top-p (or greedy)
// keeps and the first it drops: 0 is a tie, which the lower ID wins.
type refResult struct {
	p      map[int32]float64
	margin float64
	tie    float64
}

// refChain computes the chain from its definitions, in float64, with a
// full sort and the formulas of the package documentation, on logits
// that hold no +Inf (NaN and -Inf are left out as probability 0).
// hist are the accepted tokens, oldest first.
func refChain(logits []float32, hist []int32, p Params) refResult {
	res := refResult{p: map[int32]float64{}, margin: math.Inf(1), tie: math.Inf(1)}
	note := func(d float64) { res.margin = min(res.margin, math.Abs(d)) }
	gap := func(d float64) { res.tie = min(res.tie, d) }
	l := make([]float64, len(logits))
	for i, x := range logits {
		l[i] = float64(x)
	}
	// Penalties: the last PenaltyLastN accepted tokens.
	if p.PenaltyLastN > 0 {
		win := hist[max(0, len(hist)-p.PenaltyLastN):]
		count := map[int32]int{}
		for _, id := range win {
			count[id]++
		}
		rep := float64(p.RepeatPenalty)
		if rep == 0 {
			rep = 1
		}
		for id, c := range count {
			if id < 0 || int(id) >= len(l) {
				continue
			}
			if l[id] > 0 {
				l[id] /= rep
			} else {
				l[id] *= rep
			}
			l[id] -= float64(c)*float64(p.FrequencyPenalty) + float64(p.PresencePenalty)
		}
	}
	// The candidates, best first (lower ID first among equals).
	var ids []int32
	for i, x := range l {
		if !math.IsNaN(x) && !math.IsInf(x, -1) {
			ids = append(ids, int32(i))
		}
	}
	slices.SortStableFunc(ids, func(a, b int32) int {
		switch {
		case l[a] > l[b]:
			return -1
		case l[a] < l[b]:
			return 1
		}
		return 0
	})
	if len(ids) == 0 {
		return res
	}
	if p.Temperature == 0 {
		if len(ids) > 1 {
			gap(l[ids[0]] - l[ids[1]])
		}
		res.p[ids[0]] = 1
		return res
	}
	if k := p.TopK; k > 0 && k < len(ids) {
		gap(l[ids[k-1]] - l[ids[k]])
		ids = ids[:k]
	}
	// softmax is the definition exp(l_i) / Σ exp(l_j), computed with the
	// largest logit subtracted so that exp cannot overflow.
	softmax := func(ids []int32, t float64) []float64 {
		q := make([]float64, len(ids))
		sum := 0.0
		for i, id := range ids {
			q[i] = math.Exp((l[id] - l[ids[0]]) / t)
			sum += q[i]
		}
		for i := range q {
			q[i] /= sum
		}
		return q
	}
	if tp := float64(p.TopP); tp > 0 && tp < 1 {
		q := softmax(ids, 1)
		acc := 0.0
		for i := range ids {
			before := acc
			acc += q[i]
			if acc >= tp {
				note(acc - tp)
				note(tp - before)
				if i+1 < len(ids) {
					gap(l[ids[i]] - l[ids[i+1]])
				}
				ids = ids[:i+1]
				break
			}
		}
	}
	if mp := float64(p.MinP); mp > 0 {
		q := softmax(ids, 1)
		var kept []int32
		for i, id := range ids {
			if i > 0 {
				note(math.Log(q[i]/q[0]) - math.Log(mp))
			}
			if q[i] >= mp*q[0] {
				kept = append(kept, id)
			}
		}
		ids = kept
	}
	for i, q := range softmax(ids, float64(p.Temperature)) {
		if q > 0 { // 0: exp underflowed, never drawn
			res.p[ids[i]] = q
		}
	}
	return res
}

// survivors returns the candidates that s's chain leaves on logits, with
// their probabilities.
func survivors(t testing.TB, s *Sampler, logits []float32) map[int32]float64 {
	t.Helper()
	c, total, err := s.chain(logits)
	require.NoError(t, err)
	m := map[int32]float64{}
	for _, x := range c {
		if _, twice := m[x.id]; twice {
			require.Failf(t, "a candidate twice", "token %d", x.id)
		}
		if x.w > 0 {
			m[x.id] = x.w / total
		}
	}
	return m
}

// requireSameProbs fails unless got and want hold the same tokens with
// probabilities within abs + rel·want, tokens with probabilities below
// negligible on both sides aside (float32's exp underflows to 0 where
// float64's does not). It names the first few differences, not all.
func requireSameProbs(t testing.TB, want, got map[int32]float64, abs, rel, negligible float64, msgAndArgs ...any) {
	t.Helper()
	ids := map[int32]bool{}
	for id := range want {
		ids[id] = true
	}
	for id := range got {
		ids[id] = true
	}
	var bad []string
	for _, id := range sortedKeys(ids) {
		w, inW := want[id]
		g, inG := got[id]
		switch {
		case inW != inG && max(w, g) >= negligible:
			bad = append(bad, fmt.Sprintf("token %d: want %v (kept %v), got %v (kept %v)", id, w, inW, g, inG))
		case math.Abs(w-g) > abs+rel*w:
			bad = append(bad, fmt.Sprintf("token %d: want p %v, got %v", id, w, g))
		}
	}
	if len(bad) > 0 {
		msg := fmt.Sprintf("%d of %d tokens differ", len(bad), len(ids))
		if len(bad) > 8 {
			bad = bad[:8]
		}
		require.Fail(t, msg+":\n"+strings.Join(bad, "\n"), msgAndArgs...)
	}
}

func sortedKeys[V any](m map[int32]V) []int32 {
	k := make([]int32, 0, len(m))
	for id := range m {
		k = append(k, id)
	}
	slices.Sort(k)
	return k
}

// randLogits returns n logits: normal with a random scale, now and then
// rounded to halves (ties), with an occasional -Inf.
func randLogits(rng *rand.Rand, n int) []float32 {
	scale := 0.5 + 8*rng.Float64()
	ties := rng.IntN(4) == 0
	v := make([]float32, n)
	for i := range v {
		x := rng.NormFloat64() * scale
		if ties {
			x = math.Round(2*x) / 2
		}
		v[i] = float32(x)
		if rng.IntN(50) == 0 {
			v[i] = float32(math.Inf(-1))
		}
	}
	return v
}

// randHist returns accepted tokens for a vocabulary of n: mostly a few
// repeated IDs, now and then one outside [0, n).
func randHist(rng *rand.Rand, n int) []int32 {
	h := make([]int32, rng.IntN(120))
	pool := 1 + rng.IntN(min(n, 20))
	for i := range h {
		h[i] = int32(rng.IntN(pool) * max(1, n/pool))
		if rng.IntN(30) == 0 {
			h[i] = int32(n + rng.IntN(5))
		}
		if rng.IntN(40) == 0 {
			h[i] = -1 - int32(rng.IntN(3))
		}
	}
	return h
}

// randPenalties sets random penalties in p.
func randPenalties(rng *rand.Rand, p *Params) {
	p.PenaltyLastN = rng.IntN(80)
	p.RepeatPenalty = float32(0.5 + 1.5*rng.Float64())
	p.FrequencyPenalty = float32(2*rng.Float64() - 1)
	p.PresencePenalty = float32(2*rng.Float64() - 1)
}

// newWith returns a Sampler with p that accepted hist.
func newWith(t testing.TB, p Params, hist []int32) *Sampler {
	t.Helper()
	s, err := New(p)
	require.NoError(t, err)
	for _, id := range hist {
		s.Accept(id)
	}
	return s
}
