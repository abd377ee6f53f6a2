package sample

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzSample: whatever the parameters and logits, Sample does not panic;
// it fails exactly when the parameters are out of range (New) or no logit
// is finite or +Inf (Sample); otherwise it returns an index whose logit
// is finite or +Inf (+Inf when there is one) and, greedy, the first
// largest of the penalized logits.
func FuzzSample(f *testing.F) {
	le := func(v ...float32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	d := Defaults()
	f.Add(d.Temperature, d.TopK, d.TopP, d.MinP, d.RepeatPenalty, float32(0), float32(0), 64, uint64(1), []byte{1, 2, 3}, le(1, 2, 3, 4))
	f.Add(float32(0), 0, float32(0), float32(0), float32(0), float32(0), float32(0), 0, uint64(0), []byte{}, le(nan, 1, inf, inf))
	f.Add(nan, 0, float32(0), float32(0), float32(0), float32(0), float32(0), 0, uint64(0), []byte{}, le(1, 2))
	f.Add(float32(1), 1, float32(1), float32(1), float32(2), float32(1), float32(-1), 3, uint64(7), []byte{0, 0, 1}, le(nan, -inf))
	f.Add(float32(1e-45), 2, float32(0.5), float32(0.01), float32(1e30), float32(3e38), float32(-3e38), 5, uint64(3), []byte{0, 1, 2, 255}, le(3e38, -3e38, 0, float32(math.Copysign(0, -1))))
	f.Add(float32(3e38), -1, float32(2), float32(-1), float32(-1), inf, nan, -1, uint64(0), []byte{}, le(0))
	f.Fuzz(func(t *testing.T, temp float32, topK int, topP, minP, rep, freq, pres float32, lastN int, seed uint64, hist, raw []byte) {
		p := Params{Temperature: temp, TopK: topK, TopP: topP, MinP: minP, RepeatPenalty: rep,
			FrequencyPenalty: freq, PresencePenalty: pres, PenaltyLastN: lastN % 1000, Seed: seed}
		logits := make([]float32, len(raw)/4)
		for i := range logits {
			logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		s, err := New(p)
		if !validParams(p) {
			require.ErrorIs(t, err, ErrParams, "%+v", p)
			return
		}
		require.NoError(t, err, "%+v", p)
		var ids []int32
		for _, b := range hist {
			id := int32(b) - 8 // a few negative, a few beyond the logits
			ids = append(ids, id)
			s.Accept(id)
		}
		id, err := s.Sample(logits)
		anyInf, anyOK := false, false
		for _, l := range logits {
			anyInf = anyInf || math.IsInf(float64(l), 1)
			anyOK = anyOK || l > float32(math.Inf(-1))
		}
		if !anyOK {
			require.ErrorIs(t, err, ErrLogits)
			require.Equal(t, int32(-1), id)
			return
		}
		require.NoError(t, err)
		require.True(t, id >= 0 && int(id) < len(logits), "id %d of %d", id, len(logits))
		l := logits[id]
		require.True(t, l > float32(math.Inf(-1)), "logit %v picked", l)
		if anyInf {
			require.True(t, math.IsInf(float64(l), 1), "logit %v picked beside +Inf", l)
		}
		if temp == 0 {
			// The reference's greedy pick, penalties included.
			want := refChain(logits, ids, p)
			require.Len(t, want.p, 1)
			for best := range want.p {
				require.Equal(t, best, id)
			}
		}
	})
}

// validParams is Validate's contract, written again.
func validParams(p Params) bool {
	fin := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	return fin(p.Temperature) && p.Temperature >= 0 && p.TopK >= 0 &&
		p.TopP >= 0 && p.TopP <= 1 && p.MinP >= 0 && p.MinP <= 1 &&
		fin(p.RepeatPenalty) && p.RepeatPenalty >= 0 && fin(p.FrequencyPenalty) && fin(p.PresencePenalty) &&
		p.PenaltyLastN >= 0
}
