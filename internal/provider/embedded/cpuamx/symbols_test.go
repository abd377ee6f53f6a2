//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

package cpuamx_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/internal/provider/embedded/internal/objtest"

	// The objects this package's code calls into, so that the test
	// binary links.
	_ "github.com/go-ggml/ggml/internal/provider/embedded/cpu"
)

// This package's code was compiled for Sapphire Rapids and must never run
// on a CPU without AMX: the linker may pick any copy of a symbol that two
// objects both define, so every symbol its objects define must be its own
// (ggml's AMX functions, and the inline members, vtables and type
// information of the classes in namespace ggml::cpu::amx, which no other
// object defines); and none of its code may run at start. Its thread-local
// data (the kernels' tile buffers) is data only.
func TestAMXSymbols(t *testing.T) {
	objs, err := objtest.Objects("github.com/go-ggml/ggml/internal/provider/embedded/cpuamx")
	require.NoError(t, err)
	own := []string{
		"_Z26ggml_backend_amx_", "_Z27ggml_backend_amx_", "_Z28ggml_backend_amx_", "_Z30ggml_backend_amx_", "_Z31ggml_backend_amx_", "_Z24ggml_backend_amx_",
		"_ZN4ggml3cpu3amx", "_ZTVN4ggml3cpu3amx", "_ZTIN4ggml3cpu3amx", "_ZTSN4ggml3cpu3amx",
	}
	n := 0
	for _, o := range objs {
		require.Empty(t, o.StartCode, "%s: code compiled for AMX would run at start on any CPU", o.Name)
	next:
		for _, s := range o.Defined {
			n++
			if s == "DW.ref.__gxx_personality_v0" {
				continue // a pointer to the C++ runtime's personality routine: data
			}
			for _, p := range own {
				if strings.HasPrefix(s, p) {
					continue next
				}
			}
			t.Errorf("%s defines %s, which the linker could merge with the default level's code", o.Name, s)
		}
	}
	require.NotZero(t, n)
}
