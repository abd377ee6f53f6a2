package ggml_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/cpu"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

func TestTypes(t *testing.T) {
	types := ggml.Types()
	require.NotEmpty(t, types)
	for _, ty := range types {
		assert.True(t, ty.Valid(), ty)
		assert.NotEmpty(t, ty.String())
		assert.Positive(t, ty.Size(), ty)
		assert.Positive(t, ty.BlockSize(), ty)
		// Quantized types pack several elements in a block; plain types one.
		assert.Equal(t, ty.IsQuantized(), ty.BlockSize() > 1 && ty != ggml.TypeQ8_K || ty == ggml.TypeQ8_K, ty)
		row, err := ty.RowSize(ty.BlockSize() * 3)
		require.NoError(t, err)
		assert.Equal(t, 3*ty.Size(), row)
		if ty.BlockSize() > 1 {
			_, err := ty.RowSize(ty.BlockSize() + 1)
			assert.ErrorIs(t, err, ggml.ErrShape)
		}
	}
	// The plain types have the size of their Go counterparts.
	assert.Equal(t, uint64(4), ggml.TypeF32.Size())
	assert.Equal(t, uint64(2), ggml.TypeF16.Size())
	assert.Equal(t, uint64(8), ggml.TypeI64.Size())
	assert.Equal(t, "f32", ggml.TypeF32.String())
	assert.Equal(t, "q4_0", ggml.TypeQ4_0.String())
	assert.False(t, ggml.Type(4).Valid(), "type 4 was removed from ggml")
	assert.False(t, ggml.TypeCount.Valid())
	_, err := ggml.Type(-1).RowSize(1)
	assert.ErrorIs(t, err, ggml.ErrType)
}

func TestContextBasics(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, MemSize: 1 << 12})
	require.NoError(t, err)
	assert.False(t, c.NoAlloc())
	used := c.UsedMem()
	x := c.NewTensor(ggml.TypeF32, 8, 2).SetName("x")
	require.NoError(t, c.Err())
	assert.Greater(t, c.UsedMem(), used+x.Bytes(), "data lives in the pool")
	assert.Same(t, x, c.Tensor("x"))
	assert.Equal(t, []*ggml.Tensor{x}, c.Tensors())
	assert.LessOrEqual(t, c.UsedMem(), c.MemSize())

	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	var nilCtx *ggml.Context
	require.NoError(t, nilCtx.Close(), "Close is nil-safe")
	assert.Zero(t, c.UsedMem())
	assert.Nil(t, c.Tensors())
}

func TestTensorMetadata(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 4, 3, 2)
	assert.Equal(t, ggml.TypeF32, x.Type())
	assert.Equal(t, [4]int64{4, 3, 2, 1}, x.Ne())
	assert.Equal(t, []int64{4, 3, 2}, x.Shape())
	assert.Equal(t, 3, x.Dims())
	// Dense strides: nb0 = type size, nb[i] = nb[i-1]*ne[i-1].
	assert.Equal(t, [4]uint64{4, 16, 48, 96}, x.Nb())
	assert.Equal(t, int64(24), x.Elements())
	assert.Equal(t, int64(6), x.Rows())
	assert.Equal(t, uint64(96), x.Bytes())
	assert.True(t, x.IsContiguous())
	assert.False(t, x.IsAllocated(), "NoAlloc: no memory yet")
	assert.Equal(t, "NONE", x.Op())

	long := make([]byte, ggml.MaxNameLen+10)
	for i := range long {
		long[i] = 'n'
	}
	assert.Len(t, x.SetName(string(long)).Name(), ggml.MaxNameLen, "names are cut as ggml does")
	x.SetName("x")
	assert.Equal(t, "x", x.Name())

	assert.False(t, x.IsInput())
	x.SetInput().SetOutput().SetParam()
	assert.True(t, x.IsInput())
	assert.True(t, x.IsOutput())
	assert.True(t, x.IsParam())

	tr := c.Transpose(x)
	assert.Same(t, x, tr.ViewSource())
	assert.Equal(t, [4]int64{3, 4, 2, 1}, tr.Ne())
	assert.False(t, tr.IsContiguous())
	assert.True(t, tr.IsTransposed())
	assert.Equal(t, []*ggml.Tensor{x}, tr.Sources())
	assert.Equal(t, "TRANSPOSE", tr.Op())

	v := c.View1D(x, 4, 8)
	assert.Equal(t, uint64(8), v.ViewOffset())
	v2 := c.View1D(v, 2, 4)
	assert.Same(t, x, v2.ViewSource(), "a view of a view uses the base tensor's memory")
	assert.Equal(t, uint64(12), v2.ViewOffset())
	require.NoError(t, c.Err())
}

func TestGraphNodesAndLeafs(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true, GraphSize: 16})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 4).SetName("a")
	b := c.NewTensor(ggml.TypeF32, 4).SetName("b")
	s := c.Add(a, b).SetName("s")
	m := c.Mul(s, a).SetName("m")
	r := c.Relu(m).SetName("r")
	g, err := c.BuildGraph(r)
	require.NoError(t, err)
	assert.Equal(t, 16, g.Size())
	assert.Equal(t, []*ggml.Tensor{s, m, r}, g.Nodes(), "nodes in compute order")
	assert.Equal(t, []*ggml.Tensor{a, b}, g.Leafs())
	assert.Same(t, r, g.Node(-1))
	assert.Same(t, s, g.Node(0))
	assert.Nil(t, g.Node(3))
	assert.Same(t, m, g.Tensor("m"))
	assert.Same(t, b, g.Tensor("b"))

	// Expanding with a tensor already there adds nothing.
	require.NoError(t, g.Expand(m))
	assert.Equal(t, 3, g.NumNodes())

	require.NoError(t, g.Clear())
	assert.Zero(t, g.NumNodes())
	assert.Zero(t, g.NumLeafs())
	require.NoError(t, g.Expand(s))
	assert.Equal(t, []*ggml.Tensor{s}, g.Nodes())
	assert.Equal(t, []*ggml.Tensor{a, b}, g.Leafs())
}

func TestGraphFull(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true, GraphSize: 2})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 4)
	x := c.Relu(c.Relu(c.Relu(a)))
	_, err = c.BuildGraph(x)
	require.ErrorIs(t, err, ggml.ErrGraphFull)
	// A graph larger than the context's room is an error, not an abort.
	_, err = c.NewGraph(1 << 16)
	require.ErrorIs(t, err, ggml.ErrNoMemory)
	_, err = c.NewGraph(0)
	require.ErrorIs(t, err, ggml.ErrInvalid)
}

// The acceptance test of the foundation: mismatched mul_mat shapes leave the
// process alive and BuildGraph reports mul_mat and both shapes.
func TestMulMatMismatchIsAnError(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 4, 2).SetName("w")
	b := c.NewTensor(ggml.TypeF32, 3, 5).SetName("x")
	y := c.MulMat(a, b)
	z := c.Relu(c.Add(y, y)) // later ops pass the poisoned tensor along
	require.Error(t, z.Err())
	_, err = c.BuildGraph(z)
	require.ErrorIs(t, err, ggml.ErrShape)
	var oe *ggml.OpError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "mul_mat", oe.Op)
	assert.Contains(t, err.Error(), "mul_mat")
	assert.Contains(t, err.Error(), "w f32[4 2]")
	assert.Contains(t, err.Error(), "x f32[3 5]")
	assert.Contains(t, err.Error(), "a.ne0 (4) != b.ne0 (3)")
	require.Equal(t, err, c.Err(), "Err returns the first error")
	// y is poisoned by its own failure, z by y's: both carry the first error.
	require.ErrorIs(t, z.Err(), ggml.ErrShape)
	require.True(t, errors.Is(y.Err(), oe))
}

func TestDataRoundTrip(t *testing.T) {
	rng := newRNG(t)
	be := cpuBackend(t)
	// In a context's own pool, and in a backend buffer.
	for _, noAlloc := range []bool{false, true} {
		p := ggml.ContextParams{MaxTensors: 8, NoAlloc: noAlloc}
		if !noAlloc {
			p.MemSize = 1 << 12
		}
		c, err := ggml.NewContext(p)
		require.NoError(t, err)
		f := c.NewTensor(ggml.TypeF32, 5, 3)
		h := c.NewTensor(ggml.TypeF16, 6)
		i := c.NewTensor(ggml.TypeI32, 7)
		q := c.NewTensor(ggml.TypeQ8_0, 64)
		if noAlloc {
			_, err := ggml.Data[float32](f)
			require.ErrorIs(t, err, ggml.ErrNotAllocated)
			buf, err := backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			defer buf.Close()
		}
		fv := randF32(rng, 15)
		require.NoError(t, ggml.SetData(f, fv))
		got, err := ggml.Data[float32](f)
		require.NoError(t, err)
		assert.Equal(t, fv, got)

		hv := []uint16{0x3c00, 0x4000, 0xbc00, 0, 0x7bff, uint16(rng.Uint32())}
		require.NoError(t, ggml.SetData(h, hv))
		gotH, err := ggml.Data[uint16](h)
		require.NoError(t, err)
		assert.Equal(t, hv, gotH)

		iv := []int32{int32(rng.Int32()), -1, 0, 1, 2, 3, -int32(rng.Int32())}
		require.NoError(t, ggml.SetData(i, iv))
		into := make([]int32, 7)
		require.NoError(t, ggml.DataInto(i, into))
		assert.Equal(t, iv, into)

		qv := make([]byte, q.Bytes())
		for k := range qv {
			qv[k] = byte(rng.Uint32())
		}
		require.NoError(t, ggml.SetBytes(q, qv))
		gotQ, err := ggml.Bytes(q)
		require.NoError(t, err)
		assert.Equal(t, qv, gotQ)
		require.NoError(t, c.Close())
	}
}

func TestComputeInContextPool(t *testing.T) {
	// A context that holds its own data can be computed on the CPU backend.
	rng := newRNG(t)
	be := cpuBackend(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, MemSize: 1 << 12, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 8)
	av := randF32(rng, 8)
	require.NoError(t, ggml.SetData(a, av))
	y := c.Scale(a, 2)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	require.NoError(t, be.Compute(context.Background(), g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	for k := range av {
		assert.Equal(t, 2*av[k], got[k]) // exact: a power-of-two scale
	}
}

func TestVersionInfo(t *testing.T) {
	if strings.HasPrefix(ggml.Provider(), "embedded") {
		assert.Contains(t, ggml.Provider(), "ollama")
		_ = ggml.Version() // the embedded provider sets none: "" is allowed
	} else {
		assert.Contains(t, ggml.Provider(), "system")
		assert.NotEmpty(t, ggml.Version(), "an upstream ggml reports its version")
	}
	_ = ggml.Commit()
	f := ggml.CPUFeatures()
	assert.Contains(t, f, "AVX2") // the key is present whether or not it is on
	// The features are those ggml was compiled for: with -tags ggml_native,
	// this CPU's (the default level is checked in cpucheck_test.go).
	if runtime.GOARCH == "amd64" && cpuLevelTag == "ggml_native" && !strings.Contains(ggml.Provider(), "system") {
		assert.Equal(t, cpu.X86.HasSSE3, f["SSE3"], "built for this CPU: ggml's SSE3 matches the CPU's")
		assert.Equal(t, cpu.X86.HasAVX2, f["AVX2"], "built for this CPU: ggml's AVX2 matches the CPU's")
	}
}

// A failed Expand adds nothing: the graph then takes what fits, and its Go
// view matches ggml's (Expand checks the node count against C).
func TestGraphFullLeavesGraphIntact(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true, GraphSize: 2})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 4)
	big := c.Relu(c.Relu(c.Relu(a)))
	small := c.Silu(a)
	g, err := c.NewGraph(2)
	require.NoError(t, err)
	require.ErrorIs(t, g.Expand(big), ggml.ErrGraphFull)
	assert.Zero(t, g.NumNodes())
	assert.Zero(t, g.NumLeafs())
	require.NoError(t, g.Expand(small))
	assert.Equal(t, []*ggml.Tensor{small}, g.Nodes())
	assert.Equal(t, []*ggml.Tensor{a}, g.Leafs())
}
