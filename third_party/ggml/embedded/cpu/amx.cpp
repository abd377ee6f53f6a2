//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

// amx.cpp: puts ggml's AMX buffer type (package cpuamx, compiled for
// Sapphire Rapids) among the CPU device's extra buffer types where the CPU
// has every extension that package was compiled for and Linux grants the
// AMX tile state; elsewhere none of that code runs. Called once from
// package cpu's Go init (amx_amd64.go), after every C constructor and
// before any ggml call of go-ggml's. Written for go-ggml; it contains no
// ggml code.
//
// Upstream's CMake build for an AMX CPU compiles ggml-cpu.cpp with
// __AMX_INT8__, and ggml_backend_cpu_get_extra_buffer_types then starts
// with the AMX type. This build compiles ggml-cpu.cpp for x86-64-v3, so the
// type is added here, at the same place (first), to the same vector: ggml's
// device lists it (ggml_backend_dev_get_extra_bufts copies the vector on
// its first call, which comes later), and its compute asks each type of the
// vector whether it computes a node (ggml_cpu_extra_compute_forward).

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <immintrin.h>
#include <algorithm>
#include <vector>

#include "ggml-backend.h"
#include "traits.h" // ggml-cpu's extra buffer type interface (and ggml-backend-impl.h)

ggml_backend_buffer_type_t ggml_backend_amx_buffer_type(void);
extern "C" void ggml_barrier(struct ggml_threadpool *tp);

namespace {

// The provider's AMX kernel for q4_0 and q4_1 weights gets blocks of
// exactly 32 rows wrong, in one place: in mmq.cpp's branch for
// M == 2 * TILE_M, the first K block (i = 0) of the second tile of 16
// columns is multiplied with the first tile's weights (it unpacks B_blk0
// where it means B_blk1; fixed upstream since). The scales it applies are
// the right tile's, and every later K block is right. Every other block of
// rows takes a branch that is right.
//
// So a product of these types is computed by the provider's kernel whole,
// and then each wrong entry gets the difference added (amx_fix): for every
// full block of 32 rows m and every block of 32 columns, columns 16..31 of
// the block get d_A[m] * d_B[n] * sum over the first 32 k of
// a[m][k] * (right[n][k] - used[n][k]), with the weights decoded as the
// kernel unpacks them and A quantized as the kernel left it in the work
// buffer. That is one K block's work for half the entries, done with
// AVX-512 VNNI: about 1 % of a q4_0 prompt (1b, 512 tokens), where
// splitting the product into chunks of 31 rows (what go-ggml did before)
// kept the kernel from its pipelined 32-row branch and cost about a fifth.

// Sizes of the provider's AMX layout (amx/common.h and mmq.cpp): tiles of
// 16 x 16 results, K blocks of 32; a packed tile of q4_0 is 16 columns'
// nibbles (256 bytes) then their 16 fp16 scales (q4_1: and 16 fp16 mins).
constexpr int amx_tile = 16;
constexpr int amx_kblock = 32;
constexpr size_t amx_nibbles = amx_tile * amx_kblock / 2;
// amx_fix_rows is the rows of a chunk of amx_fixed: a multiple of 32, the
// result's rows small enough to stay in the L2 cache between the kernel
// and the fix (64 x 8192 floats: 2 MiB).
constexpr int64_t amx_fix_rows = 64;

bool amx_needs_fix(const struct ggml_tensor *op) {
	return op->op == GGML_OP_MUL_MAT && op->src[0] != nullptr && op->src[1] != nullptr &&
	       (op->src[0]->type == GGML_TYPE_Q4_0 || op->src[0]->type == GGML_TYPE_Q4_1) &&
	       op->ne[1] >= 2 * amx_tile;
}

// amx_fix adds the differences for the blocks of columns [nb0, nb1) of
// op's result, for every full block of 32 rows. wdata is A as the kernel
// quantized it: rows of KB blocks of q8_0 (for q4_0: fp16 d, 32 qs) or
// q8_1 (for q4_1: fp16 d, fp16 s, 32 qs).
//
// A packed tile's first K block is laid out for VNNI: row j (of 8) holds,
// for each of the 16 columns n, the weights of k = 4j .. 4j+3 in bytes
// 4n .. 4n+3, as the low nibbles (j even) or the high nibbles (j odd) of
// the 64 bytes from (j & ~1) * 32. q4_0's weights are those nibbles less
// 8, q4_1's the nibbles: either way the difference of two weights is the
// difference of their nibbles, so vpdpbusd multiplies the nibbles
// (unsigned) by A's quants (signed), four k at a time, column n in lane n.
__attribute__((target("avx512f,avx512bw,avx512vnni,f16c"))) static void
amx_fix(const struct ggml_tensor *op, const char *wdata, int64_t nb0, int64_t nb1) {
	const struct ggml_tensor *w = op->src[0];
	const bool q4_0 = w->type == GGML_TYPE_Q4_0;
	const int64_t M = op->ne[1];
	const int64_t KB = w->ne[0] / amx_kblock;
	const size_t tile_size = amx_tile * (q4_0 ? 18 : 20);
	const size_t a_block = q4_0 ? 34 : 36;
	const size_t a_qs = q4_0 ? 2 : 4;
	const size_t a_row = (size_t)KB * a_block;
	const int64_t full = M / (2 * amx_tile) * (2 * amx_tile); // rows in full blocks
	const size_t ldc = op->nb[1];
	const __m512i low = _mm512_set1_epi8(0xF);
	for (int64_t nb = nb0; nb < nb1; nb++) {
		const uint8_t *used = (const uint8_t *)w->data + (size_t)(nb * 2) * KB * tile_size;
		const uint8_t *right = (const uint8_t *)w->data + (size_t)(nb * 2 + 1) * KB * tile_size;
		__m512i u[8], r[8]; // the nibbles of each row j of the two tiles
		for (int j = 0; j < 8; j += 2) {
			const __m512i bu = _mm512_loadu_si512((const void *)(used + j * 32));
			const __m512i br = _mm512_loadu_si512((const void *)(right + j * 32));
			u[j] = _mm512_and_si512(bu, low);
			r[j] = _mm512_and_si512(br, low);
			u[j + 1] = _mm512_and_si512(_mm512_srli_epi16(bu, 4), low);
			r[j + 1] = _mm512_and_si512(_mm512_srli_epi16(br, 4), low);
		}
		const __m512 d_b = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(right + amx_nibbles)));
		for (int64_t m = 0; m < full; m++) {
			const char *a = wdata + (size_t)m * a_row; // the row's first K block
			uint16_t d_a_bits;
			memcpy(&d_a_bits, a, 2);
			const char *qs = a + a_qs;
			__m512i acc_r = _mm512_setzero_si512(), acc_u = _mm512_setzero_si512();
			for (int j = 0; j < 8; j++) {
				int32_t four;
				memcpy(&four, qs + 4 * j, 4);
				const __m512i a4 = _mm512_set1_epi32(four);
				acc_r = _mm512_dpbusd_epi32(acc_r, r[j], a4);
				acc_u = _mm512_dpbusd_epi32(acc_u, u[j], a4);
			}
			const __m512i diff = _mm512_sub_epi32(acc_r, acc_u);
			float *c = (float *)((char *)op->data + (size_t)m * ldc) + nb * 2 * amx_tile + amx_tile;
			const __m512 scale = _mm512_mul_ps(d_b, _mm512_set1_ps(_cvtsh_ss(d_a_bits)));
			_mm512_storeu_ps(c, _mm512_fmadd_ps(_mm512_cvtepi32_ps(diff), scale, _mm512_loadu_ps(c)));
		}
	}
}

// amx_fixed computes a product that amx_needs_fix selects with the AMX
// buffer's own traits (inner), amx_fix_rows rows of src1 and of the result
// at a time, fixing each chunk's rows right after the kernel wrote them,
// while they are still in the cache (a pass over the whole result after
// the product cost twice as much on Sapphire Rapids for the FFN's 8192
// columns). Every thread runs every chunk, as ggml's compute runs a node
// on each thread. Each chunk's rows of src1, quantized by thread 0 at the
// start of the kernel, go to their own place in the work buffer (the
// kernel asks room for all rows of the product), so that thread 0 can
// quantize the next chunk while others still fix this one; the barrier
// after a chunk's kernel makes sure every block is computed before any
// thread fixes it.
class amx_fixed : public ggml::cpu::tensor_traits {
      public:
	bool work_size(int n_threads, const struct ggml_tensor *op, size_t &size) override {
		return inner(op)->work_size(n_threads, op, size);
	}
	bool compute_forward(struct ggml_compute_params *params, struct ggml_tensor *op) override {
		ggml::cpu::tensor_traits *in = inner(op);
		size_t wsize = 0;
		in->work_size(params->nth, op, wsize);
		const int64_t m = op->ne[1];
		const size_t row = wsize / (size_t)m; // the work buffer's bytes per row of src1
		const struct ggml_tensor *src1 = op->src[1];
		const int64_t NB = op->ne[0] / (2 * amx_tile);
		const int64_t nb0 = NB * params->ith / params->nth;
		const int64_t nb1 = NB * (params->ith + 1) / params->nth;
		for (int64_t m0 = 0; m0 < m; m0 += amx_fix_rows) {
			const int64_t mc = std::min(amx_fix_rows, m - m0);
			struct ggml_tensor s = *src1;
			s.ne[1] = mc;
			s.data = (char *)src1->data + m0 * src1->nb[1];
			struct ggml_tensor d = *op;
			d.ne[1] = mc;
			d.data = (char *)op->data + m0 * op->nb[1];
			d.src[1] = &s;
			struct ggml_compute_params p = *params;
			p.wdata = (char *)params->wdata + (size_t)m0 * row;
			p.wsize = params->wsize - (size_t)m0 * row;
			if (!in->compute_forward(&p, &d)) {
				return false;
			}
			if (mc >= 2 * amx_tile) {
				ggml_barrier(params->threadpool); // every block of the chunk computed
				amx_fix(&d, (const char *)p.wdata, nb0, nb1);
			}
		}
		return true;
	}

      private:
	static ggml::cpu::tensor_traits *inner(const struct ggml_tensor *op) {
		return static_cast<ggml::cpu::tensor_traits *>(op->src[0]->extra);
	}
};

// amx_guard stands between ggml-cpu and the AMX buffer type's own answers:
// the products that amx_needs_fix selects go to amx_fixed, everything else to
// ggml's AMX code.
class amx_guard : public ggml::cpu::extra_buffer_type {
      public:
	explicit amx_guard(ggml::cpu::extra_buffer_type *inner) : inner_(inner) {}
	// supports_op takes what the provider's own check takes and also
	// quantized rows whose length is a multiple of the type's block (32
	// values, 256 for the k-quants and iq4_xs) rather than of 2048, as
	// upstream's check does since: the kernels walk K block by block
	// (TestExtraBufferTypesMulMat checks such shapes against float64).
	bool supports_op(ggml_backend_dev_t dev, const struct ggml_tensor *op) override {
		if (inner_->supports_op(dev, op)) {
			return true;
		}
		if (op->op != GGML_OP_MUL_MAT) {
			return false;
		}
		const struct ggml_tensor *w = op->src[0], *x = op->src[1];
		if (w->buffer == nullptr || w->buffer->buft != ggml_backend_amx_buffer_type() || x->type != GGML_TYPE_F32 ||
		    (x->buffer != nullptr && !ggml_backend_buft_is_host(x->buffer->buft))) {
			return false;
		}
		for (const struct ggml_tensor *t : {w, x}) {
			if (!ggml_is_contiguous(t) || t->ne[2] != 1 || t->ne[3] != 1) {
				return false; // the provider's kernels take one 2-D product
			}
		}
		int64_t block = 0;
		switch (w->type) {
		case GGML_TYPE_Q4_0:
		case GGML_TYPE_Q4_1:
		case GGML_TYPE_Q8_0:
			block = 32;
			break;
		case GGML_TYPE_Q4_K:
		case GGML_TYPE_Q5_K:
		case GGML_TYPE_Q6_K:
		case GGML_TYPE_IQ4_XS:
			block = 256;
			break;
		default: // f16 too: the provider's rule (rows of 2048) decides it
			return false;
		}
		return op->ne[0] % 32 == 0 && w->ne[0] % block == 0;
	}
	ggml::cpu::tensor_traits *get_tensor_traits(const struct ggml_tensor *op) override {
		ggml::cpu::tensor_traits *t = inner_->get_tensor_traits(op);
		if (t != nullptr && amx_needs_fix(op)) {
			static amx_fixed fixed;
			return &fixed;
		}
		return t;
	}

      private:
	ggml::cpu::extra_buffer_type *inner_;
};

} // namespace

extern "C" {

// goggml_amx_state says what goggml_amx_register found: 0 not run yet,
// 1 in use, 2 the CPU lacks an extension, 3 the OS refused the tile state,
// 4 turned off by GOGGML_NO_AMX, 5 ggml's buffer type refused.
int goggml_amx_state = 0;

// The extensions of -march=sapphirerapids that compiled code can use
// (AVX-512 and its extensions, the vector AES/GF/CLMUL ones, AVX-VNNI, AMX),
// with the OS saving their registers where __builtin_cpu_supports checks it.
static bool goggml_cpu_has_amx_level(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
	       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
	       __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512fp16") &&
	       __builtin_cpu_supports("avx512ifma") && __builtin_cpu_supports("avx512vbmi") &&
	       __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("avx512bitalg") &&
	       __builtin_cpu_supports("avx512vpopcntdq") && __builtin_cpu_supports("gfni") &&
	       __builtin_cpu_supports("vaes") && __builtin_cpu_supports("vpclmulqdq") &&
	       __builtin_cpu_supports("avxvnni") && __builtin_cpu_supports("amx-tile") &&
	       __builtin_cpu_supports("amx-int8") && __builtin_cpu_supports("amx-bf16");
}

// goggml_amx_register runs once (Go's package init is single-threaded).
void goggml_amx_register(void) {
	if (goggml_amx_state != 0) {
		return;
	}
	const char *off = getenv("GOGGML_NO_AMX");
	if (off != NULL && *off != 0 && strcmp(off, "0") != 0) {
		goggml_amx_state = 4;
		return;
	}
	if (!goggml_cpu_has_amx_level()) {
		goggml_amx_state = 2;
		return;
	}
	// ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, asked here first so that
	// a refusal is quiet (ggml's own request prints to stderr).
	if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) {
		goggml_amx_state = 3;
		return;
	}
	ggml_backend_buffer_type_t amx = ggml_backend_amx_buffer_type();
	if (amx == NULL) {
		goggml_amx_state = 5;
		return;
	}
	// ggml's AMX buffer type is one static object, its context what
	// ggml-cpu asks (supports_op, and the traits that compute a node): put
	// the guard in front of it (once).
	amx->context = new amx_guard(static_cast<ggml::cpu::extra_buffer_type *>(amx->context));
	std::vector<ggml_backend_buffer_type_t> &bufts = ggml_backend_cpu_get_extra_buffer_types();
	bufts.insert(bufts.begin(), amx);
	goggml_amx_state = 1;
}

} // extern "C"
