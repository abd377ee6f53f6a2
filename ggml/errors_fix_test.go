package ggml_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// TestErrorsNameTheFix: the errors of a user's first mistakes say what to
// do, with one "ggml:" prefix.
func TestErrorsNameTheFix(t *testing.T) {
	// Too few MaxTensors, with a graph reserved: the tensor that does not
	// fit says so, not the graph later.
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 4)
	require.NoError(t, c.Err())
	c.SoftMax(x)
	require.ErrorIs(t, c.Err(), ggml.ErrNoMemory)
	assert.Contains(t, c.Err().Error(), "MaxTensors")

	// Data of a tensor not allocated yet.
	c2, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	defer c2.Close()
	y := c2.NewTensor(ggml.TypeF32, 4)
	err = ggml.SetData(y, make([]float32, 4))
	require.ErrorIs(t, err, ggml.ErrNotAllocated)
	assert.Contains(t, err.Error(), "AllocContextTensors")
	assert.Equal(t, 1, strings.Count(err.Error(), "ggml:"), err.Error())
	assert.True(t, strings.HasPrefix(err.Error(), "ggml: SetData: "), err.Error())

	// float32 elements of quantized data.
	q := c2.NewTensor(ggml.TypeQ4_0, 32)
	buf, err := backend.AllocContextTensors(c2, cpuBackend(t))
	require.NoError(t, err)
	defer buf.Close()
	_, err = ggml.Data[float32](q)
	require.ErrorIs(t, err, ggml.ErrType)
	assert.Contains(t, err.Error(), "Dequantize")

	// An unknown device: the ones there are.
	_, err = backend.InitByName("NoSuchDevice0", "")
	require.ErrorIs(t, err, backend.ErrNotFound)
	assert.Contains(t, err.Error(), "CPU")
	_, err = backend.DeviceByName("NoSuchDevice0")
	assert.Contains(t, err.Error(), "CPU")
}
