// llamacpp_tokenize.c: llama.cpp's tokenizer as the reference of package
// tokenizer's tests (reference_test.go): the prebuilt libraries of the npm
// package @node-llama-cpp/linux-x64 3.22.1, a GGUF loaded with vocab_only.
// build/llamacpp.sh compiles it against the headers of the same llama.cpp
// release, in a cache outside the repository. Written for go-ggml.
//
// Usage: llamacpp_tokenize <lib dir> <model.gguf>
// It prints "ready <n_vocab> <bos> <eos> <add_bos> <add_eos>", then answers
// requests on standard input, one at a time:
//
//	t <add_special> <parse_special> <len>\n<len bytes>
//	    -> "ok <n> <id> <id> ...\n" (llama_tokenize)
//	d <remove_special> <unparse_special> <n> <id> <id> ...\n
//	    -> "ok <len>\n<len bytes>" (llama_detokenize)
//	p <id> <special>\n
//	    -> "ok <len>\n<len bytes>" (llama_token_to_piece, lstrip 0)
//	e <id>\n
//	    -> "ok <0|1>\n" (llama_vocab_is_eog)
//	b <add_special> <parse_special> <reps> <len>\n<len bytes>
//	    -> "ok <ns> <n>\n": llama_tokenize of the text reps times in a row,
//	       the nanoseconds they took in all (CLOCK_MONOTONIC, the text
//	       read and the result buffer sized before the clock starts) and
//	       the count of tokens (the benchmark's C side)
//	quit
//
// A request it cannot answer gets "error <why>\n".

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *data) {
	(void)data;
	if (level == GGML_LOG_LEVEL_ERROR) {
		fputs(text, stderr);
	}
}

// grow makes *buf hold at least n elements of size sz.
static void grow(void **buf, size_t *cap, size_t n, size_t sz) {
	if (n <= *cap) {
		return;
	}
	size_t c = *cap ? *cap : 1024;
	while (c < n) {
		c *= 2;
	}
	*buf = realloc(*buf, c * sz);
	if (*buf == NULL) {
		fprintf(stderr, "llamacpp_tokenize: out of memory\n");
		exit(1);
	}
	*cap = c;
}

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void reply_bytes(const char *b, int n) {
	printf("ok %d\n", n);
	fwrite(b, 1, (size_t)n, stdout);
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s <lib dir> <model.gguf>\n", argv[0]);
		return 2;
	}
	llama_log_set(quiet, NULL);
	ggml_backend_load_all_from_path(argv[1]);
	llama_backend_init();

	struct llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = 0;
	mp.vocab_only = true;
	struct llama_model *model = llama_model_load_from_file(argv[2], mp);
	if (model == NULL) {
		fprintf(stderr, "llamacpp_tokenize: cannot load %s\n", argv[2]);
		return 1;
	}
	const struct llama_vocab *vocab = llama_model_get_vocab(model);
	const int n_vocab = llama_vocab_n_tokens(vocab);
	printf("ready %d %d %d %d %d\n", n_vocab, llama_vocab_bos(vocab), llama_vocab_eos(vocab),
	       llama_vocab_get_add_bos(vocab), llama_vocab_get_add_eos(vocab));
	fflush(stdout);

	char *text = NULL;
	size_t text_cap = 0;
	llama_token *ids = NULL;
	size_t ids_cap = 0;
	char line[64];
	while (fscanf(stdin, "%63s", line) == 1) {
		if (strcmp(line, "quit") == 0) {
			break;
		}
		if (strcmp(line, "t") == 0 || strcmp(line, "b") == 0) {
			const int bench = line[0] == 'b';
			int add = 0, parse = 0;
			long reps = 1, len = 0;
			const int got = bench ? fscanf(stdin, "%d %d %ld %ld", &add, &parse, &reps, &len)
			                      : fscanf(stdin, "%d %d %ld", &add, &parse, &len);
			if (got != (bench ? 4 : 3) || reps < 1 || len < 0 || fgetc(stdin) != '\n') {
				printf("error bad %s request\n", line);
				return 1;
			}
			grow((void **)&text, &text_cap, (size_t)len + 1, 1);
			if (len > 0 && fread(text, 1, (size_t)len, stdin) != (size_t)len) {
				printf("error short text\n");
				return 1;
			}
			grow((void **)&ids, &ids_cap, (size_t)len + 8, sizeof *ids);
			int n = llama_tokenize(vocab, text, (int32_t)len, ids, (int32_t)ids_cap, add != 0, parse != 0);
			if (n < 0) {
				grow((void **)&ids, &ids_cap, (size_t)-n, sizeof *ids);
				n = llama_tokenize(vocab, text, (int32_t)len, ids, (int32_t)ids_cap, add != 0, parse != 0);
			}
			// b: the same call reps times more, timed (the text read and
			// the result's buffer sized by the call above).
			int64_t t0 = now_ns();
			for (long r = 0; bench && r < reps && n >= 0; r++) {
				n = llama_tokenize(vocab, text, (int32_t)len, ids, (int32_t)ids_cap, add != 0, parse != 0);
			}
			int64_t t1 = now_ns();
			if (n < 0) {
				printf("error llama_tokenize %d\n", n);
			} else if (bench) {
				printf("ok %lld %d\n", (long long)(t1 - t0), n);
			} else {
				printf("ok %d", n);
				for (int i = 0; i < n; i++) {
					printf(" %d", ids[i]);
				}
				printf("\n");
			}
		} else if (strcmp(line, "d") == 0) {
			int rm = 0, unparse = 0, n = 0;
			if (fscanf(stdin, "%d %d %d", &rm, &unparse, &n) != 3 || n < 0) {
				printf("error bad d request\n");
				return 1;
			}
			grow((void **)&ids, &ids_cap, (size_t)n + 1, sizeof *ids);
			int bad = 0;
			for (int i = 0; i < n; i++) {
				if (fscanf(stdin, "%d", &ids[i]) != 1) {
					printf("error bad id\n");
					return 1;
				}
				bad |= ids[i] < 0 || ids[i] >= n_vocab;
			}
			if (bad) {
				printf("error id outside the vocabulary\n");
			} else {
				grow((void **)&text, &text_cap, 256, 1);
				int m = llama_detokenize(vocab, ids, n, text, (int32_t)text_cap, rm != 0, unparse != 0);
				if (m < 0) {
					grow((void **)&text, &text_cap, (size_t)-m, 1);
					m = llama_detokenize(vocab, ids, n, text, (int32_t)text_cap, rm != 0, unparse != 0);
				}
				if (m < 0) {
					printf("error llama_detokenize %d\n", m);
				} else {
					reply_bytes(text, m);
				}
			}
		} else if (strcmp(line, "p") == 0) {
			int id = 0, special = 0;
			if (fscanf(stdin, "%d %d", &id, &special) != 2) {
				printf("error bad p request\n");
				return 1;
			}
			if (id < 0 || id >= n_vocab) {
				printf("error id outside the vocabulary\n");
			} else {
				grow((void **)&text, &text_cap, 256, 1);
				int m = llama_token_to_piece(vocab, id, text, (int32_t)text_cap, 0, special != 0);
				if (m < 0) {
					grow((void **)&text, &text_cap, (size_t)-m, 1);
					m = llama_token_to_piece(vocab, id, text, (int32_t)text_cap, 0, special != 0);
				}
				reply_bytes(text, m);
			}
		} else if (strcmp(line, "e") == 0) {
			int id = 0;
			if (fscanf(stdin, "%d", &id) != 1) {
				printf("error bad e request\n");
				return 1;
			}
			printf("ok %d\n", id >= 0 && id < n_vocab && llama_vocab_is_eog(vocab, id) ? 1 : 0);
		} else {
			printf("error unknown request %s\n", line);
			return 1;
		}
		fflush(stdout);
	}
	free(text);
	free(ids);
	llama_model_free(model);
	llama_backend_free();
	return 0;
}
