// llamacpp_run.c: llama.cpp as the reference of the architectures' tests
// (model/modeltest's StartLlamaCpp): the prebuilt CPU libraries of the npm
// package @node-llama-cpp/linux-x64 3.22.1 (the CPU variant picked at run
// time by ggml_backend_load_all_from_path), the model mapped, no layer on
// a GPU, flash attention as llama.cpp decides (auto), an f16 cache (or
// the type of the optional fifth argument: f16 or f32).
// build/llamacpp.sh compiles it against the headers of the same llama.cpp
// release (the source bundle node-llama-cpp ships), in a cache outside
// the repository. Written for go-ggml.
//
// Usage: llamacpp_run <lib dir> <model.gguf> <threads> <ctx>
// It prints "ready <n_vocab> <n_embd_out> <description>", then answers
// commands on standard input, one a line:
//
//	gen N id...          clear the cache, decode the prompt ids in one
//	                     batch, then choose N tokens greedily (the first
//	                     largest logit of the last decode's), decoding
//	                     each but the last one at a time
//	                       -> "ok t1 ... tN\ngaps g1 ... gN\n": gi is the
//	                          largest logit less the second largest at
//	                          step i, how near the choice was to a tie
//	logits id...         clear, decode the ids in one batch with the
//	                     logits of every token
//	                       -> "ok\n" and one line of n_vocab logits a token
//	embd POOLING id...   clear, decode the ids in a context with
//	                     embeddings on and POOLING (mean, cls, last or
//	                     none; one context a pooling, made at its first
//	                     use), the pooled embedding of sequence 0
//	                     (llama_get_embeddings_seq)
//	                       -> "ok e1 ... en\n"; with none, every token's
//	                          embedding (llama_get_embeddings_ith), token
//	                          by token, on the one line
//	quit
//
// Numbers are written with %.9g: a float's value exactly. A command that
// fails answers "err <message>" and the next command is read.

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static struct llama_model *model;
static struct llama_context *gen_ctx;        // logits, no embeddings
static struct llama_context *embd_ctx[4];    // by enum llama_pooling_type, NONE to LAST
static int n_threads, n_ctx, n_vocab, n_embd;
static enum ggml_type cache_type = GGML_TYPE_F16;

static void quiet(enum ggml_log_level level, const char *text, void *data) {
	(void)data;
	if (level == GGML_LOG_LEVEL_ERROR) {
		fputs(text, stderr);
	}
}

// new_context makes a context of n_ctx cells that decodes up to n_ctx
// tokens in one batch, with embeddings on and pooling pool when embd is
// set.
static struct llama_context *new_context(int embd, enum llama_pooling_type pool) {
	struct llama_context_params cp = llama_context_default_params();
	cp.n_ctx = (uint32_t)n_ctx;
	cp.n_batch = cp.n_ubatch = (uint32_t)n_ctx;
	cp.n_threads = cp.n_threads_batch = n_threads;
	cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
	cp.type_k = cp.type_v = cache_type;
	cp.embeddings = embd != 0;
	if (embd) {
		cp.pooling_type = pool;
	}
	return llama_init_from_model(model, cp);
}

// fail answers "err <message>".
static void fail(const char *msg) {
	printf("err %s\n", msg);
}

// parse_ids reads the blank-separated token ids of s into ids (which holds
// max) and returns how many, or -1 (with the answer given) when one is not
// a number, is outside the vocabulary or there are too many.
static int parse_ids(char *s, llama_token *ids, int max) {
	int n = 0;
	for (char *w = strtok(s, " \t\r\n"); w != NULL; w = strtok(NULL, " \t\r\n")) {
		char *end;
		long v = strtol(w, &end, 10);
		if (*end != 0 || v < 0 || v >= n_vocab) {
			printf("err token %s: want an id below %d\n", w, n_vocab);
			return -1;
		}
		if (n == max) {
			printf("err more than %d tokens\n", max);
			return -1;
		}
		ids[n++] = (llama_token)v;
	}
	return n;
}

// decode clears ctx's memory and decodes the n ids in one batch, as
// sequence 0 from position 0, with the logits (or embeddings) of every
// token when all is set, else of the last. It returns 0, or -1 with the
// answer given.
static int decode(struct llama_context *ctx, const llama_token *ids, int n, int all) {
	if (n == 0) {
		fail("no tokens");
		return -1;
	}
	llama_memory_clear(llama_get_memory(ctx), true);
	struct llama_batch b = llama_batch_init(n, 0, 1);
	for (int i = 0; i < n; i++) {
		b.token[i] = ids[i];
		b.pos[i] = i;
		b.n_seq_id[i] = 1;
		b.seq_id[i][0] = 0;
		b.logits[i] = all || i == n - 1;
	}
	b.n_tokens = n;
	int rc = llama_decode(ctx, b);
	llama_batch_free(b);
	if (rc != 0) {
		printf("err llama_decode returned %d\n", rc);
		return -1;
	}
	return 0;
}

// top2 returns the first index of the largest of v's n values and sets
// *gap to the largest less the second largest (0 for a tie).
static int top2(const float *v, int n, double *gap) {
	int best = 0;
	float second = -INFINITY;
	for (int i = 1; i < n; i++) {
		if (v[i] > v[best]) {
			second = v[best];
			best = i;
		} else if (v[i] > second) {
			second = v[i];
		}
	}
	*gap = (double)v[best] - (double)second;
	return best;
}

static void gen(char *args, llama_token *ids) {
	char *rest;
	long steps = strtol(args, &rest, 10);
	if (rest == args || steps < 1) {
		fail("gen: want a count of tokens to generate, then the prompt");
		return;
	}
	int n = parse_ids(rest, ids, n_ctx);
	if (n < 0) {
		return;
	}
	if (n + steps - 1 > n_ctx) {
		printf("err %d prompt tokens and %ld generated do not fit a context of %d\n", n, steps, n_ctx);
		return;
	}
	if (decode(gen_ctx, ids, n, 0) != 0) {
		return;
	}
	llama_token *out = malloc(sizeof(llama_token) * (size_t)steps);
	double *gaps = malloc(sizeof(double) * (size_t)steps);
	for (long i = 0; i < steps; i++) {
		out[i] = top2(llama_get_logits_ith(gen_ctx, -1), n_vocab, &gaps[i]);
		if (i + 1 < steps) {
			int rc = llama_decode(gen_ctx, llama_batch_get_one(&out[i], 1));
			if (rc != 0) {
				printf("err llama_decode of generated token %ld returned %d\n", i, rc);
				free(out);
				free(gaps);
				return;
			}
		}
	}
	printf("ok");
	for (long i = 0; i < steps; i++) {
		printf(" %d", out[i]);
	}
	printf("\ngaps");
	for (long i = 0; i < steps; i++) {
		printf(" %.9g", gaps[i]);
	}
	printf("\n");
	free(out);
	free(gaps);
}

// command returns the arguments of line when its first word is name,
// else NULL.
static char *command(char *line, const char *name) {
	size_t n = strlen(name);
	if (strncmp(line, name, n) != 0 || strchr(" \t\r\n", line[n]) == NULL || line[n] == 0) {
		return NULL;
	}
	return line + n;
}

static void print_floats(const float *v, int n) {
	for (int i = 0; i < n; i++) {
		printf(i == 0 ? "%.9g" : " %.9g", v[i]);
	}
}

static void logits(char *args, llama_token *ids) {
	int n = parse_ids(args, ids, n_ctx);
	if (n < 0 || decode(gen_ctx, ids, n, 1) != 0) {
		return;
	}
	printf("ok\n");
	for (int i = 0; i < n; i++) {
		print_floats(llama_get_logits_ith(gen_ctx, i), n_vocab);
		printf("\n");
	}
}

static void embd(char *args, llama_token *ids) {
	static const char *names[] = {"none", "mean", "cls", "last"};
	char *name = strtok(args, " \t\r\n");
	int pool = -1;
	for (int i = 0; name != NULL && i < 4; i++) {
		if (strcmp(name, names[i]) == 0) {
			pool = i; // LLAMA_POOLING_TYPE_NONE, _MEAN, _CLS, _LAST
		}
	}
	if (pool < 0) {
		fail("embd: want a pooling of none, mean, cls or last, then the ids");
		return;
	}
	char *rest = strtok(NULL, "");
	int n = rest == NULL ? 0 : parse_ids(rest, ids, n_ctx);
	if (n < 0) {
		return;
	}
	if (embd_ctx[pool] == NULL) {
		embd_ctx[pool] = new_context(1, (enum llama_pooling_type)pool);
		if (embd_ctx[pool] == NULL) {
			printf("err cannot make a context with embeddings and pooling %s\n", name);
			return;
		}
	}
	struct llama_context *ctx = embd_ctx[pool];
	if (decode(ctx, ids, n, 1) != 0) {
		return;
	}
	if (pool == LLAMA_POOLING_TYPE_NONE) {
		for (int i = 0; i < n; i++) {
			if (llama_get_embeddings_ith(ctx, i) == NULL) {
				printf("err no embedding of token %d\n", i);
				return;
			}
		}
		printf("ok");
		for (int i = 0; i < n; i++) {
			printf(" ");
			print_floats(llama_get_embeddings_ith(ctx, i), n_embd);
		}
		printf("\n");
		return;
	}
	const float *e = llama_get_embeddings_seq(ctx, 0);
	if (e == NULL) {
		fail("llama_get_embeddings_seq returned no embedding");
		return;
	}
	printf("ok ");
	print_floats(e, n_embd);
	printf("\n");
}

int main(int argc, char **argv) {
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: %s <lib dir> <model.gguf> <threads> <ctx> [f16|f32]\n", argv[0]);
		return 2;
	}
	if (argc == 6) {
		if (strcmp(argv[5], "f32") == 0) {
			cache_type = GGML_TYPE_F32;
		} else if (strcmp(argv[5], "f16") != 0) {
			fprintf(stderr, "llamacpp_run: cache type %s: want f16 or f32\n", argv[5]);
			return 2;
		}
	}
	n_threads = atoi(argv[3]);
	n_ctx = atoi(argv[4]);
	if (n_threads < 1 || n_ctx < 1) {
		fprintf(stderr, "llamacpp_run: want threads and ctx of 1 or more\n");
		return 2;
	}
	llama_log_set(quiet, NULL);
	ggml_backend_load_all_from_path(argv[1]);
	llama_backend_init();

	struct llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = 0;
	model = llama_model_load_from_file(argv[2], mp);
	if (model == NULL) {
		fprintf(stderr, "llamacpp_run: cannot load %s\n", argv[2]);
		return 1;
	}
	gen_ctx = new_context(0, LLAMA_POOLING_TYPE_UNSPECIFIED);
	if (gen_ctx == NULL) {
		fprintf(stderr, "llamacpp_run: cannot make a context\n");
		return 1;
	}
	n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
	n_embd = llama_model_n_embd_out(model);
	llama_token *ids = malloc(sizeof(llama_token) * (size_t)n_ctx);
	char desc[128];
	llama_model_desc(model, desc, sizeof desc);
	printf("ready %d %d %s\n", n_vocab, n_embd, desc);
	fflush(stdout);

	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, stdin) > 0) {
		char *args;
		if ((args = command(line, "gen")) != NULL) {
			gen(args, ids);
		} else if ((args = command(line, "logits")) != NULL) {
			logits(args, ids);
		} else if ((args = command(line, "embd")) != NULL) {
			embd(args, ids);
		} else if (command(line, "quit") != NULL || strcmp(line, "quit") == 0) {
			break;
		} else {
			line[strcspn(line, "\r\n")] = 0;
			printf("err unknown command %.40s: want gen, logits, embd or quit\n", line);
		}
		fflush(stdout);
	}
	free(line);
	free(ids);
	for (int i = 0; i < 4; i++) {
		if (embd_ctx[i] != NULL) {
			llama_free(embd_ctx[i]);
		}
	}
	llama_free(gen_ctx);
	llama_model_free(model);
	llama_backend_free();
	return 0;
}
