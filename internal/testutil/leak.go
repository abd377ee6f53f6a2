// Package testutil holds what go-ggml's tests share. Only test files
// import it.
package testutil

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RSS returns the process's resident memory in bytes, skipping the test
// where /proc is not there.
func RSS(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("RSS needs /proc/self/statm (Linux)")
	}
	pages, err := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// Settle collects garbage and gives the cleanup goroutine time to free what
// it found (runtime.GC does not wait for cleanups).
func Settle(rounds int) {
	for range rounds {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
	}
}

// LeakLoop runs iter n times without closing what it makes and fails the
// test when memory grows by more than limit bytes over the second half.
// Memory is C's heap in use (mallinfo2) where glibc reports it, resident
// memory otherwise: C's per-thread arenas keep memory the cleanup goroutine
// freed, so resident memory can grow without a leak on machines with many
// CPUs; the first half warms them up. Each iteration should allocate about
// 1 MiB, so that a leak shows as about n/2 MiB.
func LeakLoop(t testing.TB, n int, limit int64, iter func()) {
	t.Helper()
	measure, what := func() int64 { return cInUse() }, "C heap in use"
	if cInUse() < 0 {
		measure, what = func() int64 { return RSS(t) }, "RSS"
	}
	var mid int64
	for i := range n {
		iter()
		if i%25 == 24 {
			Settle(1)
		}
		if i == n/2 {
			Settle(3)
			mid = measure()
		}
	}
	Settle(3)
	end := measure()
	t.Logf("%d iterations: %s %d MiB at the half, %d MiB at the end (RSS %d MiB)", n, what, mid>>20, end>>20, RSS(t)>>20)
	if end-mid > limit {
		t.Fatalf("%s grew by %d MiB over the second half: handles leak", what, (end-mid)>>20)
	}
}
