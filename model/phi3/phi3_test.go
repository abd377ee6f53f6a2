package phi3_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/modeltest"
	"github.com/go-ggml/ggml/model/phi3"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunLeakChecked(m)) }

// config is the tiny preset as Phi-3: its original context 32, so that a
// cache of 64 takes the long RoPE factors.
func config() model.Config {
	c := modeltest.Presets["tiny"]
	c.Arch, c.RopeCtxOrig = phi3.Arch, 32
	return c
}

// TestMatchesReference holds Phi-3's logits (fused attn_qkv and gate-up)
// to the float64 reference, f32 and q8_0, with the short RoPE factors (a
// context of 32) and the long ones (64).
func TestMatchesReference(t *testing.T) {
	rng := testutil.NewRNG(t)
	c := config()
	for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeQ8_0} {
		for _, ctxSize := range []int{32, 64} {
			t.Run(typ.String()+map[int]string{32: "/short", 64: "/long"}[ctxSize], func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "m.gguf")
				require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: c, Type: typ, Seed: rng.Uint64(), RopeFactors: true}))
				m := modeltest.LoadModel(t, path, model.Options{ContextSize: ctxSize, BatchSize: 8})
				require.Equal(t, c, m.Config)
				ref := modeltest.OpenReference(t, path)
				if ctxSize > c.RopeCtxOrig {
					ref.UseLongRopeFactors()
				}
				if typ != ggml.TypeF32 {
					ref.EmulateCPU()
				}
				modeltest.CheckAgainstReference(t, m, ref, modeltest.RandomTokens(rng, 24, c.VocabSize), 10, modeltest.Tolerance[typ])
			})
		}
	}
}

// TestMatchesLlamaCpp holds Phi-3's greedy tokens and logits to
// llama.cpp's on the same random files, f32 and q8_0 (no RoPE factors:
// llama.cpp's driver runs a context of its own).
func TestMatchesLlamaCpp(t *testing.T) {
	rng := testutil.NewRNG(t)
	c := config()
	c.RopeCtxOrig = c.ContextLength
	for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeQ8_0} {
		t.Run(typ.String(), func(t *testing.T) {
			m, ref := modeltest.StartPair(t, rng, modeltest.RandomModel{Config: c, Type: typ, Converted: true})
			tl := modeltest.LlamaCppTolerance[typ]
			modeltest.MatchLogits(t, m, ref, modeltest.RandomTokens(rng, 16, c.VocabSize), tl)
			modeltest.MatchGreedy(t, m, ref, modeltest.RandomTokens(rng, 10, c.VocabSize), 24, tl)
		})
	}
}
