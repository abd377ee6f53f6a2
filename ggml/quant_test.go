package ggml_test

import (
	"errors"
	"flag"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// q8_0Ref quantizes and dequantizes x (whole blocks of 32) as q8_0 does,
// in Go: d = max|x|/127 stored as f16, q = round(x/d) half away from zero.
func q8_0Ref(x []float32) []float64 { return q8_0Round(x, false) }

// q8_0CPU rounds x (whole blocks of 32) to q8_0 as ggml's CPU backend does
// for the b of a product (x86's quantize_row_q8_0, not the reference
// quantizer): per block, with a the largest magnitude in float32, d = a/127
// kept in f16 and q = round(v·(127/a)) in float32, half to even.
func q8_0CPU(x []float32) []float64 { return q8_0Round(x, true) }

func q8_0Round(x []float32, cpu bool) []float64 {
	out := make([]float64, len(x))
	for b := 0; b < len(x); b += 32 {
		var amax float32
		for _, v := range x[b : b+32] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		switch {
		case d == 0:
		case cpu:
			id = 127 / amax
		default:
			id = 1 / d
		}
		dh := f16ToF64(f32ToF16(d))
		for i, v := range x[b : b+32] {
			if cpu {
				out[b+i] = dh * math.RoundToEven(float64(v*id))
			} else {
				out[b+i] = dh * math.Round(float64(v*id))
			}
		}
	}
	return out
}

func TestQuantizeQ8_0MatchesGoReference(t *testing.T) {
	rng := newRNG(t)
	const nPerRow, rows = 128, 5
	src := randF32(rng, nPerRow*rows)
	q, err := ggml.Quantize(ggml.TypeQ8_0, src, nPerRow, nil)
	require.NoError(t, err)
	rs, err := ggml.TypeQ8_0.RowSize(nPerRow)
	require.NoError(t, err)
	require.Len(t, q, int(rs)*rows)
	got, err := ggml.Dequantize(ggml.TypeQ8_0, q)
	require.NoError(t, err)
	want := q8_0Ref(src)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i], float64(got[i]), "element %d", i)
	}
	require.NoError(t, ggml.ValidateRowData(ggml.TypeQ8_0, q))
}

// Every type ggml can quantize to round-trips random normal data within
// the error its bits allow: relative RMS error per type, from the number
// of bits a weight gets (loose bounds: a broken kernel or layout gives
// errors near 1).
func TestQuantizeRoundTripEveryType(t *testing.T) {
	rng := newRNG(t)
	const nPerRow, rows = 512, 4
	src := randF32(rng, nPerRow*rows)
	imatrix := make([]float32, nPerRow)
	for i := range imatrix {
		imatrix[i] = float32(0.5 + rng.Float64())
	}
	tol := map[string]float64{
		"f32": 0, "f16": 1e-3, "bf16": 8e-3, "q8_0": 0.01,
		"q5_0": 0.05, "q5_1": 0.05, "q5_K": 0.05, "q6_K": 0.03,
		"q4_0": 0.1, "q4_1": 0.1, "q4_K": 0.1, "iq4_nl": 0.1, "iq4_xs": 0.1, "mxfp4": 0.15,
		"q3_K": 0.25, "iq3_xxs": 0.3, "iq3_s": 0.3,
		"q2_K": 0.45, "iq2_xxs": 0.45, "iq2_xs": 0.45, "iq2_s": 0.45,
		"tq2_0": 0.9, "tq1_0": 0.9, // ternary {-1, 0, 1} per block: made for ternary weights, not normal data
		"iq1_s": 0.7, "iq1_m": 0.7,
		// upstream ggml's (the system provider)
		"nvfp4": 0.13,
		"q1_0":  0.7, // the sign and the block's mean magnitude: sqrt(1-2/pi) = 0.6 for normal data
		"q2_0":  0.8, // {-d, 0, d, 2d} with d the block's largest magnitude: most values round to 0
	}
	n := 0
	for _, ty := range ggml.Types() {
		if !ty.CanQuantize() {
			continue
		}
		n++
		t.Run(ty.String(), func(t *testing.T) {
			want, ok := tol[ty.String()]
			require.True(t, ok, "no tolerance for %v", ty)
			var im []float32
			if ty.RequiresImatrix() {
				_, err := ggml.Quantize(ty, src, nPerRow, nil)
				require.ErrorIs(t, err, ggml.ErrInvalid)
				im = imatrix
			}
			q, err := ggml.Quantize(ty, src, nPerRow, im)
			require.NoError(t, err)
			rs, err := ty.RowSize(nPerRow)
			require.NoError(t, err)
			require.Len(t, q, int(rs)*rows)
			require.NoError(t, ggml.ValidateRowData(ty, q))
			back, err := ggml.Dequantize(ty, q)
			require.NoError(t, err)
			require.Len(t, back, len(src))
			var num, den float64
			for i := range src {
				d := float64(back[i]) - float64(src[i])
				num += d * d
				den += float64(src[i]) * float64(src[i])
			}
			rel := math.Sqrt(num / den)
			t.Logf("%v: relative RMS error %.4f", ty, rel)
			assert.LessOrEqual(t, rel, want)
		})
	}
	assert.GreaterOrEqual(t, n, 20, "ggml quantizes to some 25 types")
}

func TestQuantizeMisuse(t *testing.T) {
	ok := make([]float32, 64)
	nan := make([]float32, 32)
	nan[3] = float32(math.NaN())
	inf := make([]float32, 32)
	inf[0] = float32(math.Inf(-1))
	cases := []struct {
		name string
		want error
		f    func() error
	}{
		{"i32", ggml.ErrType, func() error { _, err := ggml.Quantize(ggml.TypeI32, ok, 64, nil); return err }},
		{"q8_1", ggml.ErrType, func() error { _, err := ggml.Quantize(ggml.TypeQ8_1, ok, 64, nil); return err }},
		{"bad type", ggml.ErrType, func() error { _, err := ggml.Quantize(ggml.Type(999), ok, 64, nil); return err }},
		{"row not blocks", ggml.ErrShape, func() error { _, err := ggml.Quantize(ggml.TypeQ4_0, ok, 16, nil); return err }},
		{"zero row", ggml.ErrShape, func() error { _, err := ggml.Quantize(ggml.TypeF16, ok, 0, nil); return err }},
		{"ragged rows", ggml.ErrShape, func() error { _, err := ggml.Quantize(ggml.TypeF16, ok, 48, nil); return err }},
		{"k-quant short row", ggml.ErrShape, func() error { _, err := ggml.Quantize(ggml.TypeQ4_K, ok, 64, nil); return err }},
		{"imatrix missing", ggml.ErrInvalid, func() error {
			_, err := ggml.Quantize(ggml.TypeIQ2_XXS, make([]float32, 256), 256, nil)
			return err
		}},
		{"imatrix length", ggml.ErrShape, func() error { _, err := ggml.Quantize(ggml.TypeQ8_0, ok, 64, make([]float32, 32)); return err }},
		{"imatrix negative", ggml.ErrInvalid, func() error {
			im := make([]float32, 64)
			im[5] = -1
			_, err := ggml.Quantize(ggml.TypeQ4_0, ok, 64, im)
			return err
		}},
		{"imatrix nan", ggml.ErrInvalid, func() error {
			im := make([]float32, 32)
			im[0] = float32(math.NaN())
			_, err := ggml.Quantize(ggml.TypeQ4_0, nan, 32, im)
			return err
		}},
		{"nan to q4_0", ggml.ErrInvalid, func() error { _, err := ggml.Quantize(ggml.TypeQ4_0, nan, 32, nil); return err }},
		{"inf to q8_0", ggml.ErrInvalid, func() error { _, err := ggml.Quantize(ggml.TypeQ8_0, inf, 32, nil); return err }},
		{"zero importance, grid type", ggml.ErrInvalid, func() error {
			_, err := ggml.Quantize(ggml.TypeIQ2_XXS, make([]float32, 256), 256, make([]float32, 256))
			return err
		}},
		{"huge value, grid type", ggml.ErrInvalid, func() error {
			v := make([]float32, 256)
			v[7] = 3e15
			_, err := ggml.Quantize(ggml.TypeIQ3_S, v, 256, nil)
			return err
		}},
		{"tiny group, grid type", ggml.ErrInvalid, func() error {
			v := make([]float32, 256)
			for i := range v {
				v[i] = 1
			}
			v[40] = 1e-8 // group 32..63 peaks at 1e-8
			for i := 32; i < 64; i++ {
				if i != 40 {
					v[i] = 0
				}
			}
			_, err := ggml.Quantize(ggml.TypeIQ3_XXS, v, 256, nil)
			return err
		}},
		{"dequantize partial block", ggml.ErrShape, func() error { _, err := ggml.Dequantize(ggml.TypeQ4_0, make([]byte, 17)); return err }},
		{"dequantize i32", ggml.ErrType, func() error { _, err := ggml.Dequantize(ggml.TypeI32, make([]byte, 16)); return err }},
		{"validate partial block", ggml.ErrShape, func() error { return ggml.ValidateRowData(ggml.TypeQ8_0, make([]byte, 33)) }},
		{"validate q8_1", ggml.ErrType, func() error { return ggml.ValidateRowData(ggml.TypeQ8_1, make([]byte, 36)) }},
		{"validate nan scale", ggml.ErrInvalid, func() error {
			b := make([]byte, 34) // one q8_0 block: f16 scale, 32 int8
			b[0], b[1] = 0x00, 0x7e
			return ggml.ValidateRowData(ggml.TypeQ8_0, b)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { require.ErrorIs(t, tc.f(), tc.want) })
	}
	// f16 takes any value: NaN is kept.
	h, err := ggml.Quantize(ggml.TypeF16, nan, 32, nil)
	require.NoError(t, err)
	back, err := ggml.Dequantize(ggml.TypeF16, h)
	require.NoError(t, err)
	assert.True(t, math.IsNaN(float64(back[3])))
}

// FuzzDequantize feeds arbitrary bytes, as a file that lies would hold, to
// Dequantize and ValidateRowData for every type: errors or values, never
// a crash.
func FuzzDequantize(f *testing.F) {
	f.Add(uint8(8), []byte{0x00, 0x7e, 1, 2, 3})
	f.Add(uint8(12), make([]byte, 144))
	f.Fuzz(func(t *testing.T, ty uint8, data []byte) {
		typ := ggml.Type(ty % uint8(ggml.TypeCount+2))
		if typ.Valid() && typ.Size() > 0 {
			data = data[:uint64(len(data))-uint64(len(data))%typ.Size()]
		}
		_, _ = ggml.Dequantize(typ, data)
		_ = ggml.ValidateRowData(typ, data)
	})
}

// FuzzQuantize quantizes arbitrary finite values (huge, tiny, subnormal,
// all equal, zero importances) to every type: a result or an error, never
// a ggml assert.
func FuzzQuantize(f *testing.F) {
	// The grid types build their tables on first use, seconds each on a
	// slow machine, which the fuzzer took for a hung input: built first
	// when fuzzing (the seed corpus alone runs without).
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() != "" {
		for _, typ := range ggml.Types() {
			if typ.CanQuantize() {
				require.NoError(f, ggml.QuantizeInit(typ))
			}
		}
	}
	f.Add(uint8(16), []byte{0, 0, 128, 127, 1, 0, 0, 0}, true)
	f.Add(uint8(2), []byte{255, 255, 127, 127}, false)
	f.Fuzz(func(t *testing.T, ty uint8, raw []byte, zeroImportance bool) {
		typ := ggml.Type(ty % uint8(ggml.TypeCount))
		if !typ.CanQuantize() {
			return
		}
		t.Logf("%v", typ)
		n := typ.BlockSize()
		if n < 256 && typ.IsQuantized() {
			n = 256 // a row the k-quant family takes too
		}
		src := make([]float32, n)
		for i := range src {
			if len(raw) >= 4 {
				src[i] = math.Float32frombits(uint32(raw[(4*i)%len(raw)]) | uint32(raw[(4*i+1)%len(raw)])<<8 |
					uint32(raw[(4*i+2)%len(raw)])<<16 | uint32(raw[(4*i+3)%len(raw)])<<24)
			}
			if math.IsNaN(float64(src[i])) || math.IsInf(float64(src[i]), 0) {
				src[i] = 0
			}
		}
		var im []float32
		if zeroImportance || typ.RequiresImatrix() {
			im = make([]float32, n)
			for i := range im {
				if !zeroImportance && len(raw) > 0 { // importances from the bytes, some zero
					im[i] = float32(raw[i%len(raw)]) / 16
				}
			}
		}
		if _, err := ggml.Quantize(typ, src, n, im); err != nil && !errors.Is(err, ggml.ErrInvalid) {
			t.Fatal(err)
		}
	})
}

// The grid types' tables take seconds to build here: the fuzz target
// builds them; this checks the others and the refusals.
func TestQuantizeInit(t *testing.T) {
	for _, typ := range ggml.Types() {
		if typ.RequiresImatrix() {
			continue
		}
		if typ.CanQuantize() {
			require.NoError(t, ggml.QuantizeInit(typ), typ.String())
		} else {
			require.ErrorIs(t, ggml.QuantizeInit(typ), ggml.ErrType, typ.String())
		}
	}
}
