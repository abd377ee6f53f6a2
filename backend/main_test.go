package backend_test

import (
	"os"
	"testing"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/internal/testutil"
)

// The tests leave no backend alive: each is closed or collected.
func TestMain(m *testing.M) {
	os.Exit(testutil.RunChecked(m, "backend(s)", backend.LiveBackends))
}
