package model_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"

	// The GPU backends join ggml's registry when their package is linked
	// in: with -tags vulkan (make test-vulkan, in CI) or -tags cuda these
	// tests then run on that GPU; without a tag the packages say so and
	// the tests skip.
	_ "github.com/go-ggml/ggml/cuda"
	_ "github.com/go-ggml/ggml/vulkan"

	. "github.com/go-ggml/ggml/model"
	_ "github.com/go-ggml/ggml/model/llama"
	. "github.com/go-ggml/ggml/model/modeltest"
)

// TestEvalMatchesReferenceGPU runs the reference test on the accelerator:
// every layer there, and split with the first block on the CPU.
func TestEvalMatchesReferenceGPU(t *testing.T) {
	dev := BestGPU()
	if dev == nil {
		t.Skip("no GPU in ggml's registry: build with -tags vulkan (make vulkan; lavapipe needs GGML_VK_VISIBLE_DEVICES=0) or -tags cuda")
	}
	rng := testutil.NewRNG(t)
	for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0, ggml.TypeQ4_0} {
		for _, layers := range []int{-1, 1} {
			t.Run(typ.String()+map[int]string{-1: "/all", 1: "/split"}[layers], func(t *testing.T) {
				path := tinyFile(t, typ, false, rng.Uint64())
				m := LoadModel(t, path, Options{ContextSize: 64, BatchSize: 4, GPULayers: layers})
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
				seq := RandomTokens(rng, 12, m.Config.VocabSize)
				CheckAgainstReference(t, m, OpenReference(t, path), seq, 7, GPUTolerance(dev, typ))
				for _, u := range m.Memory() {
					assert.Equal(t, u.ComputeReserved, u.ComputePeak, "%s: a compute needed more than the reserve", u.Backend)
				}
			})
		}
	}
}

// TestEvalMixedTypesGPU runs mixed-type models on the accelerator.
// Matrices of a type the device cannot multiply stay on the CPU (tq2_0 is
// there for that: few GPU backends take it), and the model still matches
// the reference.
func TestEvalMixedTypesGPU(t *testing.T) {
	dev := BestGPU()
	if dev == nil {
		t.Skip("no GPU in ggml's registry: build with -tags vulkan (make vulkan; lavapipe needs GGML_VK_VISIBLE_DEVICES=0) or -tags cuda")
	}
	rng := testutil.NewRNG(t)
	for _, c := range []struct {
		name string
		r    RandomModel
	}{
		{"q4_K_M", RandomModel{Config: mixConfig, Types: MixQ4KM(mixConfig.BlockCount, false), Converted: true, Vocab: "gpt2"}},
		// Q4_K_M with tq2_0 for the feed-forward of block 1, biases and a
		// tied output. (Not every type: lavapipe compiles a shader per type
		// and batch shape, minutes each on CI's CPUs.)
		{"q4_K_M, tq2_0, biases, tied", RandomModel{Config: mixConfig, Types: func(name string, rowLen int64) ggml.Type {
			if strings.HasPrefix(name, "blk.1.ffn_") {
				return ggml.TypeTQ2_0
			}
			return MixQ4KM(mixConfig.BlockCount, true)(name, rowLen)
		}, Tied: true, Biases: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.r.Seed = rng.Uint64()
			path := filepath.Join(t.TempDir(), "mix.gguf")
			require.NoError(t, WriteRandom(path, c.r))
			m := LoadModel(t, path, Options{ContextSize: 64, BatchSize: 5, GPULayers: -1, NoMmap: true})
			require.Len(t, m.Backends(), 2)
			// Which matrices the device refuses, asked as Load asks: they
			// and the token embeddings (when not tied) are the weights on
			// the CPU, each in a copied buffer padded to its alignment.
			f, err := gguf.Open(path)
			require.NoError(t, err)
			defer f.Close()
			cpuOnly, _, err := CheckOps(f, m.Tied(), int64(m.BatchSize()), dev, false)
			require.NoError(t, err)
			t.Logf("on the CPU for want of GPU support: %v", slices.Sorted(maps.Keys(cpuOnly)))
			var onCPU uint64
			n := 0
			for _, ti := range f.Tensors() {
				if cpuOnly[ti.Name] || (ti.Name == "token_embd.weight" && !m.Tied()) {
					onCPU += ti.Size
					n++
				}
			}
			mem := m.Memory()
			assert.GreaterOrEqual(t, mem[1].Weights, onCPU)
			assert.LessOrEqual(t, mem[1].Weights, onCPU+uint64(n)*backend.CPUBufferType().Alignment())
			CheckAgainstReference(t, m, OpenReference(t, path), RandomTokens(rng, 12, m.Config.VocabSize), 7, GPUTolerance(dev, ggml.TypeQ4_0))
		})
	}
}
