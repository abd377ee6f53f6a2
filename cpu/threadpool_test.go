package cpu_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/cpu"
	"github.com/go-ggml/ggml/ggml"
)

// Every method of a nil *ThreadPool returns an error or a zero value.
func TestNilThreadPool(t *testing.T) {
	var tp *cpu.ThreadPool
	for name, call := range map[string]func() error{
		"Pause":  tp.Pause,
		"Resume": tp.Resume,
	} {
		require.NotPanics(t, func() { require.ErrorIs(t, call(), ggml.ErrInvalid, name) }, name)
	}
	require.NotPanics(t, func() { require.NoError(t, tp.Close()) })
	require.NotPanics(t, func() { require.Zero(t, tp.Threads()) })
	be, err := cpu.New(1)
	require.NoError(t, err)
	defer be.Close()
	require.NoError(t, cpu.SetThreadPool(be, tp), "a nil pool detaches")
}
