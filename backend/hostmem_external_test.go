//go:build unix

package backend_test

import (
	"encoding/binary"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// anonMap maps n bytes of anonymous memory: memory outside Go's heap, as a
// file mapping is.
func anonMap(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	require.NoError(t, err)
	return b
}

func TestExternalHostMemory(t *testing.T) {
	rng := newRNG(t)
	mem := anonMap(t, 1<<16)
	var released atomic.Int32
	m, err := backend.ExternalHostMemory(mem, func() {
		released.Add(1)
		require.NoError(t, unix.Munmap(mem))
	})
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<16), m.Size())

	// A tensor in a CPU buffer over the memory reads what the memory holds,
	// and writes land in it.
	want := testutil.RandF32(rng, 256)
	buf, err := backend.CPUBufferFromHostMemory(m, 4096, 1024)
	require.NoError(t, err)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 256)
	require.NoError(t, backend.TensorAlloc(buf, x, 0))
	require.NoError(t, ggml.SetData(x, want))
	got, err := ggml.Data[float32](x)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	raw := m.Bytes()[4096 : 4096+1024]
	assert.Equal(t, want[0], float32frombits(raw[:4]))

	// Close refuses while the buffer lives; release runs once, at Close.
	require.ErrorIs(t, m.Close(), ggml.ErrInvalid)
	assert.Zero(t, released.Load())
	require.NoError(t, buf.Close())
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())
	assert.Equal(t, int32(1), released.Load())
	assert.Nil(t, m.Bytes())
	_, err = backend.CPUBufferFromHostMemory(m, 0, 64)
	require.ErrorIs(t, err, ggml.ErrClosed)
}

// A forgotten external HostMemory is released by the garbage collector once
// no buffer over it is alive.
func TestExternalHostMemoryCollected(t *testing.T) {
	var released atomic.Int32
	func() {
		mem := anonMap(t, 1<<16)
		m, err := backend.ExternalHostMemory(mem, func() {
			released.Add(1)
			unix.Munmap(mem)
		})
		require.NoError(t, err)
		_, err = backend.CPUBufferFromHostMemory(m, 0, 1<<16)
		require.NoError(t, err)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for released.Load() == 0 && time.Now().Before(deadline) {
		testutil.Settle(3)
	}
	assert.Equal(t, int32(1), released.Load())
}

func TestExternalHostMemoryMisuse(t *testing.T) {
	mem := anonMap(t, 1<<12)
	defer unix.Munmap(mem)
	_, err := backend.ExternalHostMemory(nil, func() {})
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = backend.ExternalHostMemory(mem, nil)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = backend.ExternalHostMemory(mem[1:], func() {})
	require.ErrorIs(t, err, ggml.ErrInvalid)
}

func float32frombits(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
