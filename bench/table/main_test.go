package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPairRatios(t *testing.T) {
	// Interleaved pairs (go c, c go, go c, ...): positions 2k and 2k+1.
	interleaved := func(g, c []float64) (*side, *side) {
		gs, cs := &side{ns: g}, &side{ns: c}
		for k := range g {
			a, b := 2*k, 2*k+1
			if k%2 == 1 {
				a, b = b, a
			}
			gs.seq, cs.seq = append(gs.seq, a), append(cs.seq, b)
		}
		return gs, cs
	}
	g, c := interleaved([]float64{2, 4, 6, 8, 10}, []float64{1, 2, 3, 4, 5})
	ratio, spread := pairRatios(g, c)
	assert.Equal(t, "2.000", ratio)
	assert.Equal(t, "2.00-2.00", spread)

	// One outlier among five pairs: reported in the range, not flagged.
	g, c = interleaved([]float64{2, 2, 2, 2, 8}, []float64{1, 1, 1, 1, 1})
	ratio, spread = pairRatios(g, c)
	assert.Equal(t, "2.000", ratio)
	assert.Equal(t, "2.00-8.00", spread)

	// Two outliers on one side are a noisy row.
	g, c = interleaved([]float64{2, 2, 2, 6, 8}, []float64{1, 1, 1, 1, 1})
	_, spread = pairRatios(g, c)
	assert.True(t, strings.HasSuffix(spread, "NOISY"), spread)

	// go test -count order (go go go c c c): not pairs.
	gs := &side{ns: []float64{2, 2, 2}, seq: []int{0, 1, 2}}
	cs := &side{ns: []float64{1, 1, 1}, seq: []int{3, 4, 5}}
	_, spread = pairRatios(gs, cs)
	assert.True(t, strings.HasSuffix(spread, "UNPAIRED"), spread)
}
