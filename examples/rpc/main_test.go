package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/rpc"
)

func TestMain(m *testing.M) {
	rpc.MaybeServe()
	os.Exit(m.Run())
}

// TestExample runs the example with two local servers: the split MLP
// matches the one on one CPU backend (run checks it).
func TestExample(t *testing.T) {
	if !rpc.Have {
		t.Skip("needs ggml's RPC backend: build with -tags ggml_system")
	}
	require.NoError(t, run(2, "", testutil.NewRNG(t).Uint64()))
}
