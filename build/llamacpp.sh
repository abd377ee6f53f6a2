#!/usr/bin/env bash
# llama.cpp for the Llama example's benchmark pairs (make bench-llama)
# and the tokenizer's reference tests (make test-tokenizer):
# installs the npm package node-llama-cpp 3.22.1 with its prebuilt Linux
# x64 CPU libraries (85 MB; no GPU builds, no install scripts run) into a
# cache outside the checkout, GOGGML_LLAMACPP (default
# ~/.cache/go-ggml/llamacpp), takes the headers of the same llama.cpp
# release from the source bundle that package ships, and compiles the C
# drivers against them and the prebuilt libraries: the benchmark's
# (model/testdata/llamacpp_bench.c) and the tokenizer's
# (tokenizer/testdata/llamacpp_tokenize.c). Reused when present. Prints the
# cache directory. Linux x64 only.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="${GOGGML_LLAMACPP:-$HOME/.cache/go-ggml/llamacpp}"
mkdir -p "$dir"
pkg="$dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
if [ ! -f "$dir/node_modules/node-llama-cpp/package.json" ] || [ ! -d "$pkg" ]; then
	command -v npm >/dev/null || { echo "llamacpp: npm is needed (apt-get install npm)" >&2; exit 1; }
	[ -f "$dir/package.json" ] || echo '{"private": true}' >"$dir/package.json"
	(cd "$dir" && npm install --no-audit --no-fund --omit=optional \
		node-llama-cpp@3.22.1 @node-llama-cpp/linux-x64@3.22.1 >&2)
fi
src="$dir/src"
if [ ! -f "$src/include/llama.h" ]; then
	rm -rf "$src"
	git clone -q "$dir/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$src" 2>/dev/null
fi
libs=()
for l in llama ggml ggml-base; do
	f=""
	for c in "$pkg/lib$l.so" "$pkg"/lib$l.v*.so; do
		[ -f "$c" ] && f=$(basename "$c") && break
	done
	[ -n "$f" ] || { echo "llamacpp: no lib$l in $pkg" >&2; exit 1; }
	libs+=("-l:$f")
done
# build compiles the C driver $1 into $dir/bin/$2 (again only when the
# source is newer than the binary).
build() {
	local driver="$here/$1" bin="$dir/bin/$2"
	if [ ! -x "$bin" ] || [ "$driver" -nt "$bin" ]; then
		mkdir -p "$dir/bin"
		gcc -O2 -o "$bin" "$driver" -I"$src/include" -I"$src/ggml/include" -L"$pkg" "${libs[@]}" -Wl,-rpath,"$pkg"
	fi
}
build model/testdata/llamacpp_bench.c llamacpp_bench
build tokenizer/testdata/llamacpp_tokenize.c llamacpp_tokenize
build model/testdata/llamacpp_run.c llamacpp_run
build model/sample/testdata/llamacpp_sample.c llamacpp_sample
echo "$dir"
