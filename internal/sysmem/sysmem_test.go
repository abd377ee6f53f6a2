package sysmem

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAvailable(t *testing.T) {
	n, ok := Available()
	if runtime.GOOS != "linux" {
		require.False(t, ok)
		return
	}
	require.True(t, ok)
	require.Greater(t, n, uint64(1<<20), "a machine that runs the tests has more than 1 MiB free")
	t.Logf("%d MiB available", n>>20)
}
