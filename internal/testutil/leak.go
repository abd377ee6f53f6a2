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
// test when resident memory grows by more than limit bytes over the second
// half. The first half warms up C's allocator, whose per-thread arenas keep
// memory the cleanup goroutine freed for a while. Each iteration should
// touch about 1 MiB, so that a leak shows as about n/2 MiB.
func LeakLoop(t testing.TB, n int, limit int64, iter func()) {
	t.Helper()
	var mid int64
	for i := range n {
		iter()
		if i%25 == 24 {
			Settle(1)
		}
		if i == n/2 {
			Settle(3)
			mid = RSS(t)
		}
	}
	Settle(3)
	end := RSS(t)
	t.Logf("%d iterations: RSS %d MiB at the half, %d MiB at the end", n, mid>>20, end>>20)
	if end-mid > limit {
		t.Fatalf("resident memory grew by %d MiB over the second half: handles leak", (end-mid)>>20)
	}
}
