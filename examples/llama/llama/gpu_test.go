package llama

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	// The GPU backends join ggml's registry when their package is linked
	// in: with -tags vulkan (make test-vulkan, in CI) or -tags cuda these
	// tests then run on that GPU; without a tag the packages say so and
	// the tests skip.
	_ "github.com/go-ggml/ggml/cuda"
	_ "github.com/go-ggml/ggml/vulkan"
)

// gpuTolerance is per weight type, against the plain float64 reference:
// GPU kernels round differently from the CPU's (f16 accumulators,
// activations kept in f32 or quantized to q8_1), so no emulation applies.
var gpuTolerance = map[ggml.Type]tol{
	ggml.TypeF32:  {1e-3, 1e-2},
	ggml.TypeF16:  {1e-2, 5e-2},
	ggml.TypeQ8_0: {5e-2, 0.15},
	ggml.TypeQ4_0: {5e-2, 0.15},
}

// TestEvalMatchesReferenceGPU runs the reference test on the accelerator:
// every layer there, and split with the first block on the CPU.
func TestEvalMatchesReferenceGPU(t *testing.T) {
	dev := bestGPU()
	if dev == nil {
		t.Skip("no GPU in ggml's registry: build with -tags vulkan (make vulkan; lavapipe needs GGML_VK_VISIBLE_DEVICES=0) or -tags cuda")
	}
	rng := testutil.NewRNG(t)
	for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0, ggml.TypeQ4_0} {
		for _, layers := range []int{-1, 1} {
			t.Run(typ.String()+map[int]string{-1: "/all", 1: "/split"}[layers], func(t *testing.T) {
				path := tinyFile(t, typ, false, rng.Uint64())
				m := loadModel(t, path, Options{ContextSize: 64, BatchSize: 4, GPULayers: layers})
				require.Len(t, m.Backends(), 2)
				mem := m.Memory()
				require.Len(t, mem, 2)
				assert.Equal(t, dev.Name(), m.Backends()[0].Device().Name())
				assert.Positive(t, mem[0].Weights, "weights on %s", mem[0].Backend)
				assert.Positive(t, mem[0].KVCache)
				if layers == 1 {
					assert.Positive(t, mem[1].KVCache, "block 0's cache on the CPU")
				} else {
					assert.Zero(t, mem[1].KVCache)
				}
				seq := randomTokens(t, 12, m.Config.VocabSize)
				checkAgainstReference(t, m, openRef(t, path), seq, 7, gpuTolerance[typ])
				for _, u := range m.Memory() {
					assert.Equal(t, u.ComputeReserved, u.ComputePeak, "%s: a compute needed more than the reserve", u.Backend)
				}
			})
		}
	}
}
