package rpc_test

import (
	"os"
	"testing"

	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/rpc"
)

// The tests leave no handle alive: each is closed or collected (a
// connection's objects too, after it broke).
func TestMain(m *testing.M) {
	// The servers of these tests are this test binary again (StartServer).
	rpc.MaybeServe()
	os.Exit(testutil.RunLeakChecked(m))
}
