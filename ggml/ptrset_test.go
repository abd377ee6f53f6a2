package ggml_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// TestPtrSetMatchesMap runs random adds, deletes, lookups and resets on a
// ptrSet and on a Go map, and compares them after every step; addresses
// come from a small range so that probes collide and tombstones pile up.
func TestPtrSetMatchesMap(t *testing.T) {
	rng := testutil.NewRNG(t)
	for round := range 20 {
		s := ggml.NewPtrSet(rng.IntN(64))
		ref := map[uintptr]bool{}
		span := 1 + rng.IntN(4000)
		for range 20000 {
			p := uintptr(16 * (1 + rng.IntN(span)))
			switch op := rng.IntN(100); {
			case op < 50:
				require.Equal(t, !ref[p], s.Add(p), "round %d add %#x", round, p)
				ref[p] = true
			case op < 80:
				s.Del(p)
				delete(ref, p)
			case op < 99:
				require.Equal(t, ref[p], s.Has(p), "round %d has %#x", round, p)
			default:
				s.Reset()
				clear(ref)
			}
			require.Equal(t, len(ref), s.Live())
			require.Less(t, s.Used(), s.Slots(), "a probe must always end at an empty slot")
		}
		for p := range ref {
			require.True(t, s.Has(p))
		}
	}
}
