package testutil

/*
#include <stdlib.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
// goggml_c_in_use is the C heap in use, all arenas and mmapped chunks
// together (mallinfo2), or -1 where glibc's mallinfo2 is missing.
static long long goggml_c_in_use(void) {
	struct mallinfo2 m = mallinfo2();
	return (long long)(m.uordblks + m.hblkhd);
}
#else
static long long goggml_c_in_use(void) { return -1; }
#endif
*/
import "C"

// cInUse returns the bytes C's allocator has handed out and not taken back,
// or -1 where that cannot be read. Unlike resident memory it does not count
// what free() returned to an arena that keeps it (glibc keeps up to 8 arenas
// per CPU, so on a machine with many CPUs resident memory grows long after
// the memory was freed).
func cInUse() int64 { return int64(C.goggml_c_in_use()) }
