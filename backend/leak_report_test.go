package backend_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/testutil"
)

// With the leak report on (GOGGML_LEAKS), a buffer and a backend that the
// garbage collector frees are logged with the place that opened them; a
// closed one is not.
func TestLeakReport(t *testing.T) {
	out := &lockedBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(out, nil)))
	defer slog.SetDefault(old)
	bridge.Leaks.SetEnabled(true)
	defer bridge.Leaks.SetEnabled(false)

	func() {
		be, err := backend.InitByName("CPU", "")
		require.NoError(t, err)
		_, err = be.AllocBuffer(1 << 10) // dropped
		require.NoError(t, err)
		closed, err := be.AllocBuffer(1 << 10)
		require.NoError(t, err)
		require.NoError(t, closed.Close())
	}()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && strings.Count(out.String(), "never closed") < 2 {
		testutil.Settle(2)
	}
	log := out.String()
	require.Equal(t, 2, strings.Count(log, "never closed"), log)
	require.Contains(t, log, "Buffer opened by")
	require.Contains(t, log, "Backend opened by")
	require.Contains(t, log, "TestLeakReport")
}

// lockedBuffer is a bytes.Buffer that cleanups (on their own goroutine) may
// write while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
