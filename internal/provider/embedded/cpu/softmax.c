//go:build !ggml_system && !(darwin && arm64)

// softmax.c: go-ggml's ggml_compute_forward_soft_max, which ggml-cpu.c's
// compute calls in the provider's place (its forwarding source renames
// the call: see hooks in internal/provider/gen/sources.go). Written for
// go-ggml; it contains no ggml code.
//
// A prompt's attention, where it runs as two matrix products around a
// softmax (package model, batches above the fused kernel's), spends a
// tenth of its time in the softmax. The provider's loops before the
// exponentials are scalar: the row's maximum (ggml_vec_max_f32) is one
// dependent vmaxss per element, and an f16 mask is converted through a
// table, element by element. Here one AVX-512 pass scales the row, adds
// the mask (f32 or f16) times the ALiBi slope and takes the maximum, 16
// elements at a time; the exponentials, their sum and the final scaling
// are the provider's own (ggml_vec_soft_max_f32, ggml_vec_scale_f32), on
// the same rows, threads and work buffer as the provider's. Everything
// else goes to the provider's code: CPUs without AVX-512 (F, BW, VL),
// other architectures, GOGGML_CPU_VARIANT=x86-64-v3.

#include <math.h>
#include <string.h>

#include "ggml.h"
#include "ggml-cpu-impl.h" // struct ggml_compute_params
#include "ops.h"           // ggml_compute_forward_soft_max: the provider's; CACHE_LINE_SIZE
#include "vec.h"           // ggml_vec_soft_max_f32, ggml_vec_scale_f32

#if defined(__x86_64__)
#include <immintrin.h>
#endif

void goggml_compute_forward_soft_max(const struct ggml_compute_params *params, struct ggml_tensor *dst);

#if defined(__x86_64__)
#define GOGGML_SOFT_MAX_AVX512 1

// goggml_soft_max_pre writes w[i] = x[i]*scale + slope*mask[i] (no mask
// term where mask is NULL; mask16 says it holds f16 values) for i < n and
// returns the largest w[i] (-Inf for n = 0).
__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) static float goggml_soft_max_pre(
    int64_t n, float *w, const float *x, float scale, const void *mask, int mask16, float slope) {
	const __m512 vscale = _mm512_set1_ps(scale), vslope = _mm512_set1_ps(slope);
	__m512 vmax = _mm512_set1_ps(-INFINITY);
	for (int64_t i = 0; i < n; i += 16) {
		const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
		__m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vscale);
		if (mask != NULL) {
			const __m512 mk = mask16 ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)mask + i))
			                         : _mm512_maskz_loadu_ps(m, (const float *)mask + i);
			v = _mm512_add_ps(v, _mm512_mul_ps(mk, vslope));
		}
		_mm512_mask_storeu_ps(w + i, m, v);
		vmax = _mm512_mask_max_ps(vmax, m, vmax, v);
	}
	return _mm512_reduce_max_ps(vmax);
}

// goggml_soft_max_f32 is the provider's softmax of f32 rows with its
// row split, ALiBi slopes and sinks, and goggml_soft_max_pre's first pass.
static void goggml_soft_max_f32(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
	const struct ggml_tensor *src0 = dst->src[0], *src1 = dst->src[1], *src2 = dst->src[2];
	float scale = 1.0f, max_bias = 0.0f;
	memcpy(&scale, (const float *)dst->op_params + 0, sizeof(float));
	memcpy(&max_bias, (const float *)dst->op_params + 1, sizeof(float));
	const int ith = params->ith, nth = params->nth;
	const int64_t ne00 = src0->ne[0], ne01 = src0->ne[1], ne02 = src0->ne[2], ne03 = src0->ne[3];
	const int64_t ne12 = src1 ? src1->ne[2] : 1, ne13 = src1 ? src1->ne[3] : 1;
	const uint32_t n_head = (uint32_t)ne02;
	const uint32_t n_head_log2 = 1u << (uint32_t)floor(log2(n_head));
	const float m0 = powf(2.0f, -(max_bias) / n_head_log2);
	const float m1 = powf(2.0f, -(max_bias / 2.0f) / n_head_log2);
	float *wp = (float *)params->wdata + (ne00 + CACHE_LINE_SIZE / sizeof(float)) * ith;
	const int mask16 = src1 && src1->type == GGML_TYPE_F16;
	const float *sk = src2 ? (const float *)src2->data : NULL;
	for (int64_t i03 = 0; i03 < ne03; i03++) {
		for (int64_t i02 = 0; i02 < ne02; i02++) {
			const uint32_t h = (uint32_t)i02;
			const float slope = max_bias > 0.0f ? (h < n_head_log2 ? powf(m0, h + 1) : powf(m1, 2 * (h - n_head_log2) + 1))
			                                    : 1.0f;
			for (int64_t i01 = ith; i01 < ne01; i01 += nth) {
				const float *sp = (const float *)((const char *)src0->data + i01 * src0->nb[1] + i02 * src0->nb[2] + i03 * src0->nb[3]);
				float *dp = (float *)((char *)dst->data + i01 * dst->nb[1] + i02 * dst->nb[2] + i03 * dst->nb[3]);
				const void *mp = src1 ? (const char *)src1->data + i01 * src1->nb[1] + (i02 % ne12) * src1->nb[2] +
				                            (i03 % ne13) * src1->nb[3]
				                      : NULL;
				float max = goggml_soft_max_pre(ne00, wp, sp, scale, mp, mask16, slope);
				if (sk) {
					max = max > sk[i02] ? max : sk[i02];
				}
				ggml_float sum = ggml_vec_soft_max_f32((int)ne00, dp, wp, max);
				if (sk) {
					sum += (ggml_float)expf(sk[i02] - max);
				}
				ggml_vec_scale_f32((int)ne00, dp, (float)(1.0 / sum));
			}
		}
	}
}

// goggml_own_avx512 (own_avx512.c) says whether the code above runs.
extern int goggml_own_avx512;
#endif

void goggml_compute_forward_soft_max(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
#if defined(GOGGML_SOFT_MAX_AVX512)
	const struct ggml_tensor *src0 = dst->src[0], *src1 = dst->src[1];
	// f32 rows, contiguous rows of the source, the result and the mask.
	if (goggml_own_avx512 && src0->type == GGML_TYPE_F32 && dst->type == GGML_TYPE_F32 &&
	    src0->nb[0] == sizeof(float) && dst->nb[0] == sizeof(float) &&
	    (src1 == NULL || ((src1->type == GGML_TYPE_F32 || src1->type == GGML_TYPE_F16) &&
	                      src1->nb[0] == ggml_type_size(src1->type))) &&
	    (dst->src[2] == NULL || dst->src[2]->type == GGML_TYPE_F32)) {
		goggml_soft_max_f32(params, dst);
		return;
	}
#endif
	ggml_compute_forward_soft_max(params, dst);
}
