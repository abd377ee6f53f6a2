package ggml_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// The Go layout functions agree with ggml_is_contiguous,
// ggml_is_contiguous_1 and ggml_nbytes (C) on random shapes of every type,
// their views, permutations, transposes and slices.
func TestLayoutMatchesGGML(t *testing.T) {
	rng := testutil.NewRNG(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8192, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	checked, contiguous, rows := 0, 0, 0
	check := func(x *ggml.Tensor) {
		t.Helper()
		require.NoError(t, c.Err())
		require.Equal(t, ggml.CIsContiguous(x), ggml.IsContiguous(x), "%v nb %v", x, x.Nb())
		require.Equal(t, ggml.CIsContiguous1(x), ggml.IsContiguous1(x), "contiguous_1: %v nb %v", x, x.Nb())
		require.Equal(t, ggml.CNbytes(x), ggml.Nbytes(x), "%v nb %v", x, x.Nb())
		if ggml.IsContiguous(x) {
			contiguous++
		}
		if ggml.IsContiguous1(x) && !ggml.IsContiguous(x) {
			rows++
		}
		checked++
	}
	for _, ty := range ggml.Types() {
		for range 20 {
			blck := ty.BlockSize()
			ne := [4]int64{blck * (1 + rng.Int64N(3)), 1 + rng.Int64N(3), 1 + rng.Int64N(3), 1 + rng.Int64N(2)}
			if i := rng.IntN(4); rng.IntN(4) == 0 && (i > 0 || blck == 1) {
				ne[i] = 1 // dimensions of one element are skipped by ggml's rule
			}
			x := c.NewTensor(ty, ne[0], ne[1], ne[2], ne[3])
			check(x)
			perm := rng.Perm(4)
			if blck > 1 { // a quantized tensor's blocks stay in dimension 0
				p := rng.Perm(3)
				perm = []int{0, p[0] + 1, p[1] + 1, p[2] + 1}
			} else {
				check(c.Transpose(x))
			}
			check(c.Permute(x, perm[0], perm[1], perm[2], perm[3]))
			nb := x.Nb()
			// A slice along each dimension keeps the source's strides.
			check(c.View4D(x, ne[0], ne[1], ne[2], max(ne[3]-1, 1), nb[1], nb[2], nb[3], 0))
			check(c.View4D(x, ne[0], max(ne[1]-1, 1), ne[2], ne[3], nb[1], nb[2], nb[3], 0))
			if blck == 1 && ne[0] > 1 {
				check(c.View4D(x, ne[0]-1, ne[1], ne[2], ne[3], nb[1], nb[2], nb[3], 0))
			}
			// One row per matrix, its nb1 free: where the providers'
			// ggml_is_contiguous_1 differ (nb1 = nb2 passes upstream's).
			check(c.View4D(x, ne[0], 1, ne[2], ne[3], nb[2], nb[2], nb[3], 0))
			check(c.View4D(x, ne[0], 1, ne[2], ne[3], nb[1], nb[2], nb[3], 0))
		}
	}
	require.Greater(t, contiguous, 0)
	require.Greater(t, checked-contiguous, 0, "some were not contiguous")
	require.Greater(t, rows, 0, "some were contiguous_1 only")
}
