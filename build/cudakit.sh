#!/usr/bin/env bash
# go-ggml: run -tags cuda test binaries and programs on a GPU machine that
# has the CUDA toolkit but no Go, built from a machine that has Go but no
# CUDA toolkit. Two halves:
#
#   build/cudakit.sh pack KIT PKG...   (here: Go, no nvcc)
#       compiles each package's -tags cuda test binary (a package whose
#       name is main: its program) up to the final link, and keeps what
#       the host linker would be given (Go's go.o, the cgo objects, the
#       link command) in KIT/<path with - for />/, with a copy of the provider's ggml
#       sources in KIT/provider-ggml/ and KIT.tar.xz beside KIT;
#   build/cudakit.sh link KIT          (there: nvcc, cmake, g++, no Go)
#       builds ggml's CUDA library with build/backend.sh (CUDA_ARCHITECTURES,
#       default 90) from KIT/provider-ggml and finishes every link in KIT/bin/
#       (KIT/bin/backend.test, KIT/bin/cmd-llama, ...).
#
# The objects are those `go test -c -tags cuda` makes; only the last step,
# the host link, moves to the other machine (go's -linkmode=external
# -tmpdir keeps its inputs and -v prints its command). GOGGML_KIT_TAG=vulkan
# does the same for Vulkan, which is how the mechanics are tested here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
go=${GO:-go}
tag=${GOGGML_KIT_TAG:-cuda}
verb=${1:?usage: build/cudakit.sh pack KIT PKG... | link KIT}
kit=${2:?usage: build/cudakit.sh pack KIT PKG... | link KIT}

case "$verb" in
pack)
  shift 2
  rm -rf "$kit" "$kit.tar.xz"
  mkdir -p "$kit"
  kit=$(cd "$kit" && pwd)
  for pkg in "$@"; do
    name=$(echo "$pkg" | sed 's|^\./||; s|/|-|g')
    dir="$kit/$name"
    mkdir -p "$dir"
    if [ "$(cd "$repo" && "$go" list -tags "$tag" -f '{{.Name}}' "$pkg")" = main ]; then
      build=(build -o "$dir/$name")
    else
      build=(test -c -o "$dir/$name.test")
    fi
    # The link fails here (no CUDA libraries): what matters is its inputs
    # and its command, printed by the linker's -v.
    (cd "$repo" && "$go" "${build[@]}" -tags "$tag" -ldflags="-s -w -linkmode=external -tmpdir=$dir -v" "$pkg") > "$dir/go.log" 2>&1 || true
    grep '^host link: ' "$dir/go.log" | sed 's/^host link: //' > "$dir/link.cmd"
    [ -s "$dir/link.cmd" ] && [ -f "$dir/go.o" ] || { tail -20 "$dir/go.log" >&2; echo "cudakit: no link inputs for $pkg" >&2; exit 1; }
    rm "$dir/go.log"
    strip --strip-debug "$dir"/0*.o
    echo "cudakit: $pkg -> $dir" >&2
  done
  provider=$(cd "$repo" && "$go" list -m -f '{{.Dir}}' github.com/ollama/ollama)
  mkdir -p "$kit/provider-ggml"
  cp -r "$provider/ml/backend/ggml/ggml/include" "$provider/ml/backend/ggml/ggml/src" "$provider/ml/backend/ggml/ggml/cmake" "$kit/provider-ggml/"
  chmod -R u+w "$kit/provider-ggml"
  (cd "$repo" && "$go" list -m github.com/ollama/ollama) > "$kit/provider-version"
  # Identical objects (ggml's core is in every binary) fall in xz's window.
  tar -C "$(dirname "$kit")" -cf - "$(basename "$kit")" | xz -T0 --lzma2=preset=6,dict=192MiB > "$kit.tar.xz"
  ls -la "$kit.tar.xz" >&2
  ;;
link)
  kit=$(cd "$kit" && pwd)
  libs=()
  if [ "$tag" = cuda ]; then
    nvcc=$(command -v nvcc) || { echo "cudakit: nvcc is not on PATH" >&2; exit 1; }
    cudadir=$(cd "$(dirname "$nvcc")/.." && pwd)
    for d in "$cudadir/lib64" "$cudadir/targets/x86_64-linux/lib" "$cudadir/lib64/stubs" "$cudadir/targets/x86_64-linux/lib/stubs"; do
      [ -d "$d" ] && libs+=("-L$d")
    done
  fi
  CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES:-90} GOGGML_GGML_SRC="$kit/provider-ggml" \
    GOGGML_PROVIDER_VERSION="$(cat "$kit/provider-version")" bash "$here/backend.sh" "$tag" >&2
  mkdir -p "$kit/bin"
  for cmd in "$kit"/*/link.cmd; do
    dir=$(dirname "$cmd")
    name=$(basename "$dir")
    out="$kit/bin/$name"
    grep -q '"-o" "[^"]*\.test"' "$cmd" && out="$out.test"
    # The objects' directory and the checkout's path as they were where
    # the kit was packed, and the -o, as they are here.
    packed=$(grep -o '"[^"]*/go\.o"' "$cmd" | head -1 | sed 's/^"//; s|/go\.o"$||')
    line=$(sed "s|\"-o\" \"[^\"]*\"|\"-o\" \"$out\"|; s|$packed/|$dir/|g; s|\"-L[^\"]*/internal/gpulink/../../build/$tag/lib\"|\"-L$repo/build/$tag/lib\"|" "$cmd")
    eval "$line ${libs[*]}" || { echo "cudakit: link of $name failed" >&2; exit 1; }
    echo "cudakit: $out" >&2
  done
  ;;
*)
  echo "usage: build/cudakit.sh pack KIT PKG... | link KIT" >&2; exit 2 ;;
esac
