// goggml.h: the one header every cgo package of go-ggml includes.
//
// It includes the provider's headers through the forwarding headers in
// goggml/ beside it, pins the ggml version this binding was written against, and absorbs the
// API differences between providers in a few static inline functions. Written
// for go-ggml; it contains no ggml code.
#ifndef GOGGML_H
#define GOGGML_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "goggml/fwd-ggml.h"
#include "goggml/fwd-ggml-alloc.h"
#include "goggml/fwd-ggml-backend.h"
#include "goggml/fwd-ggml-cpu.h"

// ---- version pin --------------------------------------------------------
// ggml has no version macro in its headers (the embedded provider compiles
// ggml_version() as "0x0"), so the pin checks the enums whose sizes change
// with every ggml release that adds a type or an op.
#if defined(GOGGML_SYSTEM)
#error "go-ggml: the ggml_system provider is not implemented yet; build without -tags ggml_system to use the embedded provider (github.com/ollama/ollama v0.17.4)."
#else
_Static_assert(GGML_TYPE_COUNT == 40,
	"go-ggml: unexpected ggml version: this go-ggml supports the ggml of github.com/ollama/ollama v0.17.4 (GGML_TYPE_COUNT 40)");
_Static_assert(GGML_OP_COUNT == 95,
	"go-ggml: unexpected ggml version: this go-ggml supports the ggml of github.com/ollama/ollama v0.17.4 (GGML_OP_COUNT 95)");
_Static_assert(GGML_UNARY_OP_COUNT == 22,
	"go-ggml: unexpected ggml version: this go-ggml supports the ggml of github.com/ollama/ollama v0.17.4 (GGML_UNARY_OP_COUNT 22)");
// The embedded provider's ggml_backend_graph_compute_async takes a batch-size
// hint that upstream ggml does not have.
_Static_assert(__builtin_types_compatible_p(__typeof__(&ggml_backend_graph_compute_async),
	enum ggml_status (*)(ggml_backend_t, struct ggml_cgraph *, int)),
	"go-ggml: unexpected ggml version: ggml_backend_graph_compute_async is not the one of github.com/ollama/ollama v0.17.4");
#define GOGGML_PROVIDER "embedded (github.com/ollama/ollama v0.17.4)"
#endif

// ---- API differences between providers -----------------------------------

// goggml_graph_compute_async starts a graph on a backend (no batch hint).
static inline enum ggml_status goggml_graph_compute_async(ggml_backend_t be, struct ggml_cgraph * g) {
#if defined(GOGGML_SYSTEM)
	return ggml_backend_graph_compute_async(be, g);
#else
	return ggml_backend_graph_compute_async(be, g, -1);
#endif
}

// ---- helpers shared by the binding ---------------------------------------

// goggml_abort_flag is an abort callback for backends that take one: it
// reports whether the int flag at data was set by the Go side (a goroutine
// watching ctx.Done()). It makes no call into Go.
static inline bool goggml_abort_flag(void * data) {
	return __atomic_load_n((int *)data, __ATOMIC_RELAXED) != 0;
}

// goggml_to_float runs a type's to-float conversion: cgo cannot call the
// function pointer in ggml_type_traits itself. The caller checks it is set.
static inline void goggml_to_float(enum ggml_type type, const void * x, float * y, int64_t n) {
	ggml_get_type_traits(type)->to_float(x, y, n);
}

// goggml_clamp_new builds a clamp node whose result is a tensor of its own:
// ggml_clamp makes the result a view of a, so computing it overwrites a.
// The CPU and GPU clamp kernels read src[0] and write the result, so either
// layout computes the same values. Written for go-ggml.
static inline struct ggml_tensor * goggml_clamp_new(struct ggml_context * ctx, struct ggml_tensor * a, float lo, float hi) {
	struct ggml_tensor * r = ggml_dup_tensor(ctx, a);
	float p[2] = {lo, hi};
	memcpy(r->op_params, p, sizeof(p));
	r->op = GGML_OP_CLAMP;
	r->src[0] = a;
	return r;
}

// Multi-buffers: exported by ggml-base but declared only in its internal
// header (src/ggml-backend-impl.h), which is not on our include path.
extern ggml_backend_buffer_t ggml_backend_multi_buffer_alloc_buffer(ggml_backend_buffer_t * buffers, size_t n_buffers);
extern bool ggml_backend_buffer_is_multi_buffer(ggml_backend_buffer_t buffer);
extern void ggml_backend_multi_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage);

#endif // GOGGML_H
