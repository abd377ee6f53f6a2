package sched

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// viewSource's nil must compare equal to nil: resetViews tests it with
// != nil, which a nil *ggml.Tensor inside an any would pass.
func TestViewSourceNil(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 8)
	v := c.View1D(a, 4, 0)
	require.NoError(t, c.Err())

	if vs := viewSource(a); vs != nil {
		t.Fatalf("viewSource of a tensor that is no view = %#v, want nil", vs)
	}
	require.Same(t, a, viewSource(v))
}
