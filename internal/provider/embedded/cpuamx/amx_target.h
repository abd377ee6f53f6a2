// amx_target.h: the instruction sets this package's code is compiled for,
// as a pragma that comes first in each of its C++ files. Written for
// go-ggml; it contains no ggml code.
//
// The package's #cgo lines say -march=sapphirerapids, but a user's
// CGO_CFLAGS and CGO_CXXFLAGS come before them on the compiler's command
// line, and GCC lets an explicit -mno-amx-int8 there win over what a later
// -march implies: the provider's amx.cpp then compiled to nothing, and
// package cpu's reference to ggml_backend_amx_buffer_type failed to link.
// cgo allows no -mamx-* flag in #cgo lines, so the features are asked for
// here; a pragma's features win over the command line's. Whether the code
// runs is decided at start by what the CPU has (package cpu's amx.cpp),
// never by the flags.
#ifndef GOGGML_AMX_TARGET_H
#define GOGGML_AMX_TARGET_H
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe," \
		   "avx512f,avx512cd,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,avx512fp16," \
		   "avx512vbmi,avx512ifma,amx-tile,amx-int8,amx-bf16")
// g++ reads a whole file's tokens before it parses the pragma, so the
// macros a target pragma defines (in C) are missing in C++: the ones the
// provider's code tests are defined here.
#ifndef __AMX_TILE__
#define __AMX_TILE__ 1
#endif
#ifndef __AMX_INT8__
#define __AMX_INT8__ 1
#endif
#ifndef __AMX_BF16__
#define __AMX_BF16__ 1
#endif
#ifndef __AVX512F__
#define __AVX512F__ 1
#endif
#ifndef __AVX512CD__
#define __AVX512CD__ 1
#endif
#ifndef __AVX512BW__
#define __AVX512BW__ 1
#endif
#ifndef __AVX512DQ__
#define __AVX512DQ__ 1
#endif
#ifndef __AVX512VL__
#define __AVX512VL__ 1
#endif
#ifndef __AVX512VNNI__
#define __AVX512VNNI__ 1
#endif
#ifndef __AVX512BF16__
#define __AVX512BF16__ 1
#endif
#ifndef __AVX512FP16__
#define __AVX512FP16__ 1
#endif
#ifndef __AVX512VBMI__
#define __AVX512VBMI__ 1
#endif
#ifndef __AVX2__
#define __AVX2__ 1
#endif
#ifndef __FMA__
#define __FMA__ 1
#endif
#ifndef __F16C__
#define __F16C__ 1
#endif
#endif
#endif
