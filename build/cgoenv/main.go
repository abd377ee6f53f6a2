// Command cgoenv tells where the embedded provider's ggml is, for builds of
// go-ggml from a checkout rather than the module cache.
//
// No environment is needed to build go-ggml: ggml's CPU flags are set by
// go-ggml's own cgo packages (third_party/ggml/embedded; build tags
// ggml_native and ggml_portable choose another CPU level), and from the
// module cache go-ggml finds ggml's headers and sources beside it. A
// checkout of go-ggml (a clone, or the target of a replace directive) finds
// them through two links that `make setup` creates from this program's
// output:
//
//	go run ./build/cgoenv -print=include   # the provider's include directory
//	go run ./build/cgoenv -print=ggml      # the provider's ggml directory (include/, src/)
//	go run ./build/cgoenv                  # says whether anything is missing
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	providerModule = "github.com/ollama/ollama"
	providerGGML   = "ml/backend/ggml/ggml"
	selfModule     = "github.com/go-ggml/ggml"
)

func main() {
	print := flag.String("print", "check", "what to print: include (the provider's include directory), ggml (its ggml directory) or check")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `usage: go run ./build/cgoenv [-print include|ggml|check]

cgoenv tells where the embedded provider's ggml is, for builds of go-ggml
from a checkout (make setup links third_party/ggml/provider-include and
provider-ggml to what it prints); with no flag it says whether anything is
missing.

flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	switch *print {
	case "include", "ggml":
		dir, err := moduleDir(providerModule)
		if err != nil {
			fail(err)
		}
		out := filepath.Join(dir, providerGGML)
		if *print == "include" {
			out = filepath.Join(out, "include")
		}
		fmt.Println(out)
	case "check":
		if err := check(); err != nil {
			fail(err)
		}
	default:
		fail(fmt.Errorf("unknown -print=%s (want include, ggml or check)", *print))
	}
}

func check() error {
	self, err := moduleDir(selfModule)
	if err != nil {
		fmt.Println("go-ggml: run this from a module that requires " + selfModule)
		return nil
	}
	cache, err := goCmd("env", "GOMODCACHE")
	if err != nil {
		return err
	}
	if strings.HasPrefix(self, filepath.Clean(cache)+string(filepath.Separator)) {
		fmt.Println("go-ggml is in the module cache: it finds ggml's headers and sources beside it; nothing to set.")
		return nil
	}
	for _, link := range []string{"provider-include", "provider-ggml"} {
		if _, err := os.Stat(filepath.Join(self, "third_party", "ggml", link)); err != nil {
			fmt.Printf("go-ggml is used from the checkout %s, which lacks the link third_party/ggml/%s:\nrun `make setup` there.\n", self, link)
			return nil
		}
	}
	fmt.Printf("go-ggml is used from the checkout %s, which has its links to ggml; nothing to set.\n", self)
	return nil
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
		return "", fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cgoenv:", err)
	os.Exit(1)
}
