package backend_test

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	cpupkg "github.com/go-ggml/ggml/cpu"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/life"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/opt"
	"github.com/go-ggml/ggml/sched"
)

// With the leak report on (GOGGML_LEAKS), a buffer and a backend that the
// garbage collector frees are logged with the place that opened them; a
// closed one is not.
func TestLeakReport(t *testing.T) {
	out := reportLeaks(t)

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

// reportLeaks turns the leak report on, loud, for the test, and returns
// where its log goes.
func reportLeaks(t *testing.T) *lockedBuffer {
	out := &lockedBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(out, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	was := life.Leaks.Enabled()
	life.Leaks.SetEnabled(true)
	t.Cleanup(func() { life.Leaks.SetEnabled(was) })
	quiet := life.Leaks.SetQuiet(false)
	t.Cleanup(func() { life.Leaks.SetQuiet(quiet) })
	return out
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

// TestLeakReportEveryKind: each kind of handle that frees a C object,
// dropped without Close, is reported with the test that opened it; the
// same kind closed is not.
func TestLeakReportEveryKind(t *testing.T) {
	out := reportLeaks(t)

	kinds := []string{"Context", "Buffer", "Backend", "Gallocr", "GraphCopy", "Plan", "HostMemory", "ThreadPool", "Scheduler", "gguf.File", "Dataset", "Result", "Optimizer"}
	path := filepath.Join(t.TempDir(), "m.gguf")
	b := gguf.NewBuilder()
	require.NoError(t, b.Set(gguf.KeyArchitecture, "test"))
	require.NoError(t, b.WriteFile(path))
	var events bool
	// open makes one handle of each kind; with close, it closes them.
	open := func(close bool) {
		var closers []func() error
		keep := func(c interface{ Close() error }) { closers = append(closers, c.Close) }
		be, err := backend.InitByName("CPU", "")
		require.NoError(t, err)
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		x := c.NewTensor(ggml.TypeF32, 8)
		g, err := c.BuildGraph(c.Scale(x, 2))
		require.NoError(t, err)
		buf, err := backend.AllocContextTensors(c, be)
		require.NoError(t, err)
		ga, err := backend.NewGallocr(be.DefaultBufferType())
		require.NoError(t, err)
		gc, err := be.CopyGraph(g)
		require.NoError(t, err)
		plan, err := be.NewPlan(g)
		require.NoError(t, err)
		hm, err := backend.AllocHostMemory(1 << 12)
		require.NoError(t, err)
		tp, err := cpupkg.NewThreadPool(cpupkg.ThreadPoolParams{Threads: 1})
		require.NoError(t, err)
		s, err := sched.New([]*backend.Backend{be}, sched.Options{})
		require.NoError(t, err)
		f, err := gguf.Open(path)
		require.NoError(t, err)
		ds, err := opt.NewDatasetFrom(make([]float32, 8), 2, make([]float32, 4), 1)
		require.NoError(t, err)
		res := opt.NewResult()
		// An optimizer of w·x over a scheduler of its own, its model in
		// contexts the first one's kinds already count.
		mc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 3, NoAlloc: true})
		require.NoError(t, err)
		mx := mc.NewTensor(ggml.TypeF32, 2, 4)
		mw := mc.NewTensor(ggml.TypeF32, 2, 1).SetParam()
		mbuf, err := backend.AllocContextTensors(mc, be)
		require.NoError(t, err)
		my := mc.MulMat(mw, mx)
		require.NoError(t, mc.Err())
		s2, err := sched.New([]*backend.Backend{be}, sched.Options{})
		require.NoError(t, err)
		o, err := opt.New(s2, opt.Params{Inputs: mx, Outputs: my, Loss: opt.LossMSE})
		require.NoError(t, err)
		// Closed in reverse: what uses a handle before the handle.
		keep(be)
		keep(c)
		keep(buf)
		keep(ga)
		keep(gc)
		keep(plan)
		keep(hm)
		keep(tp)
		keep(s)
		keep(f)
		keep(ds)
		keep(res)
		keep(mc)
		keep(mbuf)
		keep(s2)
		keep(o)
		if ev, err := be.Device().NewEvent(); err == nil {
			events = true
			keep(ev)
		}
		if close {
			for i := len(closers) - 1; i >= 0; i-- {
				require.NoError(t, closers[i]())
			}
		}
	}
	open(true)
	open(false)
	if events {
		kinds = append(kinds, "Event")
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && strings.Count(out.String(), "never closed") < len(kinds)+3 {
		testutil.Settle(2)
	}
	log := out.String()
	// The optimizer's model adds a Context, a Buffer and a Scheduler.
	twice := map[string]bool{"Context": true, "Buffer": true, "Scheduler": true}
	handles := 0
	for _, k := range kinds {
		n := 1
		if twice[k] {
			n = 2
		}
		handles += n
		assert.Equal(t, n, strings.Count(log, "a "+k+" opened by"), "%s: %s", k, log)
	}
	assert.Equal(t, handles, strings.Count(log, "never closed"), log)
	assert.Equal(t, handles, strings.Count(log, "TestLeakReportEveryKind"), log)
}
