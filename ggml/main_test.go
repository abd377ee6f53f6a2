package ggml_test

import (
	"os"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// The tests leave no handle alive and no custom op's Go function
// registered: each context is closed or collected.
func TestMain(m *testing.M) {
	os.Exit(testutil.RunLeakChecked(m, testutil.LiveCheck{What: "custom op(s)", Live: ggml.LiveCustomOps}))
}
