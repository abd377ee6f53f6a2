//go:build vulkan && cgo

package vulkan_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// Row indices in device memory are range-checked too (through a copy to
// the host): a GPU kernel would read out of bounds, and a corrupted device
// is worse than the cost of the copy. Good indices compute the right rows.
func TestDeviceIndicesChecked(t *testing.T) {
	be := vk(t)
	rng := testutil.NewRNG(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 8, 4)
	idx := c.NewTensor(ggml.TypeI32, 3).SetInput()
	rows := c.GetRows(a, idx)
	g, err := c.BuildGraph(rows)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	require.False(t, buf.IsHost(), "the indices must live in device memory for this test")
	av := make([]float32, 32)
	for i := range av {
		av[i] = float32(rng.NormFloat64())
	}
	require.NoError(t, ggml.SetData(a, av))

	require.NoError(t, ggml.SetData(idx, []int32{1, 4, 0}))
	err = be.Compute(context.Background(), g)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	assert.Contains(t, err.Error(), "outside")

	good := []int32{3, 0, 2}
	require.NoError(t, ggml.SetData(idx, good))
	require.NoError(t, be.Compute(context.Background(), g))
	got, err := ggml.Data[float32](rows)
	require.NoError(t, err)
	for i, r := range good {
		assert.Equal(t, av[int(r)*8:int(r)*8+8], got[i*8:i*8+8])
	}
}

// An op the Vulkan backend does not support is refused by Compute with
// backend.ErrUnsupported naming it: out_prod, which the embedded provider's
// Vulkan lacks, or else diag_mask_zero, which neither provider's Vulkan has
// (upstream v0.21.0 runs out_prod).
func TestComputeUnsupportedOp(t *testing.T) {
	be := vk(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 4, 3)
	y, name := c.OutProd(a, c.NewTensor(ggml.TypeF32, 5, 3)), "OUT_PROD"
	if be.SupportsOp(y) {
		y, name = c.DiagMaskZero(c.NewTensor(ggml.TypeF32, 4, 4), 0), "DIAG_MASK_ZERO"
	}
	if be.SupportsOp(y) {
		t.Skip("this Vulkan device runs out_prod and diag_mask_zero; no unsupported op to try")
	}
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	err = be.Compute(context.Background(), g)
	require.ErrorIs(t, err, backend.ErrUnsupported)
	require.Contains(t, err.Error(), name)
}
