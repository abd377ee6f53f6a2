package testutil

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// THPMode returns the system's transparent huge page setting (the bracketed
// word of /sys/kernel/mm/transparent_hugepage/enabled: "always", "madvise"
// or "never"), or "" where there is none (not Linux, or no THP).
func THPMode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	s := string(b)
	i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return ""
	}
	return s[i+1 : j]
}

// HugePagesIn returns the kilobytes of anonymous huge pages (AnonHugePages
// of /proc/self/smaps) in the mappings that overlap [addr, addr+size).
func HugePagesIn(tb testing.TB, addr uintptr, size uint64) int64 {
	tb.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		tb.Fatalf("reading smaps: %v", err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = a < uint64(addr)+size && uint64(addr) < b
				continue
			}
		}
		if in && fields[0] == "AnonHugePages:" && len(fields) >= 2 {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				tb.Fatalf("smaps: %q: %v", line, err)
			}
			total += kb
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("reading smaps: %v", err)
	}
	return total
}
