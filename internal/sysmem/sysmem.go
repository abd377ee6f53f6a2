// Package sysmem tells how much memory the process could ever get, for
// refusing allocations that cannot succeed before ggml is asked (ggml
// aborts when malloc fails, and on Linux a large malloc succeeds and the
// process is killed once it touches the pages).
package sysmem

// Available returns the most bytes of memory the process could allocate
// on an idle machine: on Linux, MemTotal plus SwapTotal of /proc/meminfo, or
// less where a cgroup limit is lower. It does not depend on what other
// programs use now, so the same request gets the same answer under load.
// ok is false where it cannot be told (other systems).
func Available() (n uint64, ok bool) { return available() }
