//go:build !cuda

package cuda_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/cuda"
)

func TestWithoutTheTag(t *testing.T) {
	require.False(t, cuda.Built)
	require.Zero(t, cuda.DeviceCount())
	_, err := cuda.Init(0)
	require.ErrorIs(t, err, cuda.ErrNotBuilt)
	require.Contains(t, err.Error(), "-tags cuda")
}
