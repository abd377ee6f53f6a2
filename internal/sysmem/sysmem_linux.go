package sysmem

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

func available() (uint64, bool) {
	mem, ok1 := meminfo("MemTotal:")
	swap, ok2 := meminfo("SwapTotal:")
	if !ok1 || !ok2 {
		return 0, false
	}
	n := mem + swap
	// cgroup v2, then v1, as seen from inside the container.
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if limit, ok := readUint(f); ok {
			n = min(n, limit)
			break
		}
	}
	return n, true
}

// meminfo reads a field (kB) of /proc/meminfo.
func meminfo(field string) (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, found := bytes.CutPrefix(s.Bytes(), []byte(field))
		if !found {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
		if err != nil || kb > 1<<53 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// readUint reads a number from a cgroup file ("max" is no limit).
func readUint(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil
}
