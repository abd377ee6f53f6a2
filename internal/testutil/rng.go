package testutil

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// NewRNG returns a generator for test t, seeded afresh each run: from the
// run's seed (GOGGML_SEED when set, else the clock, one number for the
// whole test binary), t's name, and how many generators t took before this
// one. The run's seed is logged, and GOGGML_SEED=<seed> replays every
// generator of the run: a subtest's as well as its parent's, a test's
// second as well as its first. (One seed for every generator could not:
// a subtest seeded from the clock apart from its parent was replayed with
// its parent's seed.) Every package's tests draw their random inputs from
// here.
func NewRNG(t testing.TB) *rand.Rand {
	t.Helper()
	seed := Seed(t)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// RunSeed returns the run's seed (GOGGML_SEED, or the clock): a child
// process of a test given GOGGML_SEED=RunSeed(t) draws the same numbers.
func RunSeed(t testing.TB) uint64 {
	t.Helper()
	run, err := runSeed()
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// Seed returns the seed of t's next generator (see NewRNG) and logs the
// run's seed.
func Seed(t testing.TB) uint64 {
	t.Helper()
	run, err := runSeed()
	if err != nil {
		t.Fatal(err)
	}
	draws.Lock()
	k := draws.n[t.Name()]
	draws.n[t.Name()]++
	draws.Unlock()
	t.Logf("seed %d (GOGGML_SEED=%d replays it)", run, run)
	// FNV-1a of the name, then a SplitMix64 finish of the three.
	h := uint64(14695981039346656037)
	for i := 0; i < len(t.Name()); i++ {
		h = (h ^ uint64(t.Name()[i])) * 1099511628211
	}
	z := run ^ h ^ uint64(k)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

var (
	runSeed = sync.OnceValues(func() (uint64, error) {
		if s := os.Getenv("GOGGML_SEED"); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("GOGGML_SEED=%q: %v", s, err)
			}
			return v, nil
		}
		return uint64(time.Now().UnixNano()), nil
	})
	// draws counts the generators each test took.
	draws = struct {
		sync.Mutex
		n map[string]int
	}{n: map[string]int{}}
)

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
