// amx_driver.h: go-ggml's driver of the provider's AMX kernels
// (amx_mul_mat) and its corrections of the kernel for q4_0/q4_1
// (amx_fix_block) and for rows of one K block (amx_zero_block),
// for the two files that instantiate it (amx_mmq.cpp, amx_mmq_q4.cpp),
// after provider_mmq.h. Written for go-ggml; it contains no ggml code.

#include <immintrin.h>
#include <string.h>

namespace {

// amx_fix_block adds, for the 32 rows of A from a and the block of 32
// columns whose packed weights start at b (two tiles of 16 columns, KB
// K blocks each, tile_size bytes a tile), the difference between the
// right first K block of columns 16..31 and the one the kernel used:
// d_A[m] * d_B[n] * sum over the first 32 k of a[m][k] * (right[n][k] -
// used[n][k]), to the result rows at c (row stride ldc floats).
//
// A packed tile's first K block is laid out for VNNI: row j (of 8) holds,
// for each of the 16 columns n, the weights of k = 4j .. 4j+3 in bytes
// 4n .. 4n+3, as the low nibbles (j even) or the high nibbles (j odd) of
// the 64 bytes from (j & ~1) * 32, then the 16 columns' fp16 scales. A's
// rows are KB blocks of q8_0 (q4_0's partner: fp16 d, 32 quants) or q8_1
// (q4_1's: fp16 d, fp16 s, 32 quants). q4_0's weights are the nibbles
// less 8, q4_1's the nibbles: either way the difference of two weights is
// the difference of their nibbles, so vpdpbusd multiplies the nibbles
// (unsigned) by A's quants (signed), four k at a time, column n in lane n.
template <typename TA>
void amx_fix_block(const char *a, int KB, const char *b, int tile_size, float *c, int ldc) {
	constexpr int qs_at = std::is_same<TA, block_q8_0>::value ? 2 : 4; // the quants' offset in a block
	const uint8_t *used = (const uint8_t *)b;
	const uint8_t *right = (const uint8_t *)b + (size_t)KB * tile_size; // the second tile's first K block
	const __m512i low = _mm512_set1_epi8(0xF);
	__m512i u[8], r[8];
	for (int j = 0; j < 8; j += 2) {
		const __m512i bu = _mm512_loadu_si512((const void *)(used + j * 32));
		const __m512i br = _mm512_loadu_si512((const void *)(right + j * 32));
		u[j] = _mm512_and_si512(bu, low);
		r[j] = _mm512_and_si512(br, low);
		u[j + 1] = _mm512_and_si512(_mm512_srli_epi16(bu, 4), low);
		r[j + 1] = _mm512_and_si512(_mm512_srli_epi16(br, 4), low);
	}
	const __m512 d_b = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(right + TILE_N * TILE_K / 2)));
	const size_t row_a = (size_t)KB * sizeof(TA);
	for (int m = 0; m < 2 * TILE_M; m++) {
		const char *am = a + (size_t)m * row_a; // the row's first K block
		uint16_t d_a;
		memcpy(&d_a, am, 2);
		__m512i acc_r = _mm512_setzero_si512(), acc_u = _mm512_setzero_si512();
		for (int j = 0; j < 8; j++) {
			int32_t four;
			memcpy(&four, am + qs_at + 4 * j, 4);
			const __m512i a4 = _mm512_set1_epi32(four);
			acc_r = _mm512_dpbusd_epi32(acc_r, r[j], a4);
			acc_u = _mm512_dpbusd_epi32(acc_u, u[j], a4);
		}
		const __m512i diff = _mm512_sub_epi32(acc_r, acc_u);
		float *cm = c + (size_t)m * ldc + TILE_N;
		const __m512 scale = _mm512_mul_ps(d_b, _mm512_set1_ps(_cvtsh_ss(d_a)));
		_mm512_storeu_ps(cm, _mm512_fmadd_ps(_mm512_cvtepi32_ps(diff), scale, _mm512_loadu_ps(cm)));
	}
}

// amx_zero_block zeroes the 32 x 32 results at c (row stride ldc floats)
// before the provider's kernel computes a block of exactly 32 rows of
// q4_0, q4_1 or q8_0 weights whose rows are one K block (K = 32). That
// branch of tinygemm_kernel_amx (M == 2 * TILE_M) keeps each K block's
// integer tiles and scales them into C one step later: the loop over
// i = 1 .. KB-1 stores block i-1 (acc_C<..., is_acc = i-1 > 0>, so block 0
// overwrites C), and its "final accumulation" adds the last block with
// acc_C<..., true>, which reads C. With KB == 1 the loop does not run, and
// the one block is added to whatever C held: the last product's result
// (twice the right values, when a graph is computed again), or another
// tensor's bytes (anything, up to Inf and NaN). Zeroed first, the sum is
// the right one, in the same float operations as an overwrite (0 + x).
// Blocks of fewer rows take the kernel's other branch, which overwrites
// at i == 0; the k-quants' and iq4_xs's kernel does too.
void amx_zero_block(float *c, int ldc) {
	const __m512 zero = _mm512_setzero_ps();
	for (int m = 0; m < 2 * TILE_M; m++) {
		_mm512_storeu_ps(c + (size_t)m * ldc, zero);
		_mm512_storeu_ps(c + (size_t)m * ldc + TILE_N, zero);
	}
}

template <typename TA, typename TB, int BLOCK_K>
void amx_mul_mat(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
	const struct ggml_tensor *src0 = dst->src[0];
	const struct ggml_tensor *src1 = dst->src[1];
	const int M = (int)dst->ne[1];
	const int N = (int)dst->ne[0];
	const int K = (int)src0->ne[0];
	const int ldc = (int)(dst->nb[1] / dst->nb[0]);
	const int KB = K / BLOCK_K;
	const size_t row_a = (size_t)KB * sizeof(TA);
	char *wdata = (char *)params->wdata;
	if (params->wsize < (size_t)M * row_a) {
		GGML_ABORT("insufficient work space size"); // work_size asked for it: cannot happen
	}

	// Each thread quantizes its share of A's rows.
	int m0, m1;
	balance211(M, params->nth, params->ith, m0, m1);
	const float *x = (const float *)src1->data;
	for (int m = m0; m < m1; m++) {
		from_float<TA>(x + (size_t)m * K, wdata + (size_t)m * row_a, K);
	}
	ggml_barrier(params->threadpool);

	// Then the blocks of 32 x 32 results, as the provider's driver splits
	// them between threads.
	constexpr bool fix = std::is_same<TB, block_q4_0>::value || std::is_same<TB, block_q4_1>::value;
	const int tile_size = get_tile_size<TB>();
	const int MB = div_up(M, 2 * TILE_M);
	const int NB = div_up(N, 2 * TILE_N);
	int b0, b1;
	balance211(MB * NB, params->nth, params->ith, b0, b1);
	if (b0 < b1) {
		ggml_tile_config_init();
	}
	for (int i = b0; i < b1; i++) {
		const int mb = i / NB, nb = i % NB;
		const int mstart = mb * 2 * TILE_M;
		const int msize = std::min(2 * TILE_M, M - mstart);
		const char *a = wdata + (size_t)mstart * row_a;
		const char *b = (const char *)src0->data + PACKED_INDEX(nb * 2, 0, KB, tile_size);
		float *c = (float *)dst->data + (size_t)mstart * ldc + nb * 2 * TILE_N;
		if constexpr (!is_type_qkk<TB>::value) { // q4_0, q4_1, q8_0 (see amx_zero_block)
			if (msize == 2 * TILE_M && KB == 1) {
				amx_zero_block(c, ldc);
			}
		}
		tinygemm_kernel_amx<TA, TB, float, BLOCK_K>(msize, 2 * TILE_N, KB, a, b, c, ldc);
		if constexpr (fix) { // no amx_fix_block for the types that need none
			if (msize == 2 * TILE_M) {
				amx_fix_block<TA>(a, KB, b, tile_size, c, ldc);
			}
		}
	}
}

} // namespace
