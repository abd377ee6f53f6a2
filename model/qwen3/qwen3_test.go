package qwen3_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/go-ggml/ggml/cuda" // -tags cuda: the CUDA backend joins the registry
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/modeltest"
	"github.com/go-ggml/ggml/model/qwen3"
	_ "github.com/go-ggml/ggml/vulkan" // -tags vulkan: the Vulkan backend
)

func TestMain(m *testing.M) { os.Exit(testutil.RunLeakChecked(m)) }

// TestMatchesReference holds qwen3's logits to the float64 reference, for
// f32 and q8_0 weights, tied and not, over a prompt and generated tokens.
func TestMatchesReference(t *testing.T) {
	c := modeltest.Presets["tiny"]
	c.Arch = qwen3.Arch
	modeltest.CheckReference(t, modeltest.RandomModel{Config: c})
}

// TestMatchesLlamaCpp holds qwen3's greedy tokens and logits to llama.cpp's
// on the same random files: f32 and q8_0, tied and not, with a GPT-2
// vocabulary as qwen3's files have.
func TestMatchesLlamaCpp(t *testing.T) {
	c := modeltest.Presets["tiny"]
	c.Arch, c.VocabSize = qwen3.Arch, 320
	modeltest.CheckLlamaCpp(t, modeltest.RandomModel{Config: c, Vocab: "gpt2"})
}

// TestMoEMatchesReference holds Qwen3-MoE (qwen3moe: Qwen3's attention, 4
// experts of the default width feed_forward_length/expert_used_count, 2 a
// token) to the float64 reference, f32 and q8_0, and to llama.cpp in f32
// with an f32 cache on both sides (the rounded types' router choices flip
// on llama.cpp's kernels' small differences, and so did f32's with an f16
// cache, whose fused attention rounds differently on the two sides, in
// one run of six: see llama's TestMixtral).
func TestMoEMatchesReference(t *testing.T) {
	rng := testutil.NewRNG(t)
	c := modeltest.Presets["tiny"]
	c.Arch = qwen3.ArchMoE
	for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeQ8_0} {
		t.Run(typ.String(), func(t *testing.T) {
			r := modeltest.RandomModel{Config: c, Type: typ, Experts: 4, ExpertsUsed: 2, Converted: true, Seed: rng.Uint64()}
			path := filepath.Join(t.TempDir(), "m.gguf")
			require.NoError(t, modeltest.WriteRandom(path, r))
			m := modeltest.LoadModel(t, path, model.Options{ContextSize: 64, BatchSize: 8})
			require.Equal(t, c, m.Config)
			ref := modeltest.OpenReference(t, path)
			if typ != ggml.TypeF32 {
				ref.EmulateCPU()
			}
			modeltest.CheckAgainstReference(t, m, ref, modeltest.RandomTokens(rng, 24, c.VocabSize), 10, modeltest.MoETolerance(typ))
			if typ != ggml.TypeF32 {
				return
			}
			pm, cpp, pairPath := modeltest.StartPairCache(t, rng, r, model.CacheF32)
			tl := modeltest.LlamaCppTolerance[typ]
			pairRef := modeltest.OpenReference(t, pairPath)
			modeltest.MatchLogitsMoE(t, pm, cpp, pairRef, modeltest.RandomTokens(rng, 16, c.VocabSize), tl, modeltest.RouterTie)
			modeltest.MatchGreedyMoE(t, pm, cpp, pairRef, modeltest.RandomTokens(rng, 10, c.VocabSize), 24, tl, modeltest.RouterTie)
		})
	}
}

// TestMatchesReferenceGPU runs the reference test on the accelerator
// where the build has one (-tags vulkan: lavapipe here; -tags cuda), every
// layer there and split with the first block on the CPU, against the plain
// float64 reference (a GPU's rounding is not emulated).
func TestMatchesReferenceGPU(t *testing.T) {
	dev := modeltest.GPU()
	if dev == nil {
		t.Skip("no GPU in ggml's registry: build with -tags vulkan (lavapipe needs GGML_VK_VISIBLE_DEVICES=0) or -tags cuda")
	}
	rng := testutil.NewRNG(t)
	c := modeltest.Presets["tiny"]
	c.Arch = qwen3.Arch
	for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeQ8_0} {
		for _, layers := range []int{-1, 1} {
			t.Run(typ.String()+map[int]string{-1: "/all", 1: "/split"}[layers], func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "m.gguf")
				require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: c, Type: typ, Seed: rng.Uint64()}))
				m := modeltest.LoadModel(t, path, model.Options{ContextSize: 64, BatchSize: 4, GPULayers: layers, Device: dev})
				require.Len(t, m.Backends(), 2)
				modeltest.CheckAgainstReference(t, m, modeltest.OpenReference(t, path), modeltest.RandomTokens(rng, 12, c.VocabSize), 5, modeltest.GPUTolerance(dev, typ))
			})
		}
	}
}

// TestMoEOneExpert: a mixture of one expert, whose stacks' last dimension
// of 1 the file leaves out (as ggml's writer and llama.cpp's converter
// do), loads (llama.cpp takes it) and matches the float64 reference.
func TestMoEOneExpert(t *testing.T) {
	rng := testutil.NewRNG(t)
	c := modeltest.Presets["tiny"]
	c.Arch = qwen3.ArchMoE
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: c, Experts: 1, ExpertsUsed: 1, Converted: true, Seed: rng.Uint64()}))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	ti, ok := f.Tensor("blk.0.ffn_gate_inp.weight")
	require.True(t, ok)
	require.Len(t, ti.Shape, 1, "the writer keeps the expert dimension of 1: this test checks nothing")
	require.NoError(t, f.Close())
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 64, BatchSize: 8})
	ref := modeltest.OpenReference(t, path)
	modeltest.CheckAgainstReference(t, m, ref, modeltest.RandomTokens(rng, 24, c.VocabSize), 10, modeltest.MoETolerance(ggml.TypeF32))
}
