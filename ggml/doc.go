// Package ggml is the core of go-ggml: ggml's types, contexts, tensors,
// graphs and ops, data transfer, logging and version information.
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
// # Lifetimes
//
// Close frees a Context at once (idempotent); an unreachable one is freed
// by the garbage collector. A tensor keeps its context, its inputs and the
// buffer holding its data alive; after an explicit Close, methods report
// ErrClosed or zero values instead of touching freed memory. A Context is
// used by one goroutine at a time.
//
// # Ops
//
// Element-wise with broadcast: Add, Sub, Mul, Div; Add1, Scale, ScaleBias. Functions of one
// tensor: Abs, Sgn, Neg, Step, Tanh, Elu, Relu, Sigmoid, Hardsigmoid,
// Hardswish, Exp, Expm1, Softplus, Sqr, Sqrt, Log, Sin, Cos, Floor, Ceil,
// Round, Trunc, Gelu, GeluErf, GeluQuick, Silu, LeakyRelu. Reductions: Sum,
// SumRows, Mean, Argmax, CountEqual, Cumsum; Argsort. Rows: SoftMax, SoftMaxExt, Norm, RMSNorm, L2Norm. Attention: Rope
// (normal and NeoX), DiagMaskInf, DiagMaskZero. Gated units: GLU, GLUSplit, Swiglu, Geglu, Reglu.
// Matrices: MulMat.
// Shapes and copies: Reshape, View1D..View4D, Permute, Transpose, Cont,
// Cpy, GetRows, Repeat, Concat, Pad. Sequences: Arange.
//
// The rest of ggml.h's constructors (group and l2 norm, multi-section rope,
// flash attention, mask ops, convolution, pooling, SSM, in-place variants,
// custom ops, optimizer and backward ops) are the work of the ops issue;
// until they land, they are not reachable from Go.
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
// FuzzOps, FuzzQuantize and FuzzDequantize (make fuzz) throw random graphs,
// values and bytes at the package; the inputs that once crashed ggml are
// their seed corpus in testdata/fuzz.
package ggml
