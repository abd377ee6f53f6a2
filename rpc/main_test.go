package rpc_test

import (
	"os"
	"testing"

	"github.com/go-ggml/ggml/rpc"
)

func TestMain(m *testing.M) {
	// The servers of these tests are this test binary again (StartServer).
	rpc.MaybeServe()
	os.Exit(m.Run())
}
