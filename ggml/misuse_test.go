package ggml_test

import (
	"context"
	"math"
	"testing"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		{"new_tensor type out of range", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.NewTensor(ggml.TypeCount+16, 2) }}, // past both providers' types
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

func TestRopeGLUMisuse(t *testing.T) {
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		{"rope odd dims", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeI32, 2), ggml.RopeParams{Dims: 3, FreqBase: 1e4, FreqScale: 1})
		}},
		{"rope dims past ne0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeI32, 2), ggml.RopeParams{Dims: 10})
		}},
		{"rope positions count", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeI32, 3), ggml.RopeParams{Dims: 8})
		}},
		{"rope positions type", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeF32, 2), ggml.RopeParams{Dims: 8})
		}},
		{"rope mode", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeI32, 2), ggml.RopeParams{Dims: 8, Mode: 1})
		}},
		{"rope q8_0", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeQ8_0, 32, 1, 2), c.NewTensor(ggml.TypeI32, 2), ggml.RopeParams{Dims: 8})
		}},
		{"rope freq factors short", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.NewTensor(ggml.TypeF32, 8, 1, 2), c.NewTensor(ggml.TypeI32, 2),
				ggml.RopeParams{Dims: 8, FreqFactors: c.NewTensor(ggml.TypeF32, 3)})
		}},
		{"rope transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Rope(c.Transpose(c.NewTensor(ggml.TypeF32, 2, 8)), c.NewTensor(ggml.TypeI32, 1), ggml.RopeParams{Dims: 2})
		}},
		{"glu unknown op", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.GLU(c.NewTensor(ggml.TypeF32, 8), 99, false) }},
		{"glu split shapes", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.GLUSplit(c.NewTensor(ggml.TypeF32, 8), c.NewTensor(ggml.TypeF32, 4), ggml.GLUSwiglu)
		}},
		{"glu split types", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.GLUSplit(c.NewTensor(ggml.TypeF32, 8), c.NewTensor(ggml.TypeF16, 8), ggml.GLUSwiglu)
		}},
		{"glu i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Swiglu(c.NewTensor(ggml.TypeI32, 8)) }},
		{"glu one element", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Geglu(c.NewTensor(ggml.TypeF32, 1)) }},
		{"glu transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Reglu(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 4))) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
			require.NoError(t, err)
			defer c.Close()
			require.ErrorIs(t, tc.op(c).Err(), tc.want)
		})
	}
}

func TestMoreMisuse(t *testing.T) {
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		{"diag_mask f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.DiagMaskInf(c.NewTensor(ggml.TypeF16, 4, 4), 0) }},
		{"diag_mask negative past", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.DiagMaskZero(c.NewTensor(ggml.TypeF32, 4, 4), -1) }},
		{"diag_mask transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.DiagMaskInf(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3)), 0)
		}},
		{"diag_mask transposed column", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// ggml_is_contiguous passes [1 3] with nb0 = 12; the kernel asserts nb0 = 4.
			return c.DiagMaskInf(c.Transpose(c.NewTensor(ggml.TypeF32, 3)), 0)
		}},
		{"leaky_relu i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.LeakyRelu(c.NewTensor(ggml.TypeI32, 4), 0.1) }},
		{"argsort f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Argsort(c.NewTensor(ggml.TypeF16, 4), ggml.SortAsc) }},
		{"argsort order", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Argsort(c.NewTensor(ggml.TypeF32, 4), 7) }},
		{"cumsum transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Cumsum(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3))) }},
		{"count_equal f32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.CountEqual(c.NewTensor(ggml.TypeF32, 4), c.NewTensor(ggml.TypeF32, 4))
		}},
		{"count_equal shapes", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.CountEqual(c.NewTensor(ggml.TypeI32, 4), c.NewTensor(ggml.TypeI32, 5))
		}},
		{"pad negative", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Pad(c.NewTensor(ggml.TypeF32, 4), -1, 0, 0, 0) }},
		{"add1 b not scalar", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Add1(c.NewTensor(ggml.TypeF32, 4), c.NewTensor(ggml.TypeF32, 2))
		}},
		{"add1 i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Add1(c.NewTensor(ggml.TypeI32, 4), c.NewTensor(ggml.TypeI32, 1))
		}},
		{"add1 f32 + f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Add1(c.NewTensor(ggml.TypeF32, 4), c.NewTensor(ggml.TypeF16, 1))
		}},
		{"add1 transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Add1(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3)), c.NewTensor(ggml.TypeF32, 1))
		}},
		{"add1 transposed row", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// contiguous by ggml_is_contiguous, not padded 1-d: ggml asserts
			return c.Add1(c.Transpose(c.NewTensor(ggml.TypeF32, 1, 2, 2)), c.NewTensor(ggml.TypeF32, 1))
		}},
		{"scale transposed row", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// found by FuzzOps: a [1 2] transposed to [2 1] with nb2 of the original
			return c.Scale(c.Transpose(c.NewTensor(ggml.TypeF32, 1, 2, 2)), 2)
		}},
		{"gelu transposed row batch", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// ggml_is_contiguous_1 passes it; gelu's kernel would read the wrong rows
			return c.Gelu(c.Transpose(c.NewTensor(ggml.TypeF32, 1, 2, 2)))
		}},
		{"argsort transposed row batch", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Argsort(c.Transpose(c.NewTensor(ggml.TypeF32, 1, 2, 2)), ggml.SortAsc)
		}},
		{"arange stop <= start", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Arange(3, 3, 1) }},
		{"arange step 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Arange(0, 3, 0) }},
		{"arange negative step", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Arange(0, 3, -1) }},
		{"arange nan", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Arange(float32(math.NaN()), 3, 1) }},
		{"arange huge", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Arange(0, 1e30, 1e-10) }},
		{"pad i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Pad(c.NewTensor(ggml.TypeI32, 4), 1, 0, 0, 0) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
			require.NoError(t, err)
			defer c.Close()
			require.ErrorIs(t, tc.op(c).Err(), tc.want)
		})
	}
}

func TestReduceMisuse(t *testing.T) {
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		{"sum i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Sum(c.NewTensor(ggml.TypeI32, 4)) }},
		{"sum transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Sum(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3))) }},
		{"mean f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Mean(c.NewTensor(ggml.TypeF16, 4)) }},
		{"argmax 3-d", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Argmax(c.NewTensor(ggml.TypeF32, 4, 3, 2)) }},
		{"norm f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Norm(c.NewTensor(ggml.TypeF16, 4), 1e-5) }},
		{"l2_norm f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.L2Norm(c.NewTensor(ggml.TypeF16, 4), 1e-6) }},
		{"l2_norm negative eps", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.L2Norm(c.NewTensor(ggml.TypeF32, 4), -1) }},
		{"l2_norm transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.L2Norm(c.Transpose(c.NewTensor(ggml.TypeF32, 4, 3)), 1e-6)
		}},
		{"rms_norm negative eps", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.RMSNorm(c.NewTensor(ggml.TypeF32, 4), -1) }},
		{"rms_norm NaN eps", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.RMSNorm(c.NewTensor(ggml.TypeF32, 4), float32(math.NaN()))
		}},
		{"repeat not a multiple", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Repeat(c.NewTensor(ggml.TypeF32, 3), c.NewTensor(ggml.TypeF32, 4))
		}},
		{"repeat q8_0", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Repeat(c.NewTensor(ggml.TypeQ8_0, 32), c.NewTensor(ggml.TypeQ8_0, 64))
		}},
		{"concat dim", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.Concat(c.NewTensor(ggml.TypeF32, 3), c.NewTensor(ggml.TypeF32, 3), 4)
		}},
		{"concat types", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Concat(c.NewTensor(ggml.TypeF32, 3), c.NewTensor(ggml.TypeF16, 3), 0)
		}},
		{"concat shapes", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Concat(c.NewTensor(ggml.TypeF32, 3, 2), c.NewTensor(ggml.TypeF32, 4, 2), 1)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
			require.NoError(t, err)
			defer c.Close()
			require.ErrorIs(t, tc.op(c).Err(), tc.want)
			_, err = c.BuildGraph()
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestSeqMisuse(t *testing.T) {
	f32 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF32, ne...) }
	i32 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeI32, ne...) }
	f16 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF16, ne...) }
	// a [2 3 4] with dimension 0 strided but not transposed: nb [8 24 4].
	strided := func(c *ggml.Context) *ggml.Tensor { return c.Permute(f32(c, 2, 3, 4), 2, 0, 1, 3) }
	wkv6 := func(c *ggml.Context, k, tf, state *ggml.Tensor) *ggml.Tensor {
		kn := k.Ne()
		sh := []int64{kn[0], kn[1], kn[2]}
		return c.RWKVWKV6(k, f32(c, sh...), f32(c, sh...), tf, f32(c, sh...), state)
	}
	recur := func(c *ggml.Context, ty ggml.Type, s, h, tok int64) []*ggml.Tensor {
		var ts []*ggml.Tensor
		for range 6 {
			ts = append(ts, c.NewTensor(ty, s, h, tok))
		}
		return ts
	}
	scan := func(c *ggml.Context, xType ggml.Type, aN0, nGroup, nIDs int64) *ggml.Tensor {
		// dState 16, headDim 4, nHead 2, 3 tokens, 2 sequences.
		return c.SSMScan(f32(c, 16, 4, 2, 2), c.NewTensor(xType, 4, 2, 3, 2), f32(c, 2, 3, 2), f32(c, aN0, 2),
			f32(c, 16, nGroup, 3, 2), f32(c, 16, nGroup, 3, 2), i32(c, nIDs))
	}
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		// out_prod: the constructor asserts shapes and divides by a.ne2; the
		// kernel aborts on f16 a and asserts b f32, nb00, no quantized broadcast.
		{"out_prod f16 a", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(f16(c, 4, 3), f32(c, 5, 3)) }},
		{"out_prod f16 b", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(f32(c, 4, 3), f16(c, 5, 3)) }},
		{"out_prod ne1", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(f32(c, 4, 3), f32(c, 5, 2)) }},
		{"out_prod a.ne2 0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(f32(c, 4, 3, 0), f32(c, 5, 3, 2)) }},
		{"out_prod broadcast", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(f32(c, 4, 3, 2), f32(c, 5, 3, 3)) }},
		{"out_prod transposed a", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.OutProd(c.Transpose(f32(c, 3, 4)), f32(c, 5, 3))
		}},
		{"out_prod strided a", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.OutProd(strided(c), f32(c, 5, 4, 2)) }},
		{"out_prod quantized broadcast", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.OutProd(c.NewTensor(ggml.TypeQ8_0, 32, 3, 1), f32(c, 5, 3, 2))
		}},
		// mul_mat_id
		{"mul_mat_id f32 ids", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 1, 2), f32(c, 2, 2)) }},
		{"mul_mat_id i32 as", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(i32(c, 8, 4, 3), f32(c, 8, 1, 2), i32(c, 2, 2)) }},
		{"mul_mat_id f16 b for f32 as", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(f32(c, 8, 4, 3), f16(c, 8, 1, 2), i32(c, 2, 2))
		}},
		{"mul_mat_id 4-d as", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(f32(c, 8, 4, 3, 2), f32(c, 8, 1, 2), i32(c, 2, 2))
		}},
		{"mul_mat_id ids per token", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 1, 2), i32(c, 2, 3)) }},
		{"mul_mat_id b rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 2, 2), i32(c, 3, 2)) }},
		{"mul_mat_id b.ne1 0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 0, 2), i32(c, 3, 2)) }},
		{"mul_mat_id k", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 7, 1, 2), i32(c, 2, 2)) }},
		{"mul_mat_id transposed b", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(f32(c, 2, 4, 3), c.Transpose(f32(c, 3, 2)), i32(c, 3, 1))
		}},
		{"mul_mat_id transposed as", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(c.Permute(f32(c, 4, 8, 3), 1, 0, 2, 3), f32(c, 8, 1, 2), i32(c, 2, 2))
		}},
		{"mul_mat_id ids from a wide argsort", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 1, 2), c.Argsort(f32(c, 5, 2), ggml.SortDesc))
		}},
		{"mul_mat_id computed ids", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 1, 2), c.Transpose(i32(c, 2, 2)))
		}},
		{"mul_mat_id nil ids", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.MulMatID(f32(c, 8, 4, 3), f32(c, 8, 1, 2), nil) }},
		// add_id: the kernel aborts on non-f32 a and asserts nb0 of b.
		{"add_id f16 a", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.AddID(f16(c, 4, 3, 2), f32(c, 4, 5), i32(c, 3, 2)) }},
		{"add_id f32 ids", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.AddID(f32(c, 4, 3, 2), f32(c, 4, 5), f32(c, 3, 2)) }},
		{"add_id ids rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.AddID(f32(c, 4, 3, 2), f32(c, 4, 5), i32(c, 2, 2)) }},
		{"add_id transposed b", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.AddID(f32(c, 4, 3, 2), c.Transpose(f32(c, 5, 4)), i32(c, 3, 2))
		}},
		{"add_id 3-d b", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.AddID(f32(c, 4, 3, 2), f32(c, 4, 5, 2), i32(c, 3, 2)) }},
		{"add_id computed ids", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			return c.AddID(f32(c, 4, 3, 2), f32(c, 4, 5), c.Cont(i32(c, 3, 2)))
		}},
		// ssm_conv
		{"ssm_conv f16 sx", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.SSMConv(f16(c, 6, 5, 2), f32(c, 4, 5)) }},
		{"ssm_conv 4-d sx", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SSMConv(f32(c, 6, 5, 2, 2), f32(c, 4, 5)) }},
		{"ssm_conv short sx", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SSMConv(f32(c, 2, 5, 2), f32(c, 4, 5)) }},
		{"ssm_conv channels", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SSMConv(f32(c, 6, 4, 2), f32(c, 4, 5)) }},
		{"ssm_conv width 0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SSMConv(f32(c, 6, 5, 2), f32(c, 0, 5)) }},
		{"ssm_conv strided rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SSMConv(c.Permute(f32(c, 5, 6, 2), 1, 0, 2, 3), f32(c, 4, 5))
		}},
		// ssm_scan: the kernel divides by B.ne1 and asserts nHead % nGroup.
		{"ssm_scan f16 x", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return scan(c, ggml.TypeF16, 1, 1, 2) }},
		{"ssm_scan A.ne0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return scan(c, ggml.TypeF32, 3, 1, 2) }},
		{"ssm_scan no group", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return scan(c, ggml.TypeF32, 1, 0, 2) }},
		{"ssm_scan groups", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return scan(c, ggml.TypeF32, 16, 3, 2) }},
		{"ssm_scan ids", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return scan(c, ggml.TypeF32, 1, 1, 3) }},
		{"ssm_scan strided ids", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// A column of an argsort: bounded, but ggml's kernel asserts nb0 = 4.
			col := c.View2D(c.Argsort(f32(c, 2, 2), ggml.SortAsc), 1, 2, 8, 0)
			ids := c.Permute(col, 1, 0, 2, 3)
			return c.SSMScan(f32(c, 16, 4, 2, 2), f32(c, 4, 2, 3, 2), f32(c, 2, 3, 2), f32(c, 1, 2),
				f32(c, 16, 1, 3, 2), f32(c, 16, 1, 3, 2), ids)
		}},
		{"ssm_scan transposed s", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SSMScan(c.Transpose(f32(c, 4, 16, 2, 2)), f32(c, 4, 2, 3, 2), f32(c, 2, 3, 2), f32(c, 1, 2),
				f32(c, 16, 1, 3, 2), f32(c, 16, 1, 3, 2), i32(c, 2))
		}},
		// rwkv_wkv6 / gla / wkv7: the kernels divide by H and by
		// nTokens/nSeqs, and index tf, r and the states unchecked.
		{"wkv6 no head", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return wkv6(c, f32(c, 4, 0, 2), f32(c, 0), f32(c, 0, 1)) }},
		{"wkv6 tokens per sequence", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return wkv6(c, f32(c, 4, 2, 3), f32(c, 4, 2), f32(c, 32, 2))
		}},
		{"wkv6 fewer tokens than sequences", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return wkv6(c, f32(c, 4, 2, 1), f32(c, 4, 2), f32(c, 32, 2))
		}},
		{"wkv6 tf", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return wkv6(c, f32(c, 4, 2, 2), f32(c, 4), f32(c, 32, 1)) }},
		{"wkv6 state", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return wkv6(c, f32(c, 4, 2, 2), f32(c, 4, 2), f32(c, 31, 1)) }},
		{"wkv6 i32 v", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.RWKVWKV6(f32(c, 4, 2, 2), i32(c, 4, 2, 2), f32(c, 4, 2, 2), f32(c, 4, 2), f32(c, 4, 2, 2), f32(c, 32, 1))
		}},
		{"wkv7 head size 32 state", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			ts := recur(c, ggml.TypeF32, 32, 2, 2)
			return c.RWKVWKV7(ts[0], ts[1], ts[2], ts[3], ts[4], ts[5], f32(c, 64*64*2, 1))
		}},
		{"wkv7 r shape", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			ts := recur(c, ggml.TypeF32, 64, 1, 2)
			return c.RWKVWKV7(f32(c, 64, 1, 1), ts[1], ts[2], ts[3], ts[4], ts[5], f32(c, 64*64, 1))
		}},
		{"gla f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			ts := recur(c, ggml.TypeF16, 4, 2, 2)
			return c.GatedLinearAttn(ts[0], ts[1], ts[2], ts[3], f32(c, 32, 1), 1)
		}},
		{"gla strided k", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			k := c.Permute(f32(c, 2, 4, 2), 1, 0, 2, 3)
			return c.GatedLinearAttn(k, f32(c, 4, 2, 2), f32(c, 4, 2, 2), f32(c, 4, 2, 2), f32(c, 32, 1), 1)
		}},
		{"gla no tokens", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			ts := recur(c, ggml.TypeF32, 4, 2, 0)
			return c.GatedLinearAttn(ts[0], ts[1], ts[2], ts[3], f32(c, 32, 1), 1)
		}},
		// solve_tri
		{"solve_tri upper", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.SolveTri(f32(c, 3, 3), f32(c, 2, 3), true, false, false) }},
		{"solve_tri unit", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.SolveTri(f32(c, 3, 3), f32(c, 2, 3), true, true, true) }},
		{"solve_tri not square", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.SolveTri(f32(c, 3, 4), f32(c, 2, 4), true, true, false) }},
		{"solve_tri f16 b", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.SolveTri(f32(c, 3, 3), f16(c, 2, 3), true, true, false) }},
		{"solve_tri batch", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SolveTri(f32(c, 3, 3, 2), f32(c, 2, 3, 1), true, true, false)
		}},
		{"solve_tri transposed b", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SolveTri(f32(c, 3, 3), c.Transpose(f32(c, 3, 2)), true, true, false)
		}},
		// win_part / win_unpart: the constructor divides by w.
		{"win_part w 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.WinPart(f32(c, 3, 5, 4), 0) }},
		{"win_part f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.WinPart(f16(c, 3, 5, 4), 2) }},
		{"win_part 4-d", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.WinPart(f32(c, 3, 5, 4, 2), 2) }},
		{"win_part transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.WinPart(c.Transpose(f32(c, 5, 3)), 2) }},
		{"win_unpart windows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.WinUnpart(f32(c, 3, 2, 2, 4), 5, 5, 2) }},
		{"win_unpart negative", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.WinUnpart(f32(c, 3, 2, 2, 4), -1, 4, 2) }},
		// get_rel_pos / add_rel_pos
		{"get_rel_pos qh != kh", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.GetRelPos(f16(c, 4, 5), 3, 2) }},
		{"get_rel_pos ne1", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.GetRelPos(f16(c, 4, 4), 3, 3) }},
		{"get_rel_pos f32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.GetRelPos(f32(c, 4, 5), 3, 3) }},
		{"get_rel_pos 3-d", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.GetRelPos(f16(c, 4, 5, 2), 3, 3) }},
		{"get_rel_pos bf16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.GetRelPos(c.NewTensor(ggml.TypeBF16, 4, 5), 3, 3)
		}},
		{"add_rel_pos W²", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.AddRelPos(f32(c, 8, 4, 2), f32(c, 3, 2, 2, 2), f32(c, 3, 2, 2, 2))
		}},
		{"add_rel_pos f16 pw", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.AddRelPos(f32(c, 9, 4, 2), f16(c, 3, 2, 2, 2), f32(c, 3, 2, 2, 2))
		}},
		{"add_rel_pos 4-d a", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.AddRelPos(f32(c, 9, 4, 2, 2), f32(c, 3, 2, 2, 2), f32(c, 3, 2, 2, 2))
		}},
		// cross_entropy_loss(_back)
		{"cel shapes", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.CrossEntropyLoss(f32(c, 5, 3), f32(c, 5, 2)) }},
		{"cel f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.CrossEntropyLoss(f16(c, 5, 3), f16(c, 5, 3)) }},
		{"cel transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.CrossEntropyLoss(c.Transpose(f32(c, 3, 5)), f32(c, 5, 3))
		}},
		{"cel uneven rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			p := c.Permute(f32(c, 4, 3, 2), 0, 2, 1, 3) // [4 2 3], nb [4 48 16]
			return c.CrossEntropyLoss(p, f32(c, 4, 2, 3))
		}},
		{"celb grad not scalar", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.CrossEntropyLossBack(f32(c, 2), f32(c, 5, 3), f32(c, 5, 3))
		}},
		{"celb f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.CrossEntropyLossBack(f32(c, 1), f16(c, 5, 3), f16(c, 5, 3))
		}},
		{"celb view", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			a := c.View2D(f32(c, 8, 3), 5, 3, 32, 0)
			return c.CrossEntropyLossBack(f32(c, 1), a, f32(c, 5, 3))
		}},
	}
	require.GreaterOrEqual(t, len(cases), 35)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true})
			require.NoError(t, err)
			defer c.Close()
			out := tc.op(c)
			t.Log(out.Err())
			require.ErrorIs(t, out.Err(), tc.want)
			assert.ErrorIs(t, c.Err(), tc.want, "the context records the error")
		})
	}
}

func TestSetMisuse(t *testing.T) {
	f32 := func(c *ggml.Context, ne ...int64) *ggml.Tensor { return c.NewTensor(ggml.TypeF32, ne...) }
	tr := func(c *ggml.Context) *ggml.Tensor { return c.Transpose(f32(c, 4, 3)) }
	cases := []struct {
		name string
		want error
		op   func(c *ggml.Context) *ggml.Tensor
	}{
		{"clamp i32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Clamp(c.NewTensor(ggml.TypeI32, 4), 0, 1) }},
		{"clamp bf16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Clamp(c.NewTensor(ggml.TypeBF16, 4), 0, 1) }},
		{"clamp transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Clamp(tr(c), 0, 1) }},
		{"clamp NaN bound", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Clamp(f32(c, 4), float32(math.NaN()), 1) }},
		{"clamp in place transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.ClampInPlace(tr(c), 0, 1) }},
		{"top_k k 0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.TopK(f32(c, 4), 0) }},
		{"top_k k > ne0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.TopK(f32(c, 4), 5) }},
		{"top_k f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.TopK(c.NewTensor(ggml.TypeF16, 4), 2) }},
		{"top_k transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.TopK(tr(c), 2) }},
		{"top_k rows not contiguous", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			a := f32(c, 4, 3, 2)
			return c.TopK(c.View3D(a, 4, 2, 2, a.Nb()[1], a.Nb()[2], 0), 2)
		}},
		{"argsort_top_k k > ne0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.ArgsortTopK(f32(c, 4), 9) }},
		{"repeat_4d not a multiple", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Repeat4D(f32(c, 4, 3), 6, 3, 1, 1) }},
		{"repeat_4d negative", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Repeat4D(f32(c, 4), -4, 1, 1, 1) }},
		{"repeat_4d q4_0", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Repeat4D(c.NewTensor(ggml.TypeQ4_0, 32), 64, 1, 1, 1) }},
		{"repeat_4d transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Repeat4D(tr(c), 6, 4, 1, 1) }},
		{"repeat_4d empty to non-empty", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Repeat4D(f32(c, 0, 2), 4, 2, 1, 1) }},
		{"pad_ext negative", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.PadExt(f32(c, 4), ggml.Padding{{0, 0}, {-1, 0}}) }},
		{"pad_ext f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.PadExt(c.NewTensor(ggml.TypeF16, 4), ggml.Padding{{1, 1}})
		}},
		{"pad_ext transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.PadExt(tr(c), ggml.Padding{{1, 1}}) }},
		{"pad_circular empty", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.PadCircular(f32(c, 0, 2), ggml.Padding{{1, 1}}) }},
		{"pad_ext too large", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.PadExt(f32(c, 4), ggml.Padding{{1 << 31, 0}}) }},
		{"roll shift = ne0", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Roll(f32(c, 4, 3), 4, 0, 0, 0) }},
		{"roll shift -ne1", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Roll(f32(c, 4, 3), 0, -3, 0, 0) }},
		{"roll shift in size-1 dim", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Roll(f32(c, 4, 3), 0, 0, 1, 0) }},
		{"roll f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Roll(c.NewTensor(ggml.TypeF16, 4), 1, 0, 0, 0) }},
		{"roll transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Roll(tr(c), 1, 0, 0, 0) }},
		{"cast to invalid type", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Cast(f32(c, 4), ggml.Type(4)) }},
		{"cast i32 to f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Cast(c.NewTensor(ggml.TypeI32, 4), ggml.TypeF16) }},
		{"cast to q4_0 partial block", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Cast(f32(c, 48), ggml.TypeQ4_0) }},
		{"cast transposed to q8_0", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Cast(c.Transpose(f32(c, 32, 32)), ggml.TypeQ8_0) }},
		{"cast to iq1_s", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Cast(f32(c, 256), ggml.TypeIQ1_S) }},
		{"cast q4_0 to f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor { return c.Cast(c.NewTensor(ggml.TypeQ4_0, 32), ggml.TypeF16) }},
		{"dup nil", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Dup(nil) }},
		{"set f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Set1D(c.NewTensor(ggml.TypeF16, 4), c.NewTensor(ggml.TypeF16, 2), 0)
		}},
		{"set b of another type", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.Set1D(f32(c, 4), c.NewTensor(ggml.TypeI32, 2), 0)
		}},
		{"set b larger", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(f32(c, 4), f32(c, 5), 0) }},
		{"set past the end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(f32(c, 4), f32(c, 2), 12) }},
		{"set last element at the end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// ggml checks where the last element starts, not where it ends.
			return c.Set1D(f32(c, 4), f32(c, 1), 16)
		}},
		{"set rows past the end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Set2D(f32(c, 4, 4), f32(c, 2, 3), 32, 0) }},
		{"set empty b past the end", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			// found by FuzzOpsMore: ggml checks an empty b's position too.
			return c.Set1D(f32(c, 4), f32(c, 0, 2), 32)
		}},
		{"set huge b rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.Set2D(f32(c, 1<<20), f32(c, 1, 1<<19), 1<<20, 0)
		}},
		{"set misaligned offset", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(f32(c, 4), f32(c, 2), 2) }},
		{"set offset 2^30", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(f32(c, 4), f32(c, 2), 1<<30) }},
		{"set a transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(tr(c), f32(c, 2), 0) }},
		{"set b transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.Set1D(f32(c, 16), tr(c), 0) }},
		{"set_rows b f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8), c.NewTensor(ggml.TypeF16, 4, 2), c.NewTensor(ggml.TypeI32, 2))
		}},
		{"set_rows idx f32", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8), f32(c, 4, 2), f32(c, 2))
		}},
		{"set_rows into iq2_xxs", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(c.NewTensor(ggml.TypeIQ2_XXS, 256, 8), f32(c, 256, 2), c.NewTensor(ggml.TypeI32, 2))
		}},
		{"set_rows row length", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8), f32(c, 5, 2), c.NewTensor(ggml.TypeI32, 2))
		}},
		{"set_rows one index per row", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8), f32(c, 4, 2), c.NewTensor(ggml.TypeI32, 3))
		}},
		{"set_rows ne2", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8, 2), f32(c, 4, 2, 3), c.NewTensor(ggml.TypeI32, 2))
		}},
		{"set_rows idx broadcast", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8, 3), f32(c, 4, 2, 3), c.NewTensor(ggml.TypeI32, 2, 2))
		}},
		{"set_rows idx ne3", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 8), f32(c, 4, 2), c.NewTensor(ggml.TypeI32, 2, 1, 1, 2))
		}},
		{"set_rows a transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(c.Transpose(f32(c, 8, 4)), f32(c, 4, 2), c.NewTensor(ggml.TypeI32, 2))
		}},
		{"set_rows computed idx", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor {
			idx := c.Cast(f32(c, 2), ggml.TypeI32)
			return c.SetRows(f32(c, 4, 8), f32(c, 4, 2), idx)
		}},
		{"set_rows argsort idx past rows", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor {
			return c.SetRows(f32(c, 4, 3), f32(c, 4, 5), c.Argsort(f32(c, 5), ggml.SortAsc))
		}},
		{"group_norm 0 groups", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.GroupNorm(f32(c, 4, 4, 4), 0, 1e-5) }},
		{"group_norm groups > channels", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.GroupNorm(f32(c, 4, 4, 4), 5, 1e-5) }},
		{"group_norm f16", ggml.ErrType, func(c *ggml.Context) *ggml.Tensor {
			return c.GroupNorm(c.NewTensor(ggml.TypeF16, 4, 4, 4), 2, 1e-5)
		}},
		{"group_norm negative eps", ggml.ErrInvalid, func(c *ggml.Context) *ggml.Tensor { return c.GroupNorm(f32(c, 4, 4, 4), 2, -1) }},
		{"group_norm transposed", ggml.ErrShape, func(c *ggml.Context) *ggml.Tensor { return c.GroupNorm(tr(c), 1, 1e-5) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
			require.NoError(t, err)
			defer c.Close()
			require.ErrorIs(t, tc.op(c).Err(), tc.want)
			require.ErrorIs(t, c.Err(), tc.want)
		})
	}
}
