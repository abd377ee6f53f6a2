package ggml_test

import (
	"os"
	"testing"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// The tests leave no custom op's Go function registered: each context that
// defined one is closed or collected.
func TestMain(m *testing.M) {
	os.Exit(testutil.RunChecked(m, "custom op(s)", ggml.LiveCustomOps))
}
