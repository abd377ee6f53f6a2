package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The program runs and its product agrees with float64 (run returns an
// error where it does not).
func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out))
	t.Log("\n" + out.String())
	require.Contains(t, out.String(), "largest difference from float64: ")
}

// The README's "Using the library" program is this one, from its package
// clause on: what a user pastes is what this directory runs.
func TestREADMEIsThisProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	prog := string(src[bytes.Index(src, []byte("package main\n")):])
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	const open = "```go\npackage main\n"
	i := strings.Index(string(readme), open)
	require.GreaterOrEqual(t, i, 0, "README.md has no ```go block that starts with package main")
	block := string(readme[i+len("```go\n"):])
	block = block[:strings.Index(block, "```\n")]
	require.Equal(t, prog, block, "README.md's program differs from examples/quickstart/main.go")
}
