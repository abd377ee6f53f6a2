//go:build !ggml_system && !(darwin && arm64)

// fattn.c: go-ggml's ggml_compute_forward_flash_attn_ext for batches of
// queries, which ggml-cpu.c's compute calls in the provider's place (its
// forwarding source renames the call: see hooks in
// internal/provider/gen/sources.go). Written for go-ggml; it contains no
// ggml code.
//
// The provider's fused attention goes query row by query row: each row
// converts itself to f16, takes one dot product per cell of the cache and
// accumulates V in f16. For a prompt that reads every cell of K and V once
// per query; llama.cpp's current ggml tiles it. Here a block of BQ queries
// of one head goes through the cache BK cells at a time: the block's K
// cells are converted to f32 once, transposed, for all BQ queries, their
// scores come from broadcast FMAs 16 cells wide, an online softmax (with a
// vector exp) keeps each row's maximum and sum, and V's cells, converted
// once too, are accumulated in f32. Blocks that the mask hides entirely
// (a causal mask's upper triangle) are skipped.
//
// Generation's single queries (and batches under BQ/4 queries) go the same
// way, with the rows of a block made of the query heads that share one KV
// head (grouped-query attention: 4 heads of Llama 3.2 1B's 32 read each of
// its 8 KV heads), so each block of K and V is converted once for all of
// them, where the provider converts nothing but reads K and V once per
// head and takes a scalar expf per cell and head.
//
// It takes: f32 queries, f16 K and V of the same head size (a multiple of
// 16, at most 256), or q8_0 or q4_0 ones (a quantized cache; heads of
// whole blocks of 32), converted to f32 with their blocks' scales (where
// the provider rounds the query to q8_0 to take its products with q8_0
// or q4_0 keys), an f16 mask or none, a soft cap or none, no ALiBi, no
// sinks, on CPUs with AVX-512 (F, BW, VL) unless
// GOGGML_CPU_VARIANT=x86-64-v3. Everything else goes to the provider's
// code.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-cpu-impl.h" // struct ggml_compute_params
#include "ops.h"           // ggml_compute_forward_flash_attn_ext: the provider's

#if defined(__x86_64__)
#include <immintrin.h>
#endif

void goggml_compute_forward_flash_attn_ext(const struct ggml_compute_params *params, struct ggml_tensor *dst);

#if defined(__x86_64__)
#define GOGGML_FATTN_AVX512 1

enum { GOGGML_FA_BQ = 32, GOGGML_FA_BK = 64, GOGGML_FA_DMAX = 256 };

#define GOGGML_FA_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))

// goggml_fa_exp is e^x for 16 floats, 0 where x < -87 (-Inf included):
// x = n ln 2 + f with |f| <= ln 2 / 2, e^f by a degree-7 polynomial
// (Cephes' expf coefficients), times 2^n by vscalefps.
GOGGML_FA_TARGET static inline __m512 goggml_fa_exp(__m512 x) {
	const __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
	x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
	const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
	                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 f = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
	f = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), f);
	__m512 p = _mm512_set1_ps(1.9875691500e-4f);
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3981999507e-3f));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(8.3334519073e-3f));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(4.1665795894e-2f));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.6666665459e-1f));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.0000001201e-1f));
	p = _mm512_fmadd_ps(p, _mm512_mul_ps(f, f), _mm512_add_ps(f, _mm512_set1_ps(1.0f)));
	return _mm512_maskz_mov_ps((__mmask16)~zero, _mm512_scalef_ps(p, n));
}

// goggml_fa_cap is c·tanh(x) for 16 floats, tanh(x) = 1 - 2/(e^2x + 1)
// (e^2x by goggml_fa_exp, which is 0 below -87 and finite up to 88: 1
// and -1 at the ends).
GOGGML_FA_TARGET static inline __m512 goggml_fa_cap(__m512 x, float c) {
	const __m512 one = _mm512_set1_ps(1.0f);
	const __m512 e = goggml_fa_exp(_mm512_add_ps(x, x));
	const __m512 t = _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
	return _mm512_mul_ps(t, _mm512_set1_ps(c));
}

// goggml_fa_load16 returns values 16c to 16c+15 of a row of K or V of
// type t (f16, or q8_0 and q4_0 blocks of 32: a quantized cache, as
// llama.cpp's cache-type q8_0/q4_0), as f32: a quantized block's value is
// its f16 scale d times its 8-bit value, or its 4-bit value less 8 (the
// low nibbles of its 16 bytes are values 0-15, the high ones 16-31), as
// ggml's own dequantization computes them.
GOGGML_FA_TARGET static inline __m512 goggml_fa_load16(const char *row, enum ggml_type t, int64_t c) {
	switch (t) {
	case GGML_TYPE_Q8_0: {
		const char *blk = row + (c / 2) * 34;
		ggml_fp16_t d;
		memcpy(&d, blk, sizeof d);
		const __m128i q = _mm_loadu_si128((const __m128i *)(blk + 2 + (c % 2) * 16));
		return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(_cvtsh_ss(d)));
	}
	case GGML_TYPE_Q4_0: {
		const char *blk = row + (c / 2) * 18;
		ggml_fp16_t d;
		memcpy(&d, blk, sizeof d);
		__m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2)));
		q = c % 2 == 0 ? _mm512_and_si512(q, _mm512_set1_epi32(15)) : _mm512_srli_epi32(q, 4);
		q = _mm512_sub_epi32(q, _mm512_set1_epi32(8));
		return _mm512_mul_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(_cvtsh_ss(d)));
	}
	default:
		return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(row + 32 * c)));
	}
}

// goggml_fa_type reports whether the kernel reads K or V of type t.
static int goggml_fa_type(const struct ggml_tensor *t) {
	return (t->type == GGML_TYPE_F16 && t->nb[0] == sizeof(ggml_fp16_t)) ||
	       ((t->type == GGML_TYPE_Q8_0 || t->type == GGML_TYPE_Q4_0) && t->nb[0] == ggml_type_size(t->type) && t->ne[0] % 32 == 0);
}

// goggml_fa_buf is one thread's working memory for head size D: BQ query
// rows (scaled), BK cells of K transposed ([D][BK]) and of V ([BK][D]),
// the scores and the output rows, the rows' maxima and sums. 56 KiB for
// D = 64: malloc serves it from its arena, without a system call.
struct goggml_fa_buf {
	float *q, *kt, *v, *s, *o;
	float m[GOGGML_FA_BQ], l[GOGGML_FA_BQ];
};

// goggml_fa_transpose16 stores the 16x16 tile r (row i: 16 dims of cell i)
// transposed: dims d of the 16 cells at kt + d * GOGGML_FA_BK.
GOGGML_FA_TARGET static inline void goggml_fa_transpose16(__m512 r[16], float *kt) {
	__m512 t[16];
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
	}
	for (int i = 0; i < 16; i += 4) {
		r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
		r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
		r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
		r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
	}
	// In each 128-bit lane L, r[4a + b] now holds dim 4L + b of cells 4a
	// to 4a+3; the lanes are gathered in two steps.
	for (int i = 0; i < 4; i++) {
		t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);      // lanes 0, 2 of each
		t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xDD);  // lanes 1, 3
		t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
		t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xDD);
	}
	for (int i = 0; i < 4; i++) {
		r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
		r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xDD);
		r[4 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0x88);
		r[12 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0xDD);
	}
	for (int i = 0; i < 16; i++) {
		_mm512_storeu_ps(kt + i * GOGGML_FA_BK, r[i]);
	}
}

// goggml_fa_sees reports whether a mask row leaves any of the block's nc
// cells from c0 on visible (-Inf in f16 is 0xFC00; cells past nc count as
// hidden).
GOGGML_FA_TARGET static inline int goggml_fa_sees(const ggml_fp16_t *mrow, int64_t c0, int64_t nc) {
	const __m512i ninf = _mm512_set1_epi16((short)0xFC00);
	const __mmask32 lo = nc >= 32 ? (__mmask32)0xFFFFFFFF : (__mmask32)((1u << nc) - 1);
	const __mmask32 hi = nc >= 64 ? (__mmask32)0xFFFFFFFF : nc <= 32 ? (__mmask32)0 : (__mmask32)((1u << (nc - 32)) - 1);
	const __m512i m0 = _mm512_mask_loadu_epi16(ninf, lo, mrow + c0);
	const __m512i m1 = _mm512_mask_loadu_epi16(ninf, hi, mrow + c0 + 32);
	return (_mm512_cmpneq_epi16_mask(m0, ninf) | _mm512_cmpneq_epi16_mask(m1, ninf)) != 0;
}

// goggml_fa_block does one block of rows over the whole cache: queries q0
// to q0+nq-1 of heads h0 to h0+nh-1 (and iq3), at most BQ rows, row r
// being query q0 + r % nq of head h0 + r / nq. The heads share their K
// and V heads.
GOGGML_FA_TARGET static void goggml_fa_block(struct goggml_fa_buf *b, const struct ggml_tensor *dst, int64_t q0,
                                             int64_t nq, int64_t h0, int64_t nh, int64_t iq3, float scale, float softcap) {
	const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
	const int64_t D = k->ne[0], nkv = k->ne[1], DC = D / 16, nr = nq * nh;
	const int64_t ik2 = h0 / (q->ne[2] / k->ne[2]), ik3 = iq3 / (q->ne[3] / k->ne[3]);
	const int64_t iv2 = h0 / (q->ne[2] / v->ne[2]), iv3 = iq3 / (q->ne[3] / v->ne[3]);
	// With a soft cap (Gemma 2's), a score is softcap·tanh(scale·q·k /
	// softcap), as ggml's kernels take it: the queries are scaled by
	// scale/softcap and each block's scores capped (goggml_fa_cap).
	const __m512 vscale = _mm512_set1_ps(softcap > 0.0f ? scale / softcap : scale);
	const ggml_fp16_t *mrow[GOGGML_FA_BQ];
	for (int64_t r = 0; r < nr; r++) {
		const int64_t iq1 = q0 + r % nq, iq2 = h0 + r / nq;
		const float *pq = (const float *)((const char *)q->data + iq1 * q->nb[1] + iq2 * q->nb[2] + iq3 * q->nb[3]);
		for (int64_t c = 0; c < DC; c++) {
			_mm512_storeu_ps(b->q + r * D + 16 * c, _mm512_mul_ps(_mm512_loadu_ps(pq + 16 * c), vscale));
			_mm512_storeu_ps(b->o + r * D + 16 * c, _mm512_setzero_ps());
		}
		b->m[r] = -INFINITY;
		b->l[r] = 0.0f;
		mrow[r] = mask ? (const ggml_fp16_t *)((const char *)mask->data + iq1 * mask->nb[1] +
		                                       (iq2 % mask->ne[2]) * mask->nb[2] + (iq3 % mask->ne[3]) * mask->nb[3])
		               : NULL;
	}
	for (int64_t c0 = 0; c0 < nkv; c0 += GOGGML_FA_BK) {
		const int64_t nc = nkv - c0 < GOGGML_FA_BK ? nkv - c0 : GOGGML_FA_BK;
		// vis: bit r says row r sees a cell of the block. A block the mask
		// hides from every row is skipped, and so is a row it hides the
		// block from: in a batch of many sequences' tokens, each query
		// sees its own sequence's cells only. The heads of a block share
		// their mask rows (a mask broadcast over heads): each row is
		// looked at once.
		uint32_t vis = 0xFFFFFFFFu;
		if (mask) {
			vis = 0;
			for (int64_t r = 0; r < nr; r++) {
				if (r >= nq && mrow[r] == mrow[r - nq]) {
					vis |= ((vis >> (r - nq)) & 1u) << r;
				} else if (goggml_fa_sees(mrow[r], c0, nc)) {
					vis |= 1u << r;
				}
			}
			if (vis == 0) {
				continue;
			}
		}
		// K's cells, transposed 16 by 16, and V's, in f32; cells past nc
		// are zero.
		for (int64_t j0 = 0; j0 < GOGGML_FA_BK; j0 += 16) {
			for (int64_t cc = 0; cc < DC; cc++) {
				__m512 tile[16];
				for (int64_t j = j0; j < j0 + 16; j++) {
					if (j >= nc) {
						tile[j - j0] = _mm512_setzero_ps();
						_mm512_storeu_ps(b->v + j * D + 16 * cc, _mm512_setzero_ps());
						continue;
					}
					const char *pk = (const char *)k->data + (c0 + j) * k->nb[1] + ik2 * k->nb[2] + ik3 * k->nb[3];
					const char *pv = (const char *)v->data + (c0 + j) * v->nb[1] + iv2 * v->nb[2] + iv3 * v->nb[3];
					tile[j - j0] = goggml_fa_load16(pk, k->type, cc);
					_mm512_storeu_ps(b->v + j * D + 16 * cc, goggml_fa_load16(pv, v->type, cc));
				}
				goggml_fa_transpose16(tile, b->kt + 16 * cc * GOGGML_FA_BK + j0);
			}
		}
		for (int64_t r = 0; r < nr; r++) {
			if (((vis >> r) & 1u) == 0) {
				continue;
			}
			// Scores of row r: 64 cells in 4 vectors.
			__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
			const float *qr = b->q + r * D;
			for (int64_t d = 0; d < D; d++) {
				const __m512 qd = _mm512_set1_ps(qr[d]);
				const float *kd = b->kt + d * GOGGML_FA_BK;
				s0 = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kd), s0);
				s1 = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kd + 16), s1);
				s2 = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kd + 32), s2);
				s3 = _mm512_fmadd_ps(qd, _mm512_loadu_ps(kd + 48), s3);
			}
			__m512 sv[4] = {s0, s1, s2, s3};
			if (softcap > 0.0f) {
				for (int c = 0; c < 4; c++) {
					sv[c] = goggml_fa_cap(sv[c], softcap);
				}
			}
			__m512 vmax = _mm512_set1_ps(-INFINITY);
			for (int c = 0; c < 4; c++) {
				const int64_t j0 = 16 * c;
				const __mmask16 live = nc - j0 >= 16 ? (__mmask16)0xFFFF : nc - j0 <= 0 ? (__mmask16)0 : (__mmask16)((1u << (nc - j0)) - 1);
				if (mrow[r] != NULL && live != 0) {
					const __m512 mv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(live, mrow[r] + c0 + j0));
					sv[c] = _mm512_add_ps(sv[c], mv);
				}
				sv[c] = _mm512_mask_blend_ps(live, _mm512_set1_ps(-INFINITY), sv[c]);
				vmax = _mm512_max_ps(vmax, sv[c]);
			}
			const float bmax = _mm512_reduce_max_ps(vmax);
			if (bmax == -INFINITY) {
				continue; // every cell of the block hidden from this query
			}
			const float mnew = b->m[r] > bmax ? b->m[r] : bmax;
			const float alpha = expf(b->m[r] - mnew); // 0 for the first cells this row sees
			const __m512 vm = _mm512_set1_ps(mnew);
			__m512 vsum = _mm512_setzero_ps();
			float *p = b->s + r * GOGGML_FA_BK;
			for (int c = 0; c < 4; c++) {
				const __m512 e = goggml_fa_exp(_mm512_sub_ps(sv[c], vm));
				vsum = _mm512_add_ps(vsum, e);
				_mm512_storeu_ps(p + 16 * c, e);
			}
			b->l[r] = b->l[r] * alpha + _mm512_reduce_add_ps(vsum);
			b->m[r] = mnew;
			float *o = b->o + r * D;
			const __m512 va = _mm512_set1_ps(alpha);
			if (D == 64) {
				__m512 o0 = _mm512_mul_ps(_mm512_loadu_ps(o), va), o1 = _mm512_mul_ps(_mm512_loadu_ps(o + 16), va);
				__m512 o2 = _mm512_mul_ps(_mm512_loadu_ps(o + 32), va), o3 = _mm512_mul_ps(_mm512_loadu_ps(o + 48), va);
				for (int64_t j = 0; j < nc; j++) {
					if (p[j] == 0.0f) {
						continue;
					}
					const __m512 pj = _mm512_set1_ps(p[j]);
					const float *vj = b->v + j * 64;
					o0 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vj), o0);
					o1 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vj + 16), o1);
					o2 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vj + 32), o2);
					o3 = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vj + 48), o3);
				}
				_mm512_storeu_ps(o, o0);
				_mm512_storeu_ps(o + 16, o1);
				_mm512_storeu_ps(o + 32, o2);
				_mm512_storeu_ps(o + 48, o3);
			} else {
				for (int64_t cc = 0; cc < DC; cc++) {
					_mm512_storeu_ps(o + 16 * cc, _mm512_mul_ps(_mm512_loadu_ps(o + 16 * cc), va));
				}
				for (int64_t j = 0; j < nc; j++) {
					if (p[j] == 0.0f) {
						continue;
					}
					const __m512 pj = _mm512_set1_ps(p[j]);
					const float *vj = b->v + j * D;
					for (int64_t cc = 0; cc < DC; cc++) {
						_mm512_storeu_ps(o + 16 * cc, _mm512_fmadd_ps(pj, _mm512_loadu_ps(vj + 16 * cc), _mm512_loadu_ps(o + 16 * cc)));
					}
				}
			}
		}
	}
	// The rows, divided by their sums (0 where a row saw no cell), at
	// dst's permuted place: [D, heads, queries].
	const int64_t ne1 = dst->ne[1], ne2 = dst->ne[2];
	for (int64_t r = 0; r < nr; r++) {
		const int64_t iq1 = q0 + r % nq, iq2 = h0 + r / nq;
		const float inv = b->l[r] == 0.0f ? 0.0f : 1.0f / b->l[r];
		float *out = (float *)((char *)dst->data + (iq3 * ne2 * ne1 + iq2 + iq1 * ne1) * dst->nb[1]);
		const __m512 vi = _mm512_set1_ps(inv);
		for (int64_t cc = 0; cc < DC; cc++) {
			_mm512_storeu_ps(out + 16 * cc, _mm512_mul_ps(_mm512_loadu_ps(b->o + r * D + 16 * cc), vi));
		}
	}
}

// goggml_fa_batch splits the blocks between the threads, interleaved
// (later blocks of a causal mask see more cells). A block holds the heads
// that share a KV head (grouped-query attention: as many of them as fit
// in BQ rows) and as many queries as then fit: each block of K and V is
// converted once for all the rows that read it. A batch of many
// sequences' tokens gains most: a block of the cache belongs to one
// sequence, and its conversion serves that token's heads.
static void goggml_fa_batch(const struct ggml_compute_params *params, struct ggml_tensor *dst, float scale, float softcap) {
	const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2];
	const int64_t nq = q->ne[1];
	// The heads of one group: those that read the same K and V head.
	const int64_t gk = q->ne[2] / k->ne[2], gv = q->ne[2] / v->ne[2];
	int64_t bh = gk < GOGGML_FA_BQ ? gk : GOGGML_FA_BQ; // heads of a block
	while (gk % bh != 0 || gv % bh != 0) {
		bh--; // a block never straddles two groups (of K's or V's)
	}
	int64_t bq = GOGGML_FA_BQ / bh; // queries of a block
	if (nq < bq) {
		bq = nq;
	}
	const int64_t nqb = (nq + bq - 1) / bq, nhb = q->ne[2] / bh;
	const int64_t tasks = nqb * nhb * q->ne[3];
	if (params->ith >= tasks) {
		return;
	}
	const size_t D = (size_t)q->ne[0];
	float *mem = aligned_alloc(64, sizeof(float) * (2 * GOGGML_FA_BQ * D + 2 * GOGGML_FA_BK * D + GOGGML_FA_BQ * GOGGML_FA_BK));
	if (mem == NULL) {
		abort();
	}
	struct goggml_fa_buf b = {.q = mem, .kt = mem + GOGGML_FA_BQ * D};
	b.v = b.kt + GOGGML_FA_BK * D;
	b.s = b.v + GOGGML_FA_BK * D;
	b.o = b.s + GOGGML_FA_BQ * GOGGML_FA_BK;
	for (int64_t t = params->ith; t < tasks; t += params->nth) {
		const int64_t qb = t % nqb, hb = (t / nqb) % nhb, iq3 = t / (nqb * nhb);
		const int64_t q0 = qb * bq;
		const int64_t n = nq - q0 < bq ? nq - q0 : bq;
		goggml_fa_block(&b, dst, q0, n, hb * bh, bh, iq3, scale, softcap);
	}
	free(mem);
}

// goggml_own_avx512 (own_avx512.c) says whether the code above runs.
extern int goggml_own_avx512;
#endif

void goggml_compute_forward_flash_attn_ext(const struct ggml_compute_params *params, struct ggml_tensor *dst) {
#if defined(GOGGML_FATTN_AVX512)
	const struct ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
	float scale, max_bias, softcap;
	memcpy(&scale, (const float *)dst->op_params + 0, sizeof(float));
	memcpy(&max_bias, (const float *)dst->op_params + 1, sizeof(float));
	memcpy(&softcap, (const float *)dst->op_params + 2, sizeof(float));
	const int64_t D = k->ne[0];
	if (goggml_own_avx512 && q->type == GGML_TYPE_F32 && goggml_fa_type(k) && goggml_fa_type(v) &&
	    dst->type == GGML_TYPE_F32 && D % 16 == 0 && D <= GOGGML_FA_DMAX && v->ne[0] == D && q->ne[0] == D &&
	    q->nb[0] == sizeof(float) &&
	    dst->nb[0] == sizeof(float) && (mask == NULL || (mask->type == GGML_TYPE_F16 && mask->nb[0] == sizeof(ggml_fp16_t))) &&
	    dst->src[4] == NULL && max_bias == 0.0f && softcap >= 0.0f && q->ne[1] >= 1 && k->ne[2] > 0 && v->ne[2] > 0 &&
	    q->ne[2] % k->ne[2] == 0 && q->ne[2] % v->ne[2] == 0) {
		goggml_fa_batch(params, dst, scale, softcap);
		return;
	}
#endif
	ggml_compute_forward_flash_attn_ext(params, dst);
}
