//go:build cgo

package ggml_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Without cgo, every package of the module fails to build with one error:
// the sentence that says go-ggml needs cgo (each package's nocgo.go). A
// file that uses cgo's declarations without a cgo build constraint would
// add confusing errors of its own.
func TestNoCgoBuildSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command")
	}
	cmd := exec.Command(goBin, "build", "./...")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the module built without cgo")
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		require.Contains(t, line, "go-ggml needs cgo", "a build error other than the cgo message")
	}
}
