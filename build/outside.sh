#!/usr/bin/env bash
# go-ggml: build the README's quick start as a user would: a module of its
# own outside this checkout, go-ggml fetched into a fresh, read-only module
# cache (from a file proxy made of this checkout's HEAD), no environment
# (no CGO_CFLAGS, no links), then run it. Proves that the forwarding headers
# and sources find ggml from the module cache layout and that a plain
# go build gets ggml's SIMD code (the program prints ggml's CPU features).
#
#   build/outside.sh            uses a temporary directory, removed after
#   build/outside.sh ways       also builds and runs it the other ways Go
#                               resolves a dependency, each from a fresh
#                               directory (so ggml's C is compiled again),
#                               with no setup step: go mod vendor; a replace
#                               directive to a read-only copy; a go.work
#                               workspace; a fork renamed to a module path
#                               of four elements, from the proxy. The module
#                               cache is at go/pkg/mod of a home directory
#                               that holds the copies, as Go's default is.
#                               Then a copy where no search finds ggml (the
#                               cache elsewhere): the build must fail naming
#                               the fix, and build with that fix. Three of
#                               them with a user's CGO_CFLAGS/CGO_CXXFLAGS
#                               (AMX turned off after -march=native,
#                               x86-64-v2, -O0 -g).
#   build/outside.sh vulkan     builds the quick start with -tags vulkan only,
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
self=github.com/go-ggml/ggml
# The ways mode's fork: a module path of four elements, one more than
# go-ggml's, so that the cache beside it is one directory further up.
fork=example.com/acme/forks/ggml

# HEAD's committed files, as a module zip has them, into directory $1. A
# folder with a go.mod of its own is another module
# (model/server/openaitest): a module zip leaves it out, as the Go proxy's
# zips do.
nested=()
while IFS= read -r mod; do
  [ "$mod" = go.mod ] || nested+=(":(exclude)$(dirname "$mod")")
done < <(cd "$repo" && git ls-files -- '*go.mod')
export_head() {
  mkdir -p "$1"
  (cd "$repo" && git archive --format=tar HEAD -- . "${nested[@]}") | tar -x -C "$1"
}

# Module $1 at $version in the file proxy, zipped from directory $2.
publish() {
  local dir=$work/proxy/$1/@v
  mkdir -p "$dir"
  (cd "$2" && git init -q && git add -A && git -c user.name=ci -c user.email=ci@example.com commit -qm "$1" &&
    git archive --format=zip --prefix="$1@$version/" -o "$dir/$version.zip" HEAD && rm -rf .git)
  cp "$2/go.mod" "$dir/$version.mod"
  echo "{\"Version\":\"$version\"}" >"$dir/$version.info"
  echo "$version" >"$dir/list"
}

# A file proxy holding go-ggml at HEAD (committed files only).
export_head "$work/src/self"
publish "$self" "$work/src/self"

# The user's module: the README's program, in app directory $1.
new_app() {
  mkdir -p "$1"
  cp "$repo/examples/quickstart/main.go" "$1/main.go"
  cat >>"$1/main.go" <<'GO'

func init() {
	fmt.Println("ggml CPU features:", ggml.CPUFeatures())
	fmt.Printf("ggml CPU matrix kernels: %q\n", ggml.CPUKernelVariant())
}
GO
  (cd "$1" && "$go" mod init example.com/app >/dev/null 2>&1)
}

# The module cache is where Go puts it by default, go/pkg/mod of the
# user's home directory ($work/home); the ways mode's copies live there too.
home=$work/home
new_app "$home/src/app"
cd "$home/src/app"
cache=$(cd "$repo" && "$go" env GOMODCACHE)
export GOMODCACHE=$home/go/pkg/mod
export GOPROXY="file://$work/proxy,file://$cache/cache/download,$("$go" env GOPROXY)"
export GONOSUMDB=$self,$fork GOFLAGS=-modcacherw=false
unset CGO_CFLAGS CGO_CXXFLAGS CGO_CPPFLAGS CGO_LDFLAGS
"$go" get "$self@$version" >"$work/get.log" 2>&1 || { cat "$work/get.log" >&2; exit 1; }
"$go" mod tidy
# (The vulkan mode's build is the plain one with the tag: CI builds the
# plain one in the ways mode.)
if [ "$mode" != vulkan ]; then
  echo "outside: building the quick start against $self@$version, no environment"
  "$go" build -o app .
  ./app
fi
if [ "$mode" = ways ]; then
  # build_run DESC FLAGS ARGS...: go build ARGS with a user's compiler flags
  # FLAGS (which come before go-ggml's #cgo flags on the command line; ""
  # for none), then run the program; go-ggml's C must have been compiled
  # from the directory DESC's way puts it in (the list shows it).
  build_run() {
    local desc=$1 flags=$2
    shift 2
    echo "outside: the quick start from $desc${flags:+, CGO_CFLAGS=CGO_CXXFLAGS=\"$flags\"}: go-ggml at $("$go" list "$@" -f '{{.Dir}}' "${pkg:-$self}/ggml")"
    CGO_CFLAGS="$flags" CGO_CXXFLAGS="$flags" "$go" build "$@" -o app-way .
    ./app-way | tail -1
  }

  # go mod vendor: the copy under vendor/ finds the provider in the module
  # cache above it (go mod vendor leaves the provider's headers out: its
  # include directory is no Go package).
  cp -r "$home/src/app" "$home/src/app-vendor"
  cd "$home/src/app-vendor"
  "$go" mod vendor
  build_run "go mod vendor" "-O3 -march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  [ -f vendor/$self/internal/provider/include/goggml.h ] || { echo "outside: go mod vendor left out goggml.h" >&2; exit 1; }

  # A replace directive to a read-only copy (a clean export of HEAD,
  # nothing built or linked in it).
  export_head "$home/src/ggml-copy"
  chmod -R a-w "$home/src/ggml-copy"
  new_app "$home/src/app-replace"
  cd "$home/src/app-replace"
  "$go" mod edit -require="$self@v0.0.0-00010101000000-000000000000" -replace="$self=../ggml-copy"
  "$go" mod tidy
  build_run "a replace directive to a read-only copy" "-march=x86-64-v2"

  # A go.work workspace: the user's module and a copy of go-ggml.
  export_head "$home/src/ws/ggml"
  new_app "$home/src/ws/app"
  cd "$home/src/ws"
  "$go" work init ./app ./ggml
  cd app
  build_run "a go.work workspace" ""

  # A fork renamed to $fork: its module path and its imports, from the proxy.
  export_head "$work/src/fork"
  grep -rlF "$self" "$work/src/fork" | xargs sed -i "s#$self#$fork#g"
  publish "$fork" "$work/src/fork"
  new_app "$home/src/app-fork"
  cd "$home/src/app-fork"
  sed -i "s#$self#$fork#g" main.go
  "$go" get "$fork@$version" >"$work/get.log" 2>&1 || { cat "$work/get.log" >&2; exit 1; }
  "$go" mod tidy
  pkg=$fork build_run "the fork $fork@$version in the module cache" ""

  # A copy where no search finds the provider: the module cache outside
  # every directory above it. The build fails naming the fix; the fix builds.
  export_head "$work/elsewhere/ggml-copy"
  chmod -R a-w "$work/elsewhere/ggml-copy"
  new_app "$work/elsewhere/app"
  cd "$work/elsewhere/app"
  "$go" mod edit -require="$self@v0.0.0-00010101000000-000000000000" -replace="$self=../ggml-copy"
  "$go" mod tidy
  # (A machine whose own cache is at /go/pkg/mod, as Go's Docker images
  # have it, finds it above the copy: then there is no error to check.)
  above="" pv=$("$go" list -m -f '{{.Version}}' github.com/ollama/ollama)
  d=$work/elsewhere/ggml-copy
  while [ "$d" != / ]; do
    d=$(dirname "$d")
    for c in "$d/go/pkg/mod" "$d/pkg/mod"; do
      [ -z "$above" ] && [ -d "${c%/}/github.com/ollama/ollama@$pv" ] && above=${c%/}
    done
  done
  if [ -n "$above" ]; then
    echo "outside: $above, above the copy, holds the provider: no error to check"
  elif "$go" build -o app-way . 2>"$work/build.log"; then
    echo "outside: a copy outside the module cache's directory built: its search should not find ggml" >&2
    exit 1
  else
    grep -q "go run $self/build/cgoenv -print=cppflags" "$work/build.log" ||
      { cat "$work/build.log" >&2; echo "outside: the build's error does not name the fix" >&2; exit 1; }
    grep -m1 'error:' "$work/build.log"
  fi
  fix=$("$go" run "$self/build/cgoenv" -print=cppflags)
  CGO_CPPFLAGS="$fix" build_run "a copy the search cannot find, with CGO_CPPFLAGS from cgoenv" "-O0 -g"
  exit 0
fi
if [ "$mode" = vulkan ]; then
  echo "outside: the quick start with -tags vulkan, the library from build/gpulib"
  libdir=$("$go" run "$self/build/gpulib" vulkan)
  CGO_LDFLAGS="-L$libdir" "$go" build -tags vulkan -o app-vulkan .
  out=$(GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0} ./app-vulkan)
  echo "$out"
  echo "$out" | grep -q "on Vulkan" || { echo "outside: the quick start did not run on Vulkan" >&2; exit 1; }
  exit 0
fi
[ "$mode" = bench ] || exit 0

# The bench package's tests, compiled from the module cache as they are
# there: -t adds what they import (testify) to the user's go.sum.
"$go" get -t "$self/bench@$version" >"$work/get.log" 2>&1 || { cat "$work/get.log" >&2; exit 1; }
"$go" test -c -o bench-default.test "$self/bench"
"$go" test -c -tags ggml_native -o bench-native.test "$self/bench"
dir=$("$go" list -f '{{.Dir}}' "$self/bench")
count=${BENCH_COUNT:-5}
echo "outside: the default level against ggml_native, compute rows, $count pairs (bench from $dir)"
. "$repo/build/alternate.sh"
alternate "$count" "${BENCH_TIME:-300ms}" "$dir" \
  default="$home/src/app/bench-default.test" native="$home/src/app/bench-native.test" |
  (cd "$repo" && "$go" run ./bench/table -sides default,native)
