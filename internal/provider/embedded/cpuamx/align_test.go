//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

package cpuamx_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/internal/provider/embedded/internal/objtest"
)

// The AMX kernels' thread-local tile buffers are aligned to a cache line
// (amx_mmq.cpp gives mmq.cpp's thread_locals 64-byte alignment): at the
// alignment of their element type most sat 32 bytes into a line, and every
// tile load and store and 64-byte vector move on them was split over two
// lines. Read from the package's objects: each buffer's offset in its
// section, and the section's alignment.
func TestTileBuffersAligned(t *testing.T) {
	objs, err := objtest.Objects("github.com/go-ggml/ggml/internal/provider/embedded/cpuamx")
	require.NoError(t, err)
	n := 0
	for _, o := range objs {
		for _, v := range o.TLSVars {
			if !strings.Contains(v.Name, "tinygemm_kernel_amx") {
				continue
			}
			n++
			assert.Zero(t, v.Offset%64, "%s: %s at offset %d", o.Name, v.Name, v.Offset)
			assert.GreaterOrEqual(t, v.SectionAlign, uint64(64), "%s: %s's section", o.Name, v.Name)
		}
	}
	require.NotZero(t, n, "no thread-local buffers of tinygemm_kernel_amx found")
}
