// provider_mmq.h: includes the provider's src/ggml-cpu/amx/mmq.cpp (through
// the generated forwarding header fwd_amx_mmq.h) for amx_mmq.cpp and
// amx_mmq_q4.cpp, each of which first renames the functions of it that it
// does not want to export. Written for go-ggml; it contains no ggml code.

// The provider's kernels keep their tiles in function-local thread_local
// arrays aligned only as their element type (one byte for q4_0's int8
// tiles), so that AMX tile loads and stores and the AVX-512 moves of
// unpack_B straddle cache lines. Every thread_local of mmq.cpp is given
// 64-byte alignment here: GCC takes its attribute among the
// decl-specifiers, where the provider's `static thread_local T x[...]`
// puts it. (llama.cpp's copy of mmq.cpp has alignas(64) on the same
// arrays today.) The standard headers that mmq.cpp includes come first, so
// that the macro reaches mmq.cpp alone.
#include "amx_target.h" // first: the instruction sets, whatever CGO_CXXFLAGS say

#include <algorithm>
#include <memory>
#include <type_traits>
#include <sys/syscall.h>
#include <unistd.h>
#define thread_local thread_local __attribute__((aligned(64)))

#include "fwd_amx_mmq.h" // generated: finds the provider's file
#undef thread_local

