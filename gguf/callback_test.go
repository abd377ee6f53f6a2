package gguf_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
)

// A Progress function that panics, on the caller's goroutine (its first
// call) or on a copy goroutine (later calls), stops Load with ErrCallback,
// and the process lives on.
func TestLoadProgressPanics(t *testing.T) {
	rng := newRNG(t)
	specs := []spec{
		{"big", ggml.TypeF16, []int64{1 << 12, 1 << 10}, randBytes(rng, 8<<20)}, // two chunks
		randomSpec(rng, "a", ggml.TypeF32), randomSpec(rng, "b", ggml.TypeQ8_0),
	}
	path := writeTemp(t, build(t, nil, specs))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	for _, at := range []int{1, 2, 3} {
		calls := 0
		m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{
			NoMmap: true, Workers: 3,
			Progress: func(done, total uint64) {
				if calls++; calls == at {
					panic("progress bar broke")
				}
			},
		})
		require.ErrorIs(t, err, gguf.ErrCallback, "panic at call %d", at)
		require.ErrorContains(t, err, "progress bar broke")
		require.Nil(t, m)
	}
	// The file is still usable.
	m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{})
	require.NoError(t, err)
	checkModel(t, m, specs)
	require.NoError(t, m.Close())
}

// A FromReader function that returns neither a reader nor an error, or
// panics, is an ErrCallback error of WriteTo.
func TestWriteSourceMisuse(t *testing.T) {
	for name, open := range map[string]func() (io.Reader, error){
		"nil, nil": func() (io.Reader, error) { return nil, nil },
		"panic":    func() (io.Reader, error) { panic("no reader today") },
	} {
		b := gguf.NewBuilder()
		require.NoError(t, b.AddTensor("t", ggml.TypeF32, []int64{4}, gguf.FromReader(open)))
		_, err := b.WriteTo(io.Discard)
		require.ErrorIs(t, err, gguf.ErrCallback, name)
	}
}

// limitWriter accepts limit bytes, then fails.
type limitWriter struct {
	limit, n int
}

func (w *limitWriter) Write(p []byte) (int, error) {
	k := min(len(p), w.limit-w.n)
	w.n += k
	if k < len(p) {
		return k, errors.New("disk full")
	}
	return k, nil
}

// WriteTo returns the bytes the writer accepted (io.WriterTo), also when
// the writer fails: not its buffer's size.
func TestWriteToCountsAccepted(t *testing.T) {
	rng := newRNG(t)
	b := build(t, nil, []spec{{"big", ggml.TypeF32, []int64{1 << 20}, randBytes(rng, 4<<20)}})
	var full bytes.Buffer
	n, err := b.WriteTo(&full)
	require.NoError(t, err)
	require.Equal(t, int64(full.Len()), n)
	for _, limit := range []int{0, 100, 1 << 20, 1<<20 + 7, 3 << 20} {
		w := &limitWriter{limit: limit}
		n, err := b.WriteTo(w)
		require.ErrorContains(t, err, "disk full")
		require.Equal(t, int64(w.n), n, "limit %d", limit)
	}
}
