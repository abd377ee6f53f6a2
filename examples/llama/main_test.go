package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCmd runs the command and returns its stdout and stderr.
func runCmd(t *testing.T, ctx context.Context, args ...string) (string, string, error) {
	t.Helper()
	var out, errs bytes.Buffer
	err := run(ctx, args, &out, &errs)
	return out.String(), errs.String(), err
}

// tokenLines returns the IDs of the generated-token lines ("id\t"text"").
func tokenLines(t *testing.T, out string) []int {
	var ids []int
	for _, line := range strings.Split(out, "\n") {
		id, text, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(id)
		require.NoError(t, err, line)
		_, err = strconv.Unquote(text)
		require.NoError(t, err, line)
		ids = append(ids, n)
	}
	return ids
}

// The command writes a random model and generates from it: greedily (the
// same tokens every time) and sampled (the same tokens for the same seed).
func TestGenerateAndRun(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	_, stderr, err := runCmd(t, ctx, "-gen", path, "-size", "tiny", "-type", "q8_0")
	require.NoError(t, err)
	assert.Contains(t, stderr, "wrote "+path)

	args := []string{"-model", path, "-prompt", "1, 2,3", "-n", "10", "-threads", "1", "-ignore-eos"}
	out, stderr, err := runCmd(t, ctx, args...)
	require.NoError(t, err, stderr)
	t.Log("\n" + out + stderr)
	assert.Contains(t, out, "prompt: [1 2 3]")
	assert.Contains(t, out, "text: ")
	greedy := tokenLines(t, out)
	assert.Len(t, greedy, 10)
	for _, want := range []string{"model: 2 layers, 64 wide, 4 heads (2 KV), vocabulary 256", "tokens/s", "time outside ggml's compute", "memory on CPU: weights"} {
		assert.Contains(t, stderr, want)
	}
	out, _, err = runCmd(t, ctx, args...)
	require.NoError(t, err)
	assert.Equal(t, greedy, tokenLines(t, out))

	sampled := append(args, "-temp", "1.5", "-top-k", "0", "-top-p", "1", "-seed", "7")
	out, _, err = runCmd(t, ctx, sampled...)
	require.NoError(t, err)
	first := tokenLines(t, out)
	out, _, err = runCmd(t, ctx, sampled...)
	require.NoError(t, err)
	assert.Equal(t, first, tokenLines(t, out))
	assert.NotEqual(t, greedy, first, "at temperature 1.5, ten tokens are not all the most likely ones")
}

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	_, _, err := runCmd(t, ctx, "-gen", path)
	require.NoError(t, err)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-model is required"},
		{[]string{"-model", path, "-prompt", "1,x"}, `"x" is not a token ID`},
		{[]string{"-model", path, "-prompt", "1,999"}, "token 999 (at 1) outside the vocabulary of 256"},
		{[]string{"-model", path, "-cache-type", "q9"}, `unknown type "q9"`},
		{[]string{"-gen", path, "-size", "huge"}, `-size "huge"`},
		{[]string{"-model", filepath.Join(t.TempDir(), "none.gguf")}, "no such file"},
	} {
		_, _, err := runCmd(t, ctx, append(c.args, "-threads", "1")...)
		require.Error(t, err, "%v", c.args)
		assert.Contains(t, err.Error(), c.want)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = runCmd(t, cancelled, "-model", path, "-threads", "1")
	require.ErrorIs(t, err, context.Canceled)
}
