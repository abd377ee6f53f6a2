package testutil

import "math/rand/v2"

// RandF32 returns n values from the standard normal distribution.
func RandF32(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}
