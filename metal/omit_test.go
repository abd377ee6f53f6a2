//go:build !darwin || !arm64

package metal_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/metal"
)

func TestWithoutMetal(t *testing.T) {
	require.False(t, metal.Built)
	_, err := metal.Init()
	require.ErrorIs(t, err, metal.ErrNotBuilt)
}
