package ggml_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// requireOnePrefix checks that an error's text says "ggml: " once, at its
// start: wrapped errors lose their own.
func requireOnePrefix(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "ggml: "), "%v", err)
	assert.Equal(t, 1, strings.Count(err.Error(), "ggml: "), "%v", err)
}

// Writing floats into a quantized tensor: the error points to the writes'
// route (Quantize, SetBytes), reading to the reads' (Bytes, Dequantize).
func TestErrorTextQuantizedTransfer(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 1 << 12})
	require.NoError(t, err)
	defer c.Close()
	q := c.NewTensor(ggml.TypeQ4_0, 64)
	err = ggml.SetData(q, make([]float32, 64))
	require.ErrorIs(t, err, ggml.ErrType)
	assert.Contains(t, err.Error(), "Quantize")
	assert.Contains(t, err.Error(), "SetBytes")
	assert.NotContains(t, err.Error(), "Dequantize")
	_, err = ggml.Data[float32](q)
	require.ErrorIs(t, err, ggml.ErrType)
	assert.Contains(t, err.Error(), "Dequantize")
}

// A full pool names what to raise: MemSize when the data does not fit
// (with the real size asked for), MaxTensors when the tensors are all
// there; one "ggml: " either way.
func TestErrorTextFullPool(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, MemSize: 64})
	require.NoError(t, err)
	defer c.Close()
	c.NewTensor(ggml.TypeF32, 1000)
	err = c.Err()
	require.ErrorIs(t, err, ggml.ErrNoMemory)
	requireOnePrefix(t, err)
	assert.Contains(t, err.Error(), "raise ContextParams.MemSize (64 bytes")
	assert.Contains(t, err.Error(), "this one's is 4000")

	c2, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	defer c2.Close()
	a := c2.NewTensor(ggml.TypeF32, 8)
	b := c2.NewTensor(ggml.TypeF32, 8)
	require.NoError(t, c2.Err())
	c2.Add(a, b)
	err = c2.Err()
	require.ErrorIs(t, err, ggml.ErrNoMemory)
	requireOnePrefix(t, err)
	assert.Contains(t, err.Error(), "raise ContextParams.MaxTensors (2; the context holds 2 tensors)")
}

// A compute whose input has no memory: the error names the input once,
// under one prefix.
func TestErrorTextUnallocatedInput(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 4).SetName("x").SetInput()
	y := c.Scale(x, 2)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	be := cpuBackend(t)
	err = be.Compute(context.Background(), g)
	require.ErrorIs(t, err, ggml.ErrNotAllocated)
	requireOnePrefix(t, err)
	assert.Contains(t, err.Error(), "x f32[4]")
}
