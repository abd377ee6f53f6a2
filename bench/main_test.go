package bench

import (
	"os"
	"testing"

	"github.com/go-ggml/ggml/rpc"
)

func TestMain(m *testing.M) {
	rpc.MaybeServe() // the RPC servers of BenchmarkSplit are this binary
	code := m.Run()
	removeGGUFFiles()
	os.Exit(code)
}
