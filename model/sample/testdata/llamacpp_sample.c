// llamacpp_sample.c: llama.cpp's sampler chain as the reference of package
// sample's tests (reference_test.go): the prebuilt libllama of the npm
// package @node-llama-cpp/linux-x64 3.22.1. build/llamacpp.sh compiles it
// against the headers of the same llama.cpp release, in a cache outside
// the repository. Written for go-ggml.
//
// Usage: llamacpp_sample
// It prints "ready", then answers requests on standard input, one a line:
//
//	s <n> <top_k> <top_p> <min_p> <temp> <last_n> <repeat> <freq> <present>
//	  <n_hist> <token>... <logit>...
//	    -> "ok <m> <id> <logit> <p> ...\n": the m candidates left by the
//	       chain of common_sampler's default order without its final draw
//	       (llama_sampler_chain_init, then llama_sampler_init_penalties,
//	       _top_k, _typical, _top_p, _min_p, _temp_ext; DRY, top-n-sigma
//	       and XTC are left out, off by default), after
//	       llama_sampler_accept of the n_hist tokens and llama_sampler_apply
//	       on the n logits (token i has logit i). The logit is the
//	       candidate's after the chain (divided by the temperature) and p
//	       its probability as llama_sampler_dist_apply computes it (a dist
//	       sampler applied after the chain; its pick is not read).
//	       Numbers are read with strtof (hex floats, inf and nan too) and
//	       written with %a.
//	quit
//
// The values are llama.cpp's: top_p 1 and penalty_repeat 1 are off,
// top_k 0 and min_p 0 are off, temp <= 0 is greedy.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *data) {
	(void)data;
	if (level == GGML_LOG_LEVEL_ERROR) {
		fputs(text, stderr);
	}
}

// word reads the next blank-separated word of standard input into buf.
static int word(char *buf, size_t n) {
	int c;
	do {
		c = getchar();
	} while (c == ' ' || c == '\n' || c == '\t' || c == '\r');
	if (c == EOF) {
		return 0;
	}
	size_t i = 0;
	while (c != EOF && c != ' ' && c != '\n' && c != '\t' && c != '\r') {
		if (i + 1 < n) {
			buf[i++] = (char)c;
		}
		c = getchar();
	}
	buf[i] = 0;
	return 1;
}

static float num(void) {
	char buf[128];
	if (!word(buf, sizeof buf)) {
		fprintf(stderr, "llamacpp_sample: truncated request\n");
		exit(1);
	}
	return strtof(buf, NULL);
}

static long integer(void) {
	char buf[64];
	if (!word(buf, sizeof buf)) {
		fprintf(stderr, "llamacpp_sample: truncated request\n");
		exit(1);
	}
	return strtol(buf, NULL, 10);
}

int main(void) {
	llama_log_set(quiet, NULL);
	printf("ready\n");
	fflush(stdout);
	char cmd[16];
	llama_token_data *cand = NULL;
	llama_token *hist = NULL;
	while (word(cmd, sizeof cmd)) {
		if (strcmp(cmd, "quit") == 0) {
			break;
		}
		if (strcmp(cmd, "s") != 0) {
			printf("error unknown request %s\n", cmd);
			fflush(stdout);
			continue;
		}
		long n = integer();
		int32_t top_k = (int32_t)integer();
		float top_p = num(), min_p = num(), temp = num();
		int32_t last_n = (int32_t)integer();
		float repeat = num(), freq = num(), present = num();
		long n_hist = integer();
		hist = realloc(hist, (size_t)(n_hist + 1) * sizeof *hist);
		cand = realloc(cand, (size_t)(n + 1) * sizeof *cand);
		if (hist == NULL || cand == NULL) {
			fprintf(stderr, "llamacpp_sample: out of memory\n");
			return 1;
		}
		for (long i = 0; i < n_hist; i++) {
			hist[i] = (llama_token)integer();
		}
		for (long i = 0; i < n; i++) {
			cand[i].id = (llama_token)i;
			cand[i].logit = num();
			cand[i].p = 0;
		}

		struct llama_sampler *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
		llama_sampler_chain_add(chain, llama_sampler_init_penalties((int32_t)n, last_n, repeat, freq, present));
		llama_sampler_chain_add(chain, llama_sampler_init_top_k(top_k));
		llama_sampler_chain_add(chain, llama_sampler_init_typical(1.0f, 0));
		llama_sampler_chain_add(chain, llama_sampler_init_top_p(top_p, 0));
		llama_sampler_chain_add(chain, llama_sampler_init_min_p(min_p, 0));
		llama_sampler_chain_add(chain, llama_sampler_init_temp_ext(temp, 0.0f, 1.0f));
		for (long i = 0; i < n_hist; i++) {
			llama_sampler_accept(chain, hist[i]);
		}
		llama_token_data_array arr = {cand, (size_t)n, -1, false};
		llama_sampler_apply(chain, &arr);
		llama_sampler_free(chain);

		// The probabilities: llama_sampler_dist_apply normalizes them
		// (expf(logit - max) over their double sum) before its draw, whose
		// pick is left unread.
		struct llama_sampler *dist = llama_sampler_init_dist(1);
		llama_sampler_apply(dist, &arr);
		llama_sampler_free(dist);
		printf("ok %zu", arr.size);
		for (size_t i = 0; i < arr.size; i++) {
			printf(" %d %a %a", arr.data[i].id, (double)arr.data[i].logit, (double)arr.data[i].p);
		}
		printf("\n");
		fflush(stdout);
	}
	free(cand);
	free(hist);
	return 0;
}
