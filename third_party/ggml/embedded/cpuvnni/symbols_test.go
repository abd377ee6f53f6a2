//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

package cpuvnni_test

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	// The objects this package's code calls into (ggml's core and CPU
	// backend), so that the test binary links.
	_ "github.com/go-ggml/ggml/third_party/ggml/embedded/cpu"
)

// This package's code was compiled for AVX-512 and must never run on a
// CPU without it: the linker may pick any copy of a symbol that two
// objects both define (an inline function, a template instance), so the
// package's objects must define, as global or weak symbols, nothing but
// the prefixed entry points that the dispatcher calls after checking the
// CPU, each of them listed in variants_gen.h; and they must hold no code
// that runs at start (constructors, static initializers). Read from the
// package's archive in the build cache.
func TestVariantSymbols(t *testing.T) {
	out, err := exec.Command("go", "list", "-export", "-f", "{{.Export}}", "github.com/go-ggml/ggml/third_party/ggml/embedded/cpuvnni").Output()
	require.NoError(t, err)
	members := arMembers(t, strings.TrimSpace(string(out)))
	var defined []string
	objects := 0
	for name, data := range members {
		if !strings.HasSuffix(name, ".o") || !bytes.HasPrefix(data, []byte(elf.ELFMAG)) {
			continue // the Go object and the package's export data
		}
		f, err := elf.NewFile(bytes.NewReader(data))
		require.NoError(t, err, name)
		// Code that runs at start (a static initializer, a constructor)
		// or per thread would run on every CPU, before any check.
		for _, sec := range f.Sections {
			switch {
			case sec.Name == ".init_array" || sec.Name == ".preinit_array" || sec.Name == ".ctors" ||
				strings.HasPrefix(sec.Name, ".init_array.") || strings.HasPrefix(sec.Name, ".ctors."):
				t.Errorf("%s has a %s section: code of this copy would run at start on any CPU", name, sec.Name)
			case sec.Name == ".tdata" || sec.Name == ".tbss":
				t.Errorf("%s has thread-local data (%s)", name, sec.Name)
			}
		}
		syms, err := f.Symbols()
		require.NoError(t, err, name)
		objects++
		for _, s := range syms {
			bind := elf.ST_BIND(s.Info)
			if s.Section == elf.SHN_UNDEF || (bind != elf.STB_GLOBAL && bind != elf.STB_WEAK && bind != elf.STB_LOOS) {
				continue // STB_LOOS is STB_GNU_UNIQUE
			}
			defined = append(defined, s.Name)
		}
	}
	require.NotZero(t, objects, "no C objects in the archive")
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

// arMembers reads the members of a Unix ar archive (what the go command
// writes for a package).
func arMembers(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte("!<arch>\n")), "%s is not an archive", path)
	members := map[string][]byte{}
	for p := 8; p+60 <= len(data); {
		hdr := data[p : p+60]
		name := strings.TrimRight(strings.TrimSpace(string(hdr[:16])), "/")
		size, err := strconv.Atoi(strings.TrimSpace(string(hdr[48:58])))
		require.NoError(t, err, "member header %q", hdr)
		p += 60
		require.LessOrEqual(t, p+size, len(data), "member %s runs past the end", name)
		members[name] = data[p : p+size]
		p += size + size%2
	}
	return members
}
