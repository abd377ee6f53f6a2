//go:build !ggml_system && !(darwin && arm64)

// outprod.c: go-ggml's ggml_compute_forward_out_prod, which ggml-cpu.c's
// compute calls in the provider's place (its forwarding source renames
// the call: see hooks in internal/provider/gen/sources.go). Written for
// go-ggml; it contains no ggml code.
//
// OUT_PROD is most of a training step's backward pass (the gradient of
// every matrix product's weights). The provider computes f32 ones with
// ggml_vec_mad_f32_unroll, which holds 32 rows' broadcast factors and 32
// rows' loads at once: more vectors than any x86 level has registers
// (AVX2 16, AVX-512 32), so it spills. In go-ggml's default build (AVX2)
// that made an MNIST epoch 20 % slower than upstream built for an AVX-512
// machine, and upstream's own spends 1.8 times the time of the code below
// on the same products (perf, bench/README.md). Where the CPU has AVX-512
// F, f32 products run here: 8 rows of src0 at a time into each row of the
// result, 32 floats wide, in 20 registers. Everything else goes to the
// provider's code: other types, CPUs without AVX-512, other
// architectures, and GOGGML_CPU_VARIANT=x86-64-v3 (the build's own
// kernels; see variants.c).

#include <string.h>

#include "ggml.h"
#include "ggml-cpu-impl.h" // struct ggml_compute_params
#include "ops.h"           // ggml_compute_forward_out_prod: the provider's

#if defined(__x86_64__)
#include <immintrin.h>
#endif

void goggml_compute_forward_out_prod(const struct ggml_compute_params *params, struct ggml_tensor *dst);

#if defined(__x86_64__)
#define GOGGML_OUT_PROD_AVX512 1

// goggml_out_prod_rowsNK adds sum over k < NK of c[k] * x[k][0:n] to
// y[0:n], where x[k] is xs bytes after x[k-1] and c[k] cs bytes after
// c[k-1].
#define GOGGML_OUT_PROD_ROWS(NK)                                                                                \
	__attribute__((target("avx512f"))) static inline void goggml_out_prod_rows##NK(                        \
	    int64_t n, float *y, const char *x, size_t xs, const char *c, size_t cs) {                         \
		__m512 f[NK];                                                                                   \
		const float *r[NK];                                                                             \
		for (int k = 0; k < NK; k++) {                                                                  \
			f[k] = _mm512_set1_ps(*(const float *)(c + k * cs));                                    \
			r[k] = (const float *)(x + k * xs);                                                     \
		}                                                                                               \
		int64_t i = 0;                                                                                  \
		for (; i + 32 <= n; i += 32) {                                                                  \
			__m512 a0 = _mm512_loadu_ps(y + i), a1 = _mm512_loadu_ps(y + i + 16);                   \
			for (int k = 0; k < NK; k++) {                                                          \
				a0 = _mm512_fmadd_ps(_mm512_loadu_ps(r[k] + i), f[k], a0);                      \
				a1 = _mm512_fmadd_ps(_mm512_loadu_ps(r[k] + i + 16), f[k], a1);                 \
			}                                                                                       \
			_mm512_storeu_ps(y + i, a0);                                                            \
			_mm512_storeu_ps(y + i + 16, a1);                                                       \
		}                                                                                               \
		for (; i < n; i += 16) {                                                                        \
			const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1); \
			__m512 a = _mm512_maskz_loadu_ps(m, y + i);                                             \
			for (int k = 0; k < NK; k++) {                                                          \
				a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, r[k] + i), f[k], a);               \
			}                                                                                       \
			_mm512_mask_storeu_ps(y + i, m, a);                                                     \
		}                                                                                               \
	}
GOGGML_OUT_PROD_ROWS(8)
GOGGML_OUT_PROD_ROWS(1)

// goggml_out_prod_f32 computes dst[i0, i1, i2, i3] = sum over j of
// src0[i0, j, i2 / (ne2 / ne02), i3 / (ne3 / ne03)] * src1[i1, j, i2, i3],
// each thread the rows (i1, i2, i3) of its share, zeroing them first: no
// row of dst is written by two threads, so no barrier is needed. Blocks of
// 16 result rows by 32 src0 rows keep src0's rows in the cache while they
// serve 16 result rows.
__attribute__((target("avx512f"))) static void goggml_out_prod_f32(const struct ggml_compute_params *params,
                                                                   struct ggml_tensor *dst) {
	const struct ggml_tensor *src0 = dst->src[0], *src1 = dst->src[1];
	const int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2], ne3 = dst->ne[3];
	const int64_t ne01 = src0->ne[1];
	const int64_t dps2 = ne2 / src0->ne[2], dps3 = ne3 / src0->ne[3];
	const int64_t nr = ne1 * ne2 * ne3;
	const int64_t dr = (nr + params->nth - 1) / params->nth;
	const int64_t ir0 = dr * params->ith;
	const int64_t ir1 = ir0 + dr < nr ? ir0 + dr : nr;
	for (int64_t bir = ir0; bir < ir1; bir += 16) {
		const int64_t bir1 = bir + 16 < ir1 ? bir + 16 : ir1;
		for (int64_t b01 = 0; b01 < ne01; b01 += 32) {
			const int64_t e01 = b01 + 32 < ne01 ? b01 + 32 : ne01;
			for (int64_t ir = bir; ir < bir1; ir++) {
				const int64_t i3 = ir / (ne2 * ne1);
				const int64_t i2 = (ir - i3 * ne2 * ne1) / ne1;
				const int64_t i1 = ir - i3 * ne2 * ne1 - i2 * ne1;
				float *d = (float *)((char *)dst->data + i1 * dst->nb[1] + i2 * dst->nb[2] + i3 * dst->nb[3]);
				if (b01 == 0) {
					memset(d, 0, (size_t)ne0 * sizeof(float));
				}
				const char *s0 = (const char *)src0->data + (i2 / dps2) * src0->nb[2] + (i3 / dps3) * src0->nb[3];
				const char *s1 = (const char *)src1->data + i1 * src1->nb[0] + i2 * src1->nb[2] + i3 * src1->nb[3];
				int64_t j = b01;
				for (; j + 8 <= e01; j += 8) {
					goggml_out_prod_rows8(ne0, d, s0 + j * src0->nb[1], src0->nb[1], s1 + j * src1->nb[1], src1->nb[1]);
				}
				for (; j < e01; j++) {
					goggml_out_prod_rows1(ne0, d, s0 + j * src0->nb[1], src0->nb[1], s1 + j * src1->nb[1], src1->nb[1]);
				}
			}
		}
	}
}

// goggml_own_avx512 (own_avx512.c) says whether the code above runs.
extern int goggml_own_avx512;
#endif

void goggml_compute_forward_out_prod(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
#if defined(GOGGML_OUT_PROD_AVX512)
	const struct ggml_tensor *src0 = dst->src[0], *src1 = dst->src[1];
	// The provider's checks (which Go's OutProd makes first), and rows of
	// src0 and of the result that are contiguous.
	if (goggml_own_avx512 && dst->type == GGML_TYPE_F32 && src0->type == GGML_TYPE_F32 &&
	    src1->type == GGML_TYPE_F32 && dst->nb[0] == sizeof(float) && src0->nb[0] == sizeof(float) &&
	    dst->ne[0] == src0->ne[0] && dst->ne[1] == src1->ne[0] && dst->ne[2] == src1->ne[2] &&
	    dst->ne[3] == src1->ne[3] && src0->ne[1] == src1->ne[1] && src0->ne[2] > 0 && src0->ne[3] > 0 &&
	    dst->ne[2] % src0->ne[2] == 0 && dst->ne[3] % src0->ne[3] == 0) {
		goggml_out_prod_f32(params, dst);
		return;
	}
#endif
	ggml_compute_forward_out_prod(params, dst);
}
