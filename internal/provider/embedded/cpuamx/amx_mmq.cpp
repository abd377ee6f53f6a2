//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

// amx_mmq.cpp: compiles the provider's AMX kernels (src/ggml-cpu/amx/mmq.cpp,
// included below by its path, as the generated forwarding sources do) and
// puts go-ggml's own driver of them in the place of the provider's
// ggml_backend_amx_mul_mat, which the AMX buffer type's traits call for
// every product of its weights. Written for go-ggml; it contains no ggml
// code.
//
// The provider's driver differs from the one llama.cpp ships today in two
// ways that this one undoes, and its kernel has a third fault:
//
//   - Its thread 0 alone quantizes the activations (src1) while the other
//     threads wait at the barrier after it; here each thread quantizes its
//     share of the rows, as llama.cpp does. For q4_K and the other k-quants
//     the quantizer is ggml's scalar reference (quantize_row_q8_K_ref), so
//     the wait was a few percent of a prompt on two threads.
//   - Its kernel gets blocks of exactly 32 rows of q4_0 and q4_1 wrong in
//     one place: in tinygemm_kernel_amx's branch for M == 2 * TILE_M, the
//     first K block (i = 0) of the second tile of 16 columns is multiplied
//     with the first tile's weights (it unpacks B_blk0 where it means
//     B_blk1; fixed upstream since). The scales it applies are the right
//     tile's, and every later K block is right. Here the thread that
//     computed such a block adds the difference to the block's 32 x 16
//     wrong entries right after the kernel (amx_fix_block): no extra
//     barrier, the block still in the cache.
//   - The same branch, for rows of one K block (K = 32) of q4_0, q4_1 and
//     q8_0, adds its only block to what the result held (its "final
//     accumulation" reads C, which no earlier K block stored): twice the
//     right values when a graph is computed again, garbage otherwise.
//     Here the thread zeroes such a block of results first
//     (amx_zero_block).
//
// f16 weights, and every other product, go to the provider's driver.
//
// The products of q4_0 and q4_1 weights are compiled apart, at -O2
// (amx_mmq_q4.cpp), the rest of the kernels at the package's -O3.

// The provider's driver keeps its code under another name, static to this
// file ("void static f(...)" is a valid declaration), and ours takes the
// name that mmq.h declares and the buffer type's code (amx.cpp) calls.
#define ggml_backend_amx_mul_mat static goggml_provider_amx_mul_mat
#include "provider_mmq.h"
#undef ggml_backend_amx_mul_mat

#if defined(__AMX_INT8__) && defined(__AVX512VNNI__)

#include "amx_driver.h"

void ggml_backend_amx_mul_mat(const struct ggml_compute_params *params, struct ggml_tensor *dst);
void ggml_backend_amx_mul_mat_q4(const struct ggml_compute_params *params, struct ggml_tensor *dst);

void ggml_backend_amx_mul_mat(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
	if (dst->ne[1] > 1) {
		switch (dst->src[0]->type) {
		case GGML_TYPE_Q4_0:
		case GGML_TYPE_Q4_1:
			return ggml_backend_amx_mul_mat_q4(params, dst); // amx_mmq_q4.cpp
		case GGML_TYPE_Q8_0:
			return amx_mul_mat<block_q8_0, block_q8_0, QK8_0>(params, dst);
		case GGML_TYPE_Q4_K:
			return amx_mul_mat<block_q8_K, block_q4_K, QK_K>(params, dst);
		case GGML_TYPE_Q5_K:
			return amx_mul_mat<block_q8_K, block_q5_K, QK_K>(params, dst);
		case GGML_TYPE_Q6_K:
			return amx_mul_mat<block_q8_K, block_q6_K, QK_K>(params, dst);
		case GGML_TYPE_IQ4_XS:
			return amx_mul_mat<block_q8_K, block_iq4_xs, QK_K>(params, dst);
		default:
			break;
		}
	}
	goggml_provider_amx_mul_mat(params, dst);
}

#endif // __AMX_INT8__ && __AVX512VNNI__
