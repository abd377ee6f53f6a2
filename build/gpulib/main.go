// Command gpulib builds one of ggml's GPU backends (vulkan or cuda) as the
// static library that go-ggml's build tag of the same name links, for a
// module that requires go-ggml, and prints the directory that holds it:
//
//	export CGO_LDFLAGS="-L$(go run github.com/go-ggml/ggml/build/gpulib vulkan)"
//	go build -tags vulkan ./...
//
// Run it in the module that requires go-ggml: it finds go-ggml and its
// ggml provider in that module's module cache, where both are read-only,
// and builds with build/backend.sh into a cache outside them (GOGGML_CACHE,
// default ~/.cache/go-ggml; reused). The build needs what backend.sh says
// (Vulkan: cmake, g++, glslc, the Vulkan headers; CUDA: the CUDA toolkit).
// Inside a checkout of go-ggml, make vulkan (make cuda) does the same.
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "vulkan" && os.Args[1] != "cuda") {
		fmt.Fprintln(os.Stderr, "usage: go run github.com/go-ggml/ggml/build/gpulib vulkan|cuda\n\n"+
			"Builds ggml's Vulkan (or CUDA) backend for go-ggml's build tag of the same name and prints\n"+
			"the directory of the library: pass it to the linker with CGO_LDFLAGS=\"-L<dir>\".")
		os.Exit(2)
	}
	dir, err := build(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpulib:", err)
		os.Exit(1)
	}
	fmt.Println(dir)
}

// build runs go-ggml's build/backend.sh for backend name and returns the
// library's directory.
func build(name string) (string, error) {
	ggmlDir, err := goList("-m", "-f", "{{.Dir}}", "github.com/go-ggml/ggml")
	if err != nil {
		return "", fmt.Errorf("finding go-ggml (run this in a module that requires it): %w", err)
	}
	provider, err := goList("-m", "-f", "{{.Dir}}", "github.com/ollama/ollama")
	if err != nil {
		return "", fmt.Errorf("finding go-ggml's ggml provider (go mod download): %w", err)
	}
	version, err := goList("-m", "github.com/ollama/ollama")
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", filepath.Join(ggmlDir, "build", "backend.sh"), name)
	cmd.Env = append(os.Environ(),
		"GOGGML_LIB_DIR_ONLY=1",
		"GOGGML_GGML_SRC="+filepath.Join(provider, "ml", "backend", "ggml", "ggml"),
		"GOGGML_PROVIDER_VERSION="+version, // the key make vulkan uses: one build for both
	)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build/backend.sh %s: %w", name, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[len(lines)-1], nil
}

// goList runs go list with args and returns its output, trimmed.
func goList(args ...string) (string, error) {
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return "", fmt.Errorf("go list %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(ee.Stderr))
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
