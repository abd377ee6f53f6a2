package bench

/*
// The peak FMA loop is compiled at the CPU level of the ggml it is read
// against (internal/provider/embedded/cpu's flags, by the same tags): the
// default build's x86-64-v3, ggml_native's native, ggml_portable's v2;
// -O3, so that the chains' accumulators live in registers (at cgo's
// default -O2 gcc keeps the array in memory, and the loop measures
// store forwarding, a quarter of the FMA units' rate).
#cgo CFLAGS: -O3
#cgo amd64,!ggml_native,!ggml_portable CFLAGS: -march=x86-64-v3 -mtune=generic
#cgo amd64,ggml_portable CFLAGS: -march=x86-64-v2 -mtune=generic
#cgo amd64,ggml_native CFLAGS: -march=native
#cgo arm64,linux,!ggml_native,!ggml_portable CFLAGS: -march=armv8.2-a+fp16+dotprod
#cgo arm64,ggml_native CFLAGS: -mcpu=native
#cgo noescape cb_nbytes_noescape
#cgo nocallback cb_nbytes_noescape
#include "goggml.h"
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Per-call: n calls of a trivial query in a C loop.
static int64_t cb_nelements_loop(struct ggml_tensor *t, int64_t n) {
	int64_t s = 0;
	for (int64_t i = 0; i < n; i++) {
		s += ggml_nelements(t) ^ i;
		__asm__ volatile("" : "+r"(s));
	}
	return s;
}
static size_t cb_nbytes(struct ggml_tensor *t) { return ggml_nbytes(t); }
static size_t cb_nbytes_noescape(struct ggml_tensor *t) { return ggml_nbytes(t); }
static int64_t cb_nbytes_loop(struct ggml_tensor *t, int64_t n) {
	int64_t s = 0;
	for (int64_t i = 0; i < n; i++) {
		s += (int64_t)ggml_nbytes(t);
		__asm__ volatile("" : "+r"(s));
	}
	return s;
}

// Graph building: the same layer stack as the Go benchmark.
struct cb_weights { struct ggml_tensor *norm, *wq, *wk, *wv, *wo, *w1, *w2; };

static int cb_build_graph(struct cb_weights w, int64_t d, int64_t T, int layers, int graph_size) {
	size_t mem = ggml_tensor_overhead() * (size_t)(layers * 32 + 8) + ggml_graph_overhead_custom(graph_size, false);
	struct ggml_init_params p = { mem, NULL, true };
	struct ggml_context *ctx = ggml_init(p);
	struct ggml_tensor *cur = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, d, T);
	for (int l = 0; l < layers; l++) {
		struct ggml_tensor *h = ggml_mul(ctx, cur, w.norm);
		struct ggml_tensor *q = ggml_mul_mat(ctx, w.wq, h);
		struct ggml_tensor *k = ggml_mul_mat(ctx, w.wk, h);
		struct ggml_tensor *v = ggml_mul_mat(ctx, w.wv, h);
		struct ggml_tensor *kq = ggml_soft_max_ext(ctx, ggml_mul_mat(ctx, k, q), NULL, 0.125f, 0.0f);
		struct ggml_tensor *vt = ggml_cont(ctx, ggml_transpose(ctx, v));
		struct ggml_tensor *o = ggml_mul_mat(ctx, w.wo, ggml_mul_mat(ctx, vt, kq));
		cur = ggml_add(ctx, cur, o);
		struct ggml_tensor *ff = ggml_mul_mat(ctx, w.w2, ggml_silu(ctx, ggml_mul_mat(ctx, w.w1, cur)));
		cur = ggml_add(ctx, cur, ff);
	}
	struct ggml_cgraph *g = ggml_new_graph_custom(ctx, graph_size, false);
	ggml_build_forward_expand(g, cur);
	int n = ggml_graph_n_nodes(g);
	ggml_free(ctx);
	return n;
}

// Transfer baselines: memcpy of the same bytes through one cgo call each
// (what any Go caller of C pays), and ggml_backend_tensor_set/_get in a C
// loop (ggml driven from C: no cgo call per transfer).
static void cb_memcpy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
static void cb_tensor_set_loop(struct ggml_tensor *t, const void *src, size_t n, int64_t iters) {
	for (int64_t i = 0; i < iters; i++) {
		ggml_backend_tensor_set(t, src, 0, n);
		__asm__ volatile("" ::: "memory");
	}
}
static void cb_tensor_get_loop(struct ggml_tensor *t, void *dst, size_t n, int64_t iters) {
	for (int64_t i = 0; i < iters; i++) {
		ggml_backend_tensor_get(t, dst, 0, n);
		__asm__ volatile("" ::: "memory");
	}
}

// Compute baseline: the same graph on the same backend, straight from C.
static int cb_compute(ggml_backend_t be, struct ggml_cgraph *g) { return (int)ggml_backend_graph_compute(be, g); }

// Scheduler baseline: a scheduler over the one backend, made and run from
// C with the options sched.Options{} gives (not parallel, no op offload,
// ggml's default graph size).
static ggml_backend_sched_t cb_sched_new(ggml_backend_t be) {
	ggml_backend_t bs[1] = { be };
	return ggml_backend_sched_new(bs, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, false);
}
static int cb_sched_compute(ggml_backend_sched_t s, struct ggml_cgraph *g) { return (int)ggml_backend_sched_graph_compute(s, g); }

// Quantize rows of floats into dst (for the quantized weights of both sides).
static size_t cb_quantize(enum ggml_type t, const float *src, void *dst, int64_t nrows, int64_t n_per_row) {
	return ggml_quantize_chunk(t, src, dst, 0, nrows, n_per_row, NULL);
}

// GGUF load baseline: plain reads of a whole file into fresh memory of the
// kind ggml's CPU buffers are (posix_memalign), which is then freed.
// Returns the bytes read, -1 on error.
static int64_t cb_read_file(const char *path, int64_t size) {
	int fd = open(path, O_RDONLY);
	if (fd < 0) return -1;
	void *buf = NULL;
	if (posix_memalign(&buf, 64, (size_t)size) != 0) { close(fd); return -1; }
	int64_t done = 0;
	while (done < size) {
		ssize_t n = read(fd, (char *)buf + done, (size_t)(size - done) < (1u << 30) ? (size_t)(size - done) : (1u << 30));
		if (n <= 0) break;
		done += n;
	}
	close(fd);
	free(buf);
	return done;
}

// The f32 peak: independent FMA chains on every core.
static double cb_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
#define CB_CHAINS 12
static void *cb_fma_thread(void *arg) {
	int64_t iters = *(int64_t *)arg;
	float sink = 0;
#if defined(__AVX512F__)
	__m512 acc[CB_CHAINS], a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
	for (int j = 0; j < CB_CHAINS; j++) acc[j] = _mm512_set1_ps((float)j);
	for (int64_t i = 0; i < iters; i++)
		for (int j = 0; j < CB_CHAINS; j++) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
	for (int j = 0; j < CB_CHAINS; j++) sink += _mm512_reduce_add_ps(acc[j]);
#elif defined(__AVX2__) && defined(__FMA__)
	__m256 acc[CB_CHAINS], a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
	for (int j = 0; j < CB_CHAINS; j++) acc[j] = _mm256_set1_ps((float)j);
	for (int64_t i = 0; i < iters; i++)
		for (int j = 0; j < CB_CHAINS; j++) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
	float tmp[8];
	for (int j = 0; j < CB_CHAINS; j++) { _mm256_storeu_ps(tmp, acc[j]); for (int k = 0; k < 8; k++) sink += tmp[k]; }
#else
	float acc[CB_CHAINS];
	for (int j = 0; j < CB_CHAINS; j++) acc[j] = (float)j;
	for (int64_t i = 0; i < iters; i++)
		for (int j = 0; j < CB_CHAINS; j++) acc[j] = acc[j] * 0.999999f + 1e-7f;
	for (int j = 0; j < CB_CHAINS; j++) sink += acc[j];
#endif
	*(float *)arg = sink;
	return NULL;
}
static int cb_simd_lanes(void) {
#if defined(__AVX512F__)
	return 16;
#elif defined(__AVX2__) && defined(__FMA__)
	return 8;
#else
	return 1;
#endif
}
// Returns GFLOPS over n threads (2 flops per lane per FMA).
static double cb_peak_gflops(int nthreads, int64_t iters) {
	pthread_t th[64];
	int64_t args[64];
	if (nthreads > 64) nthreads = 64;
	double t0 = cb_now();
	for (int i = 0; i < nthreads; i++) { args[i] = iters; pthread_create(&th[i], NULL, cb_fma_thread, &args[i]); }
	for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
	double dt = cb_now() - t0;
	return (double)nthreads * iters * CB_CHAINS * cb_simd_lanes() * 2.0 / dt / 1e9;
}
*/
import "C"

import (
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	_ "github.com/go-ggml/ggml/internal/provider"
)

// These wrap the C baselines for the benchmarks (test files cannot use cgo).

func cTensor(t *ggml.Tensor) *C.struct_ggml_tensor {
	p, err := bridge.View[bridge.Tensor](t).Ptr()
	if err != nil {
		panic(err)
	}
	return (*C.struct_ggml_tensor)(p)
}

func cNelementsLoop(t *ggml.Tensor, n int) int64 {
	return int64(C.cb_nelements_loop(cTensor(t), C.int64_t(n)))
}
func cNbytesLoop(t *ggml.Tensor, n int) int64 {
	return int64(C.cb_nbytes_loop(cTensor(t), C.int64_t(n)))
}

// cgoNbytes is one cgo call per query, as a binding without Go-side
// caching would make; cgoNbytesNoescape the same with #cgo noescape and
// nocallback.
func cgoNbytes(t *C.struct_ggml_tensor) uint64         { return uint64(C.cb_nbytes(t)) }
func cgoNbytesNoescape(t *C.struct_ggml_tensor) uint64 { return uint64(C.cb_nbytes_noescape(t)) }

type cWeights = C.struct_cb_weights

func cBuildGraph(w []*ggml.Tensor, d, T int64, layers, graphSize int) int {
	cw := C.struct_cb_weights{norm: cTensor(w[0]), wq: cTensor(w[1]), wk: cTensor(w[2]), wv: cTensor(w[3]), wo: cTensor(w[4]), w1: cTensor(w[5]), w2: cTensor(w[6])}
	return int(C.cb_build_graph(cw, C.int64_t(d), C.int64_t(T), C.int(layers), C.int(graphSize)))
}

// cgoBuildGraph builds cb_build_graph's stack from Go with one cgo call
// per ggml call and nothing else: no checks, no handles, no mirror. It is
// what any cgo binding that calls ggml op by op pays at least: the floor
// under the binding's GraphBuild figure.
func cgoBuildGraph(ws []*ggml.Tensor, d, T int64, layers, graphSize int) int {
	mem := C.ggml_tensor_overhead()*C.size_t(layers*32+8) + C.ggml_graph_overhead_custom(C.size_t(graphSize), false)
	ctx := C.ggml_init(C.struct_ggml_init_params{mem_size: mem, mem_buffer: nil, no_alloc: true})
	norm, wq, wk, wv, wo, w1, w2 := cTensor(ws[0]), cTensor(ws[1]), cTensor(ws[2]), cTensor(ws[3]), cTensor(ws[4]), cTensor(ws[5]), cTensor(ws[6])
	cur := C.ggml_new_tensor_2d(ctx, C.GGML_TYPE_F32, C.int64_t(d), C.int64_t(T))
	for range layers {
		h := C.ggml_mul(ctx, cur, norm)
		q, k, v := C.ggml_mul_mat(ctx, wq, h), C.ggml_mul_mat(ctx, wk, h), C.ggml_mul_mat(ctx, wv, h)
		kq := C.ggml_soft_max_ext(ctx, C.ggml_mul_mat(ctx, k, q), nil, 0.125, 0)
		vt := C.ggml_cont(ctx, C.ggml_transpose(ctx, v))
		o := C.ggml_mul_mat(ctx, wo, C.ggml_mul_mat(ctx, vt, kq))
		cur = C.ggml_add(ctx, cur, o)
		ff := C.ggml_mul_mat(ctx, w2, C.ggml_silu(ctx, C.ggml_mul_mat(ctx, w1, cur)))
		cur = C.ggml_add(ctx, cur, ff)
	}
	g := C.ggml_new_graph_custom(ctx, C.size_t(graphSize), false)
	C.ggml_build_forward_expand(g, cur)
	n := int(C.ggml_graph_n_nodes(g))
	C.ggml_free(ctx)
	runtime.KeepAlive(ws)
	return n
}

func cMemcpy(dst, src unsafe.Pointer, n int) { C.cb_memcpy(dst, src, C.size_t(n)) }

// cTensorSetLoop calls ggml_backend_tensor_set(t, src, 0, n) iters times
// from C; cTensorGetLoop the same with ggml_backend_tensor_get.
func cTensorSetLoop(t *ggml.Tensor, src unsafe.Pointer, n, iters int) {
	C.cb_tensor_set_loop(cTensorPtr(t), src, C.size_t(n), C.int64_t(iters))
	runtime.KeepAlive(t)
}

func cTensorGetLoop(t *ggml.Tensor, dst unsafe.Pointer, n, iters int) {
	C.cb_tensor_get_loop(cTensorPtr(t), dst, C.size_t(n), C.int64_t(iters))
	runtime.KeepAlive(t)
}

func cCompute(be, g unsafe.Pointer) int {
	return int(C.cb_compute(C.ggml_backend_t(be), (*C.struct_ggml_cgraph)(g)))
}

// cSched is a scheduler made from C over one backend (cSchedNew), for the
// baseline of the Sched figure.
type cSched struct{ s C.ggml_backend_sched_t }

func cSchedNew(be unsafe.Pointer) cSched { return cSched{C.cb_sched_new(C.ggml_backend_t(be))} }

func (s cSched) compute(g unsafe.Pointer) int {
	return int(C.cb_sched_compute(s.s, (*C.struct_ggml_cgraph)(g)))
}

func (s cSched) free() { C.ggml_backend_sched_free(s.s) }

func cQuantize(t int, src []float32, dst []byte, nrows, perRow int64) int {
	return int(C.cb_quantize(C.enum_ggml_type(t), (*C.float)(unsafe.Pointer(&src[0])), unsafe.Pointer(&dst[0]), C.int64_t(nrows), C.int64_t(perRow)))
}

func cPeakGFLOPS(threads int, iters int64) float64 {
	return float64(C.cb_peak_gflops(C.int(threads), C.int64_t(iters)))
}

// cReadFile reads the file at path, size bytes, with plain reads into fresh
// memory, and returns the bytes read (-1 on error).
func cReadFile(path string, size int64) int64 {
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	return int64(C.cb_read_file(cp, C.int64_t(size)))
}

func cSIMDLanes() int { return int(C.cb_simd_lanes()) }

// cTensorPtr is for benchmarks that call C directly on a tensor.
func cTensorPtr(t *ggml.Tensor) *C.struct_ggml_tensor { return cTensor(t) }
