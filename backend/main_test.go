package backend_test

import (
	"os"
	"testing"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/internal/testutil"
)

// The tests leave no handle alive (the leak report's count) and no backend
// (backend's own count): each is closed or collected.
func TestMain(m *testing.M) {
	os.Exit(testutil.RunLeakChecked(m, testutil.LiveCheck{What: "backend(s)", Live: backend.LiveBackends}))
}
