package testutil

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// NewRNG returns a generator seeded afresh each run. The seed is logged, and
// GGML_TEST_SEED=<seed> replays a run: every package's tests draw their
// random inputs from here.
func NewRNG(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("GGML_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("GGML_TEST_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (GGML_TEST_SEED=%d replays it)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}
