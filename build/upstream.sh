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
#
# GOGGML_UPSTREAM_VULKAN=1 adds upstream's Vulkan backend (-DGGML_VULKAN=ON)
# for go build -tags "ggml_system vulkan": a separate install (its own cache
# key), so the plain CPU install stays as it is. libggml.so then registers
# Vulkan in ggml's registry by itself, and the vulkan package links
# libggml-vulkan.so from the same prefix. Needs glslc and the Vulkan headers
# and loader too (Debian: apt-get install glslc libvulkan-dev spirv-headers;
# mesa-vulkan-drivers for a software device). Headers older than 1.3.261 get
# the same guard as build/backend.sh applies to the embedded sources (in the
# cache's copy; the tarball is untouched). 13 minutes on 2 busy cores (7
# minutes of CPU time): the shaders.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
tarball=${1:-${GOGGML_UPSTREAM_TARBALL:-$repo/../shared/upstream/ggml-0.21.0.tar.gz}}
[ -f "$tarball" ] || { echo "build/upstream.sh: no tarball at $tarball (give its path, or set GOGGML_UPSTREAM_TARBALL)" >&2; exit 1; }
vulkan=${GOGGML_UPSTREAM_VULKAN:-0}
case "$vulkan" in 0|'') vulkan=0 ;; 1) ;; *) echo "build/upstream.sh: GOGGML_UPSTREAM_VULKAN is 1 or 0, not $vulkan" >&2; exit 2 ;; esac
tools="cmake g++ sha256sum tar"
hint="Debian: apt-get install cmake g++"
if [ "$vulkan" = 1 ]; then
  tools="$tools glslc"
  hint="Debian: apt-get install cmake g++ glslc libvulkan-dev spirv-headers"
  [ -f /usr/include/vulkan/vulkan_core.h ] || { echo "build/upstream.sh: Vulkan headers missing ($hint)" >&2; exit 1; }
fi
for tool in $tools; do
  command -v "$tool" >/dev/null || { echo "build/upstream.sh: $tool is missing ($hint)" >&2; exit 1; }
done

version=$(basename "$tarball" .tar.gz)
version=${version#ggml-}
jobs=${GOGGML_JOBS:-2}
# GGML_LLAMAFILE=ON: llamafile's sgemm, the CPU's matrix kernels for f32,
# f16, bf16, q8_0 and q4_0 products by a matrix, which llama.cpp's build
# turns on and upstream's standalone CMake leaves off (prompts ran at half
# the speed without it). GGML_OPENMP=OFF: ggml's own thread pool, not
# libgomp's, whose spinning threads fight the Go runtime's for the cores
# (generation on a 2-core machine ran at 70 or 190 tokens/s from run to
# run; see README, "Use the ggml you have"). -mtune=generic after
# -DGGML_NATIVE's -march=native: the instructions of this CPU, tuned as
# llama.cpp's prebuilt variants and the embedded provider are; gcc 12's
# tuning for Sapphire Rapids made the repacked q4_0 GEMV so slow that the 1b
# model generated 14 tokens/s against 22 (docs/providers.md, "Tuning").
cmake_args=(
  -DGGML_RPC=ON -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON
  -DGGML_LLAMAFILE=ON -DGGML_OPENMP=OFF
  -DCMAKE_C_FLAGS=-mtune=generic -DCMAKE_CXX_FLAGS=-mtune=generic
  -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=Release
)
# The key: what goes into the build (bump recipe when the steps change).
# The Vulkan build adds its flag, its steps and its tools, so the CPU
# install's key is the same with or without this option in the script.
recipe=1
extra_key=
name=upstream
if [ "$vulkan" = 1 ]; then
  cmake_args+=(-DGGML_VULKAN=ON)
  vulkan_recipe=1
  extra_key=$(echo "vulkan recipe $vulkan_recipe"; glslc --version | head -1; grep -m1 '#define VK_HEADER_VERSION ' /usr/include/vulkan/vulkan_core.h)
  name=upstream-vulkan
fi
key=$( { sha256sum <"$tarball"; echo "recipe $recipe ${cmake_args[*]}"; g++ --version | head -1; cmake --version | head -1; [ -z "$extra_key" ] || echo "$extra_key"; } | sha256sum | cut -c1-16)
cache=${GOGGML_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/go-ggml}/$name-$version-$key
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
  if [ "$vulkan" = 1 ] && ! grep -q VK_EXT_layer_settings /usr/include/vulkan/vulkan_core.h; then
    # Vulkan headers older than 1.3.261 (Debian 12 has 1.3.239) lack
    # VK_EXT_layer_settings, which one block of the instance set-up uses
    # (for validation layers only): compile that block only where the
    # headers have it, as build/backend.sh does for the embedded sources.
    vk="$src/src/ggml-vulkan/ggml-vulkan.cpp"
    sed -i 's|^    VkBool32 enable_best_practice = layer_settings;$|#ifdef VK_EXT_layer_settings\n&|' "$vk"
    sed -i 's|^\(    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, \&app_info, layers, extensions\), \&layer_setting_info);$|&\n#else\n\1);\n#endif|' "$vk"
    if [ "$(grep -c '^#ifdef VK_EXT_layer_settings$' "$vk")" != 1 ] || ! grep -qF '    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, layers, extensions);' "$vk"; then
      echo "build/upstream.sh: the VK_EXT_layer_settings guard did not apply: ggml-vulkan.cpp changed; update build/upstream.sh" >&2
      exit 1
    fi
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
