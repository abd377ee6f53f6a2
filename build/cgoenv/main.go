// Command cgoenv tells where go-ggml finds the embedded provider's ggml
// (github.com/ollama/ollama's ml/backend/ggml/ggml), and what to set where
// it cannot.
//
// No environment is needed to build go-ggml: its forwarding headers and
// sources (internal/provider) find the provider's files by their paths in
// the module cache, beside go-ggml or beside a fork of it, and in a module
// cache at go/pkg/mod or pkg/mod in a directory above go-ggml (Go's default
// cache, or a GOPATH's, for a go-ggml used through a replace directive, a
// go.work workspace or a vendor directory under $HOME or that GOPATH). A checkout of go-ggml elsewhere links the
// provider with `make setup`; a module cache elsewhere needs the include
// path this command prints:
//
//	go run github.com/go-ggml/ggml/build/cgoenv                  # says whether anything is missing, and the fix
//	go run github.com/go-ggml/ggml/build/cgoenv -print=cppflags  # the -I flags for CGO_CPPFLAGS
//	go run github.com/go-ggml/ggml/build/cgoenv -print=ggml      # the provider's ggml directory (include/, src/)
//	go run github.com/go-ggml/ggml/build/cgoenv -print=include   # its include directory
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/go-ggml/ggml/internal/provider/layout"
)

const (
	providerModule = layout.Module
	providerGGML   = layout.GGML
	selfModule     = "github.com/go-ggml/ggml"
)

func main() {
	print := flag.String("print", "check", "what to print: check, cppflags, ggml or include")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `usage: go run github.com/go-ggml/ggml/build/cgoenv [-print check|cppflags|ggml|include]

cgoenv tells where go-ggml finds the embedded provider's ggml. With no flag
it says whether a build finds it from here and, if not, what to do.
-print=cppflags prints the -I flags that make any go-ggml find it (for
CGO_CPPFLAGS); -print=ggml and -print=include print the provider's ggml and
include directories (make setup links internal/provider/provider-ggml to
the first).

flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	switch *print {
	case "include", "ggml", "cppflags":
		dir, err := providerDir()
		if err != nil {
			fail(err)
		}
		switch *print {
		case "include":
			fmt.Println(filepath.Join(dir, "include"))
		case "ggml":
			fmt.Println(dir)
		default:
			fmt.Println(cppflags(dir))
		}
	case "check":
		if err := check(); err != nil {
			fail(err)
		}
	default:
		fail(fmt.Errorf("unknown -print=%s (want check, cppflags, ggml or include)", *print))
	}
}

// cppflags returns the -I flags of the provider's include directories.
func cppflags(dir string) string {
	var flags []string
	for _, d := range layout.IncludeDirs {
		flags = append(flags, "-I"+filepath.Join(dir, filepath.FromSlash(d)))
	}
	return strings.Join(flags, " ")
}

// providerDir returns the provider's ggml directory, downloaded.
func providerDir() (string, error) {
	dir, err := moduleDir(providerModule)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.FromSlash(providerGGML)), nil
}

func check() error {
	self, err := moduleDir(selfModule)
	if err != nil {
		fmt.Println("cgoenv: run this from a module that requires " + selfModule)
		return nil
	}
	dir, err := providerDir()
	if err != nil {
		return err
	}
	version, err := goCmd("list", "-m", "-f", "{{.Version}}", providerModule)
	if err != nil {
		return err
	}
	cache, err := goCmd("env", "GOMODCACHE")
	if err != nil {
		return err
	}
	found, how := finds(self, cache, version)
	if found {
		fmt.Printf("go-ggml (%s) finds ggml %s; nothing to set.\n", self, how)
		return nil
	}
	flags := cppflags(dir)
	fmt.Printf(`go-ggml (%s) cannot find ggml (%s) from where it is:
it is neither in the module cache nor under a directory whose go/pkg/mod or
pkg/mod is the module cache (%s).
Either move the module cache there, or set the include path, once:

	go env -w CGO_CPPFLAGS=%q

(for the embedded provider only: with -tags ggml_system these directories
would hide the installed ggml's headers).
`, self, dir, cache, flags)
	if isCheckout(self) {
		fmt.Printf("\nor, in this checkout of go-ggml, run `make setup`.\n")
	}
	return nil
}

// finds reports whether go-ggml in dir self finds the provider by one of
// the places internal/provider/gen/search.go names, and how.
func finds(self, cache, version string) (bool, string) {
	sep := string(filepath.Separator)
	mod := filepath.Join(filepath.FromSlash(providerModule)+"@"+version, filepath.FromSlash(providerGGML), "include", "ggml.h")
	if strings.HasPrefix(self, filepath.Clean(cache)+sep) && exists(filepath.Join(cache, mod)) {
		return true, "beside it in the module cache"
	}
	if exists(filepath.Join(self, "internal", "provider", layout.LinkDir, "include", "ggml.h")) {
		return true, "through the checkout's link internal/provider/provider-ggml"
	}
	d := self
	for range layout.MaxClimb {
		d = filepath.Dir(d)
		for _, c := range layout.CacheDirs {
			c = filepath.Join(d, filepath.FromSlash(c))
			if exists(filepath.Join(c, mod)) {
				return true, "in the module cache " + c
			}
		}
	}
	return false, ""
}

func isCheckout(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "internal", "provider", "gen"))
	return err == nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// moduleDir asks the go command where module m is for the current module.
func moduleDir(m string) (string, error) {
	out, err := goCmd("list", "-m", "-f", "{{.Dir}}", m)
	if err != nil {
		return "", err
	}
	if out == "" {
		return "", fmt.Errorf("module %s is not downloaded; run `go mod download %s`", m, m)
	}
	return out, nil
}

func goCmd(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cgoenv:", err)
	os.Exit(1)
}
