package llama_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
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

// tol is how far go-ggml may be from llama.cpp on the same file, by
// weight type: max is the largest absolute difference of a logit, rms the
// root mean square of the differences over a prompt's logits, tie the
// gap between llama.cpp's two largest logits below which greedy choices
// may part (CheckGreedy's minGap).
type tol struct{ max, rms, tie float64 }

// tolerance is tol by weight type. Seen over 40 models of each type
// (GGML_TEST_SEED 1 to 5; logits of every token of prompts of 16 and
// 80): largest differences f32 0.0054, f16 0.0066, q8_0 0.093, q4_0 0.10
// (logits up to about 4); RMS f32 8.4e-4, f16 1.2e-3, q8_0 and q4_0
// 0.021; greedy tokens that parted did so where llama.cpp's top two were
// at most 0.019 apart (f32, f16) and 0.068 (q8_0, q4_0). With two tokens
// of the prompt swapped on go-ggml's side, the largest difference was 2.1
// or more in every model.
//
// Where the differences come from: both run ggml's CPU kernels, but not
// the same fused attention. Below 64 queries (prompts of fewer tokens,
// and generation) llama.cpp's goes query by query, rounds the query to
// f16 and sums V in f16; go-ggml's own on AVX-512 CPUs
// (ggml.CPUTiledFlashAttn, third_party/ggml/embedded/cpu/fattn.c) keeps
// both in f32. With quantized weights each matrix product rounds its
// input to q8_0, which turns those small differences into steps of a
// quantization level (1/127 of a block's largest value) here and there,
// so they grow from layer to layer. With GOGGML_CPU_VARIANT=x86-64-v3
// (the provider's kernel, llama.cpp's) the tiny model's q8_0 logits of
// 16 tokens were llama.cpp's bit for bit.
var tolerance = map[ggml.Type]tol{
	ggml.TypeF32:  {max: 0.05, rms: 0.01, tie: 0.05},
	ggml.TypeF16:  {max: 0.05, rms: 0.01, tie: 0.05},
	ggml.TypeQ8_0: {max: 0.5, rms: 0.1, tie: 0.25},
	ggml.TypeQ4_0: {max: 0.5, rms: 0.1, tie: 0.25},
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

// start writes c's model with a seed from rng and returns it loaded by
// go-ggml (on the CPU, 2 threads, its defaults otherwise: those of
// llama.cpp) and llama.cpp running it.
func start(t *testing.T, rng *rand.Rand, c refCase) (*model.Model, *modeltest.LlamaCpp) {
	c.r.Seed = rng.Uint64()
	path := filepath.Join(t.TempDir(), c.name+".gguf")
	require.NoError(t, modeltest.WriteRandom(path, c.r))
	ref := modeltest.StartLlamaCpp(t, path)
	require.Equal(t, c.r.VocabSize, ref.VocabSize)
	m, err := model.Load(context.Background(), path, model.Options{Threads: 2, CPUOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m, ref
}

// randomPrompt returns n random token ids below vocab.
func randomPrompt(rng *rand.Rand, n, vocab int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(rng.IntN(vocab))
	}
	return p
}

// argmax returns the first index of v's largest value, as llama.cpp's
// driver chooses.
func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// TestGreedyMatchesLlamaCpp generates 24 tokens greedily after a random
// prompt of 10, with go-ggml (the prompt in one Eval, then one token at a
// time) and with llama.cpp, on the same random file, and wants the same
// tokens: up to a step where llama.cpp's two largest logits were closer
// than the type's tolerance.tie (a near-tie the rounding of either side
// may flip; logged).
func TestGreedyMatchesLlamaCpp(t *testing.T) {
	rng := testutil.NewRNG(t)
	const promptLen, n = 10, 24
	for _, c := range refCases() {
		t.Run(c.name, func(t *testing.T) {
			m, ref := start(t, rng, c)
			prompt := randomPrompt(rng, promptLen, c.r.VocabSize)
			want, gaps, err := ref.Generate(prompt, n)
			require.NoError(t, err)

			ctx := context.Background()
			logits, err := m.Eval(ctx, prompt, false)
			require.NoError(t, err)
			var got []int32
			var steps [][]float32 // go-ggml's logits at each step
			for i := range n {
				id := argmax(logits)
				got = append(got, id)
				steps = append(steps, slices.Clone(logits))
				if i+1 < n {
					logits, err = m.Eval(ctx, []int32{id}, false)
					require.NoError(t, err)
				}
			}
			tie := tolerance[c.r.Type].tie
			modeltest.CheckGreedy(t, got, want, gaps, tie)
			// Where they part, llama.cpp's choice is a near-tie on
			// go-ggml's side too.
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					d := steps[i][got[i]] - steps[i][want[i]]
					assert.Less(t, float64(d), tie, "step %d: go-ggml's logit of llama.cpp's choice %d is %.3g below its own choice's", i, want[i], d)
					break
				}
			}
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
			m, ref := start(t, rng, c)
			vocab, tl := c.r.VocabSize, tolerance[c.r.Type]
			for _, n := range []int{16, 80} {
				prompt := randomPrompt(rng, n, vocab)
				want, err := ref.Logits(prompt)
				require.NoError(t, err)
				require.NoError(t, m.Rewind(0))
				got, err := m.Eval(context.Background(), prompt, true)
				require.NoError(t, err)
				require.Len(t, got, n*vocab)

				diff, at, sum := 0.0, 0, 0.0
				for i, w := range want {
					require.Len(t, w, vocab)
					for j, x := range w {
						d := math.Abs(float64(got[i*vocab+j] - x))
						sum += d * d
						if d > diff || math.IsNaN(d) {
							diff, at = d, i*vocab+j
						}
					}
				}
				rms := math.Sqrt(sum / float64(n*vocab))
				t.Logf("%d tokens: largest difference %.3g (token %d, logit %d), RMS %.3g", n, diff, at/vocab, at%vocab, rms)
				k := key{c.r.Type, n}
				worst[k] = seen{max(worst[k].max, diff), max(worst[k].rms, rms)}
				assert.LessOrEqual(t, diff, tl.max, "%d tokens: the largest difference, at token %d, logit %d: go-ggml %g, llama.cpp %g",
					n, at/vocab, at%vocab, got[at], want[at/vocab][at%vocab])
				assert.LessOrEqual(t, rms, tl.rms, "%d tokens: the RMS of the differences", n)
			}
		})
	}
	keys := slices.SortedFunc(maps.Keys(worst), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.typ, b.typ), cmp.Compare(a.n, b.n))
	})
	for _, k := range keys {
		t.Logf("%v, %d tokens: largest difference %.3g (tolerance %g), RMS %.3g (tolerance %g)",
			k.typ, k.n, worst[k].max, tolerance[k.typ].max, worst[k].rms, tolerance[k.typ].rms)
	}
}
