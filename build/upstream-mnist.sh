#!/usr/bin/env bash
# go-ggml: build upstream ggml's MNIST example programs (mnist-train and
# mnist-eval, examples/mnist of the release tarball) with CMake, for the
# interop test of examples/mnist (make test-upstream-mnist). Prints the
# folder that holds the two programs.
#
#   build/upstream-mnist.sh [tarball]
#
# Like build/upstream.sh: the tarball defaults to
# ../shared/upstream/ggml-0.21.0.tar.gz (GOGGML_UPSTREAM_TARBALL overrides);
# nothing enters the checkout: it is built in a cache directory (GOGGML_CACHE,
# default ~/.cache/go-ggml) keyed by what goes into the build, and reused.
# Only the two targets and what they link are built, statically (the
# programs need no install). The CPU backend as in build/upstream.sh
# (native with generic tuning, llamafile, ggml's own thread pool). Needs
# cmake and g++. Messages go to stderr; stdout is only the folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
tarball=${1:-${GOGGML_UPSTREAM_TARBALL:-$repo/../shared/upstream/ggml-0.21.0.tar.gz}}
[ -f "$tarball" ] || { echo "build/upstream-mnist.sh: no tarball at $tarball (give its path, or set GOGGML_UPSTREAM_TARBALL)" >&2; exit 1; }
for tool in cmake g++ sha256sum tar; do
  command -v "$tool" >/dev/null || { echo "build/upstream-mnist.sh: $tool is missing (Debian: apt-get install cmake g++)" >&2; exit 1; }
done
version=$(basename "$tarball" .tar.gz)
version=${version#ggml-}
jobs=${GOGGML_JOBS:-2}
cmake_args=(
  -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DGGML_LLAMAFILE=ON -DGGML_OPENMP=OFF
  -DCMAKE_C_FLAGS=-mtune=generic -DCMAKE_CXX_FLAGS=-mtune=generic
  -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=ON -DCMAKE_BUILD_TYPE=Release
)
targets=(mnist-train mnist-eval)
recipe=1
key=$( { sha256sum <"$tarball"; echo "recipe $recipe ${cmake_args[*]} ${targets[*]}"; g++ --version | head -1; cmake --version | head -1; } | sha256sum | cut -c1-16)
cache=${GOGGML_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/go-ggml}/upstream-mnist-$version-$key

if [ ! -f "$cache/done" ]; then
  echo "build/upstream-mnist.sh: building ggml $version's ${targets[*]} in $cache" >&2
  rm -rf "$cache"
  mkdir -p "$cache/src" "$cache/bin"
  tar -xzf "$tarball" -C "$cache/src"
  src="$cache/src"
  if [ ! -f "$src/CMakeLists.txt" ]; then
    src=$(dirname "$(find "$cache/src" -maxdepth 2 -name CMakeLists.txt | head -1)")
  fi
  cmake -S "$src" -B "$cache/build" "${cmake_args[@]}" >&2
  cmake --build "$cache/build" -j "$jobs" --target "${targets[@]}" >&2
  for t in "${targets[@]}"; do
    cp "$(find "$cache/build" -type f -name "$t" -perm -u+x | head -1)" "$cache/bin/$t"
  done
  rm -rf "$cache/src" "$cache/build"
  touch "$cache/done"
fi
for t in "${targets[@]}"; do
  [ -x "$cache/bin/$t" ] || { echo "build/upstream-mnist.sh: $cache/bin/$t is missing; delete $cache and run again" >&2; exit 1; }
done
echo "$cache/bin"
