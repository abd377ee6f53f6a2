// llamacpp_bench.c: the llama.cpp side of the Llama example's benchmark
// pairs (bench_llamacpp_test.go), driven as llama.cpp's own llama-bench
// drives it: the prebuilt CPU libraries of the npm package
// @node-llama-cpp/linux-x64 3.22.1 (the CPU variant picked at run time by
// ggml_backend_load_all_from_path), the model mapped, a context with a
// thread pool of its own (llama_attach_threadpool, poll 50 as llama-bench's
// default), flash attention as llama.cpp decides (auto), an f16 cache.
// build/llamacpp.sh compiles it against the headers of the same llama.cpp
// release (the source bundle node-llama-cpp ships), in a cache outside
// the repository. Written for go-ggml.
//
// Usage: llamacpp_bench <lib dir> <model.gguf> <threads> <ctx> <batch> [seqs]
// (seqs: the context's n_seq_max, 1 by default; its cache split among
// them, llama.cpp's default kv_unified false). Then commands on standard
// input, one a line; each answers with the nanoseconds of llama.cpp's
// work:
//
//	pp N      clear the cache, decode N prompt tokens in one batch  -> "ok <ns>"
//	tg P N    clear, decode P prompt tokens (not timed), then N
//	          tokens one at a time, each the greedy choice (the
//	          largest logit) after the last                        -> "ok <ns>"
//	tgd P N   tg at depth P: the first P-1 prompt tokens stay in the
//	          cache from the last tgd P (decoded in batches the first
//	          time), the rest is removed (llama_memory_seq_rm), token P
//	          is decoded (not timed), then N tokens as tg does     -> "ok <ns>"
//	par S P N clear, decode P prompt tokens of each of S sequences in
//	          one batch (not timed), then N batches of S tokens, one a
//	          sequence, each its greedy choice after its last, as
//	          llama-batched-bench decodes                          -> "ok <ns>"
//	quit
//
// Prompt tokens come from a fixed generator below the vocabulary size.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint32_t state = 12345;

static void tokens(llama_token *out, int n, int vocab) {
	for (int i = 0; i < n; i++) {
		state = state * 1103515245u + 12345u;
		out[i] = (llama_token)((state >> 1) % (uint32_t)vocab);
	}
}

static int argmax(const float *v, int n) {
	int best = 0;
	for (int i = 1; i < n; i++) {
		if (v[i] > v[best]) {
			best = i;
		}
	}
	return best;
}

static void quiet(enum ggml_log_level level, const char *text, void *data) {
	(void)data;
	if (level == GGML_LOG_LEVEL_ERROR) {
		fputs(text, stderr);
	}
}

// generate decodes n tokens one at a time, each the largest logit after
// the last decode's, and returns the nanoseconds they took, or -1 when a
// decode failed.
static int64_t generate(struct llama_context *ctx, int n, int n_vocab) {
	llama_synchronize(ctx);
	const int64_t t0 = now_ns();
	for (int i = 0; i < n; i++) {
		llama_token t = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
		if (llama_decode(ctx, llama_batch_get_one(&t, 1)) != 0) {
			return -1;
		}
	}
	llama_synchronize(ctx);
	return now_ns() - t0;
}

// parallel decodes p prompt tokens of each of s sequences in one batch,
// then n batches of one token a sequence, each its greedy choice, and
// returns the nanoseconds of the n batches, or -1 when a decode failed.
static int64_t parallel(struct llama_context *ctx, int s, int p, int n, int n_vocab, llama_token *buf) {
	llama_memory_clear(llama_get_memory(ctx), false);
	struct llama_batch b = llama_batch_init(s * p > s ? s * p : s, 0, 1);
	tokens(buf, s * p, n_vocab);
	b.n_tokens = 0;
	for (int q = 0; q < s; q++) {
		for (int i = 0; i < p; i++) {
			const int k = b.n_tokens++;
			b.token[k] = buf[q * p + i];
			b.pos[k] = i;
			b.n_seq_id[k] = 1;
			b.seq_id[k][0] = q;
			b.logits[k] = i == p - 1;
		}
	}
	int64_t ns = -1;
	if (llama_decode(ctx, b) == 0) {
		llama_synchronize(ctx);
		const int64_t t0 = now_ns();
		int ok = 1;
		for (int step = 0; step < n && ok; step++) {
			// Logits of output i are sequence i's, in the batch's order.
			for (int q = 0; q < s; q++) {
				buf[q] = argmax(llama_get_logits_ith(ctx, step == 0 ? (q + 1) * p - 1 : q), n_vocab);
			}
			b.n_tokens = s;
			for (int q = 0; q < s; q++) {
				b.token[q] = buf[q];
				b.pos[q] = p + step;
				b.n_seq_id[q] = 1;
				b.seq_id[q][0] = q;
				b.logits[q] = 1;
			}
			ok = llama_decode(ctx, b) == 0;
		}
		llama_synchronize(ctx);
		if (ok) {
			ns = now_ns() - t0;
		}
	}
	llama_batch_free(b);
	return ns;
}

int main(int argc, char **argv) {
	if (argc != 6 && argc != 7) {
		fprintf(stderr, "usage: %s <lib dir> <model.gguf> <threads> <ctx> <batch> [seqs]\n", argv[0]);
		return 2;
	}
	const int threads = atoi(argv[3]), n_ctx = atoi(argv[4]), n_batch = atoi(argv[5]);
	const int n_seq = argc == 7 ? atoi(argv[6]) : 1;
	llama_log_set(quiet, NULL);
	ggml_backend_load_all_from_path(argv[1]);
	llama_backend_init();

	struct llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = 0;
	struct llama_model *model = llama_model_load_from_file(argv[2], mp);
	if (model == NULL) {
		fprintf(stderr, "llamacpp_bench: cannot load %s\n", argv[2]);
		return 1;
	}
	struct llama_context_params cp = llama_context_default_params();
	cp.n_ctx = (uint32_t)n_ctx;
	cp.n_batch = cp.n_ubatch = (uint32_t)n_batch;
	cp.n_threads = cp.n_threads_batch = threads;
	cp.n_seq_max = (uint32_t)n_seq;
	cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
	cp.type_k = cp.type_v = GGML_TYPE_F16;
	struct llama_context *ctx = llama_init_from_model(model, cp);
	if (ctx == NULL) {
		fprintf(stderr, "llamacpp_bench: cannot make a context\n");
		return 1;
	}

	// The thread pool, as llama-bench makes it.
	ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
	ggml_backend_reg_t reg = cpu ? ggml_backend_dev_backend_reg(cpu) : NULL;
	typedef struct ggml_threadpool *(*tp_new_t)(struct ggml_threadpool_params *);
	typedef void (*tp_free_t)(struct ggml_threadpool *);
	tp_new_t tp_new = reg ? (tp_new_t)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new") : NULL;
	tp_free_t tp_free = reg ? (tp_free_t)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free") : NULL;
	if (tp_new == NULL || tp_free == NULL) {
		fprintf(stderr, "llamacpp_bench: the CPU backend has no thread pool calls\n");
		return 1;
	}
	struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
	tpp.poll = 50;
	struct ggml_threadpool *tp = tp_new(&tpp);
	if (tp == NULL) {
		fprintf(stderr, "llamacpp_bench: cannot make a thread pool\n");
		return 1;
	}
	llama_attach_threadpool(ctx, tp, NULL);

	const struct llama_vocab *vocab = llama_model_get_vocab(model);
	const int n_vocab = llama_vocab_n_tokens(vocab);
	llama_token *buf = malloc(sizeof(llama_token) * (size_t)n_ctx);
	char desc[128];
	llama_model_desc(model, desc, sizeof desc);
	printf("ready %s, %s\n", desc, llama_print_system_info());
	fflush(stdout);

	char line[256];
	int kept = 0; // prompt tokens of tgd in the cache
	while (fgets(line, sizeof line, stdin) != NULL) {
		int a = 0, b = 0, c = 0;
		int64_t ns = -1;
		if (sscanf(line, "tgd %d %d", &a, &b) == 2 && a > 1 && b > 0 && a + b <= n_ctx) {
			llama_memory_t mem = llama_get_memory(ctx);
			int ok = 1;
			if (kept != a - 1) {
				llama_memory_clear(mem, false);
				tokens(buf, a, n_vocab);
				for (int i = 0; i < a - 1 && ok; i += n_batch) {
					const int n = a - 1 - i < n_batch ? a - 1 - i : n_batch;
					ok = llama_decode(ctx, llama_batch_get_one(buf + i, n)) == 0;
				}
				kept = ok ? a - 1 : 0;
			}
			ok = ok && llama_memory_seq_rm(mem, 0, a - 1, -1);
			ok = ok && llama_decode(ctx, llama_batch_get_one(buf + a - 1, 1)) == 0;
			if (ok) {
				ns = generate(ctx, b, n_vocab);
			}
		} else if (sscanf(line, "pp %d", &a) == 1 && a > 0 && a <= n_batch && a <= n_ctx) {
			kept = 0;
			llama_memory_clear(llama_get_memory(ctx), false);
			tokens(buf, a, n_vocab);
			int64_t t0 = now_ns();
			if (llama_decode(ctx, llama_batch_get_one(buf, a)) == 0) {
				llama_synchronize(ctx);
				ns = now_ns() - t0;
			}
		} else if (sscanf(line, "tg %d %d", &a, &b) == 2 && a > 0 && b > 0 && a <= n_batch && a + b <= n_ctx) {
			kept = 0;
			llama_memory_clear(llama_get_memory(ctx), false);
			tokens(buf, a, n_vocab);
			if (llama_decode(ctx, llama_batch_get_one(buf, a)) == 0) {
				ns = generate(ctx, b, n_vocab);
			}
		} else if (sscanf(line, "par %d %d %d", &a, &b, &c) == 3 && a > 0 && a <= n_seq && b > 0 && a * b <= n_batch &&
		           a * (b + c) <= n_ctx && c > 0) {
			kept = 0;
			ns = parallel(ctx, a, b, c, n_vocab, buf);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
		if (ns < 0) {
			printf("error %s", line);
		} else {
			printf("ok %lld\n", (long long)ns);
		}
		fflush(stdout);
	}
	free(buf);
	llama_free(ctx);
	tp_free(tp);
	llama_model_free(model);
	llama_backend_free();
	return 0;
}
