#!/usr/bin/env bash
# go-ggml: build one of ggml's GPU backends as a static library for its
# build tag: build/backend.sh vulkan | cuda, or as a module that
# backend.Load loads at run time: vulkan-dl | cuda-dl.
#
#   vulkan  needs cmake, g++, glslc, the Vulkan headers and loader (Debian:
#           cmake glslc libvulkan-dev spirv-headers; mesa-vulkan-drivers for a
#           software device). About 2 minutes on 2 cores.
#   cuda    needs cmake, g++ and the CUDA toolkit (nvcc). CUDA_ARCHITECTURES
#           overrides ggml's default list (e.g. "native" or "86;89").
#
# The build happens in a cache directory outside the checkout
# (GOGGML_CACHE, default ~/.cache/go-ggml), keyed by what goes into it, and
# is reused; the library is copied to build/<backend>/lib/. With
# GOGGML_LIB_DIR_ONLY=1 (go-ggml read-only in a module cache: see
# build/gpulib) nothing is copied: the last line printed is the directory
# that holds the library, for CGO_LDFLAGS=-L<dir>.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
go=${GO:-go}
name=${1:?usage: build/backend.sh vulkan|cuda|vulkan-dl|cuda-dl}
dl=OFF
case "$name" in *-dl) dl=ON ;; esac

case "$name" in
vulkan|vulkan-dl)
  upper=VULKAN; target=ggml-vulkan
  tools="cmake g++ glslc"
  hint="Debian: apt-get install cmake g++ glslc libvulkan-dev spirv-headers mesa-vulkan-drivers"
  [ -f /usr/include/vulkan/vulkan.h ] || { echo "build/backend.sh: Vulkan headers missing ($hint)" >&2; exit 1; }
  extra_key=$(glslc --version | head -1; grep -m1 VK_HEADER_VERSION /usr/include/vulkan/vulkan_core.h)
  ;;
cuda|cuda-dl)
  upper=CUDA; target=ggml-cuda
  tools="cmake g++ nvcc"
  hint="install the CUDA toolkit (nvcc) and put it on PATH"
  extra_key=$(nvcc --version 2>/dev/null | tail -1; echo "${CUDA_ARCHITECTURES:-}")
  ;;
*)
  echo "build/backend.sh: unknown backend $name (vulkan, cuda, vulkan-dl or cuda-dl)" >&2; exit 2 ;;
esac
for tool in $tools; do
  command -v "$tool" >/dev/null || { echo "build/backend.sh: $tool is missing ($hint)" >&2; exit 1; }
done

# GOGGML_GGML_SRC names a copy of the provider's ggml directory instead of
# the module cache (for a machine without Go that only builds the module).
if [ -n "${GOGGML_GGML_SRC:-}" ]; then
  ggml=$GOGGML_GGML_SRC
  provider_version=${GOGGML_PROVIDER_VERSION:-"ggml copy at $ggml"}
else
  provider=$(cd "$repo" && "$go" list -m -f '{{.Dir}}' github.com/ollama/ollama)
  [ -n "$provider" ] || { echo "build/backend.sh: cannot find the provider module; run go mod download" >&2; exit 1; }
  ggml="$provider/ml/backend/ggml/ggml"
  provider_version=$(cd "$repo" && "$go" list -m github.com/ollama/ollama)
fi

# The cache key is what the build reads, not the provider's version: a
# new provider release whose ggml is the same reuses the build.
src_hash=$( (cd "$ggml" && find include src cmake -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16)
key=$( { echo "$src_hash"; echo "$name"; cat "$here/cmake/CMakeLists.txt" "$here/backend.sh" "$here"/vulkan-feature-tests/*.comp; g++ --version | head -1; cmake --version | head -1; echo "$extra_key"; } | sha256sum | cut -c1-16)
cache=${GOGGML_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/go-ggml}/$name-$key
lib="$cache/out/lib$target.a"

if [ ! -f "$lib" ]; then
  echo "build/backend.sh: building $name ($provider_version) in $cache; once per machine and cached: minutes (Vulkan: 2 on an idle 2-core machine, far more on a busy one; CUDA: longer). Progress follows." >&2
  start=$(date +%s)
  rm -rf "$cache"
  mkdir -p "$cache/src" "$cache/out"
  # A writable copy of the provider's ggml: CMake writes beside it, and the
  # copy gets what the provider leaves out.
  cp -r "$ggml/include" "$ggml/src" "$ggml/cmake" "$cache/src/"
  chmod -R u+w "$cache/src"
  if [ "$upper" = VULKAN ]; then
    # ggml's CMake compiles four one-line shaders to learn what glslc
    # supports; the provider ships without them.
    mkdir -p "$cache/src/src/ggml-vulkan/vulkan-shaders/feature-tests"
    cp "$here"/vulkan-feature-tests/*.comp "$cache/src/src/ggml-vulkan/vulkan-shaders/feature-tests/"
    # Vulkan headers older than 1.3.261 lack VK_EXT_layer_settings, which
    # one block of the instance set-up uses (for validation layers only):
    # compile that block only where the headers have it.
    vk="$cache/src/src/ggml-vulkan/ggml-vulkan.cpp"
    sed -i 's|^    VkBool32 enable_best_practice = layer_settings;$|#ifdef VK_EXT_layer_settings\n&|' "$vk"
    sed -i 's|^\(    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, \&app_info, layers, extensions\), \&layer_setting_info);$|&\n#else\n\1);\n#endif|' "$vk"
    if [ "$(grep -c '^#ifdef VK_EXT_layer_settings$' "$vk")" != 1 ] || [ "$(grep -c '^#else$' "$vk")" -lt 1 ]; then
      echo "build/backend.sh: the VK_EXT_layer_settings guard did not apply: ggml-vulkan.cpp changed; update build/backend.sh" >&2
      exit 1
    fi
  fi
  args=(-DGGML_SRC="$cache/src" -DGOGGML_BACKEND="$upper" -DGOGGML_DL="$dl" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-O2 -DCMAKE_CXX_FLAGS=-O2)
  if [ "$upper" = CUDA ] && [ -n "${CUDA_ARCHITECTURES:-}" ]; then
    args+=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHITECTURES")
  fi
  cmake -S "$here/cmake" -B "$cache/build" "${args[@]}" > "$cache/cmake.log" || { tail -40 "$cache/cmake.log" >&2; exit 1; }
  # The build's "[ NN%] ..." lines, every 5 points, with the minutes so
  # far: a slow build and a hung one look different. All of it is in
  # build.log.
  cmake --build "$cache/build" --target "$target" -j "$(nproc)" 2>&1 | tee "$cache/build.log" |
    awk -v name="$name" -v start="$start" '
      /^\[ *[0-9]+%\]/ {
        p = $0; sub(/^\[ */, "", p); sub(/%.*/, "", p); p += 0
        if (p < last) last = -100 # a new part of the build starts over
        if (p < last + 5) next
        last = p
        "date +%s" | getline now; close("date +%s")
        what = $0; sub(/^\[ *[0-9]+%\] /, "", what)
        printf "build/backend.sh: %s %3d%% after %dm%02ds: %s\n", name, p, (now - start) / 60, (now - start) % 60, substr(what, 1, 100) > "/dev/stderr"
        fflush("/dev/stderr")
      }' || { tail -40 "$cache/build.log" >&2; exit 1; }
  echo "build/backend.sh: built $name in $(( ($(date +%s) - start) / 60 )) minutes" >&2
  if [ "$dl" = ON ]; then
    # The module and the shared ggml-base it names, side by side.
    so=$(find "$cache/build" -name "lib$target.so" -o -name "$target.so" | head -1)
    cp "$so" "$cache/out/"
    cp -P $(find "$cache/build" -name "libggml-base.so*") "$cache/out/"
    touch "$lib"
  else
    cp "$(find "$cache/build" -name "lib$target.a" | head -1)" "$lib.tmp"
    mv "$lib.tmp" "$lib"
  fi
fi
if [ "${GOGGML_LIB_DIR_ONLY:-}" = 1 ]; then
  [ "$dl" = OFF ] || { echo "build/backend.sh: GOGGML_LIB_DIR_ONLY is for the static libraries (vulkan, cuda)" >&2; exit 2; }
  echo "$cache/out"
  exit 0
fi
mkdir -p "$repo/build/$name/lib"
if [ "$dl" = ON ]; then
  cp -P "$cache"/out/*.so* "$repo/build/$name/lib/"
  ls "$repo/build/$name/lib"
else
  cp "$lib" "$repo/build/$name/lib/lib$target.a"
  echo "build/backend.sh: build/$name/lib/lib$target.a"
fi
