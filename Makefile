# go-ggml: build, test, run the demo, benchmark.
# The CPU flags come from build/cgoenv, the same program library users run.

GO ?= go
CPU_FLAGS := $(shell $(GO) run ./build/cgoenv -print=cflags)
export CGO_CFLAGS := $(CPU_FLAGS)
export CGO_CXXFLAGS := $(CPU_FLAGS)

PROVIDER_INCLUDE := third_party/ggml/provider-include

.PHONY: all setup build test test-asan test-short race vet run fuzz bench generate fmt clean upstream test-system

all: build

# Link the provider's headers for work inside this checkout (git-ignored).
setup:
	@$(GO) mod download
	@ln -sfn "$$($(GO) run ./build/cgoenv -print=include)" $(PROVIDER_INCLUDE)

build: setup
	$(GO) build ./...

vet: setup
	$(GO) vet ./...

# The README's test command: vet, the tests, and the tests under the race detector.
test: setup
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race ./...

# The tests that race Close against computes, transfers and callbacks, under
# AddressSanitizer: a use after free that happens not to crash shows here.
ASAN_TESTS ?= Close|Race|Goroutine|Goexit|Panic|Shared|Busy|Lifetime|Leak|Realloc|CustomOp|Indices
test-asan: setup
	ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=0} $(GO) test -asan -count=1 -run '$(ASAN_TESTS)' ./ggml ./backend ./sched ./cpu

# The ggml_system provider (-tags ggml_system) against upstream ggml v0.21.0:
# build/upstream.sh builds ../shared/upstream/ggml-0.21.0.tar.gz with CMake
# into a cache outside the checkout (once; reused) and prints the
# PKG_CONFIG_PATH of the install. The install is in a prefix of its own, so
# the binaries get an rpath to it (see README, "Use the ggml you have").
upstream:
	@bash build/upstream.sh

test-system:
	@pc=$$(bash build/upstream.sh) && \
	export PKG_CONFIG_PATH="$$pc$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH}" && \
	export CGO_LDFLAGS="-O2 -g -Wl,-rpath,$$(pkg-config --variable=libdir ggml)" && \
	echo "test-system: ggml $$(pkg-config --modversion ggml) from $$pc" && \
	$(GO) vet -tags ggml_system ./... && \
	$(GO) test -count=1 -tags ggml_system ./...

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
FUZZ_TARGETS ?= FuzzOps FuzzOpsMore FuzzViews FuzzQuantize FuzzDequantize gguf:FuzzParse gguf:FuzzLoad
fuzz: setup
	@for t in $(FUZZ_TARGETS); do \
		case $$t in *:*) pkg=$${t%%:*}; name=$${t#*:};; *) pkg=ggml; name=$$t;; esac; \
		echo "== $$pkg $$name"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_TIME) || exit 1; \
	done

bench: setup
	$(GO) test -run '^$$' -bench . -benchtime $(BENCH_TIME) -count $(BENCH_COUNT) ./bench | $(GO) run ./bench/table

generate:
	$(GO) generate ./third_party/ggml

fmt:
	gofmt -l -w .

clean:
	rm -f $(PROVIDER_INCLUDE)

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
	GGML_VK_VISIBLE_DEVICES=$${GGML_VK_VISIBLE_DEVICES:-0} $(GO) test -count=1 -tags vulkan ./...
	GGML_VK_VISIBLE_DEVICES=$${GGML_VK_VISIBLE_DEVICES:-0} $(GO) test -count=1 -run TestLoadVulkanModule -v ./backend

vet-cuda: setup
	$(GO) vet -tags cuda ./...
