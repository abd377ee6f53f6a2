//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

// Package cpuvnni compiles a second copy of two of the embedded provider's
// CPU sources for x86-64-v4 with AVX-512 VNNI, through the forwarding
// sources beside this file: llamafile's sgemm (tinyBLAS, the CPU backend's
// matrix kernels for f32, f16, bf16, q8_0 and q4_0 products) and the x86
// quantized dot products and row quantizers (arch/x86/quants.c, what
// matrix-vector products of quantized weights run). Their entry points get
// the prefix goggml_avx512vnni_. The default level (x86-64-v3, package
// cpu) has no vpdpbusd, the instruction of the quantized dot products that
// -march=native adds on this project's machine: without it the q8_0 and
// q4_0 matrix products ran at 80-87 % of a native build (bench/README.md).
//
// Package cpu imports this package at the default level on linux/amd64
// only (the objects of no other platform were checked), and its
// dispatcher (cpu/variants.c) calls this copy when the CPU has every
// extension it was compiled for; on other CPUs none of this code runs.
//
// Why these files can be variants in one static binary, when ggml's whole
// CPU backend cannot (see package cpu): their code is in an anonymous
// namespace (sgemm.cpp) or static inline (quants.c), so the compiler gives
// it internal linkage, and no template instance or inline function of it
// can be merged by the linker with the default level's. What is external
// is the prefixed entry points; a test (TestVariantSymbols) checks that
// with the object files of this package. Nothing else should import this
// package.
package cpuvnni

/*
#cgo CFLAGS: -O3
#cgo CXXFLAGS: -O3 -std=c++17
#cgo CPPFLAGS: -DNDEBUG -DGGML_USE_LLAMAFILE
#cgo linux CPPFLAGS: -D_GNU_SOURCE
#cgo CFLAGS: -march=x86-64-v4 -mavx512vnni -mtune=generic
#cgo CXXFLAGS: -march=x86-64-v4 -mavx512vnni -mtune=generic
*/
import "C"
