// Package ggml is the core of go-ggml: ggml's types, contexts, tensors,
// graphs and ops, data transfer, logging and version information.
//
//	c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
//	w := c.NewTensor(ggml.TypeF32, 3, 2) // ne[0] = 3 is the innermost size
//	x := c.NewTensor(ggml.TypeF32, 3, 1)
//	y := c.MulMat(w, x)                   // [2 1]
//	g, _ := c.BuildGraph(y)
//	be, _ := backend.InitByName("CPU", "")
//	buf, _ := backend.AllocContextTensors(c, be) // the data lives in a backend buffer
//	ggml.SetData(w, []float32{1, 2, 3, 4, 5, 6})
//	ggml.SetData(x, []float32{1, 0, -1})
//	be.Compute(ctx, g)
//	ys, _ := ggml.Data[float32](y) // [-2 -2]
//
// (Example, below, is the same with its errors handled.)
//
// # Model
//
// A Context holds tensor metadata, and, unless ContextParams.NoAlloc, tensor
// data, in one memory pool sized at creation. Ops are methods of the
// context that will own their result; inputs may come from other contexts
// (weights, say). A Graph lists the ops that compute some outputs; package
// backend allocates its tensors in device buffers and computes it, package
// sched spreads it over several backends.
//
// Shapes use ggml's order: ne[0] is the innermost, contiguous dimension.
// MulMat(a, b) of a [k, m] and b [k, n] is [m, n], each element a dot
// product over k.
//
// # Errors
//
// Graph building uses sticky errors: an op whose inputs break ggml's rules
// (shapes, types, strides, the context's room; also what ggml's CPU kernels
// assert, which no Go code could recover from) records an *OpError on its
// context, naming the op, the input shapes and the rule, and returns a
// poisoned tensor that later ops pass along. Context.Err reports the first
// error; BuildGraph, allocation and compute refuse to run while it is set.
// Every other call returns an error. Errors wrap a kind for errors.Is:
// ErrShape, ErrType, ErrInvalid, ErrNoMemory, ErrGraphFull, ErrClosed,
// ErrNotAllocated. Should a ggml assert still fire on the calling thread,
// it comes back as an *AssertError.
//
// # Providers
//
// The ggml this binary links comes from a provider (Provider names it):
// the embedded one (the default: the ggml of github.com/ollama/ollama
// v0.17.4) or the system one (-tags ggml_system: upstream ggml v0.21.0
// found with pkg-config). Type and op numbers come from the linked ggml.
// What only upstream ggml has records or returns an ErrUnsupported error
// that names -tags ggml_system with the embedded provider: the ops
// GatedDeltaNet, Col2Im1D, LightningIndexer, HCCombine, HCPre and HCPost,
// SSMScanK with more than one state kept, and the types TypeNVFP4,
// TypeQ1_0 and TypeQ2_0 (not Valid there; NewTensor, RowSize, Quantize,
// Dequantize and ValidateRowData refuse them). Conv2D and Conv3D round an
// f32 b to f16 with the system provider (see Conv2D). The embedded
// provider's CPU code is compiled by go-ggml at a level chosen by build
// tag (CPUFeatures reports it), and on linux/amd64 its matrix kernels come
// in two copies chosen at start (CPUKernelVariant); the system provider's
// CPU code is whatever the installed libggml-cpu was built for.
//
// # Lifetimes
//
// Close frees a Context at once (idempotent); an unreachable one is freed
// by the garbage collector. A tensor keeps its context, its inputs and the
// buffer holding its data alive; after an explicit Close, methods report
// ErrClosed or zero values instead of touching freed memory. A Context is
// used by one goroutine at a time for building ops (an op that another
// goroutine's op overlaps is refused with ErrBusy, not run on ggml's pool
// twice at once); computes and data
// transfers may read its tensors from other goroutines, and while they do,
// Close returns ErrBusy (also when called from a custom op of that very
// compute).
//
// # Ops
//
// Every op checks in Go what ggml's constructor and CPU kernel assert, and
// is tested against a float64 reference computed in Go (see the tests).
//
// Element-wise, with broadcast: Add, Sub, Mul, Div, Add1, AddCast, AddID,
// Scale, ScaleBias, Clamp. Functions of one tensor: Abs, Sgn, Neg, Step,
// Tanh, Elu, Relu, Sigmoid, Hardsigmoid, Hardswish, Exp, Expm1, Softplus,
// Sqr, Sqrt, Log, Sin, Cos, Floor, Ceil, Round, Trunc, Gelu, GeluErf,
// GeluQuick, Silu, LeakyRelu, XIELU, and Unary taking a UnaryOp.
// Reductions: Sum, SumRows, Mean, Argmax, CountEqual, Cumsum, Argsort,
// ArgsortTopK, TopK. Rows: SoftMax, SoftMaxExt, SoftMaxExtSinks, Norm,
// RMSNorm, L2Norm, GroupNorm. Attention: Rope (normal, NeoX, the
// multi-section modes), FlashAttnExt (mask, ALiBi, softcap, sinks,
// Precision), LightningIndexer, DiagMaskInf, DiagMaskZero, GetRelPos,
// AddRelPos, WinPart, WinUnpart. Gated units: GLU, GLUSplit, Swiglu,
// Geglu, Reglu, SwigluOAI.
// Matrices: MulMat, MulMatPrec, MulMatID, OutProd, SolveTri, Diag, Tri;
// DeepSeek V4's hyper-connections HCCombine, HCPre, HCPost.
// Shapes and copies: Reshape, View1D..View4D, Permute, Transpose, Cont,
// ContND, Dup, Cpy, Cast, GetRows, SetRows, Set, Set1D, Set2D, Acc, Repeat,
// Repeat4D, Concat, Pad, PadExt, PadCircular, PadReflect1D, Roll, Fill,
// Arange. Convolution and pooling: Im2Col, Im2Col3D, Conv1D, Conv1DDW,
// Conv2D, Conv2DDW, Conv2DDirect, Conv2DDWDirect, Conv3D, Conv3DDirect,
// ConvTranspose1D, ConvTranspose2D, Pool1D, Pool2D, Upscale, UpscaleExt,
// Interpolate, TimestepEmbedding, Col2Im1D. Sequence models: SSMConv,
// SSMScan, SSMScanK, RWKVWKV6, RWKVWKV7, GatedLinearAttn, GatedDeltaNet.
//
// In-place variants (AddInPlace, UnaryInPlace, SoftMaxInPlace, ...) compute
// into their input's memory: their result is a view of it.
//
// Training: the backward ops SiluBack, RMSNormBack, SoftMaxExtBack,
// RopeBack, GetRowsBack, RepeatBack, Pool2DBack, Im2ColBack,
// CrossEntropyLoss, CrossEntropyLossBack, and the optimizer steps
// OptStepAdamW and OptStepSGD.
//
// Custom ops: MapCustom1..3, Custom4D and CustomInPlace run a Go function
// (CustomFunc) on ggml's CPU threads; a panic in it comes back from Compute
// as a *CustomPanicError.
//
// Some ggml kernels depend on the data or the thread count in ways no
// constructor can see: indices (GetRows, SetRows, GetRowsBack, MulMatID,
// AddID, SSMScan) that are inputs in host memory are range-checked before
// compute, computed indices are accepted only when bounded by construction
// (an argsort or top-k); RWKVWKV6, RWKVWKV7 and GatedLinearAttn are refused
// on a CPU backend with more threads than heads (their kernels hang).
//
// Where ggml's kernel cannot do what an op documents, the op composes
// ggml's own ops in the graph instead of refusing, and its doc says how:
// Conv1D with a batch and several output channels permutes ggml's result,
// laid out [OL, N, OC], into [OL, OC, N] and copies it; ConvTranspose2D
// with a batch runs ggml's kernel, which computes one item, on a view of
// each item and joins the results with concats; RWKVWKV7 with a head size
// that is not a multiple of 64 (ggml's SIMD loop has no tail) pads its
// inputs with zeros, which the recurrence keeps exact, and cuts the result
// back. Such an op makes several tensors: it checks that the context has
// room for all of them before making any, and its result is the last of
// them (a copy or a concat), not a node of ggml's op.
//
// # Left out
//
// These constructors of ggml.h are deliberately not bound:
//
//   - ggml_flash_attn_back: ggml aborts in it unconditionally ("TODO: adapt
//     to ggml_flash_attn_ext() changes").
//   - ggml_rope_custom, ggml_rope_custom_inplace, ggml_upscale_ext:
//     deprecated in ggml.h; Rope and UpscaleExt (ggml_interpolate) do
//     their work.
//   - ggml_rope, ggml_rope_inplace: ggml_rope_ext without frequency
//     factors, which Rope covers.
//   - ggml_conv_1d_dw_ph, ggml_conv_2d_sk_p0, ggml_conv_2d_s1_ph: one-line
//     shorthands for Conv1DDW and Conv2D with fixed strides and paddings.
//   - The named in-place unary functions (ggml_relu_inplace, ...):
//     UnaryInPlace(a, UnaryRelu) is the same call (ggml_unary_inplace).
//   - The named GLU variants (ggml_geglu_erf_split, ...): GLU and GLUSplit
//     take the GLUOp and the swapped flag.
//   - ggml_new_tensor_1d..4d, ggml_dup_tensor, ggml_view_tensor: NewTensor
//     and View1D..View4D cover them; ggml_cont_1d..3d: ContND.
//   - ggml_dup_inplace: a copy of a tensor onto itself, which computes
//     nothing.
//   - ggml_set_zero, ggml_get_tensor, ggml_set_name, ggml_format_name,
//     ggml_get_first_tensor, ggml_get_next_tensor: data and naming helpers,
//     not ops; SetData, Context.Tensor, Context.Tensors and SetName do their
//     work.
//   - ggml_opt_* (the optimization loop of ggml-opt.h): a training driver
//     around the graph API, not an op; OptStepAdamW and OptStepSGD are the
//     ops it runs.
//
// # Automatic differentiation
//
// A graph made by NewGradGraph, with parameters (Tensor.SetParam) and an f32
// scalar loss (Tensor.SetLoss) in it, gets the nodes that compute each
// parameter's gradient from Graph.BuildBackward (ggml_build_backward_expand;
// with accumulate, into accumulators that sum over computes). The Go graph
// and context adopt the tensors ggml creates; Graph.Grad and Graph.GradAcc
// return them (ggml_graph_get_grad, _acc), and Graph.ResetGrads prepares a
// new accumulation (ggml_graph_reset). What ggml would assert on is an error
// first, naming the op or parameter at fault.
//
// # Quantization
//
// Quantize converts float32 rows to any type ggml can produce
// (Type.CanQuantize), with an importance matrix where the type needs one
// (Type.RequiresImatrix); Dequantize converts blocks back to float32;
// ValidateRowData checks bytes read from a file for NaN and Inf. Inputs
// that ggml's quantizers abort on are refused with ErrInvalid.
//
// # Fuzzing
//
// FuzzOps, FuzzViews, FuzzQuantize and FuzzDequantize (make fuzz) throw
// random graphs, views, values and bytes at the package; the inputs that
// once crashed ggml are their seed corpus in testdata/fuzz.
package ggml
