package sample

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkSample samples Llama 3's vocabulary (128256 logits) with
// Defaults: top-k 40 selects with a heap instead of sorting the
// vocabulary.
func BenchmarkSample(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 128256)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 3)
	}
	s, err := New(Defaults())
	require.NoError(b, err)
	for b.Loop() {
		if _, err := s.Sample(logits); err != nil {
			b.Fatal(err)
		}
	}
}
