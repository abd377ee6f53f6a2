//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

package cpuvnni_test

import (
	"os"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/internal/provider/embedded/internal/objtest"

	// The objects this package's code calls into (ggml's core and CPU
	// backend), so that the test binary links.
	_ "github.com/go-ggml/ggml/internal/provider/embedded/cpu"
)

// This package's code was compiled for AVX-512 and must never run on a
// CPU without it: the linker may pick any copy of a symbol that two
// objects both define (an inline function, a template instance), so the
// package's objects must define, as global or weak symbols, nothing but
// the prefixed entry points that the dispatcher calls after checking the
// CPU, each of them listed in variants_gen.h; and they must hold no code
// that runs at start (constructors, static initializers) and no
// thread-local data. Read from the package's archive in the build cache.
func TestVariantSymbols(t *testing.T) {
	objs, err := objtest.Objects("github.com/go-ggml/ggml/internal/provider/embedded/cpuvnni")
	require.NoError(t, err)
	var defined []string
	for _, o := range objs {
		require.Empty(t, o.StartCode, "%s: code of this copy would run at start on any CPU", o.Name)
		require.False(t, o.TLS, "%s has thread-local data", o.Name)
		defined = append(defined, o.Defined...)
	}
	list, err := os.ReadFile("../cpu/variants_gen.h")
	require.NoError(t, err)
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^GOGGML_\w+\((\w+)\)$`).FindAllStringSubmatch(string(list), -1) {
		want = append(want, "goggml_avx512vnni_"+m[1])
	}
	require.NotEmpty(t, want)
	sort.Strings(want)
	sort.Strings(defined)
	require.Equal(t, want, defined, "the symbols the linker could merge with the default level's")
}
