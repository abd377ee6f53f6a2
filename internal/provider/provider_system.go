//go:build ggml_system

package provider

// The system provider: an installed upstream ggml (v0.21.0 or later) found
// with pkg-config, e.g. a CMake install from source:
//
//	cmake -S ggml -B build -DBUILD_SHARED_LIBS=ON -DGGML_RPC=ON -DCMAKE_BUILD_TYPE=Release
//	cmake --build build -j && cmake --install build --prefix $PREFIX
//	PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig go build -tags ggml_system ./...
//
// The lines every cgo package of go-ggml needs for this provider
// (go generate ./internal/provider copies them into each package's
// provider_gen.go): the define that selects this provider's section of
// goggml.h, and the include path of the installed headers.
//
//goggml:cgo ggml_system CPPFLAGS: -DGOGGML_SYSTEM
//goggml:cgo ggml_system pkg-config: ggml

/*
// Upstream's ggml.pc says only -lggml, but the binding calls into the core
// (libggml-base), the CPU backend (libggml-cpu) and the RPC backend
// (libggml-rpc, package rpc; upstream builds it with -DGGML_RPC=ON)
// directly: the linker wants them named (the -L of pkg-config --libs ggml
// finds them).
// --disable-new-dtags: an rpath given to the link (CGO_LDFLAGS
// -Wl,-rpath,<libdir> for a prefix outside the loader's path) becomes
// DT_RPATH, which the loader also follows for libggml.so's own
// dependencies (libggml-cpu.so, libggml-base.so); a DT_RUNPATH is not.
// -rdynamic as for the embedded provider: a backend module loaded at run
// time binds to this binary's ggml.
#cgo LDFLAGS: -lggml-base -lggml-cpu -lggml-rpc -Wl,--disable-new-dtags -Wl,--allow-shlib-undefined
#cgo linux LDFLAGS: -rdynamic
#include "goggml.h"
*/
import "C"

// Provider names the ggml this binary was linked with.
const Provider = "system (pkg-config)"
