package ggml_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/sched"
)

// computeErr builds out's graph, allocates it on e's backend, sets the
// inputs and returns what Compute says.
func computeErr(t *testing.T, e *env, out *ggml.Tensor) error {
	t.Helper()
	require.NoError(t, out.Err())
	g, err := e.ctx.BuildGraph(out.SetOutput())
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(e.ctx, e.be)
	require.NoError(t, err)
	t.Cleanup(func() { buf.Close() })
	for _, set := range e.inputs {
		require.NoError(t, set())
	}
	return e.be.Compute(context.Background(), g)
}

// Indices that ggml's kernels read unchecked (or assert on a worker
// thread) are checked before compute when they are inputs in host memory.
func TestIndicesCheckedBeforeCompute(t *testing.T) {
	for _, bad := range []int32{-1, 4, 1 << 30} {
		cases := map[string]func(e *env) *ggml.Tensor{
			"mul_mat_id": func(e *env) *ggml.Tensor {
				as := e.input(ggml.TypeF32, make([]float32, 32*3*4), 32, 3, 4) // 4 experts
				b := e.input(ggml.TypeF32, make([]float32, 32*2), 32, 1, 2)
				ids := e.input(ggml.TypeI32, []int32{0, 1, 2, bad}, 2, 2)
				return e.ctx.MulMatID(as, b, ids)
			},
			"add_id": func(e *env) *ggml.Tensor {
				a := e.input(ggml.TypeF32, make([]float32, 5*2*2), 5, 2, 2)
				b := e.input(ggml.TypeF32, make([]float32, 5*4), 5, 4) // 4 rows
				ids := e.input(ggml.TypeI32, []int32{0, 3, bad, 1}, 2, 2)
				return e.ctx.AddID(a, b, ids)
			},
			"get_rows_back": func(e *env) *ggml.Tensor {
				a := e.input(ggml.TypeF32, make([]float32, 8*3), 8, 3)
				idx := e.input(ggml.TypeI32, []int32{1, bad, 0}, 3)
				return e.ctx.GetRowsBack(a, idx, e.ctx.NewTensor(ggml.TypeF32, 8, 4)) // 4 rows
			},
			"get_rows": func(e *env) *ggml.Tensor {
				a := e.input(ggml.TypeF32, make([]float32, 8*4), 8, 4)
				return e.ctx.GetRows(a, e.input(ggml.TypeI32, []int32{bad, 0}, 2))
			},
		}
		for name, build := range cases {
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				err := computeErr(t, e, build(e))
				require.ErrorIs(t, err, ggml.ErrInvalid, "index %d", bad)
				require.ErrorContains(t, err, "outside 0..3")
			})
		}
	}
}

// wkv6 builds a RWKV 6 node of H heads of size S, one token.
func wkv6(e *env, S, H int64) *ggml.Tensor {
	in := func(ne ...int64) *ggml.Tensor {
		size := 1
		for _, v := range ne {
			size *= int(v)
		}
		return e.input(ggml.TypeF32, make([]float32, size), ne...)
	}
	return e.ctx.RWKVWKV6(in(S, H, 1), in(S, H, 1), in(S, H, 1), in(S, H), in(S, H, 1), in(S*S*H, 1))
}

// A CPU backend with more threads than a recurrent op has heads would hang
// in ggml's kernel: compute refuses it, directly and through a scheduler.
func TestThreadLimitedOpsAreRefused(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.be.SetThreads(3))
	require.Equal(t, 3, e.be.Threads())
	out := wkv6(e, 4, 2) // 2 heads
	err := computeErr(t, e, out)
	require.ErrorIs(t, err, backend.ErrUnsupported)
	require.ErrorContains(t, err, "at most 2 threads")

	require.NoError(t, e.be.SetThreads(2))
	g, err := e.ctx.BuildGraph(out)
	require.NoError(t, err)
	require.NoError(t, e.be.Compute(context.Background(), g), "2 threads for 2 heads")

	// Through a scheduler: the check uses the backend the node was given.
	require.NoError(t, e.be.SetThreads(4))
	s, err := sched.New([]*backend.Backend{e.be}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	e2 := newEnv(t)
	out2 := wkv6(e2, 4, 2).SetOutput()
	g2, err := e2.ctx.BuildGraph(out2)
	require.NoError(t, err)
	require.NoError(t, s.AllocGraph(g2))
	err = s.Compute(context.Background(), g2)
	require.ErrorIs(t, err, backend.ErrUnsupported)
	require.NoError(t, e.be.SetThreads(1))
	for _, set := range e2.inputs {
		require.NoError(t, set())
	}
	require.NoError(t, s.Compute(context.Background(), g2))
}
