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

// RunChecked runs a package's tests (m.Run) and then fails the run when
// live() is still above zero after the garbage collector has had its
// chance (about 10 s): handles the tests forgot, or that something keeps
// alive, which cleanups would otherwise free silently or never.
func RunChecked(m interface{ Run() int }, what string, live func() int) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	deadline := time.Now().Add(10 * time.Second)
	for live() > 0 && time.Now().Before(deadline) {
		Settle(5)
	}
	if n := live(); n > 0 {
		os.Stderr.WriteString("FAIL: " + strconv.Itoa(n) + " " + what + " still alive after the tests and the garbage collector\n")
		return 1
	}
	return 0
}
