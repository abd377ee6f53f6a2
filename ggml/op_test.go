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

// opBuilder builds one op of o.c on the inputs o.a and o.b, with
// parameters read from o's bytes.
type opBuilder func(o opIn) *ggml.Tensor

// opIn is what an opBuilder builds from: the context, two inputs, the
// fuzz bytes (o.n, o.signed), and pick, which returns further inputs
// (reading the bytes too).
type opIn struct {
	*byteReader
	c    *ggml.Context
	a, b *ggml.Tensor
	pick func() *ggml.Tensor
}

// opTable lists every op of Context, in the order of the op files (ggml.h's
// families). It drives FuzzOps, the check that it holds every op of
// Context (TestOpTable), the check of doc.go's op list
// (TestDocListsEveryOp) and TestEveryOpRefusesUnusableInputs.
var opTable = []opCase{
	// ops_elementwise.go
	{0, "Add", on2((*ggml.Context).Add)},
	{1, "AddInPlace", on2((*ggml.Context).AddInPlace)},
	{2, "AddCast", func(o opIn) *ggml.Tensor {
		return o.c.AddCast(o.a, o.b, []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0}[o.n(3)])
	}},
	{3, "AddID", func(o opIn) *ggml.Tensor { return o.c.AddID(o.a, o.b, o.pick()) }},
	{4, "Add1", on2((*ggml.Context).Add1)},
	{5, "Add1InPlace", on2((*ggml.Context).Add1InPlace)},
	{6, "Acc", func(o opIn) *ggml.Tensor {
		return o.c.Acc(o.a, o.b, uint64(4*o.n(8)), uint64(4*o.n(16)), 0, uint64(4*o.n(4)))
	}},
	{7, "AccInPlace", func(o opIn) *ggml.Tensor {
		return o.c.AccInPlace(o.a, o.b, uint64(4*o.n(8)), uint64(4*o.n(16)), 0, uint64(4*o.n(4)))
	}},
	{8, "Sub", on2((*ggml.Context).Sub)},
	{9, "SubInPlace", on2((*ggml.Context).SubInPlace)},
	{10, "Mul", on2((*ggml.Context).Mul)},
	{11, "MulInPlace", on2((*ggml.Context).MulInPlace)},
	{12, "Div", on2((*ggml.Context).Div)},
	{13, "DivInPlace", on2((*ggml.Context).DivInPlace)},
	{14, "Scale", func(o opIn) *ggml.Tensor { return o.c.Scale(o.a, float32(o.n(5))-2) }},
	{15, "ScaleInPlace", func(o opIn) *ggml.Tensor { return o.c.ScaleInPlace(o.a, float32(o.n(5))-2) }},
	{16, "ScaleBias", func(o opIn) *ggml.Tensor { return o.c.ScaleBias(o.a, float32(o.n(5))-2, 1) }},
	{17, "ScaleBiasInPlace", func(o opIn) *ggml.Tensor { return o.c.ScaleBiasInPlace(o.a, float32(o.n(5))-2, 1) }},
	{18, "Clamp", func(o opIn) *ggml.Tensor { return o.c.Clamp(o.a, o.signed(5), o.signed(5)) }},
	{19, "ClampInPlace", func(o opIn) *ggml.Tensor { return o.c.ClampInPlace(o.a, o.signed(5), o.signed(5)) }},
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
	{39, "LeakyRelu", func(o opIn) *ggml.Tensor { return o.c.LeakyRelu(o.a, 0.1) }},
	{40, "LeakyReluInPlace", func(o opIn) *ggml.Tensor { return o.c.LeakyReluInPlace(o.a, 0.1) }},
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
	{53, "XIELU", func(o opIn) *ggml.Tensor { return o.c.XIELU(o.a, 0.8, 0.8, 0.5, -1e-6) }},
	{54, "Unary", func(o opIn) *ggml.Tensor { return o.c.Unary(o.a, ggml.UnaryOp(o.n(24))) }},
	{55, "UnaryInPlace", func(o opIn) *ggml.Tensor { return o.c.UnaryInPlace(o.a, ggml.UnaryOp(o.n(24))) }},
	{56, "GLU", func(o opIn) *ggml.Tensor { return o.c.GLU(o.a, ggml.GLUOp(o.n(7)), o.n(2) == 0) }},
	{57, "GLUSplit", func(o opIn) *ggml.Tensor { return o.c.GLUSplit(o.a, o.b, ggml.GLUOp(o.n(7))) }},
	{58, "Swiglu", on1((*ggml.Context).Swiglu)},
	{59, "Geglu", on1((*ggml.Context).Geglu)},
	{60, "Reglu", on1((*ggml.Context).Reglu)},
	{61, "SwigluOAI", func(o opIn) *ggml.Tensor { return o.c.SwigluOAI(o.a, o.b, 1.7, float32(o.n(4))) }},
	// ops_reduce.go
	{62, "Sum", on1((*ggml.Context).Sum)},
	{63, "SumRows", on1((*ggml.Context).SumRows)},
	{64, "Cumsum", on1((*ggml.Context).Cumsum)},
	{65, "Mean", on1((*ggml.Context).Mean)},
	{66, "Argmax", on1((*ggml.Context).Argmax)},
	{67, "CountEqual", on2((*ggml.Context).CountEqual)},
	{68, "Argsort", func(o opIn) *ggml.Tensor { return o.c.Argsort(o.a, ggml.SortOrder(o.n(2))) }},
	{69, "ArgsortTopK", func(o opIn) *ggml.Tensor { return o.c.ArgsortTopK(o.a, o.n(6)) }},
	{70, "TopK", func(o opIn) *ggml.Tensor { return o.c.TopK(o.a, o.n(6)) }},
	// ops_norm.go
	{71, "Norm", func(o opIn) *ggml.Tensor { return o.c.Norm(o.a, 1e-5) }},
	{72, "NormInPlace", func(o opIn) *ggml.Tensor { return o.c.NormInPlace(o.a, 1e-5) }},
	{73, "RMSNorm", func(o opIn) *ggml.Tensor { return o.c.RMSNorm(o.a, 1e-5) }},
	{74, "RMSNormInPlace", func(o opIn) *ggml.Tensor { return o.c.RMSNormInPlace(o.a, 1e-5) }},
	{75, "GroupNorm", func(o opIn) *ggml.Tensor { return o.c.GroupNorm(o.a, o.n(4), 1e-5) }},
	{76, "GroupNormInPlace", func(o opIn) *ggml.Tensor { return o.c.GroupNormInPlace(o.a, o.n(4), 1e-5) }},
	{77, "L2Norm", func(o opIn) *ggml.Tensor { return o.c.L2Norm(o.a, float32(o.n(3))-1) }},
	{78, "L2NormInPlace", func(o opIn) *ggml.Tensor { return o.c.L2NormInPlace(o.a, float32(o.n(3))-1) }},
	// ops_softmax.go
	{79, "SoftMax", on1((*ggml.Context).SoftMax)},
	{80, "SoftMaxInPlace", on1((*ggml.Context).SoftMaxInPlace)},
	{81, "SoftMaxExt", func(o opIn) *ggml.Tensor {
		return o.c.SoftMaxExt(o.a, []*ggml.Tensor{nil, o.b}[o.n(2)], 0.5, float32(o.n(2)))
	}},
	{82, "SoftMaxExtInPlace", func(o opIn) *ggml.Tensor {
		return o.c.SoftMaxExtInPlace(o.a, []*ggml.Tensor{nil, o.b}[o.n(2)], 0.5, float32(o.n(2)))
	}},
	{83, "SoftMaxExtSinks", func(o opIn) *ggml.Tensor {
		return o.c.SoftMaxExtSinks(o.a, []*ggml.Tensor{nil, o.b}[o.n(2)], o.pick(), 1, 0)
	}},
	// ops_matrix.go
	{84, "MulMat", on2((*ggml.Context).MulMat)},
	{85, "MulMatPrec", func(o opIn) *ggml.Tensor { return o.c.MulMatPrec(o.a, o.b, ggml.Precision(10*o.n(2))) }},
	{86, "MulMatID", func(o opIn) *ggml.Tensor { return o.c.MulMatID(o.a, o.b, o.pick()) }},
	{87, "OutProd", on2((*ggml.Context).OutProd)},
	{88, "Diag", on1((*ggml.Context).Diag)},
	{89, "Tri", func(o opIn) *ggml.Tensor { return o.c.Tri(o.a, ggml.TriType(o.n(5))) }},
	{90, "SolveTri", func(o opIn) *ggml.Tensor { return o.c.SolveTri(o.a, o.b, true, true, false) }},
	// ops_view.go
	{91, "Dup", on1((*ggml.Context).Dup)},
	{92, "Repeat", on2((*ggml.Context).Repeat)},
	{93, "Repeat4D", func(o opIn) *ggml.Tensor { return o.c.Repeat4D(o.a, int64(o.n(9)), int64(o.n(5)), int64(o.n(3)), 1) }},
	{94, "Concat", func(o opIn) *ggml.Tensor { return o.c.Concat(o.a, o.b, o.n(5)) }},
	{95, "Set", func(o opIn) *ggml.Tensor {
		return o.c.Set(o.a, o.b, uint64(4*o.n(16)), uint64(4*o.n(32)), 0, uint64(4*o.n(4)))
	}},
	{96, "SetInPlace", func(o opIn) *ggml.Tensor {
		return o.c.SetInPlace(o.a, o.b, uint64(4*o.n(16)), uint64(4*o.n(32)), 0, uint64(4*o.n(4)))
	}},
	{97, "Set1D", func(o opIn) *ggml.Tensor { return o.c.Set1D(o.a, o.b, uint64(4*o.n(10))) }},
	{98, "Set2D", func(o opIn) *ggml.Tensor { return o.c.Set2D(o.a, o.b, uint64(4*o.n(16)), uint64(4*o.n(4))) }},
	{99, "Cpy", on2((*ggml.Context).Cpy)},
	{100, "Cast", func(o opIn) *ggml.Tensor {
		return o.c.Cast(o.a, []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0, ggml.TypeI32, ggml.TypeQ4_K, ggml.TypeIQ2_XXS}[o.n(6)])
	}},
	{101, "Cont", on1((*ggml.Context).Cont)},
	{102, "ContND", func(o opIn) *ggml.Tensor { return o.c.ContND(o.a, int64(o.n(9)), int64(1+o.n(4))) }},
	{103, "Reshape", func(o opIn) *ggml.Tensor { return o.c.Reshape(o.a, int64(o.n(9)), int64(1+o.n(4))) }},
	{104, "View1D", func(o opIn) *ggml.Tensor { return o.c.View1D(o.a, int64(o.n(20)), uint64(o.n(40))) }},
	{105, "View2D", func(o opIn) *ggml.Tensor {
		return o.c.View2D(o.a, int64(o.n(9)), int64(o.n(4)), uint64(o.n(64)), uint64(o.n(64)))
	}},
	{106, "View3D", func(o opIn) *ggml.Tensor {
		return o.c.View3D(o.a, int64(o.n(9)), int64(o.n(4)), int64(o.n(3)), uint64(o.n(64)), uint64(o.n(128)), uint64(o.n(64)))
	}},
	{107, "View4D", func(o opIn) *ggml.Tensor {
		return o.c.View4D(o.a, int64(o.n(9)), int64(o.n(4)), int64(o.n(3)), int64(o.n(2)), uint64(o.n(64)), uint64(o.n(128)), uint64(o.n(256)), uint64(o.n(64)))
	}},
	{108, "Permute", func(o opIn) *ggml.Tensor { return o.c.Permute(o.a, o.n(4), o.n(4), o.n(4), o.n(4)) }},
	{109, "Transpose", on1((*ggml.Context).Transpose)},
	{110, "GetRows", on2((*ggml.Context).GetRows)},
	{111, "SetRows", func(o opIn) *ggml.Tensor { return o.c.SetRows(o.a, o.b, o.pick()) }},
	{112, "Pad", func(o opIn) *ggml.Tensor { return o.c.Pad(o.a, o.n(3), o.n(3), 0, 0) }},
	{113, "PadExt", func(o opIn) *ggml.Tensor { return o.c.PadExt(o.a, ggml.Padding{{o.n(3), o.n(3)}, {o.n(2), o.n(2)}}) }},
	{114, "PadCircular", func(o opIn) *ggml.Tensor {
		return o.c.PadCircular(o.a, ggml.Padding{{o.n(3), o.n(3)}, {o.n(2), o.n(2)}})
	}},
	{115, "PadReflect1D", func(o opIn) *ggml.Tensor { return o.c.PadReflect1D(o.a, o.n(3), o.n(3)) }},
	{116, "Roll", func(o opIn) *ggml.Tensor { return o.c.Roll(o.a, o.n(5)-2, o.n(3)-1, 0, 0) }},
	{117, "Fill", func(o opIn) *ggml.Tensor { return o.c.Fill(o.a, o.signed(5)) }},
	{118, "FillInPlace", func(o opIn) *ggml.Tensor { return o.c.FillInPlace(o.a, o.signed(5)) }},
	{119, "Arange", func(o opIn) *ggml.Tensor { return o.c.Arange(float32(o.n(9))-4, float32(o.n(9))-4, float32(o.n(5))-1) }},
	// ops_rope_attn.go
	{120, "DiagMaskInf", func(o opIn) *ggml.Tensor { return o.c.DiagMaskInf(o.a, o.n(3)) }},
	{121, "DiagMaskInfInPlace", func(o opIn) *ggml.Tensor { return o.c.DiagMaskInfInPlace(o.a, o.n(3)) }},
	{122, "DiagMaskZero", func(o opIn) *ggml.Tensor { return o.c.DiagMaskZero(o.a, o.n(3)) }},
	{123, "DiagMaskZeroInPlace", func(o opIn) *ggml.Tensor { return o.c.DiagMaskZeroInPlace(o.a, o.n(3)) }},
	{124, "Rope", func(o opIn) *ggml.Tensor {
		return o.c.Rope(o.a, o.b, ggml.RopeParams{Dims: o.n(10), Mode: ggml.RopeMode(2 * o.n(2)), FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
	}},
	{125, "Rope", func(o opIn) *ggml.Tensor {
		return o.c.Rope(o.a, o.b, ggml.RopeParams{Dims: o.n(10), Mode: []ggml.RopeMode{ggml.RopeMRope, ggml.RopeIMRope, ggml.RopeVision}[o.n(3)],
			Sections: [4]int{o.n(3), o.n(3), o.n(2), 0}, FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
	}},
	{126, "RopeInPlace", func(o opIn) *ggml.Tensor {
		return o.c.RopeInPlace(o.a, o.b, ggml.RopeParams{Dims: o.n(10), Mode: ggml.RopeMode(2 * o.n(2)), FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
	}},
	{127, "FlashAttnExt", func(o opIn) *ggml.Tensor {
		return o.c.FlashAttnExt(o.a, o.b, o.pick(), []*ggml.Tensor{nil, o.pick()}[o.n(2)], ggml.FlashAttnParams{Scale: 0.5, MaxBias: o.signed(3), LogitSoftcap: float32(o.n(2)) * 10})
	}},
	{128, "WinPart", func(o opIn) *ggml.Tensor { return o.c.WinPart(o.a, o.n(4)) }},
	{129, "WinUnpart", func(o opIn) *ggml.Tensor { return o.c.WinUnpart(o.a, 1+o.n(4), 1+o.n(4), o.n(4)) }},
	{130, "GetRelPos", func(o opIn) *ggml.Tensor { return o.c.GetRelPos(o.a, o.n(4), o.n(4)) }},
	{131, "AddRelPos", func(o opIn) *ggml.Tensor { return o.c.AddRelPos(o.a, o.b, o.pick()) }},
	// ops_conv.go
	{132, "Im2Col", func(o opIn) *ggml.Tensor {
		return o.c.Im2Col(o.a, o.b, 1+o.n(2), 1+o.n(2), o.n(2), o.n(2), 1+o.n(2), 1, o.n(2) == 0, []ggml.Type{ggml.TypeF32, ggml.TypeF16}[o.n(2)])
	}},
	{133, "Conv1D", func(o opIn) *ggml.Tensor { return o.c.Conv1D(o.a, o.b, 1+o.n(2), o.n(2), 1+o.n(2)) }},
	{134, "Conv1DDW", func(o opIn) *ggml.Tensor { return o.c.Conv1DDW(o.a, o.b, 1, o.n(2), 1) }},
	{135, "ConvTranspose1D", func(o opIn) *ggml.Tensor { return o.c.ConvTranspose1D(o.a, o.b, 1+o.n(2), 0, 1) }},
	{136, "Conv2D", func(o opIn) *ggml.Tensor { return o.c.Conv2D(o.a, o.b, 1+o.n(2), 1+o.n(2), o.n(2), o.n(2), 1, 1) }},
	{137, "Conv2DDW", func(o opIn) *ggml.Tensor { return o.c.Conv2DDW(o.a, o.b, 1, 1, o.n(2), o.n(2), 1, 1) }},
	{138, "Conv2DDirect", func(o opIn) *ggml.Tensor { return o.c.Conv2DDirect(o.a, o.b, 1, 1, o.n(2), o.n(2), 1, 1) }},
	{139, "Conv2DDWDirect", func(o opIn) *ggml.Tensor { return o.c.Conv2DDWDirect(o.a, o.b, 1, 1, o.n(2), o.n(2), 1, 1) }},
	{140, "ConvTranspose2D", func(o opIn) *ggml.Tensor { return o.c.ConvTranspose2D(o.a, o.b, 1+o.n(2)) }},
	{141, "Im2Col3D", func(o opIn) *ggml.Tensor {
		return o.c.Im2Col3D(o.a, o.b, 1+o.n(2), 1, 1, 1, o.n(2), 0, 0, 1, 1, 1, []ggml.Type{ggml.TypeF32, ggml.TypeF16}[o.n(2)])
	}},
	{142, "Conv3D", func(o opIn) *ggml.Tensor { return o.c.Conv3D(o.a, o.b, 1+o.n(2), 1, 1, 1, o.n(2), 0, 0, 1, 1, 1) }},
	{143, "Conv3DDirect", func(o opIn) *ggml.Tensor {
		return o.c.Conv3DDirect(o.a, o.b, 1, 1, 1, o.n(2), 0, 0, 1, 1, 1, 1+o.n(2), 1+o.n(2), 1+o.n(2))
	}},
	{144, "Pool1D", func(o opIn) *ggml.Tensor { return o.c.Pool1D(o.a, ggml.PoolOp(o.n(3)), 1+o.n(3), 1+o.n(3), o.n(2)) }},
	{145, "Pool2D", func(o opIn) *ggml.Tensor {
		return o.c.Pool2D(o.a, ggml.PoolOp(o.n(3)), 1+o.n(3), 1+o.n(3), 1+o.n(2), 1+o.n(2), o.n(2), o.n(2))
	}},
	{146, "Interpolate", func(o opIn) *ggml.Tensor {
		mode := ggml.ScaleMode(o.n(3))
		return o.c.Interpolate(o.a, int64(o.n(9)), int64(o.n(5)), int64(1+o.n(2)), 1, mode|ggml.ScaleMode(o.n(2)<<8))
	}},
	{147, "UpscaleExt", func(o opIn) *ggml.Tensor {
		return o.c.UpscaleExt(o.a, o.n(9), o.n(5), 1+o.n(2), 1, ggml.ScaleMode(o.n(3)))
	}},
	{148, "Upscale", func(o opIn) *ggml.Tensor {
		mode := ggml.ScaleMode(o.n(3))
		return o.c.Upscale(o.a, o.n(4), mode)
	}},
	{149, "TimestepEmbedding", func(o opIn) *ggml.Tensor { return o.c.TimestepEmbedding(o.a, o.n(9), 10000) }},
	// ops_seq.go
	{150, "SSMConv", on2((*ggml.Context).SSMConv)},
	{151, "SSMScan", func(o opIn) *ggml.Tensor {
		return o.c.SSMScan(o.a, o.b, o.pick(), o.pick(), o.pick(), o.pick(), o.pick())
	}},
	{152, "RWKVWKV6", func(o opIn) *ggml.Tensor { return o.c.RWKVWKV6(o.a, o.b, o.pick(), o.pick(), o.pick(), o.pick()) }},
	{153, "GatedLinearAttn", func(o opIn) *ggml.Tensor { return o.c.GatedLinearAttn(o.a, o.b, o.pick(), o.pick(), o.pick(), 0.5) }},
	{154, "RWKVWKV7", func(o opIn) *ggml.Tensor {
		return o.c.RWKVWKV7(o.a, o.b, o.pick(), o.pick(), o.pick(), o.pick(), o.pick())
	}},
	// ops_train.go
	{155, "SiluBack", on2((*ggml.Context).SiluBack)},
	{156, "RMSNormBack", func(o opIn) *ggml.Tensor { return o.c.RMSNormBack(o.a, o.b, 1e-5) }},
	{157, "SoftMaxExtBack", func(o opIn) *ggml.Tensor { return o.c.SoftMaxExtBack(o.a, o.b, 1, 0) }},
	{158, "SoftMaxExtBackInPlace", func(o opIn) *ggml.Tensor { return o.c.SoftMaxExtBackInPlace(o.a, o.b, 1, 0) }},
	{159, "RopeBack", func(o opIn) *ggml.Tensor {
		return o.c.RopeBack(o.a, o.b, ggml.RopeParams{Dims: o.n(10), Mode: ggml.RopeMode(2 * o.n(2)), FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
	}},
	{160, "GetRowsBack", func(o opIn) *ggml.Tensor { return o.c.GetRowsBack(o.a, o.b, o.pick()) }},
	{161, "RepeatBack", on2((*ggml.Context).RepeatBack)},
	{162, "Im2ColBack", func(o opIn) *ggml.Tensor {
		return o.c.Im2ColBack(o.a, o.b, [4]int64{int64(1 + o.n(8)), int64(1 + o.n(4)), int64(1 + o.n(3)), 1}, 1, 1, o.n(2), 0, 1, 1, o.n(2) == 0)
	}},
	{163, "Pool2DBack", func(o opIn) *ggml.Tensor {
		return o.c.Pool2DBack(o.a, o.b, ggml.PoolOp(o.n(3)), 1+o.n(3), 1+o.n(3), 1+o.n(2), 1+o.n(2), o.n(2), o.n(2))
	}},
	{164, "CrossEntropyLoss", on2((*ggml.Context).CrossEntropyLoss)},
	{165, "CrossEntropyLossBack", func(o opIn) *ggml.Tensor { return o.c.CrossEntropyLossBack(o.pick(), o.a, o.b) }},
	{166, "OptStepAdamW", func(o opIn) *ggml.Tensor {
		if o.n(2) == 0 {
			o.a.SetParam()
		}
		return o.c.OptStepAdamW(o.a, o.b, o.pick(), o.pick(), o.pick())
	}},
	{167, "OptStepSGD", func(o opIn) *ggml.Tensor { return o.c.OptStepSGD(o.a, o.b, o.pick()) }},
	// custom.go
	{168, "MapCustom1", func(o opIn) *ggml.Tensor { return o.c.MapCustom1(o.a, copyFirst, o.n(3)) }},
	{169, "MapCustom1InPlace", func(o opIn) *ggml.Tensor { return o.c.MapCustom1InPlace(o.a, copyFirst, o.n(3)) }},
	{170, "MapCustom2", func(o opIn) *ggml.Tensor { return o.c.MapCustom2(o.a, o.b, copyFirst, o.n(3)) }},
	{171, "MapCustom2InPlace", func(o opIn) *ggml.Tensor { return o.c.MapCustom2InPlace(o.a, o.b, copyFirst, o.n(3)) }},
	{172, "MapCustom3", func(o opIn) *ggml.Tensor { return o.c.MapCustom3(o.a, o.b, o.pick(), copyFirst, o.n(3)) }},
	{173, "MapCustom3InPlace", func(o opIn) *ggml.Tensor { return o.c.MapCustom3InPlace(o.a, o.b, o.pick(), copyFirst, o.n(3)) }},
	{174, "Custom4D", func(o opIn) *ggml.Tensor {
		return o.c.Custom4D([]ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeI32}[o.n(3)], [4]int64{int64(o.n(9)), int64(1 + o.n(4)), 1, 1}, []*ggml.Tensor{o.a, o.b}, copyFirst, o.n(3))
	}},
	{175, "CustomInPlace", func(o opIn) *ggml.Tensor { return o.c.CustomInPlace(o.a, []*ggml.Tensor{o.b}, copyFirst, o.n(3)) }},
	// Upstream ggml's ops (ErrUnsupported with the embedded provider), in
	// their families' files.
	{176, "SSMScanK", func(o opIn) *ggml.Tensor {
		return o.c.SSMScanK(o.a, o.b, o.pick(), o.pick(), o.pick(), o.pick(), o.pick(), int64(1+o.n(3)))
	}},
	{177, "GatedDeltaNet", func(o opIn) *ggml.Tensor {
		return o.c.GatedDeltaNet(o.a, o.b, o.pick(), o.pick(), o.pick(), o.pick(), int64(1+o.n(3)))
	}},
	{178, "Col2Im1D", func(o opIn) *ggml.Tensor { return o.c.Col2Im1D(o.a, 1+o.n(3), 1+o.n(3), o.n(2)) }},
	{179, "LightningIndexer", func(o opIn) *ggml.Tensor { return o.c.LightningIndexer(o.a, o.b, o.pick(), o.pick()) }},
	{180, "HCCombine", func(o opIn) *ggml.Tensor { return o.c.HCCombine(o.a, o.b, o.pick(), 1e-6, 1+o.n(3)) }},
	{181, "HCPre", on2((*ggml.Context).HCPre)},
	{182, "HCPost", func(o opIn) *ggml.Tensor { return o.c.HCPost(o.a, o.b, o.pick(), o.pick()) }},
	// Upstream ggml's types reach the other ops' entries through this
	// cast (the fuzzer's own tensors keep their types for the seeds'
	// sake); rows of 64 or 128 take concats of its short ones.
	{183, "Cast", func(o opIn) *ggml.Tensor {
		return o.c.Cast(o.a, []ggml.Type{ggml.TypeNVFP4, ggml.TypeQ1_0, ggml.TypeQ2_0}[o.n(3)])
	}},
}

// on1 builds an op of one tensor, on2 an op of two.
func on1(op func(*ggml.Context, *ggml.Tensor) *ggml.Tensor) opBuilder {
	return func(o opIn) *ggml.Tensor { return op(o.c, o.a) }
}

func on2(op func(*ggml.Context, *ggml.Tensor, *ggml.Tensor) *ggml.Tensor) opBuilder {
	return func(o opIn) *ggml.Tensor { return op(o.c, o.a, o.b) }
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
			out := o.build(opIn{&byteReader{}, c, in, in, func() *ggml.Tensor { return in }})
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
	addOn := func(src *ggml.Tensor, name string, want *ggml.Tensor, in func(x *ggml.Tensor) *ggml.Tensor) {
		x := c.Cont(src) // a fresh copy for each in-place op
		got := in(x)
		require.NoError(t, c.Err(), name)
		require.Equal(t, x, got.ViewSource(), "%s: the result is a view of its input", name)
		pairs = append(pairs, pair{name, want, got}, pair{name + " (input)", want, x})
	}
	add := func(name string, want *ggml.Tensor, in func(x *ggml.Tensor) *ggml.Tensor) { addOn(a, name, want, in) }
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
	addOn(b, "leaky_relu", c.LeakyRelu(b, 0.2), func(x *ggml.Tensor) *ggml.Tensor { return c.LeakyReluInPlace(x, 0.2) })
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
		// On a copy of b itself: an input that differs from b by an ulp
		// can move gelu's f16 table lookup by a whole f16 step.
		addOn(b, fn.String(), want, func(x *ggml.Tensor) *ggml.Tensor { return c.UnaryInPlace(x, fn) })
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
				require.Failf(t, "in-place result differs", "%s element %d: %v, out of place %v", p.name, i, g[i], w[i])
			}
		}
	}
}
