//go:build !vulkan

package vulkan_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/vulkan"
)

func TestWithoutTheTag(t *testing.T) {
	require.False(t, vulkan.Built)
	require.Zero(t, vulkan.DeviceCount())
	_, err := vulkan.Init(0)
	require.ErrorIs(t, err, vulkan.ErrNotBuilt)
	require.Contains(t, err.Error(), "-tags vulkan")
	require.Contains(t, err.Error(), "make vulkan")
	_, err = vulkan.Description(0)
	require.ErrorIs(t, err, vulkan.ErrNotBuilt)
}
