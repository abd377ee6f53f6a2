package sample

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStages compares each stage alone, and the whole chain, with the
// float64 reference of its definition on random logits.
func TestStages(t *testing.T) {
	stages := []struct {
		name string
		set  func(rng *rand.Rand, n int, p *Params)
		hist bool
	}{
		{"penalties", func(rng *rand.Rand, n int, p *Params) { randPenalties(rng, p) }, true},
		{"top-k", func(rng *rand.Rand, n int, p *Params) { p.TopK = 1 + rng.IntN(n+5) }, false},
		{"top-p", func(rng *rand.Rand, n int, p *Params) { p.TopP = float32(rng.Float64()) }, false},
		{"min-p", func(rng *rand.Rand, n int, p *Params) { p.MinP = float32(rng.Float64()) }, false},
		{"temperature", func(rng *rand.Rand, n int, p *Params) { p.Temperature = float32(0.05 + 4*rng.Float64()) }, false},
		{"greedy", func(rng *rand.Rand, n int, p *Params) {
			p.Temperature = 0
			if rng.IntN(2) == 0 {
				randPenalties(rng, p)
			}
		}, true},
		{"chain", func(rng *rand.Rand, n int, p *Params) {
			randPenalties(rng, p)
			p.TopK = rng.IntN(n + 5)
			p.TopP = float32(rng.Float64())
			p.MinP = float32(rng.Float64() * 0.3)
			p.Temperature = float32(0.05 + 3*rng.Float64())
		}, true},
	}
	for _, st := range stages {
		t.Run(st.name, func(t *testing.T) {
			rng := testutil.NewRNG(t)
			for trial := 0; trial < 300; trial++ {
				n := 1 + rng.IntN(300)
				logits := randLogits(rng, n)
				var hist []int32
				if st.hist {
					hist = randHist(rng, n)
				}
				p := Params{Temperature: 1}
				st.set(rng, n, &p)
				want := refChain(logits, hist, p)
				if want.margin < 1e-9 {
					continue // a float64 rounding away from the other side
				}
				s := newWith(t, p, hist)
				if len(want.p) == 0 {
					_, err := s.Sample(logits)
					require.ErrorIs(t, err, ErrLogits)
					continue
				}
				got := survivors(t, s, logits)
				requireSameProbs(t, want.p, got, 1e-12, 1e-9, 0, "trial %d, %+v", trial, p)
				id, err := s.Sample(logits)
				require.NoError(t, err)
				require.Contains(t, want.p, id)
			}
		})
	}
}

// TestValidate: parameters out of range are ErrParams errors of Validate
// and New; the edges of the ranges are fine.
func TestValidate(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	bad := map[string]Params{
		"Temperature NaN":        {Temperature: nan},
		"Temperature +Inf":       {Temperature: inf},
		"Temperature -Inf":       {Temperature: -inf},
		"Temperature negative":   {Temperature: -0.5},
		"Temperature -0 is fine": {}, // replaced below
		"TopK negative":          {TopK: -1},
		"TopP NaN":               {TopP: nan},
		"TopP negative":          {TopP: -0.1},
		"TopP above 1":           {TopP: 1.0001},
		"TopP +Inf":              {TopP: inf},
		"MinP NaN":               {MinP: nan},
		"MinP negative":          {MinP: -1e-9},
		"MinP above 1":           {MinP: 2},
		"RepeatPenalty NaN":      {RepeatPenalty: nan},
		"RepeatPenalty +Inf":     {RepeatPenalty: inf},
		"RepeatPenalty negative": {RepeatPenalty: -1},
		"FrequencyPenalty NaN":   {FrequencyPenalty: nan},
		"FrequencyPenalty -Inf":  {FrequencyPenalty: -inf},
		"PresencePenalty NaN":    {PresencePenalty: nan},
		"PresencePenalty +Inf":   {PresencePenalty: inf},
		"PenaltyLastN negative":  {PenaltyLastN: -1},
	}
	delete(bad, "Temperature -0 is fine")
	for name, p := range bad {
		err := p.Validate()
		require.ErrorIs(t, err, ErrParams, name)
		s, err2 := New(p)
		require.ErrorIs(t, err2, ErrParams, name)
		require.Nil(t, s)
	}
	good := []Params{
		{}, Defaults(), {Temperature: float32(math.Copysign(0, -1))},
		{Temperature: math.SmallestNonzeroFloat32}, {Temperature: math.MaxFloat32},
		{TopK: math.MaxInt}, {TopP: 1}, {TopP: 0}, {MinP: 1}, {RepeatPenalty: 0.5},
		{FrequencyPenalty: -2, PresencePenalty: -2, PenaltyLastN: math.MaxInt}, {Seed: math.MaxUint64},
	}
	for _, p := range good {
		require.NoError(t, p.Validate(), "%+v", p)
		_, err := New(p)
		require.NoError(t, err)
	}
	d := Defaults()
	assert.Equal(t, Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, PenaltyLastN: 64}, d)
}

// TestZeroIsGreedy: the zero Params picks the largest logit, the first of
// equals, and draws no random number.
func TestZeroIsGreedy(t *testing.T) {
	rng := testutil.NewRNG(t)
	s, err := New(Params{})
	require.NoError(t, err)
	for trial := 0; trial < 200; trial++ {
		logits := randLogits(rng, 1+rng.IntN(100))
		want := refChain(logits, nil, Params{})
		id, err := s.Sample(logits)
		if len(want.p) == 0 {
			require.ErrorIs(t, err, ErrLogits)
			continue
		}
		require.NoError(t, err)
		best := int32(-1)
		for i, l := range logits {
			if l > float32(math.Inf(-1)) && (best < 0 || l > logits[best]) {
				best = int32(i)
			}
		}
		require.Equal(t, best, id)
	}
}

// TestNonFinite checks the rule of the package documentation for NaN and
// infinite logits, greedy and sampled.
func TestNonFinite(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	seed := testutil.Seed(t)
	samplers := map[string]Params{
		"greedy":   {},
		"defaults": withSeed(Defaults(), seed),
		"plain":    {Temperature: 1, Seed: seed},
		"hot":      {Temperature: 50, Seed: seed},
		"top-k 1":  {Temperature: 1, TopK: 1, Seed: seed},
		"top-p":    {Temperature: 1, TopP: 0.5, Seed: seed},
		"min-p 1":  {Temperature: 1, MinP: 1, Seed: seed},
		"penalized": {Temperature: 1, Seed: seed, PenaltyLastN: 8, RepeatPenalty: 1.5,
			FrequencyPenalty: 100, PresencePenalty: 100},
	}
	for name, p := range samplers {
		t.Run(name, func(t *testing.T) {
			s, err := New(p)
			require.NoError(t, err)
			for _, id := range []int32{0, 1, 2, 3, 4, 5} {
				s.Accept(id)
			}
			draw := func(logits []float32, times int) map[int32]int {
				seen := map[int32]int{}
				for range times {
					id, err := s.Sample(logits)
					require.NoError(t, err)
					seen[id]++
				}
				return seen
			}
			// NaN is never picked, however large the others' temperature.
			seen := draw([]float32{nan, -50, nan, -60, nan}, 500)
			require.NotContains(t, seen, int32(0))
			require.NotContains(t, seen, int32(2))
			require.NotContains(t, seen, int32(4))
			// -Inf is never picked, even beside a much smaller logit.
			seen = draw([]float32{float32(math.Inf(-1)), -3e38, float32(math.Inf(-1))}, 200)
			require.Equal(t, map[int32]int{1: 200}, seen)
			// +Inf: only the +Inf tokens, equally, the first one under
			// greedy and top-k 1 (whatever NaNs and penalties).
			logits := []float32{3, inf, nan, inf, 1e30, inf}
			seen = draw(logits, 3000)
			switch name {
			case "greedy", "top-k 1":
				require.Equal(t, map[int32]int{1: 3000}, seen)
			case "top-p":
				// Top-p 0.5 over three equal probabilities keeps two.
				require.Len(t, seen, 2, "%v", seen)
				for _, id := range []int32{1, 3} {
					require.InDelta(t, 1500, seen[id], 150, "%v", seen) // sd 27
				}
			default:
				require.Len(t, seen, 3, "%v", seen)
				for _, id := range []int32{1, 3, 5} {
					require.InDelta(t, 1000, seen[id], 150, "%v", seen) // sd 26
				}
			}
			// Nothing to pick: errors.
			for _, v := range [][]float32{{nan}, {nan, nan}, {float32(math.Inf(-1))}, {nan, float32(math.Inf(-1)), nan}, {}, nil} {
				id, err := s.Sample(v)
				require.ErrorIs(t, err, ErrLogits, "%v", v)
				require.Equal(t, int32(-1), id)
			}
		})
	}
}

func withSeed(p Params, seed uint64) Params {
	p.Seed = seed
	return p
}

// TestEdges: TopK beyond the vocabulary, TopP exactly 0 and 1 (off), MinP
// 1, a one-token vocabulary, IDs outside the vocabulary accepted.
func TestEdges(t *testing.T) {
	rng := testutil.NewRNG(t)
	logits := randLogits(rng, 50)
	logits[7] = 100 // something finite for sure
	off := survivors(t, newWith(t, Params{Temperature: 1}, nil), logits)
	for _, p := range []Params{{Temperature: 1, TopK: 50}, {Temperature: 1, TopK: 51}, {Temperature: 1, TopK: math.MaxInt},
		{Temperature: 1, TopP: 0}, {Temperature: 1, TopP: 1}} {
		requireSameProbs(t, off, survivors(t, newWith(t, p, nil), logits), 0, 0, 0, "%+v", p)
	}
	// MinP 1 keeps the largest and its equals only.
	tied := []float32{1, 5, 2, 5, 5, -1}
	require.Equal(t, map[int32]float64{1: 1.0 / 3, 3: 1.0 / 3, 4: 1.0 / 3},
		survivors(t, newWith(t, Params{Temperature: 0.3, MinP: 1}, nil), tied))
	// Top-k among equals keeps the lower IDs.
	require.Equal(t, []int32{1, 3}, sortedKeys(survivors(t, newWith(t, Params{Temperature: 1, TopK: 2}, nil), tied)))
	// Greedy ties: the lower ID.
	id, err := newWith(t, Params{}, nil).Sample(tied)
	require.NoError(t, err)
	require.Equal(t, int32(1), id)

	// One token: always it.
	for _, p := range []Params{{}, Defaults(), {Temperature: 2, TopK: 5, TopP: 0.01, MinP: 1},
		{Temperature: 1, PenaltyLastN: 4, RepeatPenalty: 3, FrequencyPenalty: 1, PresencePenalty: 1}} {
		s := newWith(t, p, []int32{0, 0, 0, 5, -3})
		for _, l := range []float32{0, -1e30, 1e30, float32(math.Inf(1)), -7} {
			id, err := s.Sample([]float32{l})
			require.NoError(t, err)
			require.Equal(t, int32(0), id)
		}
	}

	// IDs outside the vocabulary penalize nothing.
	p := Params{Temperature: 1, PenaltyLastN: 10, RepeatPenalty: 2, FrequencyPenalty: 3, PresencePenalty: 1}
	requireSameProbs(t, off, survivors(t, newWith(t, p, []int32{-1, 50, math.MaxInt32, math.MinInt32, 1000}), logits), 0, 0, 0)
	// ... but take their place among the last PenaltyLastN: 10 of them
	// push token 3 out.
	hist := []int32{3}
	for range 10 {
		hist = append(hist, -5)
	}
	requireSameProbs(t, off, survivors(t, newWith(t, p, hist), logits), 0, 0, 0)
	require.NotEqual(t, off, survivors(t, newWith(t, p, hist[:10]), logits))
}

// TestSeed: the same seed gives the same tokens, Reset restarts them and
// forgets the accepted tokens, another seed gives others.
func TestSeed(t *testing.T) {
	rng := testutil.NewRNG(t)
	logits := randLogits(rng, 1000)
	logits[0] = 10
	p := Defaults()
	p.TopK, p.MinP, p.Temperature = 200, 0, 3 // many candidates
	p.Seed = rng.Uint64()
	p.RepeatPenalty, p.PenaltyLastN = 1.3, 16
	run := func(s *Sampler) []int32 {
		var out []int32
		for range 200 {
			id, err := s.Sample(logits)
			require.NoError(t, err)
			s.Accept(id)
			out = append(out, id)
		}
		return out
	}
	s1, s2 := newWith(t, p, nil), newWith(t, p, nil)
	a := run(s1)
	require.Equal(t, a, run(s2))
	s1.Reset()
	require.Equal(t, a, run(s1))
	p.Seed++
	require.NotEqual(t, a, run(newWith(t, p, nil)))
}

// TestDraw: the draws follow the probabilities of the reference
// (Pearson's chi-square, failing by chance once in a million runs) and
// never pick a token outside them.
func TestDraw(t *testing.T) {
	rng := testutil.NewRNG(t)
	for trial := 0; trial < 5; trial++ {
		n := 5 + rng.IntN(60)
		logits := randLogits(rng, n)
		logits[rng.IntN(n)] = 4
		p := Params{Temperature: float32(0.3 + rng.Float64()), TopK: 1 + rng.IntN(n), TopP: float32(0.5 + 0.5*rng.Float64()),
			MinP: float32(0.01 + 0.05*rng.Float64()), Seed: rng.Uint64()}
		want := refChain(logits, nil, p)
		if want.margin < 1e-9 {
			continue
		}
		s := newWith(t, p, nil)
		const draws = 200000
		count := map[int32]int{}
		for range draws {
			id, err := s.Sample(logits)
			require.NoError(t, err)
			count[id]++
		}
		chi := 0.0
		for id, q := range want.p {
			e := q * draws
			d := float64(count[id]) - e
			chi += d * d / e
		}
		for id := range count {
			require.Contains(t, want.p, id)
		}
		df := float64(len(want.p) - 1)
		if df == 0 {
			continue
		}
		// Wilson–Hilferty: the chi-square quantile at z = 4.75 (1e-6).
		crit := df * math.Pow(1-2/(9*df)+4.75*math.Sqrt(2/(9*df)), 3)
		require.Less(t, chi, crit, "chi-square of %d draws over %d tokens (%+v)", draws, len(want.p), p)
	}
}

// TestErrorsWrap: the errors name what is wrong and wrap one sentinel.
func TestErrorsWrap(t *testing.T) {
	err := Params{TopP: 2}.Validate()
	require.ErrorContains(t, err, "TopP")
	require.False(t, errors.Is(err, ErrLogits))
	_, err = newWith(t, Params{}, nil).Sample(nil)
	require.ErrorContains(t, err, "no logits")
	require.False(t, errors.Is(err, ErrParams))
}
