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

// ---- provider: where the headers are ---------------------------------------
// GOGGML_SYSTEM (build tag ggml_system; the define reaches every package
// through its generated provider_gen.go): an installed upstream ggml whose
// headers are on the include path that pkg-config gives. Otherwise the
// embedded provider's headers, which the forwarding headers find.
#if defined(GOGGML_SYSTEM)
#define GOGGML_HEADERS_ON_PATH 1
#endif

#include "goggml/fwd-ggml.h"
#include "goggml/fwd-ggml-alloc.h"
#include "goggml/fwd-ggml-backend.h"
#include "goggml/fwd-ggml-cpu.h"

// ---- version pin --------------------------------------------------------
// ggml has no version macro in its headers (the embedded provider compiles
// ggml_version() as "0x0"), so the pin checks the enums whose sizes change
// with every ggml release that adds a type or an op.
//
// The upstream release the system provider is pinned to, for messages
// (Go reads it through goggml_upstream_version: package bridge's
// UpstreamVersion).
#define GOGGML_UPSTREAM_VERSION "v0.21.0"
static inline const char *goggml_upstream_version(void) { return GOGGML_UPSTREAM_VERSION; }
#if defined(GOGGML_SYSTEM)
// The system provider: upstream ggml v0.21.0 (github.com/ggml-org/ggml, tag
// v0.21.0). A later release adds types or ops: the binding reads every enum
// value through cgo, but its checks were written against these counts.
_Static_assert(GGML_TYPE_COUNT == 43,
	"go-ggml: unexpected ggml version: this go-ggml supports upstream ggml v0.21.0 with -tags ggml_system (GGML_TYPE_COUNT 43)");
_Static_assert(GGML_OP_COUNT == 101,
	"go-ggml: unexpected ggml version: this go-ggml supports upstream ggml v0.21.0 with -tags ggml_system (GGML_OP_COUNT 101)");
_Static_assert(GGML_UNARY_OP_COUNT == 22,
	"go-ggml: unexpected ggml version: this go-ggml supports upstream ggml v0.21.0 with -tags ggml_system (GGML_UNARY_OP_COUNT 22)");
// Upstream's ggml_backend_graph_compute_async has no batch-size hint.
_Static_assert(__builtin_types_compatible_p(__typeof__(&ggml_backend_graph_compute_async),
	enum ggml_status (*)(ggml_backend_t, struct ggml_cgraph *)),
	"go-ggml: unexpected ggml version: ggml_backend_graph_compute_async is not the one of upstream ggml v0.21.0");
#define GOGGML_PROVIDER "system (upstream ggml v0.21.0, pkg-config)"
// What this provider has of the calls that only one provider offers: the
// Go side checks these (through cgo) and returns ErrUnsupported naming the
// provider that has the call.
#define GOGGML_HAVE_OLLAMA_EXTRAS 0 // attempted sizes, set_batch_size, dev_reset, extra device props
#define GOGGML_ARGSORT_I32 0 // upstream's CPU argsort sorts f32 only
// The layout of struct ggml_cgraph (src/ggml-impl.h, not installed), whose
// size ggml_graph_nbytes counts: upstream added a uid.
#define GOGGML_CGRAPH_UID 1
// ggml_conv_2d and ggml_conv_3d make an f16 Im2Col for an f32 kernel too
// (an f32 one only for bf16): b's values are rounded to f16.
#define GOGGML_CONV_IM2COL_F16 1
// ggml's CPU code is in libggml-cpu, built by ggml's CMake, not by cgo:
// go-ggml's build tags and flags do not reach it.
#define GOGGML_CPU_BUILT_BY_CGO 0
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
#define GOGGML_HAVE_OLLAMA_EXTRAS 1 // attempted sizes, set_batch_size, dev_reset, extra device props
#define GOGGML_ARGSORT_I32 1 // the CPU argsort sorts f32 and i32
#define GOGGML_CGRAPH_UID 0 // struct ggml_cgraph has no uid
#define GOGGML_CONV_IM2COL_F16 0 // conv_2d/conv_3d: an Im2Col of the kernel's type
#define GOGGML_CPU_BUILT_BY_CGO 1 // ggml's CPU code is compiled by go-ggml's cgo packages (internal/provider/embedded), its level set by build tag
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

// goggml_cgraph_layout mirrors struct ggml_cgraph (ggml-impl.h, a private
// header), whose size ggml_graph_nbytes counts: the binding computes graph
// sizes with overflow checks before ggml does (ggml/graphsize.go), and a
// test checks them against ggml_graph_overhead_custom.
struct goggml_cgraph_layout {
	int size, n_nodes, n_leafs;
	void * nodes, * grads, * grad_accs, * leafs, * use_counts;
	size_t hash_size;
	void * hash_used, * hash_keys;
	int order;
#if GOGGML_CGRAPH_UID
	uint64_t uid;
#endif
};

// goggml_graph_n_leafs and goggml_graph_leaf read a graph's leafs, which
// ggml's public API does not list (through the layout above).
static inline int goggml_graph_n_leafs(struct ggml_cgraph * g) {
	return ((struct goggml_cgraph_layout *) g)->n_leafs;
}
static inline struct ggml_tensor * goggml_graph_leaf(struct ggml_cgraph * g, int i) {
	return ((struct ggml_tensor **) ((struct goggml_cgraph_layout *) g)->leafs)[i];
}

// The embedded provider's extras (ollama's patches): on another provider
// these compile to a fallback that the Go side never reaches, for it checks
// GOGGML_HAVE_OLLAMA_EXTRAS first.
static inline size_t goggml_gallocr_get_attempted_buffer_size(ggml_gallocr_t galloc, int buffer_id) {
#if GOGGML_HAVE_OLLAMA_EXTRAS
	return ggml_gallocr_get_attempted_buffer_size(galloc, buffer_id);
#else
	(void)galloc; (void)buffer_id;
	return 0;
#endif
}
static inline size_t goggml_sched_get_attempted_buffer_size(ggml_backend_sched_t sched, ggml_backend_t be) {
#if GOGGML_HAVE_OLLAMA_EXTRAS
	return ggml_backend_sched_get_attempted_buffer_size(sched, be);
#else
	(void)sched; (void)be;
	return 0;
#endif
}
static inline void goggml_sched_set_batch_size(ggml_backend_sched_t sched, int batch_size) {
#if GOGGML_HAVE_OLLAMA_EXTRAS
	ggml_backend_sched_set_batch_size(sched, batch_size);
#else
	(void)sched; (void)batch_size;
#endif
}
static inline void goggml_dev_reset(ggml_backend_dev_t dev) {
#if GOGGML_HAVE_OLLAMA_EXTRAS
	ggml_backend_dev_reset(dev);
#else
	(void)dev;
#endif
}

// goggml_dev_props are the device properties of both providers: the fields
// only the embedded provider reports are zero (NULL) elsewhere.
struct goggml_dev_props {
	const char * id;
	int driver_major, driver_minor, compute_major, compute_minor;
	int integrated;
	const char * library;
};
static inline void goggml_dev_props_extra(const struct ggml_backend_dev_props * p, struct goggml_dev_props * e) {
	memset(e, 0, sizeof(*e));
#if GOGGML_HAVE_OLLAMA_EXTRAS
	e->id = p->id;
	e->driver_major = p->driver_major;
	e->driver_minor = p->driver_minor;
	e->compute_major = p->compute_major;
	e->compute_minor = p->compute_minor;
	e->integrated = p->integrated;
	e->library = p->library;
#else
	(void)p;
#endif
}

// goggml_ssm_scan is ggml_ssm_scan. Upstream's takes K, the number of
// states kept per sequence; the embedded provider's keeps the last state
// only (K = 1): the Go side refuses K > 1 there.
static inline struct ggml_tensor * goggml_ssm_scan(struct ggml_context * ctx, struct ggml_tensor * s,
		struct ggml_tensor * x, struct ggml_tensor * dt, struct ggml_tensor * A, struct ggml_tensor * B,
		struct ggml_tensor * C, struct ggml_tensor * ids, int64_t K) {
#if defined(GOGGML_SYSTEM)
	return ggml_ssm_scan(ctx, s, x, dt, A, B, C, ids, K);
#else
	(void)K;
	return ggml_ssm_scan(ctx, s, x, dt, A, B, C, ids);
#endif
}

// goggml_add1 and goggml_add1_inplace: upstream deprecates ggml_add1 (use
// ggml_add, which broadcasts); the binding keeps Add1, whose op is still
// GGML_OP_ADD1, without a warning in every build.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static inline struct ggml_tensor * goggml_add1(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
	return ggml_add1(ctx, a, b);
}
static inline struct ggml_tensor * goggml_add1_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
	return ggml_add1_inplace(ctx, a, b);
}
#pragma GCC diagnostic pop

// ---- RPC and the meta device (the system provider only) ------------------
// Upstream ggml has ggml's RPC backend (libggml-rpc, include/ggml-rpc.h)
// and the meta device (ggml-backend.h, src/ggml-backend-meta.cpp); the
// embedded provider has neither. The binding calls them through the
// goggml_rpc_* and goggml_meta_* functions below: on the embedded provider
// they compile to stubs that the Go side never reaches, for it checks
// GOGGML_HAVE_RPC and GOGGML_HAVE_META first and returns ErrUnsupported
// naming -tags ggml_system.
#if defined(GOGGML_SYSTEM)
#include <ggml-rpc.h>
#define GOGGML_HAVE_RPC 1
#define GOGGML_HAVE_META 1
#define GOGGML_RPC_PROTO_MAJOR RPC_PROTO_MAJOR_VERSION
#define GOGGML_RPC_PROTO_MINOR RPC_PROTO_MINOR_VERSION
#define GOGGML_RPC_PROTO_PATCH RPC_PROTO_PATCH_VERSION
_Static_assert(RPC_PROTO_MAJOR_VERSION == 5 && RPC_PROTO_MINOR_VERSION == 1,
	"go-ggml: unexpected ggml version: the rpc package speaks RPC protocol 5.1 (upstream ggml v0.21.0)");
typedef struct ggml_backend_meta_split_state goggml_split_state;
#define GOGGML_META_MAX_DEVICES GGML_BACKEND_META_MAX_DEVICES
#define GOGGML_SPLIT_MIRRORED GGML_BACKEND_SPLIT_AXIS_MIRRORED
#define GOGGML_SPLIT_PARTIAL GGML_BACKEND_SPLIT_AXIS_PARTIAL
#define GOGGML_DEVICE_TYPE_META GGML_BACKEND_DEVICE_TYPE_META
// Exported by ggml-base but declared only in its internal header.
extern bool ggml_backend_buffer_is_meta(ggml_backend_buffer_t buf);
extern bool ggml_backend_buft_is_meta(ggml_backend_buffer_type_t buft);
extern bool ggml_backend_is_meta(ggml_backend_t backend);
#else
#define GOGGML_HAVE_RPC 0
#define GOGGML_HAVE_META 0
#define GOGGML_RPC_PROTO_MAJOR 0
#define GOGGML_RPC_PROTO_MINOR 0
#define GOGGML_RPC_PROTO_PATCH 0
// The layout of upstream's struct ggml_backend_meta_split_state, so that
// the Go code compiles on both providers.
typedef struct {
	int axis;
	int64_t ne[16 * 16];
	uint32_t nr[16];
	uint32_t n_segments;
} goggml_split_state;
#define GOGGML_META_MAX_DEVICES 16
#define GOGGML_SPLIT_MIRRORED 10
#define GOGGML_SPLIT_PARTIAL 11
#define GOGGML_DEVICE_TYPE_META 4
#endif

static inline ggml_backend_reg_t goggml_rpc_add_server(const char * endpoint) {
#if GOGGML_HAVE_RPC
	return ggml_backend_rpc_add_server(endpoint);
#else
	(void)endpoint;
	return NULL;
#endif
}
static inline ggml_backend_buffer_type_t goggml_rpc_buffer_type(const char * endpoint, uint32_t device) {
#if GOGGML_HAVE_RPC
	return ggml_backend_rpc_buffer_type(endpoint, device);
#else
	(void)endpoint; (void)device;
	return NULL;
#endif
}
static inline void goggml_rpc_start_server(const char * endpoint, const char * cache_dir, size_t n_threads,
		size_t n_devices, ggml_backend_dev_t * devices) {
#if GOGGML_HAVE_RPC
	ggml_backend_rpc_start_server(endpoint, cache_dir, n_threads, n_devices, devices);
#else
	(void)endpoint; (void)cache_dir; (void)n_threads; (void)n_devices; (void)devices;
#endif
}
static inline ggml_backend_reg_t goggml_rpc_reg(void) {
#if GOGGML_HAVE_RPC
	return ggml_backend_rpc_reg();
#else
	return NULL;
#endif
}
static inline bool goggml_backend_is_rpc(ggml_backend_t be) {
#if GOGGML_HAVE_RPC
	return ggml_backend_is_rpc(be);
#else
	(void)be;
	return false;
#endif
}

// goggml_meta_split_cb is the meta device's split function: a trampoline
// (defined in package backend) to the Go function of the device whose
// cgo.Handle is ud.
extern goggml_split_state goggml_meta_split_cb(const struct ggml_tensor * t, void * ud);

static inline ggml_backend_dev_t goggml_meta_device(ggml_backend_dev_t * devs, size_t n, void * ud) {
#if GOGGML_HAVE_META
	return ggml_backend_meta_device(devs, n, goggml_meta_split_cb, ud);
#else
	(void)devs; (void)n; (void)ud;
	return NULL;
#endif
}
static inline bool goggml_buffer_is_meta(ggml_backend_buffer_t buf) {
#if GOGGML_HAVE_META
	return buf != NULL && ggml_backend_buffer_is_meta(buf);
#else
	(void)buf;
	return false;
#endif
}
static inline bool goggml_buft_is_meta(ggml_backend_buffer_type_t buft) {
#if GOGGML_HAVE_META
	return buft != NULL && ggml_backend_buft_is_meta(buft);
#else
	(void)buft;
	return false;
#endif
}
static inline bool goggml_backend_is_meta(ggml_backend_t be) {
#if GOGGML_HAVE_META
	return be != NULL && ggml_backend_is_meta(be);
#else
	(void)be;
	return false;
#endif
}

// ---- what only upstream ggml has (the system provider) -------------------
// Upstream ggml v0.21.0 has 2-D tensor transfers, the mmap capability of a
// device, more ops and more types than the embedded provider. The binding
// calls them through the goggml_* functions below: on the embedded provider
// they compile to stubs that the Go side never reaches, for it checks
// GOGGML_HAVE_UPSTREAM first and returns ErrUnsupported naming
// -tags ggml_system. The new types get their upstream numbers everywhere
// (the numbers GGUF files store); the embedded provider's ggml does not
// know them (they are >= its GGML_TYPE_COUNT).
#if defined(GOGGML_SYSTEM)
#define GOGGML_HAVE_UPSTREAM 1
#define GOGGML_TYPE_NVFP4 GGML_TYPE_NVFP4
#define GOGGML_TYPE_Q1_0 GGML_TYPE_Q1_0
#define GOGGML_TYPE_Q2_0 GGML_TYPE_Q2_0
#define GOGGML_OP_COL2IM_1D GGML_OP_COL2IM_1D
#define GOGGML_OP_GATED_DELTA_NET GGML_OP_GATED_DELTA_NET
#define GOGGML_OP_LIGHTNING_INDEXER GGML_OP_LIGHTNING_INDEXER
#define GOGGML_OP_DSV4_HC_COMB GGML_OP_DSV4_HC_COMB
#define GOGGML_OP_DSV4_HC_PRE GGML_OP_DSV4_HC_PRE
#define GOGGML_OP_DSV4_HC_POST GGML_OP_DSV4_HC_POST
_Static_assert(GGML_TYPE_NVFP4 == 40 && GGML_TYPE_Q1_0 == 41 && GGML_TYPE_Q2_0 == 42,
	"go-ggml: unexpected ggml version: the type numbers of upstream ggml v0.21.0");
#else
#define GOGGML_HAVE_UPSTREAM 0
#define GOGGML_TYPE_NVFP4 40
#define GOGGML_TYPE_Q1_0 41
#define GOGGML_TYPE_Q2_0 42
// No op of the embedded provider has these numbers (they are negative).
#define GOGGML_OP_COL2IM_1D (-1)
#define GOGGML_OP_GATED_DELTA_NET (-2)
#define GOGGML_OP_LIGHTNING_INDEXER (-3)
#define GOGGML_OP_DSV4_HC_COMB (-4)
#define GOGGML_OP_DSV4_HC_PRE (-5)
#define GOGGML_OP_DSV4_HC_POST (-6)
#endif

static inline void goggml_tensor_set_2d(struct ggml_tensor * t, const void * data, size_t offset, size_t size,
		size_t n, size_t stride_tensor, size_t stride_data) {
#if GOGGML_HAVE_UPSTREAM
	ggml_backend_tensor_set_2d(t, data, offset, size, n, stride_tensor, stride_data);
#else
	(void)t; (void)data; (void)offset; (void)size; (void)n; (void)stride_tensor; (void)stride_data;
#endif
}
static inline void goggml_tensor_get_2d(const struct ggml_tensor * t, void * data, size_t offset, size_t size,
		size_t n, size_t stride_tensor, size_t stride_data) {
#if GOGGML_HAVE_UPSTREAM
	ggml_backend_tensor_get_2d(t, data, offset, size, n, stride_tensor, stride_data);
#else
	(void)t; (void)data; (void)offset; (void)size; (void)n; (void)stride_tensor; (void)stride_data;
#endif
}
static inline void goggml_tensor_set_2d_async(ggml_backend_t be, struct ggml_tensor * t, const void * data, size_t offset,
		size_t size, size_t n, size_t stride_tensor, size_t stride_data) {
#if GOGGML_HAVE_UPSTREAM
	ggml_backend_tensor_set_2d_async(be, t, data, offset, size, n, stride_tensor, stride_data);
#else
	(void)be; (void)t; (void)data; (void)offset; (void)size; (void)n; (void)stride_tensor; (void)stride_data;
#endif
}
static inline void goggml_tensor_get_2d_async(ggml_backend_t be, const struct ggml_tensor * t, void * data, size_t offset,
		size_t size, size_t n, size_t stride_tensor, size_t stride_data) {
#if GOGGML_HAVE_UPSTREAM
	ggml_backend_tensor_get_2d_async(be, t, data, offset, size, n, stride_tensor, stride_data);
#else
	(void)be; (void)t; (void)data; (void)offset; (void)size; (void)n; (void)stride_tensor; (void)stride_data;
#endif
}

// goggml_caps_mmap is a device's mmap_support capability (false where the
// provider's ggml does not report one).
static inline bool goggml_caps_mmap(const struct ggml_backend_dev_props * p) {
#if GOGGML_HAVE_UPSTREAM
	return p->caps.mmap_support;
#else
	(void)p;
	return false;
#endif
}

static inline struct ggml_tensor * goggml_col2im_1d(struct ggml_context * ctx, struct ggml_tensor * a, int s0, int oc, int p0) {
#if GOGGML_HAVE_UPSTREAM
	return ggml_col2im_1d(ctx, a, s0, oc, p0);
#else
	(void)ctx; (void)a; (void)s0; (void)oc; (void)p0;
	return NULL;
#endif
}
static inline struct ggml_tensor * goggml_gated_delta_net(struct ggml_context * ctx, struct ggml_tensor * q,
		struct ggml_tensor * k, struct ggml_tensor * v, struct ggml_tensor * g, struct ggml_tensor * beta,
		struct ggml_tensor * state, int64_t K) {
#if GOGGML_HAVE_UPSTREAM
	return ggml_gated_delta_net(ctx, q, k, v, g, beta, state, K);
#else
	(void)ctx; (void)q; (void)k; (void)v; (void)g; (void)beta; (void)state; (void)K;
	return NULL;
#endif
}
static inline struct ggml_tensor * goggml_lightning_indexer(struct ggml_context * ctx, struct ggml_tensor * q,
		struct ggml_tensor * k, struct ggml_tensor * weights, struct ggml_tensor * mask) {
#if GOGGML_HAVE_UPSTREAM
	return ggml_lightning_indexer(ctx, q, k, weights, mask);
#else
	(void)ctx; (void)q; (void)k; (void)weights; (void)mask;
	return NULL;
#endif
}
static inline struct ggml_tensor * goggml_dsv4_hc_comb(struct ggml_context * ctx, struct ggml_tensor * mixes,
		struct ggml_tensor * scale, struct ggml_tensor * base, float eps, int32_t n_iter) {
#if GOGGML_HAVE_UPSTREAM
	return ggml_dsv4_hc_comb(ctx, mixes, scale, base, eps, n_iter);
#else
	(void)ctx; (void)mixes; (void)scale; (void)base; (void)eps; (void)n_iter;
	return NULL;
#endif
}
static inline struct ggml_tensor * goggml_dsv4_hc_pre(struct ggml_context * ctx, struct ggml_tensor * x, struct ggml_tensor * w) {
#if GOGGML_HAVE_UPSTREAM
	return ggml_dsv4_hc_pre(ctx, x, w);
#else
	(void)ctx; (void)x; (void)w;
	return NULL;
#endif
}
static inline struct ggml_tensor * goggml_dsv4_hc_post(struct ggml_context * ctx, struct ggml_tensor * x,
		struct ggml_tensor * residual, struct ggml_tensor * post, struct ggml_tensor * comb) {
#if GOGGML_HAVE_UPSTREAM
	return ggml_dsv4_hc_post(ctx, x, residual, post, comb);
#else
	(void)ctx; (void)x; (void)residual; (void)post; (void)comb;
	return NULL;
#endif
}

// ---- extra buffer types (both providers) ------------------------------------

// goggml_dev_extra_bufts returns the NULL-terminated list of dev's extra
// buffer types (its registry's "ggml_backend_dev_get_extra_bufts"), NULL
// when the registry has no such function. fn is that function.
typedef ggml_backend_buffer_type_t * (*goggml_dev_get_extra_bufts_t)(ggml_backend_dev_t);
static inline ggml_backend_buffer_type_t * goggml_call_extra_bufts(void * fn, ggml_backend_dev_t dev) {
	return ((goggml_dev_get_extra_bufts_t)fn)(dev);
}

// goggml_cpu_extra_bufts returns the CPU device's extra buffer types,
// NULL-terminated (never NULL: an empty list where there are none). ggml
// makes the list once per process; it is looked up once per cgo package
// (a race between two first calls stores the same pointer).
static inline ggml_backend_buffer_type_t * goggml_cpu_extra_bufts(void) {
	static ggml_backend_buffer_type_t none[1] = {NULL};
	static ggml_backend_buffer_type_t * list = NULL;
	ggml_backend_buffer_type_t * l = __atomic_load_n(&list, __ATOMIC_ACQUIRE);
	if (l != NULL) {
		return l;
	}
	ggml_backend_reg_t reg = ggml_backend_cpu_reg();
	void * fn = ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
	l = fn != NULL ? goggml_call_extra_bufts(fn, ggml_backend_reg_dev_get(reg, 0)) : NULL;
	if (l == NULL) {
		l = none;
	}
	__atomic_store_n(&list, l, __ATOMIC_RELEASE);
	return l;
}

// goggml_buft_is_cpu_extra reports whether buft is one of the CPU device's
// extra buffer types (repacked weights, AMX): their buffers re-lay a tensor
// as it is set, whole, and cannot give it back (no get_tensor).
static inline bool goggml_buft_is_cpu_extra(ggml_backend_buffer_type_t buft) {
	if (buft == NULL) {
		return false;
	}
	for (ggml_backend_buffer_type_t * l = goggml_cpu_extra_bufts(); *l != NULL; l++) {
		if (*l == buft) {
			return true;
		}
	}
	return false;
}

// goggml_buffer_cpu_extra returns the type of buf when it is one of the
// CPU's extra buffer types, else NULL: one cgo call for a transfer's check.
static inline ggml_backend_buffer_type_t goggml_buffer_cpu_extra(ggml_backend_buffer_t buf) {
	if (buf == NULL) {
		return NULL;
	}
	ggml_backend_buffer_type_t buft = ggml_backend_buffer_get_type(buf);
	return goggml_buft_is_cpu_extra(buft) ? buft : NULL;
}

// goggml_supports_op_in_buft reports whether dev computes op with op's
// source src placed in a buffer of type buft, as llama.cpp's loader asks
// (weight_buft_supported): the question is put to copies of op and of the
// source whose buffer is an empty one of type buft marked as weights, so
// the caller's tensors are never changed.
static inline bool goggml_supports_op_in_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft,
		const struct ggml_tensor * op, int src) {
	ggml_backend_buffer_t dummy = ggml_backend_buft_alloc_buffer(buft, 0);
	if (dummy == NULL) {
		return false;
	}
	ggml_backend_buffer_set_usage(dummy, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
	struct ggml_tensor w = *op->src[src];
	struct ggml_tensor o = *op;
	w.buffer = dummy;
	o.src[src] = &w;
	bool ok = ggml_backend_dev_supports_op(dev, &o);
	ggml_backend_buffer_free(dummy);
	return ok;
}

// goggml_extra_takes_tensor reports whether a tensor like t may be placed
// in buft, one of the CPU's extra buffer types: the type must compute the
// matrix products that read t whole (MUL_MAT of a 2-D t, MUL_MAT_ID of a 3-D
// one), asked of copies as goggml_supports_op_in_buft does. Other tensors
// would be stored in part, or past their allocation (the AMX type sizes a
// tensor by its first two dimensions, and packs no row of a tensor shorter
// than a tile). Written for go-ggml.
static inline bool goggml_extra_takes_tensor(ggml_backend_buffer_type_t buft, const struct ggml_tensor * t) {
	ggml_backend_dev_t dev = ggml_backend_buft_get_device(buft);
	if (dev == NULL || t->ne[3] != 1) {
		return false;
	}
	bool id = t->ne[2] != 1;
	struct ggml_tensor x, ids, op;
	memset(&x, 0, sizeof x);
	memset(&ids, 0, sizeof ids);
	memset(&op, 0, sizeof op);
	x.type = GGML_TYPE_F32;
	x.ne[0] = t->ne[0]; x.ne[1] = 1; x.ne[2] = 1; x.ne[3] = 1;
	x.nb[0] = sizeof(float); x.nb[1] = x.nb[0] * x.ne[0]; x.nb[2] = x.nb[1]; x.nb[3] = x.nb[2];
	ids.type = GGML_TYPE_I32;
	ids.ne[0] = 1; ids.ne[1] = 1; ids.ne[2] = 1; ids.ne[3] = 1;
	ids.nb[0] = sizeof(int32_t); ids.nb[1] = ids.nb[0]; ids.nb[2] = ids.nb[1]; ids.nb[3] = ids.nb[2];
	op.op = id ? GGML_OP_MUL_MAT_ID : GGML_OP_MUL_MAT;
	op.type = GGML_TYPE_F32;
	op.ne[0] = t->ne[1]; op.ne[1] = 1; op.ne[2] = 1; op.ne[3] = 1;
	op.nb[0] = sizeof(float); op.nb[1] = op.nb[0] * op.ne[0]; op.nb[2] = op.nb[1]; op.nb[3] = op.nb[2];
	op.src[0] = (struct ggml_tensor *) t;
	op.src[1] = &x;
	if (id) {
		op.src[2] = &ids;
	}
	return goggml_supports_op_in_buft(dev, buft, &op, 0);
}

// goggml_graph_extra_view returns the first tensor of graph g (a node or a
// node's source) that is a view of a tensor in one of the CPU's extra
// buffer types, or NULL: ggml would read the re-laid bytes through it as if
// they were the tensor's own layout (wrong numbers), or call a read the
// buffer does not have. Written for go-ggml.
static inline struct ggml_tensor * goggml_graph_extra_view(struct ggml_cgraph * g) {
	int n = ggml_graph_n_nodes(g);
	for (int i = 0; i < n; i++) {
		struct ggml_tensor * node = ggml_graph_node(g, i);
		for (int j = -1; j < GGML_MAX_SRC; j++) {
			struct ggml_tensor * t = j < 0 ? node : node->src[j];
			if (t != NULL && t->view_src != NULL && t->view_src->buffer != NULL &&
					goggml_buffer_cpu_extra(t->view_src->buffer) != NULL) {
				return t;
			}
		}
	}
	return NULL;
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
