//go:build !ggml_system && !(darwin && arm64) && amd64 && !ggml_native && !ggml_portable

// Package cpuvnni compiles a second copy of the embedded provider's
// llamafile sgemm (tinyBLAS, the CPU backend's matrix kernels for f32, f16,
// bf16, q8_0 and q4_0 products) for x86-64-v4 with AVX-512 VNNI, under the
// name goggml_llamafile_sgemm_avx512vnni, through the forwarding source
// beside this file. The default level (x86-64-v3, package cpu) has no
// vpdpbusd, the one instruction of the quantized dot products that
// -march=native adds on this project's machine: without it the q8_0 and
// q4_0 matrix products ran at 80-87 % of a native build (bench/README.md).
//
// Package cpu imports this package in the default level only, and its
// dispatcher (cpu/sgemm_variants.c) calls this copy when the CPU has every
// extension it was compiled for; on other CPUs none of this code runs.
//
// Why this one file can be a variant in one static binary, when ggml's
// whole CPU backend cannot (see package cpu): sgemm.cpp keeps its code in
// an anonymous namespace and C's static inline functions, so the compiler
// gives every function of this copy internal linkage, and no template
// instance or inline function of it can be merged by the linker with the
// default level's. The one external symbol is the renamed entry point; a
// test (TestSgemmVariantSymbols in third_party/ggml) checks that with the
// object files of this package. Nothing else should import this package.
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
