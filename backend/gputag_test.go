package backend_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
)

// TestTagAloneRegistersTheGPU: this test binary imports package backend
// , not package vulkan, and package backend registers the
// GPUs through internal/gpulink; with -tags vulkan the Vulkan devices must be in
// the registry all the same (once each, whichever provider registered
// them), and without the tag there is no Vulkan entry. make test-vulkan and
// make test-system-vulkan run it on lavapipe.
func TestTagAloneRegistersTheGPU(t *testing.T) {
	reg, err := backend.RegByName("Vulkan")
	if !vulkanTag {
		require.ErrorIs(t, err, backend.ErrNotFound)
		return
	}
	require.NoError(t, err, "built with -tags vulkan: the Vulkan backend must be registered (needs a Vulkan driver, e.g. Mesa's lavapipe)")
	require.Positive(t, reg.DeviceCount())
	names := map[string]int{}
	for d := range backend.Devices() {
		names[d.Name()]++
	}
	for i := range reg.DeviceCount() {
		name := reg.Device(i).Name()
		assert.Equal(t, 1, names[name], "device %s listed once", name)
	}
}
