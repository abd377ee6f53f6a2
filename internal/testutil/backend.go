//go:build cgo

package testutil

import (
	"math/rand/v2"
	"testing"

	"github.com/go-ggml/ggml/backend"
)

// CPU starts a CPU backend that the test closes when it ends.
func CPU(tb testing.TB) *backend.Backend {
	tb.Helper()
	be, err := backend.InitByName("CPU", "")
	if err != nil {
		tb.Fatalf("the CPU backend: %v", err)
	}
	tb.Cleanup(func() { be.Close() })
	return be
}

// RandF32 returns n values from the standard normal distribution.
func RandF32(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}
