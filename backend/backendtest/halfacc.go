//go:build cgo

package backendtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// F16HalfAccumulation reports whether the linked ggml's CPU backend sums
// f16 dot products in f16 rather than f32: upstream ggml built for a CPU
// with AVX512-FP16 (GGML_NATIVE on Sapphire Rapids and later) does
// (simd-mappings.h, _mm512_fmadd_ph), so its f16 matrix products carry
// half-precision sums, ~2^-11 of their magnitude per addition, where other
// builds carry f32's. Tests of f16 products widen their bounds to that
// when it is true; the answer is measured, once per process, by a product
// whose exact sum f16 cannot hold (a ggml_mul_mat on the CPU backend).
func F16HalfAccumulation(tb testing.TB) bool {
	tb.Helper()
	halfAcc.Do(func() { halfAcc.half, halfAcc.err = probeHalfAccumulation() })
	if halfAcc.err != nil {
		tb.Fatalf("probing ggml's f16 accumulation: %v", halfAcc.err)
	}
	return halfAcc.half
}

var halfAcc struct {
	sync.Once
	half bool
	err  error
}

// probeHalfAccumulation multiplies rows of k ones (f16) by columns of
// 1+2^-10 (what the CPU converts to f16 exactly) for one column and for
// 40: in f32 every partial sum is exact and each result is k+k/1024 =
// 3075, which f16 cannot represent (its step there is 2).
func probeHalfAccumulation() (bool, error) {
	const k, m = 3072, 16
	const want = 3075
	be, err := backend.InitByName("CPU", "")
	if err != nil {
		return false, err
	}
	defer be.Close()
	for _, n := range []int{1, 40} {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
		if err != nil {
			return false, err
		}
		defer c.Close()
		w := c.NewTensor(ggml.TypeF16, k, m)
		x := c.NewTensor(ggml.TypeF32, k, int64(n))
		y := c.MulMat(w, x)
		g, err := c.BuildGraph(y)
		if err != nil {
			return false, err
		}
		buf, err := backend.AllocContextTensors(c, be)
		if err != nil {
			return false, err
		}
		defer buf.Close()
		ones := make([]uint16, k*m)
		for i := range ones {
			ones[i] = 0x3c00 // 1.0 in f16
		}
		xs := make([]float32, k*n)
		for i := range xs {
			xs[i] = 1 + 0x1p-10
		}
		if err := ggml.SetData(w, ones); err != nil {
			return false, err
		}
		if err := ggml.SetData(x, xs); err != nil {
			return false, err
		}
		if err := be.Compute(context.Background(), g); err != nil {
			return false, err
		}
		out, err := ggml.Data[float32](y)
		if err != nil {
			return false, err
		}
		for i, v := range out {
			if v != want {
				if v < want-16 || v > want+16 {
					return false, fmt.Errorf("%d columns: element %d is %v, not near %v", n, i, v, want)
				}
				return true, nil
			}
		}
	}
	return false, nil
}
