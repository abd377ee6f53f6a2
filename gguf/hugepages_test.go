package gguf_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
)

// Weights that Load copies into a CPU buffer land in huge pages (where
// the system grants them on request); with SmallPages too, the data is
// the file's.
func TestLoadHugePages(t *testing.T) {
	rng := newRNG(t)
	shape := []int64{1024, 3 * 1024} // 12 MiB of f32: several huge pages
	s := spec{"w", ggml.TypeF32, shape, randBytes(rng, specSize(ggml.TypeF32, shape))}
	path := writeTemp(t, build(t, nil, []spec{s}))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	mode := testutil.THPMode()
	for _, small := range []bool{false, true} {
		m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{NoMmap: true, SmallPages: small})
		require.NoError(t, err)
		bufs := m.Buffers()
		require.Len(t, bufs, 1)
		base, err := bufs[0].Base()
		require.NoError(t, err)
		huge := testutil.HugePagesIn(t, uintptr(base), bufs[0].Size())
		got, err := ggml.Data[float32](m.Tensor("w"))
		require.NoError(t, err)
		require.Len(t, got, len(s.data)/4)
		for i, v := range got {
			if want := math.Float32frombits(binary.LittleEndian.Uint32(s.data[4*i:])); math.Float32bits(v) != math.Float32bits(want) {
				t.Fatalf("SmallPages %v: element %d is %v, the file has %v", small, i, v, want)
			}
		}
		// Only the default is checked: smaps counts whole mappings, and the
		// one around a SmallPages buffer can hold other memory's huge
		// pages (a CI run found 8 MiB there).
		switch {
		case mode != "madvise" && mode != "always":
			t.Logf("THP is %q here: the pages are not checked", mode)
		case !small:
			assert.Positive(t, huge, "huge pages by default, THP %q", mode)
		}
		require.NoError(t, m.Close())
	}
}
