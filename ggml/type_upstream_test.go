package ggml_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// The types only upstream ggml has, decoded in Go from their formats: the
// reference ggml's conversions are compared with.

// decodeE2M1 is a 4-bit float: a sign bit, two exponent bits (bias 1) and
// one mantissa bit; exponent 0 is subnormal (0 or 0.5).
func decodeE2M1(c byte) float64 {
	e, m := int(c>>1)&3, float64(c&1)
	v := m / 2
	if e > 0 {
		v = math.Ldexp(1+m/2, e-1)
	}
	if c&8 != 0 {
		v = -v
	}
	return v
}

// decodeUE4M3 is an unsigned 8-bit float scale: four exponent bits (bias
// 7), three mantissa bits; ggml reads 0x7F (E4M3's NaN) as 0.
func decodeUE4M3(x byte) float64 {
	if x == 0x7F {
		return 0
	}
	e, m := int(x>>3)&15, float64(x&7)
	if e == 0 {
		return math.Ldexp(m/8, -6)
	}
	return math.Ldexp(1+m/8, e-7)
}

// upstreamType is one of upstream's types with its Go decoder of one block
// and a generator of valid random blocks.
type upstreamType struct {
	t      ggml.Type
	block  int // bytes
	values int // elements per block
	decode func(b []byte) []float64
	random func(rng *rand.Rand) []byte
	// group is the values one scale covers; a quantized value lies within
	// step times the group's largest magnitude of the value it encodes.
	group int
	step  float64
}

// f16Scale is a random finite f16 scale, the first two bytes of a block.
func f16Scale(rng *rand.Rand, b []byte) {
	binary.LittleEndian.PutUint16(b, f32ToF16(float32(rng.NormFloat64())))
}

func randBlock(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

var upstreamTypes = []upstreamType{
	{ggml.TypeQ1_0, 2 + 16, 128,
		func(b []byte) []float64 { // bit j of the 128: +d when set, -d when not
			d := f16ToF64(binary.LittleEndian.Uint16(b))
			out := make([]float64, 128)
			for j := range out {
				out[j] = -d
				if b[2+j/8]>>(j%8)&1 == 1 {
					out[j] = d
				}
			}
			return out
		},
		func(rng *rand.Rand) []byte { b := randBlock(rng, 18); f16Scale(rng, b); return b },
		128, 0}, // q1_0 keeps each value's sign only
	{ggml.TypeQ2_0, 2 + 16, 64,
		func(b []byte) []float64 { // 2 bits q per value, low bits first: (q-1)*d
			d := f16ToF64(binary.LittleEndian.Uint16(b))
			out := make([]float64, 64)
			for j := range out {
				q := int(b[2+j/4]>>(2*(j%4))) & 3
				out[j] = float64(q-1) * d
			}
			return out
		},
		func(rng *rand.Rand) []byte { b := randBlock(rng, 18); f16Scale(rng, b); return b },
		64, 0.5 * (1 + 1.0/1024)}, // steps of d = the group's max (in f16): half a step
	{ggml.TypeNVFP4, 4 + 32, 64,
		func(b []byte) []float64 { // four sub-blocks of 16: a scale each; byte j holds values j (low) and j+8 (high)
			out := make([]float64, 64)
			for s := range 4 {
				d := decodeUE4M3(b[s])
				for j := range 8 {
					q := b[4+8*s+j]
					out[16*s+j] = decodeE2M1(q&15) * d
					out[16*s+j+8] = decodeE2M1(q>>4) * d
				}
			}
			return out
		},
		func(rng *rand.Rand) []byte {
			b := randBlock(rng, 36)
			for s := range 4 {
				b[s] &= 0x7F // the scales are 7-bit
			}
			b[0], b[1] = 0, 0x7F // zero scales, E4M3's NaN included
			return b
		},
		// A scale of about max/6 (E4M3: within 1/16) and E2M1's widest
		// gap, 4 to 6: half of 2 steps of max/6, plus the scale's rounding.
		16, (1 + 1.0/16) / 6},
}

// TestUpstreamTypes checks the types only upstream ggml has: their sizes,
// ggml's conversion to float (Dequantize, and GetRows on the CPU backend)
// against the Go decoders, and quantization back through them. With the
// embedded provider every call given one is an ErrUnsupported error.
func TestUpstreamTypes(t *testing.T) {
	for _, ut := range upstreamTypes {
		t.Run(ut.t.String(), func(t *testing.T) {
			if !ggml.HaveUpstream {
				require.False(t, ut.t.Valid())
				assert.NotContains(t, ut.t.String(), "Type(", "upstream's types have their names with either provider")
				_, err := ggml.Dequantize(ut.t, make([]byte, ut.block))
				require.ErrorIs(t, err, ggml.ErrUnsupported)
				require.ErrorContains(t, err, "-tags ggml_system")
				_, err = ggml.Quantize(ut.t, make([]float32, ut.values), int64(ut.values), nil)
				require.ErrorIs(t, err, ggml.ErrUnsupported)
				require.ErrorIs(t, ggml.ValidateRowData(ut.t, make([]byte, ut.block)), ggml.ErrUnsupported)
				_, err = ut.t.RowSize(int64(ut.values))
				require.ErrorIs(t, err, ggml.ErrUnsupported)
				c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
				require.NoError(t, err)
				defer c.Close()
				require.ErrorIs(t, c.NewTensor(ut.t, int64(ut.values)).Err(), ggml.ErrUnsupported)
				// The ops that take a type as a parameter say the same, each
				// on a fresh context (a context's first error is sticky).
				for name, op := range map[string]func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor{
					"Cast":    func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.Cast(x, ut.t) },
					"AddCast": func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor { return c.AddCast(x, x, ut.t) },
					"Custom4D": func(c *ggml.Context, x *ggml.Tensor) *ggml.Tensor {
						return c.Custom4D(ut.t, [4]int64{int64(ut.values), 1, 1, 1}, []*ggml.Tensor{x}, copyFirst, 1)
					},
				} {
					c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
					require.NoError(t, err)
					defer c.Close()
					x := c.NewTensor(ggml.TypeF32, int64(ut.values))
					require.NoError(t, x.Err())
					err = op(c, x).Err()
					require.ErrorIs(t, err, ggml.ErrUnsupported, name)
					require.ErrorContains(t, err, "-tags ggml_system", name)
				}
				return
			}
			rng := newRNG(t)
			require.True(t, ut.t.Valid())
			require.Equal(t, uint64(ut.block), ut.t.Size())
			require.Equal(t, int64(ut.values), ut.t.BlockSize())
			require.True(t, ut.t.IsQuantized())

			const blocks, rows = 3, 4
			raw := make([]byte, 0, ut.block*blocks*rows)
			var want []float64
			for range blocks * rows {
				b := ut.random(rng)
				raw = append(raw, b...)
				want = append(want, ut.decode(b)...)
			}
			got, err := ggml.Dequantize(ut.t, raw)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := range want { // the products are exact in float32
				require.Equal(t, want[i], float64(got[i]), "element %d", i)
			}

			// Rows 2, 0, 2 through the CPU backend's get_rows (to_float).
			e := newEnv(t)
			w := e.seqRaw(ut.t, raw, int64(ut.values*blocks), rows)
			idx := e.input(ggml.TypeI32, []int32{2, 0, 2}, 3)
			out := e.ctx.GetRows(w, idx)
			require.NoError(t, out.Err())
			e.compute(out)
			rowsGot, err := ggml.Data[float32](out)
			require.NoError(t, err)
			n := ut.values * blocks
			for k, r := range []int{2, 0, 2} {
				for i := range n {
					require.Equal(t, want[r*n+i], float64(rowsGot[k*n+i]), "row %d element %d", k, i)
				}
			}

			// Quantize makes valid blocks that decode as the Go reference
			// reads them, each value within the format's step of the
			// value quantized.
			src := randF32(rng, n*rows)
			q, err := ggml.Quantize(ut.t, src, int64(n), nil)
			require.NoError(t, err)
			require.NoError(t, ggml.ValidateRowData(ut.t, q))
			deq, err := ggml.Dequantize(ut.t, q)
			require.NoError(t, err)
			var ref []float64
			for b := range blocks * rows {
				ref = append(ref, ut.decode(q[b*ut.block:(b+1)*ut.block])...)
			}
			for i, r := range ref {
				require.Equal(t, r, float64(deq[i]), "element %d", i)
			}
			for g := 0; g < len(src); g += ut.group {
				var amax float64
				for _, v := range src[g : g+ut.group] {
					amax = max(amax, math.Abs(float64(v)))
				}
				for i := g; i < g+ut.group; i++ {
					x := float64(src[i])
					if ut.t == ggml.TypeQ1_0 { // the sign, one magnitude per block
						require.Equal(t, x >= 0, ref[i] >= 0, "element %d: %g as %g", i, x, ref[i])
						require.Equal(t, math.Abs(ref[g]), math.Abs(ref[i]), "element %d", i)
						continue
					}
					require.LessOrEqual(t, math.Abs(ref[i]-x), ut.step*amax, "element %d: %g as %g (group max %g)", i, x, ref[i], amax)
				}
			}
		})
	}
}
