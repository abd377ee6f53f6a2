package ggml_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// Cases that crashed the process before the type rules were derived from
// ggml's CPU type traits (ops_types.go); each is now refused when built, or
// computes.
func TestTypeRulesRefuse(t *testing.T) {
	cases := map[string]struct {
		kind  error
		build func(ctx *ggml.Context) *ggml.Tensor
	}{
		// q8_1 has no to_float: ggml's get_rows called a NULL pointer.
		"get_rows q8_1": {ggml.ErrType, func(ctx *ggml.Context) *ggml.Tensor {
			return ctx.GetRows(ctx.NewTensor(ggml.TypeQ8_1, 32, 4), ctx.NewTensor(ggml.TypeI32, 2))
		}},
		// iq2_xxs has no from_float: add requantizes through it, and ggml
		// copied the f32 sum over the blocks instead, out of bounds.
		"add iq2_xxs": {ggml.ErrType, func(ctx *ggml.Context) *ggml.Tensor {
			return ctx.Add(ctx.NewTensor(ggml.TypeIQ2_XXS, 256, 2), ctx.NewTensor(ggml.TypeF32, 256, 2))
		}},
		"add_inplace iq1_m": {ggml.ErrType, func(ctx *ggml.Context) *ggml.Tensor {
			return ctx.AddInPlace(ctx.NewTensor(ggml.TypeIQ1_M, 256, 2), ctx.NewTensor(ggml.TypeF32, 256, 2))
		}},
		// mul_mat of an f32 a converts b only from f32: ggml asserted on a
		// worker thread.
		"mul_mat f32 a, f16 b": {ggml.ErrType, func(ctx *ggml.Context) *ggml.Tensor {
			return ctx.MulMat(ctx.NewTensor(ggml.TypeF32, 32, 2), ctx.NewTensor(ggml.TypeF16, 32, 3))
		}},
		// f16 to i32 goes through from_float in a work buffer that
		// ggml_graph_plan does not size: a segfault.
		"cast f16 to i32": {ggml.ErrType, func(ctx *ggml.Context) *ggml.Tensor {
			return ctx.Cast(ctx.NewTensor(ggml.TypeF16, 1<<16, 4), ggml.TypeI32)
		}},
		// A quantizing copy converts each row of a in a work buffer sized
		// by the destination's rows: a longer row overflowed it.
		"cpy long rows to q8_0": {ggml.ErrShape, func(ctx *ggml.Context) *ggml.Tensor {
			return ctx.Cpy(ctx.NewTensor(ggml.TypeF32, 1<<16, 2), ctx.NewTensor(ggml.TypeQ8_0, 32, 1<<12))
		}},
		// The CPU backend refuses copies into types without from_float.
		"cpy iq2_xxs to itself": {ggml.ErrType, func(ctx *ggml.Context) *ggml.Tensor {
			return ctx.Cpy(ctx.NewTensor(ggml.TypeIQ2_XXS, 256), ctx.NewTensor(ggml.TypeIQ2_XXS, 256))
		}},
		// ggml's quantized add1 places rows of dimension 3 wrongly.
		"add1 q4_0 4-d": {ggml.ErrShape, func(ctx *ggml.Context) *ggml.Tensor {
			return ctx.Add1(ctx.NewTensor(ggml.TypeQ4_0, 32, 1, 1, 2), ctx.NewTensor(ggml.TypeF32, 1))
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
			require.NoError(t, err)
			defer ctx.Close()
			out := tc.build(ctx)
			require.ErrorIs(t, out.Err(), tc.kind)
			require.ErrorIs(t, ctx.Err(), tc.kind)
		})
	}
}

// What the rules still accept around those cases computes: a quantizing
// copy into longer rows, and add1 of a 3-d quantized tensor.
func TestTypeRulesAccept(t *testing.T) {
	rng := newRNG(t)
	t.Run("cpy to longer q8_0 rows", func(t *testing.T) {
		e := newEnv(t)
		av := randF32(rng, 32*64)
		out := e.ctx.Cpy(e.input(ggml.TypeF32, av, 32, 64), e.ctx.NewTensor(ggml.TypeQ8_0, 32*64))
		e.compute(out)
		data, err := ggml.Bytes(out)
		require.NoError(t, err)
		got, err := ggml.Dequantize(ggml.TypeQ8_0, data)
		require.NoError(t, err)
		requireClose(t, fromF32(av, len(av)), got, func(int) float64 { return 0.05 })
	})
	t.Run("add1 q4_0 3-d", func(t *testing.T) {
		e := newEnv(t)
		av := randF32(rng, 32*2*3)
		q, err := ggml.Quantize(ggml.TypeQ4_0, av, 32, nil)
		require.NoError(t, err)
		a := e.ctx.NewTensor(ggml.TypeQ4_0, 32, 2, 3).SetInput()
		e.inputs = append(e.inputs, func() error { return ggml.SetBytes(a, q) })
		out := e.ctx.Add1(a, e.input(ggml.TypeF32, []float32{0.5}, 1))
		e.compute(out)
		data, err := ggml.Bytes(out)
		require.NoError(t, err)
		got, err := ggml.Dequantize(ggml.TypeQ4_0, data)
		require.NoError(t, err)
		in, err := ggml.Dequantize(ggml.TypeQ4_0, q)
		require.NoError(t, err)
		ref := fromF32(in, len(in))
		for i := range ref.v {
			ref.v[i] += 0.5
		}
		// Requantizing moves a value by at most half a q4_0 step, a
		// sixteenth of its block's largest magnitude: allow a whole step.
		blockMax := make([]float64, len(ref.v)/32)
		for i, v := range ref.v {
			blockMax[i/32] = max(blockMax[i/32], math.Abs(v))
		}
		requireClose(t, ref, got, func(i int) float64 { return blockMax[i/32]/8 + 1e-6 })
	})
}
