package ggml_test

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// opCase is one entry of the op table: an op of Context and how to build it
// from fuzz bytes.
type opCase struct {
	// id is the entry's fuzz code: the byte that picks it in FuzzOps'
	// inputs. Once given it never changes, for the seed corpus in
	// testdata/fuzz/FuzzOps spells ops by it: a new entry takes the next
	// free id, wherever it sits in the table.
	id int
	// name is the method of Context. A method may have more than one
	// entry (Rope: its plain and its multi-section modes).
	name  string
	build opBuilder
}

// opBuilder builds one op on the inputs a and b with parameters read from
// r; pick returns further inputs (reading r too).
type opBuilder func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor

// opTable lists every op of Context, in the order of the op files (ggml.h's
// families). It drives FuzzOps, the check that it holds every op of
// Context (TestOpTable), the check of doc.go's op list
// (TestDocListsEveryOp) and TestEveryOpRefusesUnusableInputs.
var opTable = []opCase{
	// ops_elementwise.go
	{0, "Add", on2((*ggml.Context).Add)},
	{1, "AddInPlace", on2((*ggml.Context).AddInPlace)},
	{2, "AddCast", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.AddCast(a, b, []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0}[r.n(3)])
	}},
	{3, "AddID", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.AddID(a, b, pick())
	}},
	{4, "Add1", on2((*ggml.Context).Add1)},
	{5, "Add1InPlace", on2((*ggml.Context).Add1InPlace)},
	{6, "Acc", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Acc(a, b, uint64(4*r.n(8)), uint64(4*r.n(16)), 0, uint64(4*r.n(4)))
	}},
	{7, "AccInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.AccInPlace(a, b, uint64(4*r.n(8)), uint64(4*r.n(16)), 0, uint64(4*r.n(4)))
	}},
	{8, "Sub", on2((*ggml.Context).Sub)},
	{9, "SubInPlace", on2((*ggml.Context).SubInPlace)},
	{10, "Mul", on2((*ggml.Context).Mul)},
	{11, "MulInPlace", on2((*ggml.Context).MulInPlace)},
	{12, "Div", on2((*ggml.Context).Div)},
	{13, "DivInPlace", on2((*ggml.Context).DivInPlace)},
	{14, "Scale", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Scale(a, float32(r.n(5))-2)
	}},
	{15, "ScaleInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.ScaleInPlace(a, float32(r.n(5))-2)
	}},
	{16, "ScaleBias", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.ScaleBias(a, float32(r.n(5))-2, 1)
	}},
	{17, "ScaleBiasInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.ScaleBiasInPlace(a, float32(r.n(5))-2, 1)
	}},
	{18, "Clamp", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Clamp(a, r.signed(5), r.signed(5))
	}},
	{19, "ClampInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.ClampInPlace(a, r.signed(5), r.signed(5))
	}},
	// ops_unary.go
	{20, "Sqr", on1((*ggml.Context).Sqr)},
	{21, "SqrInPlace", on1((*ggml.Context).SqrInPlace)},
	{22, "Sqrt", on1((*ggml.Context).Sqrt)},
	{23, "SqrtInPlace", on1((*ggml.Context).SqrtInPlace)},
	{24, "Log", on1((*ggml.Context).Log)},
	{25, "LogInPlace", on1((*ggml.Context).LogInPlace)},
	{26, "Expm1", on1((*ggml.Context).Expm1)},
	{27, "Softplus", on1((*ggml.Context).Softplus)},
	{28, "Sin", on1((*ggml.Context).Sin)},
	{29, "SinInPlace", on1((*ggml.Context).SinInPlace)},
	{30, "Cos", on1((*ggml.Context).Cos)},
	{31, "CosInPlace", on1((*ggml.Context).CosInPlace)},
	{32, "Abs", on1((*ggml.Context).Abs)},
	{33, "Sgn", on1((*ggml.Context).Sgn)},
	{34, "Neg", on1((*ggml.Context).Neg)},
	{35, "Step", on1((*ggml.Context).Step)},
	{36, "Tanh", on1((*ggml.Context).Tanh)},
	{37, "Elu", on1((*ggml.Context).Elu)},
	{38, "Relu", on1((*ggml.Context).Relu)},
	{39, "LeakyRelu", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.LeakyRelu(a, 0.1)
	}},
	{40, "LeakyReluInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.LeakyReluInPlace(a, 0.1)
	}},
	{41, "Sigmoid", on1((*ggml.Context).Sigmoid)},
	{42, "Gelu", on1((*ggml.Context).Gelu)},
	{43, "GeluErf", on1((*ggml.Context).GeluErf)},
	{44, "GeluQuick", on1((*ggml.Context).GeluQuick)},
	{45, "Silu", on1((*ggml.Context).Silu)},
	{46, "Hardswish", on1((*ggml.Context).Hardswish)},
	{47, "Hardsigmoid", on1((*ggml.Context).Hardsigmoid)},
	{48, "Exp", on1((*ggml.Context).Exp)},
	{49, "Floor", on1((*ggml.Context).Floor)},
	{50, "Ceil", on1((*ggml.Context).Ceil)},
	{51, "Round", on1((*ggml.Context).Round)},
	{52, "Trunc", on1((*ggml.Context).Trunc)},
	{53, "XIELU", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.XIELU(a, 0.8, 0.8, 0.5, -1e-6)
	}},
	{54, "Unary", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Unary(a, ggml.UnaryOp(r.n(24)))
	}},
	{55, "UnaryInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.UnaryInPlace(a, ggml.UnaryOp(r.n(24)))
	}},
	{56, "GLU", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.GLU(a, ggml.GLUOp(r.n(7)), r.n(2) == 0)
	}},
	{57, "GLUSplit", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.GLUSplit(a, b, ggml.GLUOp(r.n(7)))
	}},
	{58, "Swiglu", on1((*ggml.Context).Swiglu)},
	{59, "Geglu", on1((*ggml.Context).Geglu)},
	{60, "Reglu", on1((*ggml.Context).Reglu)},
	{61, "SwigluOAI", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.SwigluOAI(a, b, 1.7, float32(r.n(4)))
	}},
	// ops_reduce.go
	{62, "Sum", on1((*ggml.Context).Sum)},
	{63, "SumRows", on1((*ggml.Context).SumRows)},
	{64, "Cumsum", on1((*ggml.Context).Cumsum)},
	{65, "Mean", on1((*ggml.Context).Mean)},
	{66, "Argmax", on1((*ggml.Context).Argmax)},
	{67, "CountEqual", on2((*ggml.Context).CountEqual)},
	{68, "Argsort", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Argsort(a, ggml.SortOrder(r.n(2)))
	}},
	{69, "ArgsortTopK", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.ArgsortTopK(a, r.n(6))
	}},
	{70, "TopK", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.TopK(a, r.n(6))
	}},
	// ops_norm.go
	{71, "Norm", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Norm(a, 1e-5)
	}},
	{72, "NormInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.NormInPlace(a, 1e-5)
	}},
	{73, "RMSNorm", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.RMSNorm(a, 1e-5)
	}},
	{74, "RMSNormInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.RMSNormInPlace(a, 1e-5)
	}},
	{75, "GroupNorm", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.GroupNorm(a, r.n(4), 1e-5)
	}},
	{76, "GroupNormInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.GroupNormInPlace(a, r.n(4), 1e-5)
	}},
	{77, "L2Norm", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.L2Norm(a, float32(r.n(3))-1)
	}},
	{78, "L2NormInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.L2NormInPlace(a, float32(r.n(3))-1)
	}},
	// ops_softmax.go
	{79, "SoftMax", on1((*ggml.Context).SoftMax)},
	{80, "SoftMaxInPlace", on1((*ggml.Context).SoftMaxInPlace)},
	{81, "SoftMaxExt", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.SoftMaxExt(a, []*ggml.Tensor{nil, b}[r.n(2)], 0.5, float32(r.n(2)))
	}},
	{82, "SoftMaxExtInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.SoftMaxExtInPlace(a, []*ggml.Tensor{nil, b}[r.n(2)], 0.5, float32(r.n(2)))
	}},
	{83, "SoftMaxExtSinks", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.SoftMaxExtSinks(a, []*ggml.Tensor{nil, b}[r.n(2)], pick(), 1, 0)
	}},
	// ops_matrix.go
	{84, "MulMat", on2((*ggml.Context).MulMat)},
	{85, "MulMatPrec", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.MulMatPrec(a, b, ggml.Precision(10*r.n(2)))
	}},
	{86, "MulMatID", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.MulMatID(a, b, pick())
	}},
	{87, "OutProd", on2((*ggml.Context).OutProd)},
	{88, "Diag", on1((*ggml.Context).Diag)},
	{89, "Tri", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Tri(a, ggml.TriType(r.n(5)))
	}},
	{90, "SolveTri", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.SolveTri(a, b, true, true, false)
	}},
	// ops_view.go
	{91, "Dup", on1((*ggml.Context).Dup)},
	{92, "Repeat", on2((*ggml.Context).Repeat)},
	{93, "Repeat4D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Repeat4D(a, int64(r.n(9)), int64(r.n(5)), int64(r.n(3)), 1)
	}},
	{94, "Concat", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Concat(a, b, r.n(5))
	}},
	{95, "Set", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Set(a, b, uint64(4*r.n(16)), uint64(4*r.n(32)), 0, uint64(4*r.n(4)))
	}},
	{96, "SetInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.SetInPlace(a, b, uint64(4*r.n(16)), uint64(4*r.n(32)), 0, uint64(4*r.n(4)))
	}},
	{97, "Set1D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Set1D(a, b, uint64(4*r.n(10)))
	}},
	{98, "Set2D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Set2D(a, b, uint64(4*r.n(16)), uint64(4*r.n(4)))
	}},
	{99, "Cpy", on2((*ggml.Context).Cpy)},
	{100, "Cast", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Cast(a, []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0, ggml.TypeI32, ggml.TypeQ4_K, ggml.TypeIQ2_XXS}[r.n(6)])
	}},
	{101, "Cont", on1((*ggml.Context).Cont)},
	{102, "ContND", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.ContND(a, int64(r.n(9)), int64(1+r.n(4)))
	}},
	{103, "Reshape", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Reshape(a, int64(r.n(9)), int64(1+r.n(4)))
	}},
	{104, "View1D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.View1D(a, int64(r.n(20)), uint64(r.n(40)))
	}},
	{105, "View2D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.View2D(a, int64(r.n(9)), int64(r.n(4)), uint64(r.n(64)), uint64(r.n(64)))
	}},
	{106, "View3D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.View3D(a, int64(r.n(9)), int64(r.n(4)), int64(r.n(3)), uint64(r.n(64)), uint64(r.n(128)), uint64(r.n(64)))
	}},
	{107, "View4D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.View4D(a, int64(r.n(9)), int64(r.n(4)), int64(r.n(3)), int64(r.n(2)), uint64(r.n(64)), uint64(r.n(128)), uint64(r.n(256)), uint64(r.n(64)))
	}},
	{108, "Permute", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Permute(a, r.n(4), r.n(4), r.n(4), r.n(4))
	}},
	{109, "Transpose", on1((*ggml.Context).Transpose)},
	{110, "GetRows", on2((*ggml.Context).GetRows)},
	{111, "SetRows", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.SetRows(a, b, pick())
	}},
	{112, "Pad", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Pad(a, r.n(3), r.n(3), 0, 0)
	}},
	{113, "PadExt", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.PadExt(a, ggml.Padding{{r.n(3), r.n(3)}, {r.n(2), r.n(2)}})
	}},
	{114, "PadCircular", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.PadCircular(a, ggml.Padding{{r.n(3), r.n(3)}, {r.n(2), r.n(2)}})
	}},
	{115, "PadReflect1D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.PadReflect1D(a, r.n(3), r.n(3))
	}},
	{116, "Roll", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Roll(a, r.n(5)-2, r.n(3)-1, 0, 0)
	}},
	{117, "Fill", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Fill(a, r.signed(5))
	}},
	{118, "FillInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.FillInPlace(a, r.signed(5))
	}},
	{119, "Arange", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Arange(float32(r.n(9))-4, float32(r.n(9))-4, float32(r.n(5))-1)
	}},
	// ops_rope_attn.go
	{120, "DiagMaskInf", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.DiagMaskInf(a, r.n(3))
	}},
	{121, "DiagMaskInfInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.DiagMaskInfInPlace(a, r.n(3))
	}},
	{122, "DiagMaskZero", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.DiagMaskZero(a, r.n(3))
	}},
	{123, "DiagMaskZeroInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.DiagMaskZeroInPlace(a, r.n(3))
	}},
	{124, "Rope", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Rope(a, b, ggml.RopeParams{Dims: r.n(10), Mode: ggml.RopeMode(2 * r.n(2)), FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
	}},
	{125, "Rope", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Rope(a, b, ggml.RopeParams{Dims: r.n(10), Mode: []ggml.RopeMode{ggml.RopeMRope, ggml.RopeIMRope, ggml.RopeVision}[r.n(3)],
			Sections: [4]int{r.n(3), r.n(3), r.n(2), 0}, FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
	}},
	{126, "RopeInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.RopeInPlace(a, b, ggml.RopeParams{Dims: r.n(10), Mode: ggml.RopeMode(2 * r.n(2)), FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
	}},
	{127, "FlashAttnExt", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.FlashAttnExt(a, b, pick(), []*ggml.Tensor{nil, pick()}[r.n(2)], ggml.FlashAttnParams{Scale: 0.5, MaxBias: r.signed(3), LogitSoftcap: float32(r.n(2)) * 10})
	}},
	{128, "WinPart", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.WinPart(a, r.n(4))
	}},
	{129, "WinUnpart", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.WinUnpart(a, 1+r.n(4), 1+r.n(4), r.n(4))
	}},
	{130, "GetRelPos", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.GetRelPos(a, r.n(4), r.n(4))
	}},
	{131, "AddRelPos", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.AddRelPos(a, b, pick())
	}},
	// ops_conv.go
	{132, "Im2Col", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Im2Col(a, b, 1+r.n(2), 1+r.n(2), r.n(2), r.n(2), 1+r.n(2), 1, r.n(2) == 0, []ggml.Type{ggml.TypeF32, ggml.TypeF16}[r.n(2)])
	}},
	{133, "Conv1D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Conv1D(a, b, 1+r.n(2), r.n(2), 1+r.n(2))
	}},
	{134, "Conv1DDW", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Conv1DDW(a, b, 1, r.n(2), 1)
	}},
	{135, "ConvTranspose1D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.ConvTranspose1D(a, b, 1+r.n(2), 0, 1)
	}},
	{136, "Conv2D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Conv2D(a, b, 1+r.n(2), 1+r.n(2), r.n(2), r.n(2), 1, 1)
	}},
	{137, "Conv2DDW", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Conv2DDW(a, b, 1, 1, r.n(2), r.n(2), 1, 1)
	}},
	{138, "Conv2DDirect", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Conv2DDirect(a, b, 1, 1, r.n(2), r.n(2), 1, 1)
	}},
	{139, "Conv2DDWDirect", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Conv2DDWDirect(a, b, 1, 1, r.n(2), r.n(2), 1, 1)
	}},
	{140, "ConvTranspose2D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.ConvTranspose2D(a, b, 1+r.n(2))
	}},
	{141, "Im2Col3D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Im2Col3D(a, b, 1+r.n(2), 1, 1, 1, r.n(2), 0, 0, 1, 1, 1, []ggml.Type{ggml.TypeF32, ggml.TypeF16}[r.n(2)])
	}},
	{142, "Conv3D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Conv3D(a, b, 1+r.n(2), 1, 1, 1, r.n(2), 0, 0, 1, 1, 1)
	}},
	{143, "Conv3DDirect", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Conv3DDirect(a, b, 1, 1, 1, r.n(2), 0, 0, 1, 1, 1, 1+r.n(2), 1+r.n(2), 1+r.n(2))
	}},
	{144, "Pool1D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Pool1D(a, ggml.PoolOp(r.n(3)), 1+r.n(3), 1+r.n(3), r.n(2))
	}},
	{145, "Pool2D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Pool2D(a, ggml.PoolOp(r.n(3)), 1+r.n(3), 1+r.n(3), 1+r.n(2), 1+r.n(2), r.n(2), r.n(2))
	}},
	{146, "Interpolate", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		mode := ggml.ScaleMode(r.n(3))
		return c.Interpolate(a, int64(r.n(9)), int64(r.n(5)), int64(1+r.n(2)), 1, mode|ggml.ScaleMode(r.n(2)<<8))
	}},
	{147, "UpscaleExt", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.UpscaleExt(a, r.n(9), r.n(5), 1+r.n(2), 1, ggml.ScaleMode(r.n(3)))
	}},
	{148, "Upscale", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		mode := ggml.ScaleMode(r.n(3))
		return c.Upscale(a, r.n(4), mode)
	}},
	{149, "TimestepEmbedding", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.TimestepEmbedding(a, r.n(9), 10000)
	}},
	// ops_seq.go
	{150, "SSMConv", on2((*ggml.Context).SSMConv)},
	{151, "SSMScan", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.SSMScan(a, b, pick(), pick(), pick(), pick(), pick())
	}},
	{152, "RWKVWKV6", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.RWKVWKV6(a, b, pick(), pick(), pick(), pick())
	}},
	{153, "GatedLinearAttn", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.GatedLinearAttn(a, b, pick(), pick(), pick(), 0.5)
	}},
	{154, "RWKVWKV7", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.RWKVWKV7(a, b, pick(), pick(), pick(), pick(), pick())
	}},
	// ops_train.go
	{155, "SiluBack", on2((*ggml.Context).SiluBack)},
	{156, "RMSNormBack", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.RMSNormBack(a, b, 1e-5)
	}},
	{157, "SoftMaxExtBack", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.SoftMaxExtBack(a, b, 1, 0)
	}},
	{158, "SoftMaxExtBackInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.SoftMaxExtBackInPlace(a, b, 1, 0)
	}},
	{159, "RopeBack", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.RopeBack(a, b, ggml.RopeParams{Dims: r.n(10), Mode: ggml.RopeMode(2 * r.n(2)), FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
	}},
	{160, "GetRowsBack", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.GetRowsBack(a, b, pick())
	}},
	{161, "RepeatBack", on2((*ggml.Context).RepeatBack)},
	{162, "Im2ColBack", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Im2ColBack(a, b, [4]int64{int64(1 + r.n(8)), int64(1 + r.n(4)), int64(1 + r.n(3)), 1}, 1, 1, r.n(2), 0, 1, 1, r.n(2) == 0)
	}},
	{163, "Pool2DBack", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Pool2DBack(a, b, ggml.PoolOp(r.n(3)), 1+r.n(3), 1+r.n(3), 1+r.n(2), 1+r.n(2), r.n(2), r.n(2))
	}},
	{164, "CrossEntropyLoss", on2((*ggml.Context).CrossEntropyLoss)},
	{165, "CrossEntropyLossBack", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.CrossEntropyLossBack(pick(), a, b)
	}},
	{166, "OptStepAdamW", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		if r.n(2) == 0 {
			a.SetParam()
		}
		return c.OptStepAdamW(a, b, pick(), pick(), pick())
	}},
	{167, "OptStepSGD", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.OptStepSGD(a, b, pick())
	}},
	// custom.go
	{168, "MapCustom1", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.MapCustom1(a, copyFirst, r.n(3))
	}},
	{169, "MapCustom1InPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.MapCustom1InPlace(a, copyFirst, r.n(3))
	}},
	{170, "MapCustom2", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.MapCustom2(a, b, copyFirst, r.n(3))
	}},
	{171, "MapCustom2InPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.MapCustom2InPlace(a, b, copyFirst, r.n(3))
	}},
	{172, "MapCustom3", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.MapCustom3(a, b, pick(), copyFirst, r.n(3))
	}},
	{173, "MapCustom3InPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.MapCustom3InPlace(a, b, pick(), copyFirst, r.n(3))
	}},
	{174, "Custom4D", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.Custom4D([]ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeI32}[r.n(3)], [4]int64{int64(r.n(9)), int64(1 + r.n(4)), 1, 1}, []*ggml.Tensor{a, b}, copyFirst, r.n(3))
	}},
	{175, "CustomInPlace", func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
		return c.CustomInPlace(a, []*ggml.Tensor{b}, copyFirst, r.n(3))
	}},
}

// on1 builds an op of one tensor, on2 an op of two.
func on1(op func(*ggml.Context, *ggml.Tensor) *ggml.Tensor) opBuilder {
	return func(c *ggml.Context, _ *byteReader, a, _ *ggml.Tensor, _ func() *ggml.Tensor) *ggml.Tensor {
		return op(c, a)
	}
}

func on2(op func(*ggml.Context, *ggml.Tensor, *ggml.Tensor) *ggml.Tensor) opBuilder {
	return func(c *ggml.Context, _ *byteReader, a, b *ggml.Tensor, _ func() *ggml.Tensor) *ggml.Tensor {
		return op(c, a, b)
	}
}

// copyFirst is the function of the table's custom ops: it copies the first
// input's bytes into the result.
func copyFirst(dst ggml.CustomView, src []ggml.CustomView, ith, _ int) {
	if ith == 0 && len(src) > 0 {
		copy(dst.Bytes(), src[0].Bytes())
	}
}

// opMethods returns the names of Context's ops: its methods that return a
// *Tensor, but NewTensor and Tensor.
func opMethods() map[string]bool {
	tensor := reflect.TypeFor[*ggml.Tensor]()
	ct := reflect.TypeFor[*ggml.Context]()
	methods := map[string]bool{}
	for i := range ct.NumMethod() {
		m := ct.Method(i)
		if m.Type.NumOut() == 1 && m.Type.Out(0) == tensor && m.Name != "NewTensor" && m.Name != "Tensor" {
			methods[m.Name] = true
		}
	}
	return methods
}

// The op table holds every op of Context, and its fuzz ids are 0..n-1,
// each given once.
func TestOpTable(t *testing.T) {
	methods := opMethods()
	inTable := map[string]bool{}
	var stray []string
	ids := make([]int, len(opTable))
	for i, o := range opTable {
		inTable[o.name] = true
		if !methods[o.name] {
			stray = append(stray, o.name)
		}
		ids[i] = o.id
	}
	var missing []string
	for m := range methods {
		if !inTable[m] {
			missing = append(missing, m)
		}
	}
	slices.Sort(missing)
	assert.Empty(t, missing, "ops of Context that opTable does not list")
	assert.Empty(t, stray, "opTable entries that are not ops of Context")
	slices.Sort(ids)
	for i, id := range ids {
		require.Equal(t, i, id, "opTable's ids must be 0..%d, each once", len(opTable)-1)
	}
	require.LessOrEqual(t, len(opTable), 256, "FuzzOps picks an op with one byte")
}

// Every op refuses, with an error of the documented kind and without a
// panic, what no op can use: a nil or closed context, a nil input, an
// input that is the result of a failed op.
func TestEveryOpRefusesUnusableInputs(t *testing.T) {
	newCtx := func(t *testing.T) *ggml.Context {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	other := newCtx(t) // the inputs' context
	good := other.NewTensor(ggml.TypeF32, 4, 4)
	poisoned := other.Add(other.NewTensor(ggml.TypeF32, 2), other.NewTensor(ggml.TypeF32, 3))
	require.ErrorIs(t, poisoned.Err(), ggml.ErrShape)
	closed := newCtx(t)
	require.NoError(t, closed.Close())
	// Arange takes no tensor: its zero arguments (a stop not above start)
	// are what it refuses.
	noInputs := map[string]bool{"Arange": true}
	for _, o := range opTable {
		build := func(c *ggml.Context, in *ggml.Tensor) *ggml.Tensor {
			// No bytes: every parameter is the smallest the builder reads.
			out := o.build(c, &byteReader{}, in, in, func() *ggml.Tensor { return in })
			require.NotNil(t, out, o.name)
			return out
		}
		t.Run(o.name, func(t *testing.T) {
			require.ErrorIs(t, build(nil, good).Err(), ggml.ErrInvalid, "nil context")
			require.ErrorIs(t, build(closed, good).Err(), ggml.ErrClosed, "closed context")

			c := newCtx(t)
			out := build(c, nil)
			require.ErrorIs(t, out.Err(), ggml.ErrInvalid, "nil inputs")
			require.ErrorIs(t, c.Err(), ggml.ErrInvalid, "the error is sticky")

			c = newCtx(t)
			out = build(c, poisoned)
			require.Error(t, out.Err(), "poisoned inputs")
			require.Error(t, c.Err(), "the error is sticky")
			if !noInputs[o.name] {
				require.ErrorIs(t, out.Err(), ggml.ErrShape, "the inputs' error is passed on")
				var oe *ggml.OpError
				require.True(t, errors.As(out.Err(), &oe))
			}
		})
	}
}

// Each in-place op computes what its out-of-place op (checked against
// float64 elsewhere) computes, into its input's memory.
func TestInPlaceOps(t *testing.T) {
	rng := newRNG(t)
	e := newEnv(t)
	const n0, n1, n2 = 8, 6, 2
	av := randF32(rng, n0*n1*n2)
	for i := range av {
		av[i] = float32(math.Abs(float64(av[i]))) + 0.1 // positive: log and sqrt
	}
	bv := randF32(rng, n0*n1*n2)
	a := e.input(ggml.TypeF32, av, n0, n1, n2)
	b := e.input(ggml.TypeF32, bv, n0, n1, n2)
	row := e.input(ggml.TypeF32, bv[:n0], n0)
	one := e.input(ggml.TypeF32, bv[:1], 1)
	mask := e.input(ggml.TypeF32, bv[:n0*n1], n0, n1)
	c := e.ctx
	type pair struct {
		name      string
		want, got *ggml.Tensor
	}
	var pairs []pair
	add := func(name string, want *ggml.Tensor, in func(x *ggml.Tensor) *ggml.Tensor) {
		x := c.Cont(a) // a fresh copy for each in-place op
		got := in(x)
		require.NoError(t, c.Err(), name)
		require.Equal(t, x, got.ViewSource(), "%s: the result is a view of its input", name)
		pairs = append(pairs, pair{name, want, got}, pair{name + " (input)", want, x})
	}
	add("add", c.Add(a, row), func(x *ggml.Tensor) *ggml.Tensor { return c.AddInPlace(x, row) })
	add("sub", c.Sub(a, b), func(x *ggml.Tensor) *ggml.Tensor { return c.SubInPlace(x, b) })
	add("mul", c.Mul(a, row), func(x *ggml.Tensor) *ggml.Tensor { return c.MulInPlace(x, row) })
	add("div", c.Div(a, b), func(x *ggml.Tensor) *ggml.Tensor { return c.DivInPlace(x, b) })
	add("add1", c.Add1(a, one), func(x *ggml.Tensor) *ggml.Tensor { return c.Add1InPlace(x, one) })
	add("scale", c.Scale(a, 1.5), func(x *ggml.Tensor) *ggml.Tensor { return c.ScaleInPlace(x, 1.5) })
	add("scale_bias", c.ScaleBias(a, 1.5, -2), func(x *ggml.Tensor) *ggml.Tensor { return c.ScaleBiasInPlace(x, 1.5, -2) })
	add("sqr", c.Sqr(a), c.SqrInPlace)
	add("sqrt", c.Sqrt(a), c.SqrtInPlace)
	add("log", c.Log(a), c.LogInPlace)
	add("sin", c.Sin(a), c.SinInPlace)
	add("cos", c.Cos(a), c.CosInPlace)
	add("norm", c.Norm(a, 1e-5), func(x *ggml.Tensor) *ggml.Tensor { return c.NormInPlace(x, 1e-5) })
	add("rms_norm", c.RMSNorm(a, 1e-5), func(x *ggml.Tensor) *ggml.Tensor { return c.RMSNormInPlace(x, 1e-5) })
	add("l2_norm", c.L2Norm(a, 1e-5), func(x *ggml.Tensor) *ggml.Tensor { return c.L2NormInPlace(x, 1e-5) })
	add("group_norm", c.GroupNorm(a, 2, 1e-5), func(x *ggml.Tensor) *ggml.Tensor { return c.GroupNormInPlace(x, 2, 1e-5) })
	add("soft_max", c.SoftMax(a), c.SoftMaxInPlace)
	add("soft_max_ext", c.SoftMaxExt(a, mask, 0.5, 0), func(x *ggml.Tensor) *ggml.Tensor { return c.SoftMaxExtInPlace(x, mask, 0.5, 0) })
	add("diag_mask_inf", c.DiagMaskInf(a, 1), func(x *ggml.Tensor) *ggml.Tensor { return c.DiagMaskInfInPlace(x, 1) })
	add("diag_mask_zero", c.DiagMaskZero(a, 1), func(x *ggml.Tensor) *ggml.Tensor { return c.DiagMaskZeroInPlace(x, 1) })
	add("leaky_relu", c.LeakyRelu(b, 0.2), func(x *ggml.Tensor) *ggml.Tensor {
		return c.LeakyReluInPlace(c.SubInPlace(x, c.Sub(a, b)), 0.2) // x becomes b first
	})
	unaries := map[ggml.UnaryOp]func(*ggml.Tensor) *ggml.Tensor{
		ggml.UnaryAbs: c.Abs, ggml.UnarySgn: c.Sgn, ggml.UnaryNeg: c.Neg, ggml.UnaryStep: c.Step, ggml.UnaryTanh: c.Tanh,
		ggml.UnaryElu: c.Elu, ggml.UnaryRelu: c.Relu, ggml.UnarySigmoid: c.Sigmoid, ggml.UnaryGelu: c.Gelu,
		ggml.UnaryGeluQuick: c.GeluQuick, ggml.UnarySilu: c.Silu, ggml.UnaryHardswish: c.Hardswish,
		ggml.UnaryHardsigmoid: c.Hardsigmoid, ggml.UnaryExp: c.Exp, ggml.UnaryExpm1: c.Expm1,
		ggml.UnarySoftplus: c.Softplus, ggml.UnaryGeluErf: c.GeluErf, ggml.UnaryFloor: c.Floor,
		ggml.UnaryCeil: c.Ceil, ggml.UnaryRound: c.Round, ggml.UnaryTrunc: c.Trunc,
	}
	for fn, method := range unaries {
		want := method(b)
		pairs = append(pairs, pair{fn.String() + " via Unary", want, c.Unary(b, fn)})
		add(fn.String(), want, func(x *ggml.Tensor) *ggml.Tensor {
			return c.UnaryInPlace(c.SubInPlace(x, c.Sub(a, b)), fn)
		})
	}
	outs := []*ggml.Tensor{}
	for _, p := range pairs {
		outs = append(outs, p.want, p.got)
	}
	e.compute(outs...)
	for _, p := range pairs {
		w, err := ggml.Data[float32](p.want)
		require.NoError(t, err, p.name)
		g, err := ggml.Data[float32](p.got)
		require.NoError(t, err, p.name)
		for i := range w {
			if w[i] != g[i] && !(math.IsNaN(float64(w[i])) && math.IsNaN(float64(g[i]))) {
				// a-b then +b again rounds: allow an ulp-scale difference
				// where the input went through SubInPlace.
				require.InDelta(t, w[i], g[i], 4e-6*math.Max(1, math.Abs(float64(w[i]))), "%s element %d", p.name, i)
			}
		}
	}
}
