package cpu_test

import (
	"os"
	"testing"

	"github.com/go-ggml/ggml/internal/testutil"
)

// The tests leave no handle alive: each is closed or collected.
func TestMain(m *testing.M) {
	os.Exit(testutil.RunLeakChecked(m))
}
