package llama_test

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/modeltest"
)

func TestMain(m *testing.M) {
	os.Exit(testutil.RunLeakChecked(m)) // no handle left alive
}

// wide is a model wider than the tiny preset, with more blocks, more
// query heads than fit the embedding (attention.key_length 64 × 8 heads
// is 512, the embedding 256), four query heads a KV head and Llama 3's
// RoPE base.
var wide = model.Config{
	Arch: "llama", ContextLength: 512, EmbeddingLength: 256, BlockCount: 4, FeedForward: 512,
	HeadCount: 8, HeadCountKV: 2, HeadDim: 64, RopeDim: 64,
	RopeFreqBase: 500000, RopeFreqScale: 1, RMSEps: 1e-5, VocabSize: 512,
}

// refCase is one random model the tests run on both sides.
type refCase struct {
	name string
	r    modeltest.RandomModel
}

// refCases are the tiny preset and wide, in each weight type of tolerance,
// tied and untied, with SentencePiece and GPT-2 vocabularies, written as
// llama.cpp's converter writes them (modeltest.RandomModel.Converted).
func refCases() []refCase {
	var cases []refCase
	for _, size := range []string{"tiny", "wide"} {
		for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0, ggml.TypeQ4_0} {
			for _, tied := range []bool{false, true} {
				for _, vocab := range []string{"llama", "gpt2"} {
					c := modeltest.Presets["tiny"]
					if size == "wide" {
						c = wide
					}
					if vocab == "gpt2" {
						c.VocabSize = 320 // the 256 byte runes, merges and control tokens
					}
					name := fmt.Sprintf("%s-%v-%s", size, typ, vocab)
					if tied {
						name += "-tied"
					}
					cases = append(cases, refCase{name, modeltest.RandomModel{Config: c, Type: typ, Tied: tied, Vocab: vocab, Converted: true}})
				}
			}
		}
	}
	return cases
}

// randomPrompt returns n random token ids below vocab.
func randomPrompt(rng *rand.Rand, n, vocab int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(rng.IntN(vocab))
	}
	return p
}

// TestGreedyMatchesLlamaCpp generates 24 tokens greedily after a random
// prompt of 10, with go-ggml (the prompt in one Eval, then one token at a
// time) and with llama.cpp, on the same random file, and wants the same
// tokens: up to a step where llama.cpp's two largest logits were closer
// than the type's tolerance.tie (a near-tie the rounding of either side
// may flip; logged).
func TestGreedyMatchesLlamaCpp(t *testing.T) {
	rng := testutil.NewRNG(t)
	for _, c := range refCases() {
		t.Run(c.name, func(t *testing.T) {
			m, ref := modeltest.StartPair(t, rng, c.r)
			modeltest.MatchGreedy(t, m, ref, randomPrompt(rng, 10, c.r.VocabSize), 24, modeltest.LlamaCppTolerance[c.r.Type])
		})
	}
}

// TestLogitsMatchLlamaCpp compares the logits of every token of random
// prompts, each in one batch, from go-ggml and llama.cpp on the same
// random file, within the weight type's tolerance (the largest difference
// and the RMS). The prompts are of 16 tokens (llama.cpp's fused attention
// goes query by query below 64 queries; go-ggml's may be tiled) and of 80
// (both tiled where go-ggml's CPU has its tiled kernel).
func TestLogitsMatchLlamaCpp(t *testing.T) {
	rng := testutil.NewRNG(t)
	type key struct {
		typ ggml.Type
		n   int
	}
	type seen struct{ max, rms float64 }
	worst := map[key]seen{}
	for _, c := range refCases() {
		t.Run(c.name, func(t *testing.T) {
			m, ref := modeltest.StartPair(t, rng, c.r)
			for _, n := range []int{16, 80} {
				diff, rms := modeltest.MatchLogits(t, m, ref, randomPrompt(rng, n, c.r.VocabSize), modeltest.LlamaCppTolerance[c.r.Type])
				k := key{c.r.Type, n}
				worst[k] = seen{max(worst[k].max, diff), max(worst[k].rms, rms)}
			}
		})
	}
	keys := slices.SortedFunc(maps.Keys(worst), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.typ, b.typ), cmp.Compare(a.n, b.n))
	})
	for _, k := range keys {
		t.Logf("%v, %d tokens: largest difference %.3g (tolerance %g), RMS %.3g (tolerance %g)",
			k.typ, k.n, worst[k].max, modeltest.LlamaCppTolerance[k.typ].Max, worst[k].rms, modeltest.LlamaCppTolerance[k.typ].RMS)
	}
}

// TestMixtral holds a Llama file with experts (Mixtral's layout: 4
// experts, 2 a token) to the float64 reference (f32, f16 and q8_0) and to
// llama.cpp (f32). A router's choice is discontinuous: where two experts'
// probabilities are close, the rounding of either side picks another
// expert and the token's output moves by a whole expert's contribution.
// The attention kernels' small differences (LlamaCppTolerance) reach the
// router through f16 and q8_0 activations often enough that a logit moved
// by 1.1 in a q8_0 run and 1.2 in one of five f16 runs, where go-ggml was
// the reference's to 3e-7. So the rounded types are held to the
// reference alone, and f32 to llama.cpp with an f32 cache on both sides:
// with llama.cpp's f16 cache, whose fused attention rounds the queries
// and sums values in f16 where go-ggml's keeps f32, f32's choices flipped
// too (qwen3moe's, in one run of six).
func TestMixtral(t *testing.T) {
	rng := testutil.NewRNG(t)
	c := modeltest.Presets["tiny"]
	for _, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0} {
		t.Run(typ.String(), func(t *testing.T) {
			r := modeltest.RandomModel{Config: c, Type: typ, Experts: 4, ExpertsUsed: 2, Converted: true, Seed: rng.Uint64()}
			{
				path := filepath.Join(t.TempDir(), "mixtral.gguf")
				require.NoError(t, modeltest.WriteRandom(path, r))
				m := modeltest.LoadModel(t, path, model.Options{ContextSize: 64, BatchSize: 8})
				ref := modeltest.OpenReference(t, path)
				if typ != ggml.TypeF32 {
					ref.EmulateCPU()
				}
				modeltest.CheckAgainstReference(t, m, ref, modeltest.RandomTokens(rng, 24, c.VocabSize), 10, modeltest.MoETolerance(typ))
			}
			if typ != ggml.TypeF32 {
				return
			}
			pm, cpp, pairPath := modeltest.StartPairCache(t, rng, r, model.CacheF32)
			tl := modeltest.LlamaCppTolerance[typ]
			pairRef := modeltest.OpenReference(t, pairPath)
			modeltest.MatchLogitsMoE(t, pm, cpp, pairRef, randomPrompt(rng, 16, c.VocabSize), tl, modeltest.RouterTie)
			modeltest.MatchGreedyMoE(t, pm, cpp, pairRef, randomPrompt(rng, 10, c.VocabSize), 24, tl, modeltest.RouterTie)
		})
	}
}
