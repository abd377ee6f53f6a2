package backend_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/testutil"
)

// Packages sched, cpu and the GPU packages see backend's handles through
// bridge's views: each handle must begin with its view's fields.
func TestViewLayouts(t *testing.T) {
	testutil.SameLayout(t, reflect.TypeFor[backend.Backend](), reflect.TypeFor[bridge.Backend]())
	testutil.SameLayout(t, reflect.TypeFor[backend.BufferType](), reflect.TypeFor[bridge.BufferType]())
	testutil.SameLayout(t, reflect.TypeFor[backend.HostMemory](), reflect.TypeFor[bridge.HostMemory]())
	testutil.SameLayout(t, reflect.TypeFor[backend.Device](), reflect.TypeFor[bridge.Device]())
}

// The views read what the handles hold, before and after Close.
func TestViewsSeeHandles(t *testing.T) {
	be, err := backend.InitByName("CPU", "")
	require.NoError(t, err)
	v := bridge.View[bridge.Backend](be)
	require.NoError(t, v.Usable())
	assert.Equal(t, be.Name(), v.Name())
	_, err = v.Ptr()
	require.NoError(t, err)
	assert.Nil(t, backend.OwnPool(be), "no pool before the first compute")

	// Enter is the backend's own exclusive work: a compute meanwhile is
	// refused.
	require.NoError(t, v.Enter())
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	g, err := c.BuildGraph(c.Scale(c.NewTensor(ggml.TypeF32, 4), 2))
	require.NoError(t, err)
	assert.ErrorIs(t, be.Compute(context.Background(), g), ggml.ErrBusy)
	v.Leave()

	bt := be.DefaultBufferType()
	p, err := bridge.View[bridge.BufferType](bt).Ptr()
	require.NoError(t, err)
	assert.Equal(t, bt.Name(), bridge.NewBufferType[backend.BufferType](p).Name())
	assert.Nil(t, bridge.NewBufferType[backend.BufferType](nil))
	_, err = bridge.View[bridge.BufferType](new(backend.BufferType)).Ptr()
	assert.ErrorIs(t, err, ggml.ErrInvalid)

	m, err := backend.AllocHostMemory(256)
	require.NoError(t, err)
	addr, size, err := bridge.View[bridge.HostMemory](m).Span()
	require.NoError(t, err)
	assert.Equal(t, uint64(256), size)
	assert.Equal(t, uintptr(addr), uintptr(reflect.ValueOf(m.Bytes()).UnsafePointer()))
	require.NoError(t, m.Close())
	_, _, err = bridge.View[bridge.HostMemory](m).Span()
	assert.ErrorIs(t, err, ggml.ErrClosed)

	require.NoError(t, be.Close())
	assert.ErrorIs(t, v.Usable(), ggml.ErrClosed)
	assert.Equal(t, "", v.Name())
	_, err = v.Acquire()
	assert.ErrorIs(t, err, ggml.ErrClosed)
}
