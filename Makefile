# go-ggml: build, test, run the demo, benchmark.
# No environment: ggml's CPU flags are set by go-ggml's own cgo packages
# (internal/provider/embedded), as for library users. GOFLAGS=-tags=ggml_native
# builds for this machine's CPU only.

GO ?= go

PROVIDER_GGML := internal/provider/provider-ggml

.PHONY: all setup build lint outside outside-ways outside-vulkan bench-outside test test-asan test-short vet run fuzz bench bench-llama bench-archs bench-batched bench-llama-go bench-llama-system llamacpp test-tokenizer test-models test-openai bench-tokenizer bench-level generate fmt clean upstream test-system bench-system upstream-vulkan test-system-vulkan vet-system-cuda test-upstream-mnist bench-mnist

all: build

# Link the provider's headers and sources for work inside this checkout
# (git-ignored). A checkout under the directory that holds the module cache
# (Go's default, $$HOME/go/pkg/mod) finds them without it, as go-ggml in the
# module cache, vendored or in a workspace does: docs/providers.md.
setup:
	@$(GO) mod download
	@ln -sfn "$$($(GO) run ./build/cgoenv -print=ggml)" $(PROVIDER_GGML)

build: setup
	$(GO) build ./...

vet: setup
	$(GO) vet ./...

# The README's test command: vet, the tests, and the tests under the race detector.
test: setup
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race ./...

# The tests that race Close against computes, transfers and callbacks, and
# those that hand ggml misused handles and hostile sizes, under
# AddressSanitizer: a use after free that happens not to crash shows here
# (in ggml's C files: cgo instruments C, not C++). The misuse tests ask for
# allocations no allocator grants, expecting an error: allocator_may_return_null.
ASAN_TESTS ?= Close|Race|Goroutine|Goexit|Panic|Shared|Busy|Lifetime|Leak|Realloc|CustomOp|Indices|Misuse|Hostile|Dropped
test-asan: setup
	ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1} $(GO) test -asan -count=1 -run '$(ASAN_TESTS)' ./ggml ./backend ./sched ./cpu ./gguf ./opt

# The ggml_system provider (-tags ggml_system) against upstream ggml v0.21.0:
# build/upstream.sh builds ../shared/upstream/ggml-0.21.0.tar.gz with CMake
# into a cache outside the checkout (once; reused) and prints the
# PKG_CONFIG_PATH of the install. The install is in a prefix of its own, so
# the binaries get an rpath to it (see README, "Use the ggml you have").
upstream:
	@bash build/upstream.sh

# ggml's own MNIST programs (mnist-train, mnist-eval of upstream v0.21.0,
# built once into the cache by build/upstream-mnist.sh) against
# examples/mnist: each evaluates the other's model to the same accuracy.
# mnist-train runs its fixed 30 FC epochs (about 35 s on 2 cores).
test-upstream-mnist:
	@dir=$$(bash build/upstream-mnist.sh) && \
	GOGGML_UPSTREAM_MNIST=$$dir GOGGML_REQUIRE_UPSTREAM_MNIST=1 $(GO) test -count=1 -run Upstream -v ./examples/mnist/...

# examples/mnist's training against upstream's mnist-train, whole 30-epoch
# runs in interleaved pairs (BENCH_COUNT of them; MNIST_ARCH=cnn for the
# CNN, about 14 minutes a side): the table's go/c ratio is the epochs'.
# GOGGML_BENCH_MNIST_EPOCHS=1 in the environment times single epochs.
bench-mnist:
	@dir=$$(bash build/upstream-mnist.sh) && \
	GOGGML_UPSTREAM_MNIST=$$dir GOGGML_BENCH_PAIRS=$(BENCH_COUNT) GOGGML_BENCH_MNIST_ARCH=$(MNIST_ARCH) \
	$(GO) test -run '^$$' -bench 'MNIST' -benchtime 1x -timeout 6h ./examples/mnist/mnist | $(GO) run ./bench/table

# SYSTEM_ENV: the environment of a build against the upstream install
# (UPSTREAM_VARS: build/upstream.sh's options, e.g. the Vulkan install's).
SYSTEM_ENV = pc=$$($(UPSTREAM_VARS) bash build/upstream.sh) && \
	export PKG_CONFIG_PATH="$$pc$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH}" && \
	export CGO_LDFLAGS="-O2 -g -Wl,-rpath,$$(pkg-config --variable=libdir ggml)" && \
	echo "ggml_system: ggml $$(pkg-config --modversion ggml) from $$pc"

test-system:
	@$(SYSTEM_ENV) && \
	$(GO) vet -tags ggml_system ./... && \
	$(GO) test -count=1 -tags ggml_system ./... && \
	$(GO) test -count=1 -race -tags ggml_system ./...

# Upstream ggml v0.21.0 with its Vulkan backend (-DGGML_VULKAN=ON), an
# install of its own beside the CPU one (13 minutes cold on 2 busy cores;
# reused), and the suite with -tags "ggml_system vulkan" on Mesa's lavapipe:
# the vulkan package links upstream's libggml-vulkan.so, never build/vulkan.
upstream-vulkan:
	@GOGGML_UPSTREAM_VULKAN=1 bash build/upstream.sh

test-system-vulkan: UPSTREAM_VARS = GOGGML_UPSTREAM_VULKAN=1
test-system-vulkan:
	@$(SYSTEM_ENV) && \
	$(GO) vet -tags "ggml_system vulkan" ./... && \
	GGML_VK_VISIBLE_DEVICES=$${GGML_VK_VISIBLE_DEVICES:-0} $(GO) test -count=1 -timeout 25m -tags "ggml_system vulkan" ./...

# The cuda package against upstream's headers (no CUDA toolkit here: it is
# type-checked only, as make vet-cuda does for the embedded provider).
vet-system-cuda:
	@$(SYSTEM_ENV) && \
	$(GO) vet -tags "ggml_system cuda" ./...

# make bench against the upstream install (bench/README.md says what it measures there).
bench-system:
	@$(SYSTEM_ENV) && \
	GOGGML_BENCH_PAIRS=$(BENCH_COUNT) $(GO) test -tags ggml_system -run '^$$' -bench . -benchtime $(BENCH_TIME) -timeout 60m ./bench | $(GO) run ./bench/table

# The quick start built as a user builds it: a module of its own, go-ggml
# from a fresh module cache, no environment (see build/outside.sh).
# go vet and staticcheck (fetched through the module proxy at a pinned
# version; go run caches it): CI's first stage.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint: setup
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

outside:
	@bash build/outside.sh

# The quick start from a module of one's own, built every other way Go
# resolves a dependency (go mod vendor, a replace to a read-only copy,
# go.work, a renamed fork), some with a user's own CGO_CFLAGS and
# CGO_CXXFLAGS, and from a copy that needs CGO_CPPFLAGS (see
# build/outside.sh).
outside-ways:
	@bash build/outside.sh ways

# A GPU from a module of one's own: the quick start built outside this
# module with -tags vulkan, by the README's instructions, run on lavapipe.
outside-vulkan:
	@bash build/outside.sh vulkan

# #14's measure: a user's plain build (outside this module, no environment)
# against -tags ggml_native, compute rows as pairs (see build/outside.sh).
bench-outside:
	@BENCH_COUNT=$(BENCH_COUNT) BENCH_TIME=$(BENCH_TIME) bash build/outside.sh bench

test-short: setup
	$(GO) test -short ./...

run: setup
	$(GO) run ./examples/mlp

# The cgo benchmark suite: the binding against the same work in C, medians
# of BENCH_COUNT runs, as one table (see bench/README.md).
BENCH_COUNT ?= 5
BENCH_TIME ?= 300ms
# Random graphs from the op set, random quantizer inputs and lying bytes
# (tensor data, GGUF files); a ggml assert or crash reached is a missing
# check. FUZZ_TIME per target; a target is package:Name (ggml if no package).
FUZZ_TIME ?= 3m
FUZZ_TARGETS ?= FuzzOps FuzzViews FuzzQuantize FuzzDequantize gguf:FuzzParse gguf:FuzzLoad tokenizer:FuzzEncode tokenizer:FuzzEncodeReference tokenizer:FuzzDecoder tokenizer:FuzzNew
fuzz: setup
	@for t in $(FUZZ_TARGETS); do \
		case $$t in *:*) pkg=$${t%%:*}; name=$${t#*:};; *) pkg=ggml; name=$$t;; esac; \
		echo "== $$pkg $$name"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_TIME) || exit 1; \
	done

bench: setup
	GOGGML_BENCH_PAIRS=$(BENCH_COUNT) $(GO) test -run '^$$' -bench . -benchtime $(BENCH_TIME) -timeout 60m ./bench | $(GO) run ./bench/table

# The Llama example against llama.cpp on the same generated file: prompt
# (pp64, pp512) and generation (tg64) in tokens/s, as pairs of samples
# (BenchmarkLlamaCpp; llama.cpp's side is its prebuilt CPU libraries from
# npm, driven from C as llama-bench drives them, which make llamacpp
# installs into a cache outside the checkout). LLAMA_MODELS and
# LLAMA_TYPES and LLAMA_THREADS say which rows; BENCH_COUNT pairs each.
# Then the example's own rows: tokens/s and go-%, the share of the time
# outside ggml's compute (BenchmarkLlama). GOGGML_BENCH_LLAMA_DEPTH=P in the
# environment times generation alone, after P tokens in the cache.
LLAMA_MODELS ?= small 1b
LLAMA_TYPES ?= q4_0 q8_0 q4_K_M
LLAMA_THREADS ?= 1 2
LLAMA_ARCHS ?= llama
llamacpp:
	@bash build/llamacpp.sh >/dev/null

# The tokenizer against llama.cpp's, token for token (Llama 3.2's and Gemma
# 2's vocabularies, War and Peace, hard and random texts): the reference is
# required here, so a missing llama.cpp fails instead of skipping.
test-tokenizer: setup llamacpp
	GOGGML_REQUIRE_LLAMACPP=1 $(GO) test -count=1 ./tokenizer

# Every architecture, the sampler and the chat templates against llama.cpp
# (its tokens, logits, embeddings and samplers; @huggingface/jinja): the
# reference is required here, so a missing llama.cpp fails instead of
# skipping.
test-models: setup llamacpp
	GOGGML_REQUIRE_LLAMACPP=1 $(GO) test -count=1 ./model/...

# The OpenAI-compatible server (model/server) with OpenAI's official Go
# client, a module of its own (model/server/openaitest) so that the client
# and its dependencies stay out of go-ggml's: whole and streamed
# completions and chats against the model alone, embeddings, keys,
# disconnects, a load of 32 clients; with and without the race detector.
test-openai: setup
	cd model/server/openaitest && $(GO) vet ./... && $(GO) test -count=1 ./... && $(GO) test -count=1 -race ./...

# The tokenizer's speed against llama.cpp's llama_tokenize: a megabyte of
# War and Peace on each real vocabulary, BENCH_COUNT pairs (MB/s).
bench-tokenizer: setup llamacpp
	GOGGML_REQUIRE_LLAMACPP=1 GOGGML_BENCH_PAIRS=$(BENCH_COUNT) $(GO) test -run '^$$' -bench 'EncodeLlamaCpp' -benchtime 3x ./tokenizer | $(GO) run ./bench/table

# llama_pairs runs the pairs of every model, type and thread count, with
# go test's flags $(1), and prints the table.
llama_pairs = for a in $(LLAMA_ARCHS); do for m in $(LLAMA_MODELS); do for ty in $(LLAMA_TYPES); do for th in $(LLAMA_THREADS); do \
		GOGGML_BENCH_LLAMA_ARCH=$$a GOGGML_BENCH_LLAMA=$$m GOGGML_BENCH_LLAMA_TYPE=$$ty GOGGML_BENCH_LLAMA_THREADS=$$th GOGGML_BENCH_PAIRS=$(BENCH_COUNT) \
		$(GO) test $(1) -run '^$$' -bench '^BenchmarkLlamaCpp$$' -benchtime 2x -timeout 60m ./model | grep -v warmup || exit 1; \
	done; done; done; done | $(GO) run ./bench/table

bench-llama: setup llamacpp
	@$(call llama_pairs,)

# A row per architecture against llama.cpp: each of the model packages'
# architectures (mixtral: llama with 8 experts, 2 a token) as the 1b
# model in q4_0 on 2 threads.
bench-archs: setup llamacpp
	@$(MAKE) --no-print-directory bench-llama LLAMA_ARCHS="llama qwen2 qwen3 qwen3moe mixtral gemma2 gemma3 phi3" LLAMA_MODELS=1b LLAMA_TYPES=q4_0 LLAMA_THREADS=2

# Many sequences at once against llama.cpp's batched decode: 1 to 32
# sequences, one token each a step (BenchmarkLlamaCppBatched), the 1b model
# in each of LLAMA_TYPES on 2 threads; then a q8_0 cache against f16 deep
# in the cache (BenchmarkCacheDepth) and a streamed token through the
# server against the library alone (model/server's BenchmarkServerStream).
bench-batched: setup llamacpp
	@for ty in $(LLAMA_TYPES); do \
		GOGGML_BENCH_LLAMA=1b GOGGML_BENCH_LLAMA_TYPE=$$ty GOGGML_BENCH_LLAMA_THREADS=2 GOGGML_BENCH_PAIRS=$(BENCH_COUNT) \
		$(GO) test -run '^$$' -bench 'LlamaCppBatched' -benchtime 1x -timeout 60m ./model | grep -v warmup || exit 1; \
	done | $(GO) run ./bench/table
	@GOGGML_BENCH_LLAMA=1b GOGGML_BENCH_LLAMA_TYPE=q4_0 GOGGML_BENCH_LLAMA_THREADS=2 GOGGML_BENCH_PAIRS=$(BENCH_COUNT) \
		$(GO) test -run '^$$' -bench 'CacheDepth' -benchtime 1x -timeout 60m ./model | grep -v warmup | $(GO) run ./bench/table
	@for m in small 1b; do GOGGML_BENCH_LLAMA=$$m GOGGML_BENCH_PAIRS=$(BENCH_COUNT) \
		$(GO) test -run '^$$' -bench 'ServerStream' -benchtime 2x -timeout 60m ./model/server || exit 1; done | $(GO) run ./bench/table

# The same pairs with go-ggml on the upstream install (-tags ggml_system).
bench-llama-system: setup llamacpp
	@$(SYSTEM_ENV) && $(call llama_pairs,-tags ggml_system)

# The model's own rows: generation covers positions 16 to 511 with 496
# tokens per sample (GOGGML_BENCH_LLAMA=small by default, 1b for the
# issue's size; see model/bench_test.go).
bench-llama-go: setup
	{ $(GO) test -run '^$$' -bench '^Llama$$/pp' -benchtime $(BENCH_TIME) -count $(BENCH_COUNT) ./model && \
	  $(GO) test -run '^$$' -bench '^Llama$$/tg' -benchtime 496x -count $(BENCH_COUNT) ./model; } | $(GO) run ./bench/table

# The CPU level of a plain build against -tags ggml_native on this machine:
# the compute figures' Go side from both builds, and from the plain build
# held to its x86-64-v3 kernels (GOGGML_CPU_VARIANT, side "base"), run in
# turn, as pairs against native.
bench-level: setup
	@mkdir -p bin
	$(GO) test -c -o bin/bench-default.test ./bench
	$(GO) test -c -tags ggml_native -o bin/bench-native.test ./bench
	@bash -c '. build/alternate.sh && alternate "$$@"' alternate $(BENCH_COUNT) $(BENCH_TIME) bench \
		default=$(CURDIR)/bin/bench-default.test \
		base=$(CURDIR)/bin/bench-default.test=GOGGML_CPU_VARIANT=x86-64-v3 \
		native=$(CURDIR)/bin/bench-native.test >bin/bench-level.txt
	@$(GO) run ./bench/table -sides default,native <bin/bench-level.txt
	@$(GO) run ./bench/table -sides base,native <bin/bench-level.txt 2>/dev/null

generate:
	$(GO) generate ./internal/provider

fmt:
	gofmt -l -w .

clean:
	rm -f $(PROVIDER_GGML)

# GPU backends (see README, build tags).
.PHONY: vulkan vulkan-dl cuda cuda-dl test-vulkan vet-cuda
vulkan:
	bash build/backend.sh vulkan

# The Vulkan backend as a module that backend.Load loads at run time.
vulkan-dl:
	bash build/backend.sh vulkan-dl

# Not run here (no CUDA toolkit): see README.
cuda:
	bash build/backend.sh cuda

# The CUDA backend as a module that backend.Load loads at run time
# (TestLoadCUDAModule uses it).
cuda-dl:
	bash build/backend.sh cuda-dl

# lavapipe, Mesa's software Vulkan device, is a CPU-type device that ggml
# hides unless GGML_VK_VISIBLE_DEVICES names it.
test-vulkan: setup vulkan vulkan-dl
	GGML_VK_VISIBLE_DEVICES=$${GGML_VK_VISIBLE_DEVICES:-0} $(GO) test -count=1 -timeout 25m -tags vulkan ./...
	GGML_VK_VISIBLE_DEVICES=$${GGML_VK_VISIBLE_DEVICES:-0} $(GO) test -count=1 -run TestLoadVulkanModule -v ./backend

vet-cuda: setup
	$(GO) vet -tags cuda ./...
