package main

import (
	"fmt"
	"strings"

	"github.com/go-ggml/ggml/internal/provider/layout"
)

// Where a forwarding file looks for the embedded provider (the names are
// package layout's, which build/cgoenv shares). cgo knows one
// directory, the package's own (${SRCDIR}), and C includes by path, so a
// forwarding file names the provider's files by paths relative to itself,
// one for each place the provider module can be, tried in this order:
//
//  1. The module cache, beside go-ggml: <cache>/github.com/go-ggml/ggml@vX
//     and <cache>/github.com/ollama/ollama@v0.17.4, where go get puts both.
//  2. A checkout's link, internal/provider/provider-ggml, that make setup
//     creates.
//  3. The module cache beside a fork of go-ggml under another module path
//     (a replace directive to a fork, or a renamed module): the module path
//     has 1 to maxForkDepth elements, so the cache's root is that many
//     directories above the module's.
//  4. A module cache at go/pkg/mod or pkg/mod in a directory above go-ggml,
//     up to maxClimb levels, the nearer first: Go's default cache
//     ($HOME/go/pkg/mod; /go/pkg/mod in Go's Docker images) or a GOPATH's
//     (<GOPATH>/pkg/mod, for a copy under <GOPATH>/src), for a go-ggml
//     outside the module cache, as a replace to a local directory, a go.work
//     workspace and a vendor directory have it.
//
// Then the include path (CGO_CPPFLAGS; build/cgoenv -print=cppflags prints
// the lines for a cache elsewhere), then an #error that names the fixes.
// The names of layout, short.
const (
	providerGGML = layout.GGML
	selfDepth    = layout.SelfDepth
	maxForkDepth = layout.MaxForkDepth
	maxClimb     = layout.MaxClimb
	linkDir      = layout.LinkDir
)

// searchPaths returns the paths at which a forwarding file in dir (relative
// to internal/provider, slash-separated) looks for file (relative to the
// provider's ggml directory, e.g. "include/ggml.h"), in order.
func searchPaths(dir, version, file string) []string {
	below := len(strings.Split(dir, "/")) // below internal/provider
	depth := 2 + below                    // below the module root
	up := func(n int) string { return strings.Repeat("../", n) }
	mod := providerModule + "@" + version + "/" + providerGGML + "/" + file
	paths := []string{up(depth+selfDepth) + mod, up(below) + linkDir + "/" + file}
	for k := 1; k <= maxForkDepth; k++ {
		if k != selfDepth {
			paths = append(paths, up(depth+k)+mod)
		}
	}
	for j := 1; j <= maxClimb; j++ {
		for _, c := range layout.CacheDirs {
			paths = append(paths, up(depth+j)+c+"/"+mod)
		}
	}
	return paths
}

// notFound is the #error text for file (relative to the provider's ggml
// directory) when no place has it: the fix for each case.
func notFound(version, file string) string {
	return fmt.Sprintf("go-ggml: cannot find %s of %s@%s, neither beside go-ggml in the module cache nor in a module cache at go/pkg/mod or pkg/mod above go-ggml. "+
		"If the module is not downloaded, run 'go mod download %s'. "+
		"If your module cache is elsewhere (go env GOMODCACHE), set CGO_CPPFLAGS to what 'go run github.com/go-ggml/ggml/build/cgoenv -print=cppflags' prints. "+
		"In a go-ggml checkout, run 'make setup'.",
		file, providerModule, version, providerModule)
}
