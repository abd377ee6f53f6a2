//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

// amx_mmq_q4.cpp: go-ggml's driver of the provider's AMX kernels for the
// products of more than one row with q4_0 and q4_1 weights
// (ggml_backend_amx_mul_mat_q4, called by amx_mmq.cpp's
// ggml_backend_amx_mul_mat), compiled at -O2 where the rest of the package
// is compiled at -O3. Written for go-ggml; it contains no ggml code.
//
// Why: GCC 12's -O3 unrolls the loops of tinygemm_kernel_amx<block_q8_0,
// block_q4_0> completely (its early complete unrolling, cunrolli, runs at
// -O3 only), which makes the function 25 KiB of code against 5 KiB at
// -O2, and a 1b q4_0 model's prompts ran 3-6 % faster at -O2 (64 tokens,
// 1 and 2 threads, in alternated runs on a Sapphire Rapids). The k-quants'
// kernels are the other way round (q4_K_M prompts were 20 % slower at
// -O2), and so is q4_0's generation, which stays in amx_mmq.cpp
// (the provider's vector kernels).
//
// This file includes mmq.cpp again: everything in it is static to this
// file, so the copies are this file's own, and the functions that
// amx_mmq.cpp exports are renamed here so that this file exports only
// ggml_backend_amx_mul_mat_q4.
#pragma GCC optimize("O2")
#pragma GCC diagnostic ignored "-Wunused-function"

#define ggml_backend_amx_get_alloc_size static goggml_q4_unused_get_alloc_size
#define ggml_backend_amx_convert_weight static goggml_q4_unused_convert_weight
#define ggml_backend_amx_desired_wsize static goggml_q4_unused_desired_wsize
#define ggml_backend_amx_mul_mat static goggml_q4_unused_mul_mat
#include "provider_mmq.h"
#undef ggml_backend_amx_get_alloc_size
#undef ggml_backend_amx_convert_weight
#undef ggml_backend_amx_desired_wsize
#undef ggml_backend_amx_mul_mat

#if defined(__AMX_INT8__) && defined(__AVX512VNNI__)

#include "amx_driver.h"

void ggml_backend_amx_mul_mat_q4(const struct ggml_compute_params *params, struct ggml_tensor *dst);

void ggml_backend_amx_mul_mat_q4(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
	if (dst->src[0]->type == GGML_TYPE_Q4_1) {
		return amx_mul_mat<block_q8_1, block_q4_1, QK4_1>(params, dst);
	}
	amx_mul_mat<block_q8_0, block_q4_0, QK4_0>(params, dst);
}

#endif // __AMX_INT8__ && __AVX512VNNI__
