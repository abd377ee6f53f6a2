package testutil

import "math"

// Q8Dot returns Σ w[i]·x[i] in float64 and a bound on how far ggml's
// quantized product of the two may be from it, where ggml rounds x to
// 8-bit blocks (q8_0's 32 or q8_K's 256 values with one scale, as the CPU's
// quantized matrix products do): each x[i] is off by at most half a step
// of max|x| of its block / 127, an error spread evenly, so the sum's error
// has a standard deviation of sqrt(Σ (w[i]·step)² / 12). The bound is 8 of
// those, with the step of x's 256-value blocks (never smaller than the
// 32-value one), plus 1e-5 of Σ|w[i]·x[i]| for float32 sums and scales
// stored as f16. A product gone wrong (a block of the wrong weights, a
// tile read twice) is dozens of deviations off.
func Q8Dot(w, x []float32) (dot, bound float64) {
	var v, abs float64
	for b := 0; b < len(x); b += 256 {
		end := min(b+256, len(x))
		amax := 0.0
		for _, a := range x[b:end] {
			amax = max(amax, math.Abs(float64(a)))
		}
		step := amax / 127
		for i := b; i < end; i++ {
			p := float64(w[i]) * float64(x[i])
			dot += p
			abs += math.Abs(p)
			e := float64(w[i]) * step
			v += e * e / 12
		}
	}
	return dot, 8*math.Sqrt(v) + 1e-5*abs
}
