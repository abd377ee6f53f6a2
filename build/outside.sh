#!/usr/bin/env bash
# go-ggml: build the README's quick start as a user would: a module of its
# own outside this checkout, go-ggml fetched into a fresh, read-only module
# cache (from a file proxy made of this checkout's HEAD), no environment
# (no CGO_CFLAGS, no links), then run it. Proves that the forwarding headers
# and sources find ggml from the module cache layout and that a plain
# go build gets ggml's SIMD code (the program prints ggml's CPU features).
#
#   build/outside.sh            uses a temporary directory, removed after
#   build/outside.sh flags      also builds and runs it with three sets of
#                               a user's CGO_CFLAGS/CGO_CXXFLAGS (AMX turned
#                               off after -march=native, x86-64-v2, -O0 -g)
#   build/outside.sh vulkan     also builds the quick start with -tags vulkan
#                               as the README says a module of its own does
#                               (the library from go run .../build/gpulib
#                               vulkan, CGO_LDFLAGS=-L<dir>) and runs it on
#                               Mesa's lavapipe (GGML_VK_VISIBLE_DEVICES=0)
#   build/outside.sh bench      also compiles go-ggml's bench package from
#                               that module cache, at the default CPU level
#                               and with -tags ggml_native, and runs their
#                               compute rows alternately (as make bench-level
#                               does): the default level against native, as
#                               a user's plain build gets it. BENCH_COUNT
#                               (5) and BENCH_TIME (300ms) as for make bench.
set -euo pipefail
mode=${1:-run}
repo=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
version=v0.0.0-$(date -u +%Y%m%d%H%M%S)-$(cd "$repo" && git rev-parse --short=12 HEAD)

# A file proxy holding go-ggml at HEAD (committed files only).
proxy=$work/proxy/github.com/go-ggml/ggml/@v
mkdir -p "$proxy"
# A folder with a go.mod of its own is another module (model/server/openaitest):
# a module zip leaves it out, as the Go proxy's zips do.
nested=()
while IFS= read -r mod; do
  [ "$mod" = go.mod ] || nested+=(":(exclude)$(dirname "$mod")")
done < <(cd "$repo" && git ls-files -- '*go.mod')
(cd "$repo" && git archive --format=zip --prefix="github.com/go-ggml/ggml@$version/" -o "$proxy/$version.zip" HEAD -- . "${nested[@]}")
cp "$repo/go.mod" "$proxy/$version.mod"
echo "{\"Version\":\"$version\"}" >"$proxy/$version.info"
echo "$version" >"$proxy/list"

# The user's module: the README's program.
mkdir -p "$work/app"
cp "$repo/examples/quickstart/main.go" "$work/app/main.go"
cat >>"$work/app/main.go" <<'GO'

func init() {
	fmt.Println("ggml CPU features:", ggml.CPUFeatures())
	fmt.Printf("ggml CPU matrix kernels: %q\n", ggml.CPUKernelVariant())
}
GO
cd "$work/app"
cache=$(cd "$repo" && "$go" env GOMODCACHE)
export GOMODCACHE=$work/modcache
export GOPROXY="file://$work/proxy,file://$cache/cache/download,$("$go" env GOPROXY)"
export GONOSUMDB=github.com/go-ggml/ggml GOFLAGS=-modcacherw=false
unset CGO_CFLAGS CGO_CXXFLAGS CGO_CPPFLAGS CGO_LDFLAGS
"$go" mod init example.com/app >/dev/null 2>&1
"$go" get "github.com/go-ggml/ggml@$version" >"$work/get.log" 2>&1 || { cat "$work/get.log" >&2; exit 1; }
"$go" mod tidy
echo "outside: building the quick start against github.com/go-ggml/ggml@$version, no environment"
"$go" build -o app .
./app
if [ "$mode" = flags ]; then
  # A user's own compiler flags come before go-ggml's #cgo flags on the
  # command line: each set must build, and the program run right.
  for flags in "-O3 -march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16" "-march=x86-64-v2" "-O0 -g"; do
    echo "outside: the quick start with CGO_CFLAGS=CGO_CXXFLAGS=\"$flags\""
    CGO_CFLAGS="$flags" CGO_CXXFLAGS="$flags" "$go" build -o app-flags .
    ./app-flags | tail -1
  done
  exit 0
fi
if [ "$mode" = vulkan ]; then
  echo "outside: the quick start with -tags vulkan, the library from build/gpulib"
  libdir=$("$go" run github.com/go-ggml/ggml/build/gpulib vulkan)
  CGO_LDFLAGS="-L$libdir" "$go" build -tags vulkan -o app-vulkan .
  out=$(GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0} ./app-vulkan)
  echo "$out"
  echo "$out" | grep -q "on Vulkan" || { echo "outside: the quick start did not run on Vulkan" >&2; exit 1; }
  exit 0
fi
[ "$mode" = bench ] || exit 0

# The bench package's tests, compiled from the module cache as they are
# there: -t adds what they import (testify) to the user's go.sum.
"$go" get -t "github.com/go-ggml/ggml/bench@$version" >"$work/get.log" 2>&1 || { cat "$work/get.log" >&2; exit 1; }
"$go" test -c -o bench-default.test github.com/go-ggml/ggml/bench
"$go" test -c -tags ggml_native -o bench-native.test github.com/go-ggml/ggml/bench
dir=$("$go" list -f '{{.Dir}}' github.com/go-ggml/ggml/bench)
count=${BENCH_COUNT:-5}
echo "outside: the default level against ggml_native, compute rows, $count pairs (bench from $dir)"
. "$repo/build/alternate.sh"
alternate "$count" "${BENCH_TIME:-300ms}" "$dir" \
  default="$work/app/bench-default.test" native="$work/app/bench-native.test" |
  (cd "$repo" && "$go" run ./bench/table -sides default,native)
