package ggml

// #include "goggml.h"
import "C"

// The package's constants that are part of ggml's ABI and the same with
// every provider (MaxDims, MaxNameLen, DefaultGraphSize, MaxCustomArgs and
// the small enumerations: RopeMode, TriType, PoolOp, ScaleMode, Precision,
// SortOrder) are written as Go literals, so that go doc shows their values.
// Each line below compares one of them with the linked provider's header at
// compile time: where the two disagree, the line does not compile ("index
// out of bounds" or "must not be negative"), and the literal must follow the
// header. Enumerations whose numbers change from one ggml version to the
// next (Type, UnaryOp, GLUOp, the ops) are not literals: they come from cgo.
var (
	_ = [1]struct{}{}[MaxDims-C.GGML_MAX_DIMS]
	_ = [1]struct{}{}[MaxNameLen-(C.GGML_MAX_NAME-1)]
	_ = [1]struct{}{}[DefaultGraphSize-C.GGML_DEFAULT_GRAPH_SIZE]
	_ = [1]struct{}{}[MaxCustomArgs-(C.GGML_MAX_SRC-1)]

	_ = [1]struct{}{}[RopeNormal-C.GGML_ROPE_TYPE_NORMAL]
	_ = [1]struct{}{}[RopeNeoX-C.GGML_ROPE_TYPE_NEOX]
	_ = [1]struct{}{}[RopeMRope-C.GGML_ROPE_TYPE_MROPE]
	_ = [1]struct{}{}[RopeIMRope-C.GGML_ROPE_TYPE_IMROPE]
	_ = [1]struct{}{}[RopeVision-C.GGML_ROPE_TYPE_VISION]

	_ = [1]struct{}{}[TriLower-C.GGML_TRI_TYPE_LOWER]
	_ = [1]struct{}{}[TriLowerDiag-C.GGML_TRI_TYPE_LOWER_DIAG]
	_ = [1]struct{}{}[TriUpper-C.GGML_TRI_TYPE_UPPER]
	_ = [1]struct{}{}[TriUpperDiag-C.GGML_TRI_TYPE_UPPER_DIAG]

	_ = [1]struct{}{}[PoolMax-C.GGML_OP_POOL_MAX]
	_ = [1]struct{}{}[PoolAvg-C.GGML_OP_POOL_AVG]

	_ = [1]struct{}{}[ScaleNearest-C.GGML_SCALE_MODE_NEAREST]
	_ = [1]struct{}{}[ScaleBilinear-C.GGML_SCALE_MODE_BILINEAR]
	_ = [1]struct{}{}[ScaleBicubic-C.GGML_SCALE_MODE_BICUBIC]
	_ = [1]struct{}{}[ScaleAlignCorners-C.GGML_SCALE_FLAG_ALIGN_CORNERS]
	_ = [1]struct{}{}[ScaleAntialias-C.GGML_SCALE_FLAG_ANTIALIAS]

	_ = [1]struct{}{}[PrecDefault-C.GGML_PREC_DEFAULT]
	_ = [1]struct{}{}[PrecF32-C.GGML_PREC_F32]

	_ = [1]struct{}{}[SortAsc-C.GGML_SORT_ORDER_ASC]
	_ = [1]struct{}{}[SortDesc-C.GGML_SORT_ORDER_DESC]
)
