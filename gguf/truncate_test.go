package gguf_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
)

// TestLoadTruncatedAfterOpen: another process truncates the file between
// Open and Load: Load reads no mapped page past the new end (a SIGBUS),
// and says what happened (ErrFormat naming the new size).
func TestLoadTruncatedAfterOpen(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a mapped file cannot be truncated on Windows")
	}
	rng := newRNG(t)
	ws := testutil.RandF32(rng, 64<<10)
	path := writeTemp(t, build(t, []pair{{gguf.KeyArchitecture, "test"}}, []spec{
		{"w", ggml.TypeF32, []int64{256, 256}, f32Bytes(ws)},
	}))
	for _, validate := range []bool{true, false} {
		f, err := gguf.Open(path)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(path, 8192))
		_, err = gguf.Load(context.Background(), f, gguf.LoadOptions{Validate: validate})
		require.ErrorIs(t, err, gguf.ErrFormat)
		assert.Contains(t, err.Error(), "truncated to 8192 bytes")
		require.NoError(t, f.Close())
		path = writeTemp(t, build(t, []pair{{gguf.KeyArchitecture, "test"}}, []spec{
			{"w", ggml.TypeF32, []int64{256, 256}, f32Bytes(ws)},
		}))
	}
}

// TestTouchTruncatedMapping: Load's Go reads of mapped pages (before ggml
// validates or copies them) turn the fault of a page lost to truncation
// into an ErrFormat error at that page's offset.
func TestTouchTruncatedMapping(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a mapped file cannot be truncated on Windows")
	}
	page := os.Getpagesize()
	path := t.TempDir() + "/data"
	require.NoError(t, os.WriteFile(path, make([]byte, 3*page), 0o644))
	err := gguf.TouchTruncated(path, int64(page))
	require.ErrorIs(t, err, gguf.ErrFormat)
	var fe *gguf.FormatError
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, int64(page), fe.Offset, "the first lost page")
	// Untruncated, the same reads pass.
	require.NoError(t, os.WriteFile(path, make([]byte, 3*page), 0o644))
	require.NoError(t, gguf.TouchTruncated(path, int64(3*page)))
}
