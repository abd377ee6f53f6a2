// Package archtest keeps ARCHITECTURE.md true: the layers it states are
// the module's imports, and the files and names it mentions exist.
package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/go-ggml/ggml"

// root is the repository's root, from this package's directory.
const root = "../.."

// layers are ARCHITECTURE.md's layers, bottom first: a package may import
// packages of lower layers, and its own subtree.
var layers = [][]string{
	{"internal/provider", "internal/life"},
	{"internal/bridge", "internal/hashsize", "internal/sysmem"},
	{"internal/gpulink", "internal/testutil", "internal/cabort"},
	{"ggml"},
	{"backend"},
	{"sched", "cpu"},
	{"vulkan", "cuda", "metal"},
	{"gguf", "rpc", "opt"},
	{"tokenizer"},
	{"model"},
	{"examples", "cmd", "bench", "build", "."},
}

// exceptions are known breaks of the layering (ARCHITECTURE.md would name
// them): none today.
var exceptions = map[string]bool{}

// layerOf returns the layer of package dir (relative to the root), or -1,
// and the entry of the layer it is under.
func layerOf(dir string) (int, string) {
	for i, l := range layers {
		for _, p := range l {
			if dir == p || strings.HasPrefix(dir, p+"/") {
				return i, p
			}
		}
	}
	return -1, ""
}

// goFiles walks the module's Go files (no testdata, no hidden folders, no
// links into the provider), calling f with each path relative to root.
func goFiles(t *testing.T, f func(rel string)) {
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || strings.HasPrefix(name, "provider-")) {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			rel, _ := filepath.Rel(root, path)
			f(filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
}

// TestLayers: every import of a package of the module (tests excluded)
// goes down ARCHITECTURE.md's layers.
func TestLayers(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	goFiles(t, func(rel string) {
		if strings.HasSuffix(rel, "_test.go") {
			return
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if exceptions[dir] || strings.HasPrefix(dir, "internal/archtest") {
			return
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ImportsOnly)
		require.NoError(t, err, rel)
		from, tree := layerOf(dir)
		require.GreaterOrEqual(t, from, 0, "package %s is in no layer of ARCHITECTURE.md", dir)
		if strings.HasPrefix(dir, "internal/") {
			g, _ := layerOf("ggml")
			assert.Less(t, from, g, "internal/ is the bottom layer, under ggml: %s is not", dir)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p != module && !strings.HasPrefix(p, module+"/") {
				continue
			}
			to := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
			checked++
			at, toTree := layerOf(to)
			if toTree == tree || exceptions[to] && from == len(layers)-1 {
				continue // within one tree (model and its architectures)
			}
			assert.Less(t, at, from, "%s imports %s, which is not below it in ARCHITECTURE.md's layers", rel, to)
		}
	})
	assert.Positive(t, checked)
}

// TestArchitectureNames: the paths ARCHITECTURE.md names exist, and so do
// the Go names (functions, methods, types, variables, constants).
func TestArchitectureNames(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	require.NoError(t, err)
	declared := map[string]bool{}
	files := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files[d.Name()] = true
		}
		if d != nil && d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "provider-")) {
			return filepath.SkipDir
		}
		return nil
	})
	require.NoError(t, err)
	fset := token.NewFileSet()
	goFiles(t, func(rel string) {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		require.NoError(t, err, rel)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				declared[d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declared[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n.Name] = true
						}
					}
				}
			}
		}
	})
	fileName := regexp.MustCompile(`^[\w-]+\.(go|h|c|cpp|md|sh)$`)
	std := map[string]bool{"runtime": true, "os": true, "errors": true, "context": true}
	ident := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z][A-Za-z0-9]*)*$`)
	var paths, names int
	for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(string(doc), -1) {
		tok := m[1]
		switch {
		case strings.Contains(tok, "/") && !strings.ContainsAny(tok, " *=") && !strings.Contains(tok, "github.com"):
			_, err := os.Stat(filepath.Join(root, strings.TrimSuffix(tok, "/")))
			assert.NoError(t, err, "ARCHITECTURE.md names %s", tok)
			paths++
		case fileName.MatchString(tok):
			assert.True(t, files[tok], "ARCHITECTURE.md names a file %s that is nowhere in the repository", tok)
			paths++
		case ident.MatchString(tok):
			parts := strings.Split(tok, ".")
			if std[parts[0]] {
				continue
			}
			name := parts[len(parts)-1]
			if len(parts) == 1 && strings.ToLower(name) == name && !declared[name] {
				continue // a word in code font (a Go keyword, a C name)
			}
			assert.True(t, declared[name], "ARCHITECTURE.md names %s, which the module does not declare", tok)
			names++
		}
	}
	assert.Greater(t, paths, 20)
	assert.Greater(t, names, 20)
}

// TestOneUpstreamVersion: the upstream release the system provider is
// pinned to is written in one Go place (bridge.NeedsUpstream's
// UpstreamVersion, read from goggml.h), never in another string of the
// module's code, so that a new pin changes every message at once.
func TestOneUpstreamVersion(t *testing.T) {
	version := regexp.MustCompile(`v0\.\d+\.\d+`)
	fset := token.NewFileSet()
	goFiles(t, func(rel string) {
		if strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "build/") || strings.HasPrefix(rel, "bench/") {
			return
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
		require.NoError(t, err, rel)
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.Contains(lit.Value, "ggml") && version.MatchString(lit.Value) {
				if !strings.Contains(lit.Value, "ollama") {
					t.Errorf("%s: a string names a ggml release (%s): use bridge.NeedsUpstream or bridge.UpstreamVersion", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
	})
}
