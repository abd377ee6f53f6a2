// Command cgoenv prints the one-time build settings a machine needs to build
// go-ggml well: the CPU flags ggml's C code should be compiled with and, when
// go-ggml is not in the module cache (a replace to a checkout), the include
// path of the provider's headers.
//
// Run it from your module, after `go get github.com/go-ggml/ggml`:
//
//	go run github.com/go-ggml/ggml/build/cgoenv
//
// and run the `go env -w` lines it prints. The Makefile of go-ggml uses the
// same program (-print=cflags, -print=include), so there is one source of
// truth for the flags.
//
// Why: cgo compiles ggml with CGO_CFLAGS, which defaults to "-O2 -g" with no
// -march: ggml then runs its scalar code. Measured on an AVX-512 Xeon, a
// 2048³ f32 matmul ran at 7.7 GFLOPS without the flags and ~330 with them.
// On x86 the AMX extensions are turned off because the embedded provider
// ships without ggml's AMX sources and would not link with them on.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

const (
	providerModule = "github.com/ollama/ollama"
	providerInc    = "ml/backend/ggml/ggml/include"
	selfModule     = "github.com/go-ggml/ggml"
)

func main() {
	print := flag.String("print", "env", "what to print: env (the go env -w lines), cflags (the CPU flags), include (the provider's include directory)")
	flag.Parse()
	switch *print {
	case "cflags":
		fmt.Println(cpuFlags(runtime.GOOS, runtime.GOARCH))
	case "include":
		dir, err := moduleDir(providerModule)
		if err != nil {
			fail(err)
		}
		fmt.Println(filepath.Join(dir, providerInc))
	case "env":
		if err := printEnv(); err != nil {
			fail(err)
		}
	default:
		fail(fmt.Errorf("unknown -print=%s (want env, cflags or include)", *print))
	}
}

// cpuFlags returns the C and C++ flags for ggml on this machine.
func cpuFlags(goos, goarch string) string {
	switch goarch {
	case "amd64", "386":
		return "-O3 -march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
	case "arm64":
		if goos == "darwin" {
			return "-O3" // Apple's clang targets the host's Apple silicon by default
		}
		return "-O3 -mcpu=native"
	default:
		return "-O3"
	}
}

func printEnv() error {
	flags := cpuFlags(runtime.GOOS, runtime.GOARCH)
	fmt.Println("# go-ggml: one-time build settings for this machine; run these lines.")
	fmt.Println("# CPU flags for ggml's C code (without -march ggml runs its slow scalar code):")
	fmt.Printf("go env -w CGO_CFLAGS=%s\n", shellQuote(flags))
	fmt.Printf("go env -w CGO_CXXFLAGS=%s\n", shellQuote(flags))
	self, err := moduleDir(selfModule)
	if err != nil {
		fmt.Println("# (run this from a module that requires " + selfModule + " to check the header path too)")
		return nil
	}
	cache, err := goEnv("GOMODCACHE")
	if err != nil {
		return err
	}
	if strings.HasPrefix(self, filepath.Clean(cache)+string(filepath.Separator)) {
		fmt.Println("# Headers: go-ggml is in the module cache, its forwarding headers find ggml's; nothing to set.")
		return nil
	}
	if _, err := os.Stat(filepath.Join(self, "third_party", "ggml", "provider-include")); err == nil {
		fmt.Printf("# Headers: %s has the provider-include link (made by make); nothing to set.\n", self)
		return nil
	}
	dir, err := moduleDir(providerModule)
	if err != nil {
		return err
	}
	fmt.Printf("# Headers: go-ggml is used from %s, outside the module cache: point cgo at ggml's headers\n", self)
	fmt.Println("# (or run `make` in that checkout, which links them instead).")
	fmt.Printf("go env -w CGO_CPPFLAGS=%s\n", shellQuote("-I"+filepath.Join(dir, providerInc)))
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

func goEnv(name string) (string, error) { return goCmd("env", name) }

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

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cgoenv:", err)
	os.Exit(1)
}
