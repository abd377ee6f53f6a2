package backend_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// A backend built as a loadable module (make vulkan-dl) is loaded into this
// binary, built without -tags vulkan: its device joins the registry,
// computes, and the module is unloaded again.
func TestLoadVulkanModule(t *testing.T) {
	path, err := filepath.Abs("../build/vulkan-dl/lib/libggml-vulkan.so")
	require.NoError(t, err)
	if _, err := os.Stat(path); err != nil {
		t.Skip("needs the Vulkan module: run make vulkan-dl")
	}
	if !strings.HasPrefix(ggml.Provider(), "embedded") {
		// Both ggmls say backend API version 2, so ggml would load it, but
		// the structs a module and the core share differ between them.
		t.Skip("the module is built from the embedded provider's ggml (build/backend.sh); this binary links " + ggml.Provider())
	}
	if _, err := backend.RegByName("Vulkan"); err == nil {
		t.Skip("Vulkan is built in (-tags vulkan): the module would be a second copy")
	}
	if os.Getenv("GGML_VK_VISIBLE_DEVICES") == "" {
		t.Setenv("GGML_VK_VISIBLE_DEVICES", "0") // lavapipe is a CPU-type device ggml hides
	}
	before := backend.DeviceCount()
	r, err := backend.Load(path)
	require.NoError(t, err)
	assert.Equal(t, "Vulkan", r.Name())
	if r.DeviceCount() == 0 {
		require.NoError(t, backend.Unload(r))
		t.Skip("the Vulkan module loaded but sees no device")
	}
	assert.Equal(t, before+r.DeviceCount(), backend.DeviceCount())

	gpu, err := r.Device(0).Init("")
	require.NoError(t, err)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	a := c.NewTensor(ggml.TypeF32, 8)
	y := c.Scale(c.Add(a, a), 0.5)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, gpu)
	require.NoError(t, err)
	av := []float32{1, -2, 3, -4, 5, -6, 7, -8}
	require.NoError(t, ggml.SetData(a, av))
	require.NoError(t, gpu.Compute(context.Background(), g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	assert.Equal(t, av, got) // (a+a)/2 is exact in any precision these values fit

	require.ErrorIs(t, backend.Unload(r), ggml.ErrInvalid, "a backend of it is open")
	require.NoError(t, gpu.Close())
	// The backend is closed, its buffer is not: the buffer's code is in
	// the library too.
	require.ErrorIs(t, backend.Unload(r), ggml.ErrInvalid, "a buffer of it is open")
	require.NoError(t, buf.Close())
	require.NoError(t, c.Close())
	require.NoError(t, backend.Unload(r))
	assert.Equal(t, before, backend.DeviceCount())
	_, err = r.Features()
	require.ErrorIs(t, err, ggml.ErrClosed)
}
