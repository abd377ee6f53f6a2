package ggml_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// Every invalid call returns an error of the documented kind and the process
// lives. Ops record their error on the context (sticky), so each case gets a
// fresh context.
func TestMisuse(t *testing.T) {
	be := cpuBackend(t)
	newCtx := func(t *testing.T) *ggml.Context {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 32, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	f32 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF32, ne...) }
	// op cases return the tensor whose error (and the context's) is checked.
	ops := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		{"new_tensor bad type", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.NewTensor(ggml.Type(4), 2) }},
		{"new_tensor type out of range", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.NewTensor(ggml.TypeCount, 2) }},
		{"new_tensor no dims", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.NewTensor(ggml.TypeF32) }},
		{"new_tensor 5 dims", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return f32(c, 1, 1, 1, 1, 1) }},
		{"new_tensor negative", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return f32(c, 4, -1) }},
		{"new_tensor quantized ne0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.NewTensor(ggml.TypeQ4_0, 33) }},
		{"new_tensor overflow", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return f32(c, 1<<40, 1<<40) }},
		{"add nil", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Add(f32(c, 4), nil) }},
		{"add shapes", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Add(f32(c, 4, 3), f32(c, 3, 3)) }},
		{"sub shapes", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Sub(f32(c, 4), f32(c, 8)) }},
		{"mul types", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Mul(f32(c, 4), c.NewTensor(ggml.TypeI32, 4)) }},
		{"div f32 by f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Div(f32(c, 4), c.NewTensor(ggml.TypeF16, 4)) }},
		{"add transposed a", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Add(c.Transpose(f32(c, 4, 3)), f32(c, 3, 4)) }},
		{"add strided b broadcast", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Add(f32(c, 3, 4, 2), c.Transpose(f32(c, 4, 3))) }},
		{"scale f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Scale(c.NewTensor(ggml.TypeF16, 4), 2) }},
		{"scale_bias i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.ScaleBias(c.NewTensor(ggml.TypeI32, 4), 2, 1) }},
		{"scale_bias transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.ScaleBias(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3)), 2, 1)
		}},
		{"scale of a padded view", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Scale(c.View2D(f32(c, 4, 4), 2, 3, 16, 0), 2) }},
		{"mul_mat transposed b", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMat(f32(c, 4, 4), c.Transpose(f32(c, 2, 4))) }},
		{"add quantized a broadcast b", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Add(c.NewTensor(ggml.TypeQ8_0, 32, 2), f32(c, 32))
		}},
		{"add q8_1 a", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Add(c.NewTensor(ggml.TypeQ8_1, 32), f32(c, 32)) }},
		{"cpy strided f32 into q8_0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Cpy(c.Transpose(f32(c, 32, 32)), c.NewTensor(ggml.TypeQ8_0, 32, 32))
		}},
		{"sum_rows transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SumRows(c.Transpose(f32(c, 4, 3))) }},
		{"scale transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Scale(c.Transpose(f32(c, 4, 3)), 2) }},
		{"mul_mat ne0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMat(f32(c, 4, 2), f32(c, 3, 2)) }},
		{"mul_mat broadcast", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMat(f32(c, 4, 2, 3), f32(c, 4, 2, 4)) }},
		{"mul_mat transposed a", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMat(c.Transpose(f32(c, 4, 4)), f32(c, 4, 2)) }},
		{"relu i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Relu(c.NewTensor(ggml.TypeI32, 4)) }},
		{"gelu non-contiguous", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Gelu(c.Transpose(f32(c, 4, 3))) }},
		{"silu q8_0", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Silu(c.NewTensor(ggml.TypeQ8_0, 32)) }},
		{"soft_max non-contiguous", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SoftMax(c.Transpose(f32(c, 4, 3))) }},
		{"soft_max mask ne0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SoftMaxExt(f32(c, 4, 3), f32(c, 5, 3), 1, 0) }},
		{"soft_max mask ne1", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SoftMaxExt(f32(c, 4, 3), f32(c, 4, 2), 1, 0) }},
		{"soft_max mask type", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.SoftMaxExt(f32(c, 4, 3), c.NewTensor(ggml.TypeI32, 4, 3), 1, 0)
		}},
		{"soft_max bias without mask", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.SoftMaxExt(f32(c, 4, 3), nil, 1, 8) }},
		{"sum_rows f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.SumRows(c.NewTensor(ggml.TypeF16, 4)) }},
		{"reshape count", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Reshape(f32(c, 4, 3), 5, 2) }},
		{"reshape non-contiguous", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Reshape(c.Transpose(f32(c, 4, 3)), 12) }},
		{"reshape no dims", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Reshape(f32(c, 4)) }},
		{"reshape negative", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Reshape(f32(c, 4), -2, -2) }},
		{"view past end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.View1D(f32(c, 4), 4, 4) }},
		{"view offset past end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.View1D(f32(c, 4), 1, 1<<40) }},
		{"view stride past end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.View2D(f32(c, 4, 4), 4, 4, 32, 0) }},
		{"view 3d past end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.View3D(f32(c, 4, 4), 4, 2, 3, 16, 32, 0) }},
		{"view 4d negative", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.View4D(f32(c, 16), 4, -1, 1, 1, 16, 16, 16, 0) }},
		{"view of view past base", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.View1D(c.View1D(f32(c, 8), 4, 16), 4, 4)
		}},
		// Strides and offsets whose sums overflow 64 bits: unchecked, they
		// wrap to a small extent that passes the bounds check, and compute
		// reads far outside the tensor (or just before it).
		{"view stride times count overflows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.View2D(f32(c, 64), 1, 3, 1<<63, 0)
		}},
		{"view stride wraps to -4", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.View2D(f32(c, 64), 1, 2, math.MaxUint64-3, 0)
		}},
		{"view stride wraps to -4 from offset 4", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.View2D(f32(c, 64), 1, 2, math.MaxUint64-3, 4)
		}},
		{"view 3d strides sum overflows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.View3D(f32(c, 64), 1, 2, 2, 1<<63, 1<<63, 0)
		}},
		{"view 4d nb3 wraps", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.View4D(f32(c, 64), 1, 1, 1, 2, 4, 4, math.MaxUint64-3, 4)
		}},
		{"view offset overflows with the source's offset", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.View1D(c.View1D(f32(c, 8), 4, 16), 0, math.MaxUint64-7)
		}},
		{"view of view stride wraps", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.View2D(c.View1D(f32(c, 8), 4, 16), 1, 2, math.MaxUint64-3, 0)
		}},
		{"permute repeated axis", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Permute(f32(c, 4), 0, 0, 1, 2) }},
		{"permute axis range", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Permute(f32(c, 4), 0, 1, 2, 4) }},
		{"cont nil", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Cont(nil) }},
		{"get_rows index type", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.GetRows(f32(c, 4, 5), f32(c, 2)) }},
		{"get_rows ne2", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.GetRows(f32(c, 4, 5, 2), c.NewTensor(ggml.TypeI32, 3, 3))
		}},
		{"get_rows b.ne3", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.GetRows(f32(c, 4, 5), c.NewTensor(ggml.TypeI32, 3, 1, 1, 2))
		}},
		{"get_rows of i16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.GetRows(c.NewTensor(ggml.TypeI16, 4, 5), c.NewTensor(ggml.TypeI32, 3))
		}},
		{"cpy count", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Cpy(f32(c, 4), f32(c, 5)) }},
		{"transpose q8_0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// found by FuzzOps: copying a transposed q8_0 [32] hung ggml
			return c.Transpose(c.NewTensor(ggml.TypeQ8_0, 32))
		}},
		{"permute q4_0 dimension 0 away", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Permute(c.NewTensor(ggml.TypeQ4_0, 32, 2, 3), 1, 0, 2, 3)
		}},
		{"view of half a q8_0 block", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.View1D(c.NewTensor(ggml.TypeQ8_0, 64), 16, 0)
		}},
		{"mul_mat overlapping single row", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// found by FuzzOps: a transposed [1 2] is one row with nb1 4 < 8;
			// llamafile's sgemm asserts lda >= k and aborts the process
			a := c.Transpose(f32(c, 1, 2))
			return c.MulMat(a, a)
		}},
		{"cpy i32 to f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Cpy(c.NewTensor(ggml.TypeI32, 4), c.NewTensor(ggml.TypeF16, 4))
		}},
		{"cpy q8_0 to f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Cpy(c.NewTensor(ggml.TypeQ8_0, 32), c.NewTensor(ggml.TypeF16, 32))
		}},
		{"cpy f32 to iq2_xxs (no CPU quantizer)", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Cpy(f32(c, 256), c.NewTensor(ggml.TypeIQ2_XXS, 256))
		}},
		{"cpy q4_0 to f32 view of partial blocks", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			b := f32(c, 16, 4)
			return c.Cpy(c.NewTensor(ggml.TypeQ4_0, 32), c.View2D(b, 8, 4, b.Nb()[1], 0))
		}},
		{"set_param on op result", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Relu(f32(c, 4)).SetParam() // the error is on the context
		}},
		{"poisoned input from another context", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			other, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true})
			defer other.Close()
			bad := other.MulMat(other.NewTensor(ggml.TypeF32, 2), other.NewTensor(ggml.TypeF32, 3))
			return c.Relu(bad)
		}},
		{"input of closed context", ggml.ErrClosed, func(c *ggml.Context) *ggml.Tensor {
			other, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true})
			x := other.NewTensor(ggml.TypeF32, 2)
			other.Close()
			return c.Relu(x)
		}},
		{"op on closed context", ggml.ErrClosed, func(c *ggml.Context) *ggml.Tensor {
			x := f32(c, 2)
			c.Close()
			return c.Relu(x)
		}},
		{"pool full", ggml.ErrNoMemory, func(c *ggml.Context) *ggml.Tensor {
			small, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 64})
			defer small.Close()
			small.NewTensor(ggml.TypeF32, 4)
			r := small.NewTensor(ggml.TypeF32, 1024)
			c.Relu(r) // carries the error into c
			return r
		}},
	}
	for _, tc := range ops {
		t.Run(tc.name, func(t *testing.T) {
			c := newCtx(t)
			r := tc.op(c)
			require.NotNil(t, r)
			err := c.Err()
			if err == nil {
				err = r.Err()
			}
			require.ErrorIs(t, err, tc.want)
			// Graph building refuses while the error is set.
			if c.Err() != nil {
				_, gerr := c.BuildGraph()
				require.ErrorIs(t, gerr, tc.want)
			}
		})
	}

	// Calls that return their error directly.
	calls := []struct {
		name string
		want error
		call func(t *testing.T) error
	}{
		{"context no tensors", ggml.ErrInvalid, func(*testing.T) error {
			_, err := ggml.NewContext(ggml.ContextParams{})
			return err
		}},
		{"context NoAlloc with MemSize", ggml.ErrInvalid, func(*testing.T) error {
			_, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true, MemSize: 8})
			return err
		}},
		{"context too large", ggml.ErrNoMemory, func(*testing.T) error {
			_, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 1 << 62})
			return err
		}},
		// ggml_init asserted when its malloc of the pool failed.
		{"context of 1<<40 tensors", ggml.ErrNoMemory, func(*testing.T) error {
			_, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1 << 40, NoAlloc: true})
			return err
		}},
		{"context of 1<<46 bytes", ggml.ErrNoMemory, func(*testing.T) error {
			_, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 1 << 46})
			return err
		}},
		{"context whose malloc fails", ggml.ErrNoMemory, func(t *testing.T) error {
			ggml.SetAvailableMemory(t, math.MaxUint64) // past the memory check: malloc of 384 TB fails
			_, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1 << 40, NoAlloc: true})
			return err
		}},
		{"context larger than the memory available", ggml.ErrNoMemory, func(t *testing.T) error {
			ggml.SetAvailableMemory(t, 1<<20)
			_, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 2 << 20})
			return err
		}},
		{"context negative graph size", ggml.ErrInvalid, func(*testing.T) error {
			_, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, GraphSize: -1})
			return err
		}},
		// ggml_graph_overhead_custom wraps for such sizes (to ~100 bytes):
		// the graph used to be made, and Expand wrote past the pool.
		{"graph size MaxInt64", ggml.ErrInvalid, func(t *testing.T) error {
			_, err := newCtx(t).NewGraph(math.MaxInt64)
			return err
		}},
		{"graph size above MaxGraphSize", ggml.ErrInvalid, func(t *testing.T) error {
			_, err := newCtx(t).NewGraph(ggml.MaxGraphSize + 1)
			return err
		}},
		{"graph of MaxGraphSize in a small pool", ggml.ErrNoMemory, func(t *testing.T) error {
			_, err := newCtx(t).NewGraph(ggml.MaxGraphSize)
			return err
		}},
		{"context GraphSize MaxInt64", ggml.ErrInvalid, func(*testing.T) error {
			_, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true, Graph: true, GraphSize: math.MaxInt64})
			return err
		}},
		{"context GraphSize MaxInt64 without Graph", ggml.ErrInvalid, func(*testing.T) error {
			_, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true, GraphSize: math.MaxInt64})
			return err
		}},
		{"graph overhead of MaxInt64", ggml.ErrInvalid, func(*testing.T) error {
			_, err := ggml.GraphOverhead(math.MaxInt64)
			return err
		}},
		{"graph without room", ggml.ErrNoMemory, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
			defer c.Close()
			_, err := c.BuildGraph(c.NewTensor(ggml.TypeF32, 2))
			return err
		}},
		{"graph of closed context", ggml.ErrClosed, func(t *testing.T) error {
			c := newCtx(t)
			c.Close()
			_, err := c.BuildGraph()
			return err
		}},
		{"expand with poisoned tensor", ggml.ErrShape, func(t *testing.T) error {
			c := newCtx(t)
			g, err := c.BuildGraph()
			require.NoError(t, err)
			bad := c.Add(f32(c, 2), f32(c, 3))
			return g.Expand(bad)
		}},
		{"expand nil", ggml.ErrInvalid, func(t *testing.T) error {
			c := newCtx(t)
			g, _ := c.BuildGraph()
			return g.Expand(nil)
		}},
		{"data not allocated", ggml.ErrNotAllocated, func(t *testing.T) error {
			return ggml.SetData(f32(newCtx(t), 4), make([]float32, 4))
		}},
		{"data wrong type", ggml.ErrType, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 64})
			defer c.Close()
			return ggml.SetData(c.NewTensor(ggml.TypeF32, 4), make([]int32, 4))
		}},
		{"data wrong length", ggml.ErrShape, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 64})
			defer c.Close()
			return ggml.SetData(c.NewTensor(ggml.TypeF32, 4), make([]float32, 5))
		}},
		{"data into short slice", ggml.ErrShape, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 64})
			defer c.Close()
			return ggml.DataInto(c.NewTensor(ggml.TypeF32, 4), make([]float32, 3))
		}},
		{"bytes wrong length", ggml.ErrShape, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 64})
			defer c.Close()
			return ggml.SetBytes(c.NewTensor(ggml.TypeF32, 4), make([]byte, 15))
		}},
		{"data non-contiguous", ggml.ErrInvalid, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, MemSize: 256})
			defer c.Close()
			_, err := ggml.Data[float32](c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3)))
			return err
		}},
		{"data of closed context", ggml.ErrClosed, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 64})
			x := c.NewTensor(ggml.TypeF32, 4)
			c.Close()
			_, err := ggml.Data[float32](x)
			return err
		}},
		{"data of closed buffer", ggml.ErrClosed, func(t *testing.T) error {
			c := newCtx(t)
			x := f32(c, 4)
			buf, err := backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			buf.Close()
			return ggml.SetData(x, make([]float32, 4))
		}},
		{"data of view of closed buffer", ggml.ErrClosed, func(t *testing.T) error {
			c := newCtx(t)
			x := f32(c, 4)
			v := c.View1D(x, 2, 0)
			buf, err := backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			buf.Close()
			_, err = ggml.Data[float32](v)
			return err
		}},
		{"data of poisoned tensor", ggml.ErrShape, func(t *testing.T) error {
			c := newCtx(t)
			_, err := ggml.Data[float32](c.Add(f32(c, 2), f32(c, 3)))
			return err
		}},
		{"data of nil tensor", ggml.ErrInvalid, func(t *testing.T) error {
			_, err := ggml.Data[float32](nil)
			return err
		}},
		{"compute unallocated", ggml.ErrNotAllocated, func(t *testing.T) error {
			c := newCtx(t)
			g, err := c.BuildGraph(c.Relu(f32(c, 4)))
			require.NoError(t, err)
			return be.Compute(context.Background(), g)
		}},
		{"compute with closed weights", ggml.ErrClosed, func(t *testing.T) error {
			w := newCtx(t)
			wt := f32(w, 4)
			wb, err := backend.AllocContextTensors(w, be)
			require.NoError(t, err)
			defer wb.Close()
			c := newCtx(t)
			g, err := c.BuildGraph(c.Relu(wt))
			require.NoError(t, err)
			_, err = backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			w.Close()
			return be.Compute(context.Background(), g)
		}},
		{"compute with closed buffer", ggml.ErrClosed, func(t *testing.T) error {
			c := newCtx(t)
			g, err := c.BuildGraph(c.Relu(f32(c, 4)))
			require.NoError(t, err)
			buf, err := backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			buf.Close()
			return be.Compute(context.Background(), g)
		}},
		{"compute get_rows index out of range", ggml.ErrInvalid, func(t *testing.T) error {
			c := newCtx(t)
			a := f32(c, 4, 6)
			idx := c.NewTensor(ggml.TypeI32, 3)
			g, err := c.BuildGraph(c.GetRows(a, idx))
			require.NoError(t, err)
			buf, err := backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			defer buf.Close()
			require.NoError(t, ggml.SetData(idx, []int32{0, 6, 1}))
			err = be.Compute(context.Background(), g)
			var oe *ggml.OpError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, "get_rows", oe.Op)
			require.NoError(t, ggml.SetData(idx, []int32{0, 5, -1}))
			require.ErrorIs(t, be.Compute(context.Background(), g), ggml.ErrInvalid)
			require.NoError(t, ggml.SetData(idx, []int32{0, 5, 1}))
			require.NoError(t, be.Compute(context.Background(), g), "indices in range compute")
			return err
		}},
		{"compute nil graph", ggml.ErrInvalid, func(t *testing.T) error {
			return be.Compute(context.Background(), nil)
		}},
		{"compute cancelled context", context.Canceled, func(t *testing.T) error {
			c := newCtx(t)
			g, _ := c.BuildGraph(c.Relu(f32(c, 4)))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return be.Compute(ctx, g)
		}},
		{"compute on closed backend", ggml.ErrClosed, func(t *testing.T) error {
			b2, err := backend.InitByName("CPU", "")
			require.NoError(t, err)
			b2.Close()
			c := newCtx(t)
			g, _ := c.BuildGraph(c.Relu(f32(c, 4)))
			return b2.Compute(context.Background(), g)
		}},
		{"alloc in allocating context", ggml.ErrInvalid, func(t *testing.T) error {
			c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, MemSize: 64})
			defer c.Close()
			c.NewTensor(ggml.TypeF32, 4)
			_, err := backend.AllocContextTensors(c, be)
			return err
		}},
		{"alloc with nothing to allocate", ggml.ErrInvalid, func(t *testing.T) error {
			c := newCtx(t)
			f32(c, 4)
			buf, err := backend.AllocContextTensors(c, be)
			require.NoError(t, err)
			defer buf.Close()
			_, err = backend.AllocContextTensors(c, be)
			return err
		}},
		{"alloc context with error", ggml.ErrShape, func(t *testing.T) error {
			c := newCtx(t)
			c.Add(f32(c, 2), f32(c, 3))
			_, err := backend.AllocContextTensors(c, be)
			return err
		}},
		{"alloc on nil backend", ggml.ErrInvalid, func(t *testing.T) error {
			c := newCtx(t)
			f32(c, 4)
			_, err := backend.AllocContextTensors(c, nil)
			return err
		}},
		{"init unknown backend", backend.ErrNotFound, func(t *testing.T) error {
			_, err := backend.InitByName("no-such-device", "")
			return err
		}},
		{"device unknown", backend.ErrNotFound, func(t *testing.T) error {
			_, err := backend.DeviceByName("no-such-device")
			return err
		}},
		{"threads zero", ggml.ErrInvalid, func(t *testing.T) error { return be.SetThreads(0) }},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, tc.call(t), tc.want)
		})
	}
}
