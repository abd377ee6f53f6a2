// Package sysmem tells how much memory the process can still get, for
// refusing allocations that cannot succeed before ggml is asked (ggml
// aborts when malloc fails, and on Linux a large malloc succeeds and the
// process is killed once it touches the pages).
package sysmem

// Available returns the bytes of memory the process can still allocate:
// on Linux, MemAvailable of /proc/meminfo, or less where a cgroup limit
// leaves less. ok is false where it cannot be told (other systems).
func Available() (n uint64, ok bool) { return available() }
