package rpc_test

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/rpc"
)

// needRPC skips a test on a binary without ggml's RPC backend.
func needRPC(t *testing.T) {
	t.Helper()
	if !rpc.Have {
		t.Skip("needs ggml's RPC backend: build with -tags ggml_system (upstream ggml with -DGGML_RPC=ON)")
	}
}

// startServer starts a server in a child process on a free port of
// 127.0.0.1, killed when the test ends; it exits by itself after two
// minutes in any case.
func startServer(t *testing.T, port int) *rpc.Process {
	t.Helper()
	var out *os.File
	if testing.Verbose() {
		out = os.Stderr
	}
	p, err := rpc.StartServer(rpc.ProcessOptions{
		Server:   rpc.ServerOptions{Port: port, Threads: 1},
		Lifetime: 2 * time.Minute,
		Timeout:  time.Minute,
		Output:   writerOrNil(out),
	})
	require.NoError(t, err)
	t.Cleanup(func() { p.Kill() })
	return p
}

func writerOrNil(f *os.File) interface{ Write([]byte) (int, error) } {
	if f == nil {
		return nil
	}
	return f
}

func connect(t *testing.T, ep string) *rpc.Client {
	t.Helper()
	c, err := rpc.Connect(ep, &rpc.Options{Timeout: 30 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// layer is one weight matrix w [nIn, nOut] in a buffer of its own.
type layer struct {
	w   *ggml.Tensor
	wv  []float32
	buf *backend.Buffer
}

func newLayer(t *testing.T, rng *rand.Rand, bt *backend.BufferType, nIn, nOut int, name string) *layer {
	t.Helper()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	l := &layer{w: c.NewTensor(ggml.TypeF32, int64(nIn), int64(nOut)).SetName(name)}
	l.buf, err = backend.AllocContextTensorsFromType(c, bt)
	require.NoError(t, err)
	t.Cleanup(func() { l.buf.Close() })
	require.NoError(t, l.buf.SetUsage(backend.UsageWeights))
	l.wv = testutil.RandF32(rng, nIn*nOut)
	require.NoError(t, ggml.SetData(l.w, l.wv))
	return l
}

// matmul64 is w·x in float64 for w [nIn, nOut], x [nIn, batch].
func matmul64(w []float32, x []float64, nIn, nOut, batch int) []float64 {
	y := make([]float64, nOut*batch)
	for n := range batch {
		for o := range nOut {
			s := 0.0
			for i := range nIn {
				s += float64(w[o*nIn+i]) * x[n*nIn+i]
			}
			y[n*nOut+o] = s
		}
	}
	return y
}

func relu64(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Max(x, 0)
	}
	return out
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func requireNear(t *testing.T, want []float64, got []float32) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], float64(got[i]), 1e-4*math.Max(1, math.Abs(want[i])), "element %d", i)
	}
}
