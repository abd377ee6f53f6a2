package gemma_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/gemma"
	"github.com/go-ggml/ggml/model/modeltest"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunLeakChecked(m)) }

// TestMatchesReference holds Gemma 2's and Gemma 3's logits to the
// float64 reference over a prompt and generated tokens that reach past
// the sliding window, with small soft caps so that they matter, with
// and without flash attention (the fused kernel caps and masks itself),
// for f32 and q8_0 weights.
func TestMatchesReference(t *testing.T) {
	rng := testutil.NewRNG(t)
	for _, arch := range []string{gemma.Gemma2, gemma.Gemma3} {
		for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeQ8_0} {
			for _, fa := range []model.FlashAttnMode{model.FlashAttnOn, model.FlashAttnOff} {
				name := arch + "/" + typ.String() + map[model.FlashAttnMode]string{model.FlashAttnOn: "/fa", model.FlashAttnOff: "/products"}[fa]
				t.Run(name, func(t *testing.T) {
					c := modeltest.Presets["tiny"]
					c.Arch, c.BlockCount = arch, 4
					r := modeltest.RandomModel{Config: c, Type: typ, Seed: rng.Uint64(),
						SlidingWindow: 6, SlidingWindowPattern: 2, RopeBaseSWA: 1000, AttnSoftcap: 1.5, FinalSoftcap: 2}
					if arch == gemma.Gemma3 {
						r.AttnSoftcap = 0 // Gemma 3 has none; llama.cpp ignores the key
						r.SlidingWindowPattern = 3
					}
					path := filepath.Join(t.TempDir(), "m.gguf")
					require.NoError(t, modeltest.WriteRandom(path, r))
					m := modeltest.LoadModel(t, path, model.Options{ContextSize: 64, BatchSize: 8, FlashAttn: fa})
					require.True(t, m.Tied())
					ref := modeltest.OpenReference(t, path)
					if typ != ggml.TypeF32 {
						ref.EmulateCPU()
					}
					tl := modeltest.Tolerance[typ]
					if typ == ggml.TypeF32 {
						// ggml's GELU reads a table of f16 inputs: where a gate's
						// input lies within float32 rounding of the midpoint of
						// two f16 values, ggml and the reference take
						// neighbouring table entries, an f16 step apart (seen:
						// 6.6e-4 of the logits' rms). The best token stays at
						// float32 precision.
						tl.Worst = 3e-3
					}
					modeltest.CheckAgainstReference(t, m, ref, modeltest.RandomTokens(rng, 24, c.VocabSize), 10, tl)
				})
			}
		}
	}
}

// TestMatchesLlamaCpp holds Gemma 2's and Gemma 3's greedy tokens and
// logits to llama.cpp's on the same random files (sliding windows of 6,
// small soft caps), f32 and q8_0, over prompts longer than the window.
func TestMatchesLlamaCpp(t *testing.T) {
	rng := testutil.NewRNG(t)
	for _, arch := range []string{gemma.Gemma2, gemma.Gemma3} {
		for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeQ8_0} {
			t.Run(arch+"/"+typ.String(), func(t *testing.T) {
				c := modeltest.Presets["tiny"]
				c.Arch, c.BlockCount = arch, 4
				r := modeltest.RandomModel{Config: c, Type: typ, Converted: true,
					SlidingWindow: 6, SlidingWindowPattern: 2, RopeBaseSWA: 1000, AttnSoftcap: 1.5, FinalSoftcap: 2}
				if arch == gemma.Gemma3 {
					r.AttnSoftcap, r.SlidingWindowPattern = 0, 3
				}
				m, ref := modeltest.StartPair(t, rng, r)
				tl := modeltest.LlamaCppTolerance[typ]
				modeltest.MatchLogits(t, m, ref, modeltest.RandomTokens(rng, 16, c.VocabSize), tl)
				modeltest.MatchGreedy(t, m, ref, modeltest.RandomTokens(rng, 10, c.VocabSize), 24, tl)
			})
		}
	}
}

// TestCappedPrompt: a Gemma 2 prompt batch longer than 32 tokens, with
// flash attention, attends through go-ggml's tiled kernel, which takes
// the soft cap, where it runs, and by products elsewhere
// (GOGGML_CPU_VARIANT=x86-64-v3, the system provider), and matches the
// reference either way.
func TestCappedPrompt(t *testing.T) {
	rng := testutil.NewRNG(t)
	c := modeltest.Presets["tiny"]
	c.Arch = gemma.Gemma2
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: c, Seed: rng.Uint64(),
		SlidingWindow: 6, AttnSoftcap: 1.5, FinalSoftcap: 2}))
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 64, BatchSize: 48, FlashAttn: model.FlashAttnOn})
	tl := modeltest.Tolerance[ggml.TypeF32]
	tl.Worst = 3e-3 // GELU's f16 table (TestMatchesReference)
	modeltest.CheckAgainstReference(t, m, modeltest.OpenReference(t, path), modeltest.RandomTokens(rng, 50, c.VocabSize), 44, tl)
}

// TestSeqShift holds Model.SeqShift to the float64 reference on Gemma 2
// and 3: the sliding-window layers rotate their keys with their own RoPE
// base (ShiftRope), and the window follows the moved positions.
func TestSeqShift(t *testing.T) {
	rng := testutil.NewRNG(t)
	for _, arch := range []string{gemma.Gemma2, gemma.Gemma3} {
		t.Run(arch, func(t *testing.T) {
			c := modeltest.Presets["tiny"]
			c.Arch, c.BlockCount = arch, 4
			r := modeltest.RandomModel{Config: c, Type: ggml.TypeF32, Seed: rng.Uint64(),
				SlidingWindow: 6, SlidingWindowPattern: 2, RopeBaseSWA: 1000, AttnSoftcap: 1.5, FinalSoftcap: 2}
			if arch == gemma.Gemma3 {
				r.AttnSoftcap = 0
				r.SlidingWindowPattern = 3
			}
			path := filepath.Join(t.TempDir(), "m.gguf")
			require.NoError(t, modeltest.WriteRandom(path, r))
			m := modeltest.LoadModel(t, path, model.Options{ContextSize: 96, BatchSize: 32})
			tl := modeltest.Tolerance[ggml.TypeF32]
			tl.Worst = 3e-3 // ggml's GELU table (TestMatchesReference)
			modeltest.CheckSeqShift(t, m, modeltest.OpenReference(t, path), rng, tl)
		})
	}
}
