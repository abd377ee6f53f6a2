#!/usr/bin/env bash
# go-ggml: build and install upstream ggml (a release tarball) with CMake, as
# a user's source install would have it, for the ggml_system provider
# (go build -tags ggml_system). Prints the PKG_CONFIG_PATH to use.
#
#   build/upstream.sh [tarball]
#
# The tarball defaults to ../shared/upstream/ggml-0.21.0.tar.gz beside the
# checkout (GOGGML_UPSTREAM_TARBALL overrides). Nothing of it enters the
# checkout: it is extracted, built and installed in a cache directory
# (GOGGML_CACHE, default ~/.cache/go-ggml) keyed by what goes into the build,
# and reused when present. Needs cmake and g++ (Debian: apt-get install cmake
# g++). About 2-3 minutes on 2 cores. Messages go to stderr; stdout is only
# the PKG_CONFIG_PATH, so that PKG_CONFIG_PATH=$(build/upstream.sh) works.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
tarball=${1:-${GOGGML_UPSTREAM_TARBALL:-$repo/../shared/upstream/ggml-0.21.0.tar.gz}}
[ -f "$tarball" ] || { echo "build/upstream.sh: no tarball at $tarball (give its path, or set GOGGML_UPSTREAM_TARBALL)" >&2; exit 1; }
for tool in cmake g++ sha256sum tar; do
  command -v "$tool" >/dev/null || { echo "build/upstream.sh: $tool is missing (Debian: apt-get install cmake g++)" >&2; exit 1; }
done

version=$(basename "$tarball" .tar.gz)
version=${version#ggml-}
jobs=${GOGGML_JOBS:-2}
cmake_args=(
  -DGGML_RPC=ON -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON
  -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release
)
# The key: what goes into the build (bump recipe when the steps change).
recipe=1
key=$( { sha256sum <"$tarball"; echo "recipe $recipe ${cmake_args[*]}"; g++ --version | head -1; cmake --version | head -1; } | sha256sum | cut -c1-16)
cache=${GOGGML_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/go-ggml}/upstream-$version-$key
prefix="$cache/install"

if [ ! -f "$cache/done" ]; then
  echo "build/upstream.sh: building ggml $version in $cache" >&2
  rm -rf "$cache"
  mkdir -p "$cache/src"
  tar -xzf "$tarball" -C "$cache/src"
  src="$cache/src"
  # A git archive may or may not carry a top directory.
  if [ ! -f "$src/CMakeLists.txt" ]; then
    src=$(dirname "$(find "$cache/src" -maxdepth 2 -name CMakeLists.txt | head -1)")
  fi
  cmake -S "$src" -B "$cache/build" "${cmake_args[@]}" -DCMAKE_INSTALL_PREFIX="$prefix" >&2
  cmake --build "$cache/build" -j "$jobs" >&2
  cmake --install "$cache/build" >&2
  # Keep the install; the sources and objects are not needed any more.
  rm -rf "$cache/src" "$cache/build"
  touch "$cache/done"
fi

pc=$(dirname "$(find "$prefix" -name ggml.pc | head -1)")
[ -f "$pc/ggml.pc" ] || { echo "build/upstream.sh: no ggml.pc under $prefix" >&2; exit 1; }
echo "$pc"
