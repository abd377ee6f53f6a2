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
#include <vector>

#include "ggml-backend.h"
#include "traits.h" // ggml-cpu's extra buffer type interface (and ggml-backend-impl.h)

ggml_backend_buffer_type_t ggml_backend_amx_buffer_type(void);

namespace {

// amx_guard stands between ggml-cpu and the AMX buffer type's own answers:
// it widens the products the type accepts (supports_op). The products run
// in package cpuamx's driver (amx_mmq.cpp: the activations quantized by
// every thread, and the provider's kernel corrected where it gets q4_0 and
// q4_1 wrong).
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
		return inner_->get_tensor_traits(op);
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
