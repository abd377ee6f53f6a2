#!/usr/bin/env bash
# go-ggml: build ggml's Vulkan backend (libggml-vulkan.a) for -tags vulkan.
#
# Needs: cmake, g++, glslc, the Vulkan headers and loader (Debian:
# cmake glslc libvulkan-dev spirv-headers; mesa-vulkan-drivers for a
# software device). The build (about 5 minutes on 2 cores) happens in a
# cache directory outside the checkout, keyed by what goes into it, and is
# reused; the library is copied to build/vulkan/lib/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
go=${GO:-go}

for tool in cmake glslc g++; do
  command -v "$tool" >/dev/null || { echo "build/vulkan: $tool is missing (Debian: apt-get install cmake glslc g++ libvulkan-dev spirv-headers mesa-vulkan-drivers)" >&2; exit 1; }
done
[ -f /usr/include/vulkan/vulkan.h ] || { echo "build/vulkan: Vulkan headers missing (Debian: apt-get install libvulkan-dev)" >&2; exit 1; }

provider=$(cd "$repo" && "$go" list -m -f '{{.Dir}}' github.com/ollama/ollama)
[ -n "$provider" ] || { echo "build/vulkan: cannot find the provider module; run go mod download" >&2; exit 1; }
ggml="$provider/ml/backend/ggml/ggml"

key=$( { cd "$repo" && "$go" list -m github.com/ollama/ollama; cat "$here/CMakeLists.txt" "$here/build.sh" "$here"/feature-tests/*.comp; g++ --version | head -1; cmake --version | head -1; glslc --version | head -1; grep -m1 VK_HEADER_VERSION /usr/include/vulkan/vulkan_core.h; } | sha256sum | cut -c1-16)
cache=${GOGGML_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/go-ggml}/vulkan-$key
lib="$cache/out/libggml-vulkan.a"

if [ ! -f "$lib" ]; then
  echo "build/vulkan: building in $cache"
  rm -rf "$cache"
  mkdir -p "$cache/src" "$cache/out"
  # A writable copy of the provider's ggml: CMake writes beside it, and the
  # copy gets what the provider leaves out.
  cp -r "$ggml/include" "$ggml/src" "$ggml/cmake" "$cache/src/"
  chmod -R u+w "$cache/src"
  mkdir -p "$cache/src/src/ggml-vulkan/vulkan-shaders/feature-tests"
  cp "$here"/feature-tests/*.comp "$cache/src/src/ggml-vulkan/vulkan-shaders/feature-tests/"
  # Vulkan headers older than 1.3.261 lack VK_EXT_layer_settings, which one
  # block of the instance set-up uses (for validation layers only): compile
  # that block only where the headers have it.
  vk="$cache/src/src/ggml-vulkan/ggml-vulkan.cpp"
  sed -i 's|^    VkBool32 enable_best_practice = layer_settings;$|#ifdef VK_EXT_layer_settings\n&|' "$vk"
  sed -i 's|^\(    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, \&app_info, layers, extensions\), \&layer_setting_info);$|&\n#else\n\1);\n#endif|' "$vk"
  if [ "$(grep -c '^#ifdef VK_EXT_layer_settings$' "$vk")" != 1 ] || [ "$(grep -c '^#else$' "$vk")" -lt 1 ]; then
    echo "build/vulkan: the VK_EXT_layer_settings guard did not apply: ggml-vulkan.cpp changed; update build/vulkan/build.sh" >&2
    exit 1
  fi
  cmake -S "$here" -B "$cache/build" -DGGML_SRC="$cache/src" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="-O2" -DCMAKE_CXX_FLAGS="-O2" > "$cache/cmake.log"
  cmake --build "$cache/build" --target ggml-vulkan -j "$(nproc)" > "$cache/build.log" 2>&1 || {
    tail -40 "$cache/build.log" >&2; exit 1; }
  cp "$(find "$cache/build" -name libggml-vulkan.a | head -1)" "$lib.tmp"
  mv "$lib.tmp" "$lib"
fi
mkdir -p "$here/lib"
cp "$lib" "$here/lib/libggml-vulkan.a"
echo "build/vulkan: $here/lib/libggml-vulkan.a"
