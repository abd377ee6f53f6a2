package sysmem

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

func available() (uint64, bool) {
	n, ok := memAvailable()
	if !ok {
		return 0, false
	}
	// cgroup v2, then v1, as seen from inside the container.
	for _, f := range [][2]string{
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"},
	} {
		limit, ok1 := readUint(f[0])
		used, ok2 := readUint(f[1])
		if ok1 && ok2 {
			n = min(n, limit-min(limit, used))
			break
		}
	}
	return n, true
}

// memAvailable reads MemAvailable (kB) from /proc/meminfo.
func memAvailable() (uint64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, found := bytes.CutPrefix(s.Bytes(), []byte("MemAvailable:"))
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
