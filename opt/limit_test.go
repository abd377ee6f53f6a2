package opt_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// limitEnv names, in a child process, the test that runs there under an
// address-space limit (see underAddressLimit).
const limitEnv = "GOGGML_OPT_LIMITED_TEST"

// underAddressLimit runs the calling test again in a child process whose
// address space (RLIMIT_AS) is what it uses when the test starts plus
// headroom bytes: there malloc fails at once, as on a machine short of
// memory, where ggml asserts or throws. It returns true in the child, where
// the test goes on; in the parent it returns false once the child passed.
// A child that aborts or crashes fails the test with its output.
func underAddressLimit(t *testing.T, headroom uint64) bool {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_AS limits the address space on Linux")
	}
	if os.Getenv(limitEnv) == t.Name() {
		vm := vmSize(t)
		lim := vm + headroom
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim}))
		t.Logf("address space limited to %d MiB (%d MiB in use)", lim>>20, vm>>20)
		return true
	}
	if asanEnabled {
		t.Skip("ASan's allocator does not fail as the C library's does under an address-space limit")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), limitEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child process under the limit:\n%s", out)
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "the child process under the limit:\n%s", out)
	return false
}

// vmSize returns the process's address space in use (VmSize).
func vmSize(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmSize in /proc/self/status")
	return 0
}
