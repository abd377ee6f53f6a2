package backend_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// AdviseHugePages gets a CPU buffer's pages written after it as huge pages
// where the system grants them; it accepts the CPU's extra buffer types,
// refuses memory outside the process, and reports a closed buffer.
func TestAdviseHugePages(t *testing.T) {
	const size = 16 << 20
	mode := testutil.THPMode()
	alloc := func() (*backend.Buffer, uintptr) {
		buf, err := backend.CPUBufferType().AllocBuffer(size)
		require.NoError(t, err)
		t.Cleanup(func() { buf.Close() })
		p, err := buf.Base()
		require.NoError(t, err)
		return buf, uintptr(p)
	}

	// Only the advised buffer is checked: smaps counts whole mappings,
	// and the one around a buffer without the advice can hold other
	// memory's huge pages. The check fails when the advice does nothing
	// (tried: madvise taken out).
	advised, at := alloc()
	require.NoError(t, advised.AdviseHugePages())
	require.NoError(t, advised.AdviseHugePages(), "advice twice is advice")
	require.NoError(t, advised.Clear(1)) // the pages are written now
	switch mode {
	case "madvise", "always":
		assert.Positive(t, testutil.HugePagesIn(t, at, size), "the advised buffer's pages, THP %q", mode)
	default:
		t.Logf("THP is %q here: the pages are not checked", mode)
	}

	if dev, err := backend.DeviceByType(backend.DeviceCPU); err == nil {
		extra, err := dev.ExtraBufferTypes()
		require.NoError(t, err)
		for _, bt := range extra {
			buf, err := bt.AllocBuffer(4 << 20)
			require.NoError(t, err, bt.Name())
			assert.NoError(t, buf.AdviseHugePages(), bt.Name())
			require.NoError(t, buf.Close())
		}
	}
	for d := range backend.Devices() {
		if d.Type() != backend.DeviceGPU {
			continue
		}
		buf, err := d.BufferType().AllocBuffer(1 << 20)
		require.NoError(t, err, d.Name())
		assert.ErrorIs(t, buf.AdviseHugePages(), backend.ErrUnsupported, d.Name())
		require.NoError(t, buf.Close())
	}

	require.NoError(t, advised.Close())
	assert.ErrorIs(t, advised.AdviseHugePages(), ggml.ErrClosed)
}
