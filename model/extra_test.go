package model_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"

	. "github.com/go-ggml/ggml/model"
	_ "github.com/go-ggml/ggml/model/llama"
	. "github.com/go-ggml/ggml/model/modeltest"
)

// wideConfig is a one-block model 2048 wide: wide enough for every extra
// buffer type of the CPU (AMX takes rows of 2048 and more: all but
// ffn_down, which goes to CPU_REPACK with any multiple of 8 rows), small
// enough for the float64 reference.
var wideConfig = Config{
	ContextLength: 128, EmbeddingLength: 2048, BlockCount: 1, FeedForward: 256,
	HeadCount: 32, HeadCountKV: 8, HeadDim: 64, RopeDim: 64,
	RopeFreqBase: 500000, RopeFreqScale: 1, RMSEps: 1e-5, VocabSize: 256,
}

// TestEvalExtraBufferTypes runs models whose weights Load places as
// llama.cpp does, in the CPU's extra buffer types (AMX where the CPU has
// it, CPU_REPACK), against the float64 reference that rounds activations as
// the CPU's kernels do: a prompt in batches of 33 and 3 tokens (products of
// 32 rows and more, and fewer), then tokens one at a time (matrix-vector
// products). Options.NoRepack keeps them out (the other tests run both).
func TestEvalExtraBufferTypes(t *testing.T) {
	dev, err := backend.DeviceByType(backend.DeviceCPU)
	require.NoError(t, err)
	extra, err := dev.ExtraBufferTypes()
	require.NoError(t, err)
	if len(extra) == 0 {
		t.Skip("the CPU device has no extra buffer types in this build")
	}
	var names []string
	for _, bt := range extra {
		names = append(names, bt.Name())
	}
	rng := testutil.NewRNG(t)
	for _, c := range []struct {
		name string
		r    RandomModel
		tl   Tol
	}{
		{"q4_0", RandomModel{Config: wideConfig, Type: ggml.TypeQ4_0}, Tolerance[ggml.TypeQ4_0]},
		{"q8_0", RandomModel{Config: wideConfig, Type: ggml.TypeQ8_0}, Tolerance[ggml.TypeQ8_0]},
		{"q4_K_M", RandomModel{Config: wideConfig, Types: MixQ4KM(wideConfig.BlockCount, false)}, mixedTolerance},
		// Tied: the output layer's product reads a copy of token_embd in
		// an extra type, the lookup the file's own (copyOutput).
		{"q8_0-tied", RandomModel{Config: wideConfig, Type: ggml.TypeQ8_0, Tied: true}, Tolerance[ggml.TypeQ8_0]},
		{"q4_0-tied", RandomModel{Config: wideConfig, Type: ggml.TypeQ4_0, Tied: true}, Tolerance[ggml.TypeQ4_0]},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.r.Seed = rng.Uint64()
			path := filepath.Join(t.TempDir(), c.name+".gguf")
			require.NoError(t, WriteRandom(path, c.r))
			seq := RandomTokens(rng, 40, wideConfig.VocabSize)
			for _, noRepack := range []bool{true, false} {
				m := LoadModel(t, path, Options{ContextSize: 64, BatchSize: 33, Threads: 2, NoRepack: noRepack})
				where := m.WeightBuffers()
				t.Logf("NoRepack %v: weights in %s", noRepack, where)
				used := false
				for _, n := range names {
					used = used || strings.Contains(where, n+" ")
				}
				f, err := gguf.Open(path)
				require.NoError(t, err)
				_, takes, err := CheckOps(f, false, 33, nil, true)
				require.NoError(t, err)
				_, takesTied, err := CheckOps(f, true, 33, nil, true)
				f.Close()
				require.NoError(t, err)
				if bt := takesTied["output.weight"]; c.r.Tied && !noRepack && bt != nil {
					require.NotSame(t, m.TokEmbd(), m.Output(), "the output layer has its own copy")
					require.Contains(t, where, bt.Name()+" ")
				} else if c.r.Tied {
					require.Same(t, m.TokEmbd(), m.Output(), "the output layer reads token_embd itself")
				}
				// Where no extra type takes a weight (q8_0 without AMX),
				// all stay in the CPU's own.
				require.Equal(t, !noRepack && len(takes) > 0, used, "weights in %s; the CPU's extra types are %v", where, names)
				if noRepack {
					continue // placed as asked: the plain path's numbers are the other tests'
				}
				ref := OpenReference(t, path)
				ref.EmulateCPU()
				CheckAgainstReference(t, m, ref, seq, 36, c.tl)
			}
		})
	}
}
