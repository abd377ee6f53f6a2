package ggml_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/testutil"
)

// Packages backend and sched see ggml's handles through bridge's views:
// each handle must begin with its view's fields.
func TestViewLayouts(t *testing.T) {
	testutil.SameLayout(t, reflect.TypeFor[ggml.Tensor](), reflect.TypeFor[bridge.Tensor]())
	testutil.SameLayout(t, reflect.TypeFor[ggml.Context](), reflect.TypeFor[bridge.Context]())
	testutil.SameLayout(t, reflect.TypeFor[ggml.Graph](), reflect.TypeFor[bridge.Graph]())
}

// The views read what the handles hold: the same tensor, view source,
// poison, context and graph members, before and after Close.
func TestViewsSeeHandles(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 8, 2).SetName("a")
	v := c.View1D(a, 4, 0)
	y := c.Scale(a, 2)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)

	av, vv := bridge.View[bridge.Tensor](a), bridge.View[bridge.Tensor](v)
	assert.Equal(t, a.String(), av.String())
	assert.Equal(t, "a f32[8 2]", av.String())
	assert.Nil(t, av.ViewSource())
	assert.Same(t, av, vv.ViewSource())
	assert.Same(t, bridge.View[bridge.Tensor](v.ViewSource()), vv.ViewSource())
	require.NoError(t, av.Usable())
	assert.ErrorIs(t, av.StorageErr(), ggml.ErrNotAllocated)
	assert.Nil(t, bridge.View[bridge.Tensor]((*ggml.Tensor)(nil)))

	cp, err := bridge.View[bridge.Context](c).Ptr()
	require.NoError(t, err)
	assert.NotNil(t, cp)

	gv := bridge.View[bridge.Graph](g)
	ts := gv.Tensors()
	require.Len(t, ts, g.NumLeafs()+g.NumNodes())
	assert.Same(t, av, ts[0])
	assert.Same(t, bridge.View[bridge.Tensor](y), ts[len(ts)-1])
	_, err = gv.Ptr()
	require.NoError(t, err)
	assert.Same(t, bridge.Handle[ggml.Graph](gv), g)

	// A poisoned tensor reports its op's error; its context the same.
	p := c.Add(a, c.NewTensor(ggml.TypeF32, 3))
	require.Error(t, p.Err())
	assert.Equal(t, p.Err(), bridge.View[bridge.Tensor](p).Usable())
	_, err = bridge.View[bridge.Context](c).Ptr()
	assert.Equal(t, c.Err(), err)
	assert.Equal(t, "<poisoned tensor>", bridge.View[bridge.Tensor](p).String())

	require.NoError(t, c.Close())
	assert.False(t, av.Live())
	assert.ErrorIs(t, av.Usable(), ggml.ErrClosed)
	assert.Equal(t, "<tensor of closed context>", av.String())
	_, err = bridge.View[bridge.Context](c).Ptr()
	assert.ErrorIs(t, err, ggml.ErrClosed)
	_, err = gv.Ptr()
	assert.ErrorIs(t, err, ggml.ErrClosed)
	assert.True(t, errors.Is(gv.Usable(), ggml.ErrClosed))
}
