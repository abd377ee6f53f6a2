package modeltest

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
)

// ArchWeightTypes are the weight types CheckReference and CheckLlamaCpp
// run an architecture in.
var ArchWeightTypes = []ggml.Type{ggml.TypeF32, ggml.TypeQ8_0}

// CheckReference holds the architecture of r (its Config.Arch, the tiny
// preset's sizes or r's own) to the float64 reference: a random file in
// each of ArchWeightTypes, tied and not, a prompt of 10 and 14 tokens after
// it (CheckAgainstReference, with the CPU's rounding emulated for rounded
// types).
func CheckReference(t *testing.T, r RandomModel) {
	rng := testutil.NewRNG(t)
	for _, typ := range ArchWeightTypes {
		for _, tied := range []bool{false, true} {
			t.Run(typ.String()+map[bool]string{true: "-tied"}[tied], func(t *testing.T) {
				r := r
				r.Type, r.Tied, r.Seed = typ, tied, rng.Uint64()
				path := filepath.Join(t.TempDir(), "m.gguf")
				require.NoError(t, WriteRandom(path, r))
				m := LoadModel(t, path, model.Options{ContextSize: 64, BatchSize: 8})
				require.Equal(t, r.Config, m.Config)
				ref := OpenReference(t, path)
				if typ != ggml.TypeF32 {
					ref.EmulateCPU()
				}
				CheckAgainstReference(t, m, ref, RandomTokens(rng, 24, r.VocabSize), 10, Tolerance[typ])
			})
		}
	}
}

// CheckLlamaCpp holds the architecture of r to llama.cpp: random files
// as llama.cpp's converter writes them (r.Converted) in each of
// ArchWeightTypes, tied and not, whose logits over a prompt of 16 tokens
// (MatchLogits) and greedy tokens after one of 10 (MatchGreedy) must be
// llama.cpp's.
func CheckLlamaCpp(t *testing.T, r RandomModel) {
	rng := testutil.NewRNG(t)
	r.Converted = true
	for _, typ := range ArchWeightTypes {
		for _, tied := range []bool{false, true} {
			t.Run(typ.String()+map[bool]string{true: "-tied"}[tied], func(t *testing.T) {
				r := r
				r.Type, r.Tied = typ, tied
				m, ref := StartPair(t, rng, r)
				tl := LlamaCppTolerance[typ]
				MatchLogits(t, m, ref, RandomTokens(rng, 16, r.VocabSize), tl)
				MatchGreedy(t, m, ref, RandomTokens(rng, 10, r.VocabSize), 24, tl)
			})
		}
	}
}
