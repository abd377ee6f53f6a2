package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/internal/provider/layout"
)

// TestSearchFindsEveryLayout lays go-ggml and the provider out as each way
// of resolving a module does, in a temporary directory, and checks that the
// first of a forwarding file's paths that exists is the provider's file,
// and that a layout no place covers finds nothing (the #error's case).
func TestSearchFindsEveryLayout(t *testing.T) {
	const version = "v0.17.4"
	provider := providerModule + "@" + version + "/" + providerGGML
	cases := []struct {
		name string
		self string // go-ggml's directory, relative to the root
		// where the provider's ggml directory is, relative to the root; ""
		// for nowhere the search looks
		ggml string
	}{
		{"module cache", "home/go/pkg/mod/github.com/go-ggml/ggml@v1.0.0", "home/go/pkg/mod/" + provider},
		{"fork, 2 elements", "cache/example.com/ggml@v1.0.0", "cache/" + provider},
		{"fork, 4 elements", "cache/example.com/acme/forks/ggml@v1.0.0", "cache/" + provider},
		{"fork, major version", "cache/example.com/acme/ggml/v2@v2.0.0", "cache/" + provider},
		{"fork, 8 elements", "cache/a.com/b/c/d/e/f/g/ggml@v1.0.0", "cache/" + provider},
		{"replace to a copy under home", "home/src/work/ggml-copy", "home/go/pkg/mod/" + provider},
		{"go.work under home", "home/src/ws/ggml", "home/go/pkg/mod/" + provider},
		{"vendor under home", "home/src/app/vendor/github.com/go-ggml/ggml", "home/go/pkg/mod/" + provider},
		{"copy under a GOPATH", "gopath/src/github.com/go-ggml/ggml", "gopath/pkg/mod/" + provider},
		{"copy in a Docker image", "app/third/ggml", "go/pkg/mod/" + provider},
		{"checkout with its link", "checkout", "checkout/internal/provider/" + linkDir},
		{"copy beside a cache elsewhere", "work/ggml-copy", "cache/" + provider},
	}
	files := []struct{ dir, file string }{
		{"include/goggml", "include/ggml.h"},
		{"embedded/core", "src/ggml.c"},
		{"embedded/cpu", "src/ggml-cpu/ops.cpp"},
		{"embedded/cpuamx", "src/ggml-cpu/amx/mmq.cpp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			self := filepath.Join(root, filepath.FromSlash(c.self))
			ggml := filepath.Join(root, filepath.FromSlash(c.ggml))
			for _, f := range files {
				require.NoError(t, os.MkdirAll(filepath.Join(self, "internal", "provider", filepath.FromSlash(f.dir)), 0o755))
				target := filepath.Join(ggml, filepath.FromSlash(f.file))
				require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
				require.NoError(t, os.WriteFile(target, nil, 0o644))
			}
			for _, f := range files {
				from := filepath.Join(self, "internal", "provider", filepath.FromSlash(f.dir))
				found := ""
				for _, p := range searchPaths(f.dir, version, f.file) {
					if _, err := os.Stat(filepath.Join(from, filepath.FromSlash(p))); err == nil {
						found = filepath.Join(from, filepath.FromSlash(p))
						break
					}
				}
				if c.name == "copy beside a cache elsewhere" {
					// Nothing under root: a machine's own /go/pkg/mod, above
					// root, may still have it.
					require.False(t, strings.HasPrefix(found, root), "%s from %s: %s", f.file, f.dir, found)
					continue
				}
				require.Equal(t, filepath.Join(ggml, filepath.FromSlash(f.file)), found, "%s from %s", f.file, f.dir)
			}
		})
	}
}

// TestSearchOrder checks that the module cache beside go-ggml comes first
// (a build from the module cache includes at the first try, as before the
// other places existed) and the checkout's link second.
func TestSearchOrder(t *testing.T) {
	p := searchPaths("embedded/core", "v0.17.4", "src/ggml.c")
	require.Equal(t, "../../../../../../../github.com/ollama/ollama@v0.17.4/ml/backend/ggml/ggml/src/ggml.c", p[0])
	require.Equal(t, "../../provider-ggml/src/ggml.c", p[1])
	require.Len(t, p, 2+maxForkDepth-1+2*maxClimb)
}

// TestIncludeDirsCoverGroups: the include directories that build/cgoenv
// prints for CGO_CPPFLAGS (layout.IncludeDirs) are every one a package of
// forwarding sources compiles with.
func TestIncludeDirsCoverGroups(t *testing.T) {
	for _, g := range srcGroups {
		for _, d := range g.Include {
			require.Contains(t, layout.IncludeDirs, d, "%s's -I %s", g.Dir, d)
		}
	}
}
