package ggml_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// The type matrix: every op that takes typed inputs, built with every ggml
// type (every pair of types for ops with two typed inputs) on shapes valid
// for any block size. Each case is either refused when built (ErrType, or
// ErrShape where a type cannot take the shape) or computes on the CPU
// backend without crashing, on zeros, on random bytes free of NaN and Inf
// (ValidateRowData), and on random floats quantized to the type (random
// blocks of moderate values for the types ggml's CPU cannot write); where
// a float64 reference is cheap (the inputs dequantized in Go) the values
// are compared. GOGGML_TYPES_TRACE=1 prints each case to stderr before it
// computes, to name a case that crashes the process.

// row is the length of dimension 0 of the typed inputs: a multiple of every
// block size (1, 32, 256).
const row = 256

// tin is one input of a case.
type tin struct {
	x     *ggml.Tensor
	bound int64     // > 0: an index tensor, values in [0, bound)
	vals  []float64 // the values last set, nil where Go cannot read the type
}

// tcase is one op built on one choice of types.
type tcase struct {
	*matrix
	t   *testing.T
	ctx *ggml.Context
	ins []*tin
}

// matrix is what the cases of one run share.
type matrix struct {
	be    *backend.Backend
	rng   *rand.Rand
	trace bool
	// written holds the types ggml's CPU converts f32 to (those Cast
	// accepts from f32). The others, the iq1, iq2 and iq3 types, are
	// quantized by a lattice search whose tables take ggml seconds to
	// build: they get random blocks for data instead of Quantize's.
	written map[ggml.Type]bool
}

func newMatrix(t *testing.T) *matrix {
	m := &matrix{be: cpuBackend(t), rng: newRNG(t), trace: os.Getenv("GOGGML_TYPES_TRACE") != "", written: map[ggml.Type]bool{}}
	for _, ty := range ggml.Types() {
		probe, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
		require.NoError(t, err)
		m.written[ty] = probe.Cast(probe.NewTensor(ggml.TypeF32, row), ty).Err() == nil
		require.NoError(t, probe.Close())
	}
	return m
}

// cpuQuantize converts vals (whole rows of row values) to ty with the CPU
// backend's quantizer (a Cpy from f32, ggml's from_float), which the ops
// that write ty use.
func (m *matrix) cpuQuantize(t *testing.T, ty ggml.Type, vals []float32) []byte {
	t.Helper()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	n := int64(len(vals))
	src := c.NewTensor(ggml.TypeF32, row, n/row)
	dst := c.Cpy(src, c.NewTensor(ty, row, n/row))
	g, err := c.BuildGraph(dst)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, m.be)
	require.NoError(t, err)
	defer buf.Close()
	require.NoError(t, ggml.SetData(src, vals))
	require.NoError(t, m.be.Compute(context.Background(), g))
	out, err := ggml.Bytes(dst)
	require.NoError(t, err)
	return out
}

// in adds an input of type ty and shape ne.
func (c *tcase) in(ty ggml.Type, ne ...int64) *ggml.Tensor {
	x := c.ctx.NewTensor(ty, ne...).SetInput()
	c.ins = append(c.ins, &tin{x: x})
	return x
}

// index adds an input holding indices in [0, bound) (of any type: the op
// decides whether it takes it).
func (c *tcase) index(ty ggml.Type, bound int64, ne ...int64) *ggml.Tensor {
	x := c.in(ty, ne...)
	c.ins[len(c.ins)-1].bound = bound
	return x
}

// vals returns the values of input i (nil when Go cannot read its type).
func (c *tcase) vals(i int) []float64 { return c.ins[i].vals }

type fillMode int

const (
	fillZeros fillMode = iota
	fillBytes          // random bytes, with no NaN or Inf (ValidateRowData)
	fillQuant          // random normal floats, quantized to the type (see matrix.written)
)

func (m fillMode) String() string { return [...]string{"zeros", "random bytes", "quantized floats"}[m] }

// fill sets every input's data.
func (c *tcase) fill(mode fillMode) {
	for _, in := range c.ins {
		if !in.x.IsAllocated() {
			continue // a view of another input
		}
		ty, ne := in.x.Type(), in.x.Ne()
		n := int(in.x.Elements())
		var data []byte
		switch {
		case in.bound > 0:
			data = intBytes(ty, n, func() int64 {
				if mode == fillZeros {
					return 0
				}
				return c.rng.Int64N(in.bound)
			})
		case mode == fillZeros:
			data = make([]byte, in.x.Bytes())
		case mode == fillQuant && ty.CanQuantize() && c.written[ty]:
			var err error
			data, err = ggml.Quantize(ty, randF32(c.rng, n), ne[0], nil) // none of these needs an imatrix
			require.NoError(c.t, err)
		case mode == fillQuant && ty == ggml.TypeF64:
			data = make([]byte, 8*n)
			for i := range n {
				binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(c.rng.NormFloat64()))
			}
		case mode == fillQuant && ty.BlockSize() == 1 && !ty.CanDequantize(): // integers
			data = intBytes(ty, n, func() int64 { return c.rng.Int64N(7) - 3 })
		case mode == fillQuant: // a type ggml's CPU does not write: random blocks of moderate values
			data = randomBlocks(c.t, c.rng, ty, int(in.x.Bytes()), 16)
		default:
			data = randomBlocks(c.t, c.rng, ty, int(in.x.Bytes()), math.Inf(1))
		}
		require.NoError(c.t, ggml.SetBytes(in.x, data))
		in.vals = decode(ty, data)
	}
}

// intBytes encodes n integers from next as ty (i8 to i64); for any other
// type it returns zeros, which every type reads as zero.
func intBytes(ty ggml.Type, n int, next func() int64) []byte {
	size := int(ty.Size())
	if ty.BlockSize() != 1 || ty.CanDequantize() {
		return make([]byte, int(ty.Size())*n/int(ty.BlockSize()))
	}
	out := make([]byte, size*n)
	for i := range n {
		v := uint64(next())
		switch size {
		case 1:
			out[i] = byte(v)
		case 2:
			binary.LittleEndian.PutUint16(out[2*i:], uint16(v))
		case 4:
			binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
		default:
			binary.LittleEndian.PutUint64(out[8*i:], v)
		}
	}
	return out
}

// randomBlocks returns size random bytes of type ty, each block drawn again
// until it holds no NaN or Inf and no magnitude above bound: judged by
// decode where Go reads the type (quietly), then by ValidateRowData on the
// whole.
func randomBlocks(t *testing.T, rng *rand.Rand, ty ggml.Type, size int, bound float64) []byte {
	bs := int(ty.Size())
	out := make([]byte, size)
	for tries := 0; ; tries++ {
		require.Less(t, tries, 100, "no valid random %v data", ty)
		for b := 0; b < size; b += bs {
			blk := out[b : b+bs]
			for {
				for i := range blk {
					blk[i] = byte(rng.Uint32())
				}
				if v := decode(ty, blk); v == nil || finite(v) && maxAbs(v) <= bound {
					break
				}
			}
		}
		if err := ggml.ValidateRowData(ty, out); err == nil || errors.Is(err, ggml.ErrType) {
			return out // valid, or a type ggml cannot validate (q8_1)
		}
	}
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// finite reports whether every value is finite as a float32: ggml's
// validation reads f64 values as float, so it calls doubles beyond
// float32's range Inf.
func finite(v []float64) bool {
	for _, x := range v {
		if f := float32(x); f != f || math.IsInf(float64(f), 0) {
			return false
		}
	}
	return true
}

// decode reads data of type ty as float64, or returns nil.
func decode(ty ggml.Type, data []byte) []float64 {
	size := int(ty.Size())
	switch {
	case ty == ggml.TypeF64:
		out := make([]float64, len(data)/8)
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
		}
		return out
	case ty.CanDequantize():
		f, err := ggml.Dequantize(ty, data)
		if err != nil {
			return nil
		}
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out
	case ty.BlockSize() == 1: // integers
		out := make([]float64, len(data)/size)
		for i := range out {
			switch size {
			case 1:
				out[i] = float64(int8(data[i]))
			case 2:
				out[i] = float64(int16(binary.LittleEndian.Uint16(data[2*i:])))
			case 4:
				out[i] = float64(int32(binary.LittleEndian.Uint32(data[4*i:])))
			default:
				out[i] = float64(int64(binary.LittleEndian.Uint64(data[8*i:])))
			}
		}
		return out
	}
	return nil
}

// typeOp is one op of the matrix: build makes it with the types ts (one or
// two of them); ref, where given, returns the expected values of the
// result from the inputs' values (nil to skip).
type typeOp struct {
	name  string
	arity int
	build func(c *tcase, ts []ggml.Type) *ggml.Tensor
	ref   func(c *tcase, ts []ggml.Type) []float64
	// slack, where given, is an absolute tolerance added for element i
	// (mul_mat converts b to a coarser type).
	slack func(c *tcase, i int) float64
}

// elementwiseRef returns f applied to inputs 0 and 1 of the same shape.
func elementwiseRef(f func(a, b float64) float64) func(c *tcase, ts []ggml.Type) []float64 {
	return func(c *tcase, _ []ggml.Type) []float64 {
		a, b := c.vals(0), c.vals(1)
		if a == nil || b == nil {
			return nil
		}
		out := make([]float64, len(a))
		for i := range a {
			out[i] = f(a[i], b[i%len(b)])
		}
		return out
	}
}

// same returns input 0's values (copies and casts).
func same(c *tcase, _ []ggml.Type) []float64 { return c.vals(0) }

func typeOps() []typeOp {
	binary := func(name string, f func(ctx *ggml.Context, a, b *ggml.Tensor) *ggml.Tensor, g func(a, b float64) float64) typeOp {
		return typeOp{name: name, arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return f(c.ctx, c.in(ts[0], row, 2), c.in(ts[1], row, 2))
		}, ref: elementwiseRef(g)}
	}
	add := func(a, b float64) float64 { return a + b }
	sub := func(a, b float64) float64 { return a - b }
	mul := func(a, b float64) float64 { return a * b }
	div := func(a, b float64) float64 { return a / b }
	unary := func(name string, f func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor) typeOp {
		return typeOp{name: name, arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return f(c.ctx, c.in(ts[0], row, 2))
		}}
	}
	ops := []typeOp{
		binary("add", (*ggml.Context).Add, add),
		binary("add_inplace", (*ggml.Context).AddInPlace, add),
		binary("sub", (*ggml.Context).Sub, sub),
		binary("sub_inplace", (*ggml.Context).SubInPlace, sub),
		binary("mul", (*ggml.Context).Mul, mul),
		binary("mul_inplace", (*ggml.Context).MulInPlace, mul),
		binary("div", (*ggml.Context).Div, div),
		binary("div_inplace", (*ggml.Context).DivInPlace, div),
		{name: "add_broadcast", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Add(c.in(ts[0], row, 2), c.in(ts[1], row))
		}, ref: elementwiseRef(add)},
		{name: "add1", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Add1(c.in(ts[0], row, 2), c.in(ts[1], 1))
		}, ref: elementwiseRef(add)},
		{name: "add1_inplace", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Add1InPlace(c.in(ts[0], row, 2), c.in(ts[1], 1))
		}, ref: elementwiseRef(add)},
		{name: "acc", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			a := c.in(ts[0], row, 2)
			return c.ctx.Acc(a, c.in(ts[1], row, 1), a.Nb()[1], a.Nb()[2], a.Nb()[3], a.Nb()[1])
		}},
		{name: "add_cast_t", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.AddCast(c.in(ts[0], row, 2), c.in(ggml.TypeF32, row, 2), ts[1])
		}, ref: elementwiseRef(add)},
		{name: "add_cast_b", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.AddCast(c.in(ts[0], row, 2), c.in(ts[1], row, 2), ts[0])
		}, ref: elementwiseRef(add)},
		{name: "get_rows", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.GetRows(c.in(ts[0], row, 4), c.index(ts[1], 4, 3))
		}, ref: func(c *tcase, _ []ggml.Type) []float64 {
			a, idx := c.vals(0), c.vals(1)
			if a == nil || idx == nil {
				return nil
			}
			var out []float64
			for _, i := range idx {
				out = append(out, a[int(i)*row:int(i+1)*row]...)
			}
			return out
		}},
		{name: "get_rows_back", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.GetRowsBack(c.in(ts[0], row, 3), c.index(ts[1], 4, 3), c.ctx.NewTensor(ggml.TypeF32, row, 4))
		}},
		{name: "set_rows_b", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.SetRows(c.in(ts[0], row, 4), c.in(ts[1], row, 2), c.index(ggml.TypeI64, 4, 2))
		}},
		{name: "set_rows_idx", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.SetRows(c.in(ts[0], row, 4), c.in(ggml.TypeF32, row, 2), c.index(ts[1], 4, 2))
		}},
		{name: "cpy", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Cpy(c.in(ts[0], row, 2), c.in(ts[1], row, 2))
		}, ref: same},
		{name: "cpy_reshaped", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Cpy(c.in(ts[0], row, 2), c.in(ts[1], 2*row))
		}, ref: same},
		{name: "cast", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Cast(c.in(ts[0], row, 2), ts[1])
		}, ref: same},
		{name: "dup", arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Dup(c.in(ts[0], row, 2))
		}, ref: same},
		{name: "cont", arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Cont(c.ctx.View2D(c.in(ts[0], row, 4), row, 2, 2*c.ins[0].x.Nb()[1], 0))
		}},
		{name: "mul_mat", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.MulMat(c.in(ts[0], row, 3), c.in(ts[1], row, 2))
		}, ref: typedMulMatRef, slack: typedMulMatSlack},
		{name: "mul_mat_id", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.MulMatID(c.in(ts[0], row, 3, 2), c.in(ts[1], row, 1, 2), c.index(ggml.TypeI32, 2, 1, 2))
		}},
		{name: "out_prod", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.OutProd(c.in(ts[0], row, 2), c.in(ts[1], 3, 2))
		}},
		{name: "concat", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Concat(c.in(ts[0], row, 2), c.in(ts[1], row, 3), 1)
		}, ref: func(c *tcase, _ []ggml.Type) []float64 {
			if c.vals(0) == nil || c.vals(1) == nil {
				return nil
			}
			return append(append([]float64(nil), c.vals(0)...), c.vals(1)...)
		}},
		{name: "repeat", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Repeat(c.in(ts[0], row, 1), c.in(ts[1], row, 3))
		}, ref: func(c *tcase, _ []ggml.Type) []float64 {
			if c.vals(0) == nil {
				return nil
			}
			a := c.vals(0)
			return append(append(append([]float64(nil), a...), a...), a...)
		}},
		{name: "repeat_4d", arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Repeat4D(c.in(ts[0], row, 1), row, 2, 1, 1)
		}},
		{name: "count_equal", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.CountEqual(c.in(ts[0], row, 2), c.in(ts[1], row, 2))
		}},
		{name: "set", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			a := c.in(ts[0], row, 2)
			return c.ctx.Set(a, c.in(ts[1], row, 1), a.Nb()[1], a.Nb()[2], a.Nb()[3], a.Nb()[1])
		}},
		{name: "soft_max_mask", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.SoftMaxExt(c.in(ts[0], row, 2), c.in(ts[1], row, 2), 1, 0)
		}},
		{name: "rope_pos", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Rope(c.in(ts[0], row, 2, 3), c.index(ts[1], 100, 3), ggml.RopeParams{Dims: row, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1})
		}},
		{name: "glu_split", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.GLUSplit(c.in(ts[0], row, 2), c.in(ts[1], row, 2), ggml.GLUSwiglu)
		}},
		unary("scale", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Scale(a, 2) }),
		unary("soft_max", (*ggml.Context).SoftMax),
		unary("sum_rows", (*ggml.Context).SumRows),
		unary("sum", (*ggml.Context).Sum),
		unary("mean", (*ggml.Context).Mean),
		unary("argmax", (*ggml.Context).Argmax),
		unary("norm", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Norm(a, 1e-5) }),
		unary("rms_norm", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.RMSNorm(a, 1e-5) }),
		unary("l2_norm", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.L2Norm(a, 1e-5) }),
		unary("group_norm", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.GroupNorm(a, 1, 1e-5) }),
		unary("clamp", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Clamp(a, -1, 1) }),
		unary("leaky_relu", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.LeakyRelu(a, 0.1) }),
		unary("diag_mask_inf", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.DiagMaskInf(a, 0) }),
		unary("argsort", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Argsort(a, ggml.SortAsc) }),
		unary("top_k", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.TopK(a, 4) }),
		unary("cumsum", (*ggml.Context).Cumsum),
		unary("fill", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Fill(a, 1) }),
		unary("pad", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Pad(a, 0, 1, 0, 0) }),
		unary("roll", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Roll(a, 0, 1, 0, 0) }),
		unary("swiglu", (*ggml.Context).Swiglu),
		unary("geglu", (*ggml.Context).Geglu),
		unary("reglu", (*ggml.Context).Reglu),
		unary("sqr", (*ggml.Context).Sqr),
		unary("sqrt", (*ggml.Context).Sqrt),
		unary("log", (*ggml.Context).Log),
		unary("sin", (*ggml.Context).Sin),
		unary("cos", (*ggml.Context).Cos),
		unary("transpose_cont", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Cont(ctx.Transpose(a)) }),
		// flash_attn_ext reads k and v independently (k through its dot
		// product, v through to_float): each type once as k, once as v.
		{name: "flash_attn_ext_k", arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			q := c.in(ggml.TypeF32, row, 2, 1, 1)
			return c.ctx.FlashAttnExt(q, c.in(ts[0], row, 4, 1, 1), c.in(ggml.TypeF16, row, 4, 1, 1), nil, ggml.FlashAttnParams{Scale: 1.0 / 16})
		}},
		{name: "flash_attn_ext_v", arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			q := c.in(ggml.TypeF32, row, 2, 1, 1)
			return c.ctx.FlashAttnExt(q, c.in(ggml.TypeF16, row, 4, 1, 1), c.in(ts[0], row, 4, 1, 1), nil, ggml.FlashAttnParams{Scale: 1.0 / 16})
		}},
		{name: "im2col", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Im2Col(c.in(ts[0], 3, 2), c.in(ggml.TypeF32, row, 2), 1, 0, 0, 0, 1, 0, false, ts[1])
		}},
		{name: "im2col_b", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Im2Col(c.in(ts[0], 3, 2), c.in(ts[1], row, 2), 1, 0, 0, 0, 1, 0, false, ggml.TypeF32)
		}},
		{name: "conv_transpose_1d", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.ConvTranspose1D(c.in(ts[0], 3, 2, 2), c.in(ts[1], row, 2), 1, 0, 1)
		}},
		{name: "conv_1d_dw", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Conv1DDW(c.in(ts[0], 3, 1, 2), c.in(ts[1], row, 2), 1, 0, 1)
		}},
		{name: "conv_2d_dw_direct", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Conv2DDWDirect(c.in(ts[0], 3, 3, 1, 2), c.in(ts[1], 16, 16, 2, 1), 1, 1, 0, 0, 1, 1)
		}},
		{name: "cross_entropy_loss", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.CrossEntropyLoss(c.in(ts[0], row, 2), c.in(ts[1], row, 2))
		}},
		{name: "solve_tri", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.SolveTri(c.in(ts[0], 4, 4), c.in(ts[1], 3, 4), true, true, false)
		}},
		{name: "ssm_conv", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.SSMConv(c.in(ts[0], 5, row, 1), c.in(ts[1], 4, row))
		}},
		{name: "add_id", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.AddID(c.in(ts[0], row, 2, 1), c.in(ts[1], row, 3), c.index(ggml.TypeI32, 3, 2, 1))
		}},
		{name: "silu_back", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.SiluBack(c.in(ts[0], row, 2), c.in(ts[1], row, 2))
		}},
		{name: "rms_norm_back", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.RMSNormBack(c.in(ts[0], row, 2), c.in(ts[1], row, 2), 1e-5)
		}},
		{name: "soft_max_back", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.SoftMaxExtBack(c.in(ts[0], row, 2), c.in(ts[1], row, 2), 1, 0)
		}},
		{name: "rope_back", arity: 2, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.RopeBack(c.in(ts[0], row, 2, 3), c.index(ts[1], 100, 3), ggml.RopeParams{Dims: row, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1})
		}},
		unary("pool_1d", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Pool1D(a, ggml.PoolAvg, 2, 2, 0) }),
		unary("pool_2d", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor {
			return ctx.Pool2D(a, ggml.PoolMax, 2, 2, 2, 2, 0, 0)
		}),
		unary("upscale", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Upscale(a, 2, ggml.ScaleNearest) }),
		unary("pad_reflect_1d", func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.PadReflect1D(a, 2, 1) }),
		{name: "get_rel_pos", arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.GetRelPos(c.in(ts[0], row, 3), 2, 2)
		}},
		{name: "win_part", arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.WinPart(c.in(ts[0], row, 4, 4), 2)
		}},
		{name: "timestep_embedding", arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.TimestepEmbedding(c.in(ts[0], 4), 16, 10000)
		}},
		{name: "tri", arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Tri(c.in(ts[0], 4, 4), ggml.TriLower)
		}},
		{name: "diag", arity: 1, build: func(c *tcase, ts []ggml.Type) *ggml.Tensor {
			return c.ctx.Diag(c.in(ts[0], row))
		}},
	}
	for _, u := range []ggml.UnaryOp{
		ggml.UnaryAbs, ggml.UnarySgn, ggml.UnaryNeg, ggml.UnaryStep, ggml.UnaryTanh, ggml.UnaryElu, ggml.UnaryRelu,
		ggml.UnarySigmoid, ggml.UnaryGelu, ggml.UnaryGeluQuick, ggml.UnarySilu, ggml.UnaryHardswish, ggml.UnaryHardsigmoid,
		ggml.UnaryExp, ggml.UnarySoftplus, ggml.UnaryGeluErf, ggml.UnaryFloor, ggml.UnaryCeil,
		ggml.UnaryRound, ggml.UnaryTrunc,
	} {
		ops = append(ops, unary(fmt.Sprintf("unary_%v", u), func(ctx *ggml.Context, a *ggml.Tensor) *ggml.Tensor { return ctx.Unary(a, u) }))
	}
	return ops
}

// typedMulMatSlack bounds mul_mat's error from converting b to q8_0, q8_1 or
// q8_K (and a's own rounding is in its values): 1% of |a_i|·|b_j|.
func typedMulMatSlack(c *tcase, i int) float64 {
	a, b := c.vals(0), c.vals(1)
	norm := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x * x
		}
		return math.Sqrt(s)
	}
	return 0.01 * norm(a[i%3*row:(i%3+1)*row]) * norm(b[i/3*row:(i/3+1)*row])
}

// typedMulMatRef is MulMat's result: a [row, 3] times b [row, 2].
func typedMulMatRef(c *tcase, _ []ggml.Type) []float64 {
	a, b := c.vals(0), c.vals(1)
	if a == nil || b == nil {
		return nil
	}
	var out []float64
	for j := range 2 {
		for i := range 3 {
			s := 0.0
			for k := range row {
				s += a[i*row+k] * b[j*row+k]
			}
			out = append(out, s)
		}
	}
	return out
}

func TestOpTypeMatrix(t *testing.T) {
	m := newMatrix(t)
	all := ggml.Types()
	total, ran, compared := 0, 0, 0
	for _, op := range typeOps() {
		t.Run(op.name, func(t *testing.T) {
			var combos [][]ggml.Type
			for _, a := range all {
				if op.arity == 1 {
					combos = append(combos, []ggml.Type{a})
					continue
				}
				for _, b := range all {
					combos = append(combos, []ggml.Type{a, b})
				}
			}
			for _, ts := range combos {
				total++
				r, cmp := m.run(t, op, ts)
				if r {
					ran++
				}
				if cmp {
					compared++
				}
			}
		})
	}
	t.Logf("%d op×type cases: %d computed, %d compared with a reference, the rest refused", total, ran, compared)
}

// run builds op on ts and computes it when it is accepted; it
// reports whether it computed and whether values were compared.
func (m *matrix) run(t *testing.T, op typeOp, ts []ggml.Type) (ran, compared bool) {
	name := fmt.Sprintf("%s%v", op.name, ts)
	ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer ctx.Close()
	c := &tcase{matrix: m, t: t, ctx: ctx}
	out := op.build(c, ts)
	if err := out.Err(); err != nil {
		require.Truef(t, errors.Is(err, ggml.ErrType) || errors.Is(err, ggml.ErrShape), "%s: refused with %v, want ErrType or ErrShape", name, err)
		return false, false
	}
	out.SetOutput()
	g, err := ctx.BuildGraph(out)
	require.NoError(t, err, name)
	buf, err := backend.AllocContextTensors(ctx, m.be)
	require.NoError(t, err, name)
	defer buf.Close()
	for _, mode := range []fillMode{fillZeros, fillBytes, fillQuant} {
		if m.trace {
			fmt.Fprintf(os.Stderr, "types: %s on %v\n", name, mode)
		}
		c.fill(mode)
		var want []float64
		if op.ref != nil && mode != fillBytes {
			want = op.ref(c, ts) // before compute: in-place ops overwrite a
		}
		require.NoError(t, m.be.Compute(context.Background(), g), "%s on %v", name, mode)
		if want == nil {
			continue
		}
		data, err := ggml.Bytes(out)
		require.NoError(t, err, name)
		got := decode(out.Type(), data)
		if got == nil {
			continue
		}
		slack := func(int) float64 { return 0 }
		if op.slack != nil {
			slack = func(i int) float64 { return op.slack(c, i) }
		}
		m.compare(t, fmt.Sprintf("%s on %v", name, mode), out.Type(), want, got, slack)
		compared = true
	}
	return true, compared
}

// compare compares got, a result of type ty, with the float64 reference
// want, first rounded as ggml's kernels round it (they compute in f32): for
// f16 and bf16 to the type (Quantize's conversion), within a unit of the
// last place; for integers truncated, within 1; for a quantized type the
// CPU writes, within three times the largest error that quantizing want
// (with ggml_quantize_chunk, or with the CPU's own quantizer) makes in the
// same row, since the two may pick other scales; for the other
// quantized types, which only byte copies produce, exactly.
func (m *matrix) compare(t *testing.T, name string, ty ggml.Type, want, got []float64, slack func(int) float64) {
	t.Helper()
	require.Len(t, got, len(want), name)
	if ty != ggml.TypeF64 {
		for i, v := range want {
			want[i] = float64(float32(v))
		}
	}
	w32 := func() []float32 {
		w := make([]float32, len(want))
		for i, v := range want {
			w[i] = float32(v)
		}
		return w
	}
	rel := 1e-5
	switch {
	case ty == ggml.TypeF16 || ty == ggml.TypeBF16:
		q, err := ggml.Quantize(ty, w32(), int64(len(want)), nil)
		require.NoError(t, err, name)
		want = decode(ty, q)
		rel = map[ggml.Type]float64{ggml.TypeF16: 1e-3, ggml.TypeBF16: 8e-3}[ty]
	case ty.BlockSize() == 1 && !ty.CanDequantize() && ty != ggml.TypeF64: // integers
		for i := range want {
			want[i] = math.Trunc(want[i])
		}
		prev := slack
		slack = func(i int) float64 { return prev(i) + 1 }
	case ty.IsQuantized() && !m.written[ty]:
		rel, slack = 0, func(int) float64 { return 0 }
	case ty.IsQuantized() && !ty.CanQuantize():
		// The CPU writes it (from_float) but ggml_quantize_chunk has no
		// reference quantizer for it (nvfp4 on upstream ggml): no value
		// to compare with; what is checked is that the op ran.
		t.Logf("%s: no reference quantizer for %v, values not compared", name, ty)
		return
	case ty.IsQuantized():
		// Two quantizers: ggml_quantize_chunk's, and the CPU's from_float
		// (what the ops write with), which may search less (iq4_nl's
		// tries no scales: ntry -1 against the chunk's 7).
		q, err := ggml.Quantize(ty, w32(), row, nil)
		require.NoError(t, err, name)
		// The CPU's error counts up to four times the chunk's, so that
		// a CPU quantizer gone wrong cannot widen its own tolerance.
		rq, cq := decode(ty, q), decode(ty, m.cpuQuantize(t, ty, w32()))
		chunkErr, cpuErr := make([]float64, len(want)/row), make([]float64, len(want)/row)
		for i := range want {
			chunkErr[i/row] = math.Max(chunkErr[i/row], math.Abs(rq[i]-want[i]))
			cpuErr[i/row] = math.Max(cpuErr[i/row], math.Abs(cq[i]-want[i]))
		}
		// iq4_nl and iq4_xs are the exception: the CPU's quantizer tries
		// one scale, the chunk's seven, and where the chunk's fits a row
		// well the CPU's error has reached more than 4 times it (upstream
		// ggml, seed 1795679148836722298). Their cap is then what one
		// scale can miss by: half the widest step of their grid, 24 of
		// 127, or a value of the other sign beyond 113 of 127, under
		// 1/8 of the row's largest value.
		rowMax := make([]float64, len(want)/row)
		for i := range want {
			rowMax[i/row] = math.Max(rowMax[i/row], math.Abs(want[i]))
		}
		rowErr := make([]float64, len(want)/row)
		for r := range rowErr {
			limit := 4 * chunkErr[r]
			if ty == ggml.TypeIQ4_NL || ty == ggml.TypeIQ4_XS {
				limit = math.Max(limit, rowMax[r]/8)
			}
			rowErr[r] = math.Max(chunkErr[r], math.Min(cpuErr[r], limit))
		}
		prev := slack
		slack = func(i int) float64 { return prev(i) + 3*rowErr[i/row] }
	}
	bad := 0
	for i := range want {
		tol := rel*math.Max(math.Abs(want[i]), 1) + slack(i)
		if math.IsNaN(want[i]) && math.IsNaN(got[i]) || want[i] == got[i] {
			continue
		}
		if !(math.Abs(got[i]-want[i]) <= tol) {
			bad++
			if bad <= 3 {
				assert.Failf(t, "mismatch", "%s: element %d: got %g, want %g", name, i, got[i], want[i])
			}
		}
	}
	require.Zero(t, bad, "%s: %d of %d elements differ", name, bad, len(want))
}
