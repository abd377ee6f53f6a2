// Package sysmem tells how much memory the process could ever get, for
// refusing allocations that cannot succeed before ggml is asked (ggml
// aborts when malloc fails, and on Linux a large malloc succeeds and the
// process is killed once it touches the pages).
package sysmem

import (
	"sync/atomic"
	"time"
)

// Available returns the most bytes of memory the process could allocate
// on an idle machine: on Linux, MemTotal plus SwapTotal of /proc/meminfo, or
// less where a cgroup limit is lower. It does not depend on what other
// programs use now, so the same request gets the same answer under load.
// ok is false where it cannot be told (other systems).
//
// The answer is read at most once a second: every ggml.NewContext asks,
// and reading /proc costs microseconds (a graph-building loop that makes
// a context per step paid several percent of its time for it).
func Available() (n uint64, ok bool) {
	now := time.Now().UnixNano()
	if c := cached.Load(); c != nil && now-c.at < int64(time.Second) && now >= c.at {
		return c.n, c.ok
	}
	n, ok = available()
	cached.Store(&answer{n: n, ok: ok, at: now})
	return n, ok
}

type answer struct {
	n  uint64
	ok bool
	at int64 // when it was read, in Unix nanoseconds
}

var cached atomic.Pointer[answer]
