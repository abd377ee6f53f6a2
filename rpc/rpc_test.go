package rpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/rpc"
	"github.com/go-ggml/ggml/sched"
)

// TestUnsupported: without ggml's RPC backend every entry point says which
// build has it.
func TestUnsupported(t *testing.T) {
	if rpc.Have {
		t.Skip("this binary has ggml's RPC backend")
	}
	_, err := rpc.Connect("127.0.0.1:50052", nil)
	require.ErrorIs(t, err, backend.ErrUnsupported)
	assert.Contains(t, err.Error(), "-tags ggml_system")
	err = rpc.Serve(rpc.ServerOptions{})
	require.ErrorIs(t, err, backend.ErrUnsupported)
	_, err = rpc.StartServer(rpc.ProcessOptions{})
	require.ErrorIs(t, err, backend.ErrUnsupported)
	assert.Equal(t, rpc.Version{}, rpc.ProtocolVersion)
}

// mlpGraph builds y = w2 · relu(w1 · x) for a batch.
func mlpGraph(t *testing.T, w1, w2 *ggml.Tensor, nIn, batch int) (g *ggml.Graph, x, h, y *ggml.Tensor) {
	t.Helper()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	x = c.NewTensor(ggml.TypeF32, int64(nIn), int64(batch)).SetName("x").SetInput()
	h = c.Relu(c.MulMat(w1, x)).SetName("h").SetOutput()
	y = c.MulMat(w2, h).SetName("y").SetOutput()
	g, err = c.BuildGraph(y)
	require.NoError(t, err)
	return g, x, h, y
}

// TestSchedOverTwoServers: a scheduler over the devices of two servers and
// the CPU computes an MLP whose layers live on different servers.
func TestSchedOverTwoServers(t *testing.T) {
	needRPC(t)
	rng := testutil.NewRNG(t)
	a, b := startServer(t, 0), startServer(t, 0)
	ca, cb := connect(t, a.Endpoint), connect(t, b.Endpoint)
	require.NoError(t, ca.Err())
	assert.Equal(t, rpc.ProtocolVersion, ca.ServerVersion())

	// The servers' devices are in ggml's registry.
	require.Equal(t, 1, ca.NumDevices())
	require.Equal(t, 1, cb.NumDevices())
	da, err := ca.Device(0)
	require.NoError(t, err)
	db, err := cb.Device(0)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(da.Name(), "RPC"), da.Name())
	assert.NotEqual(t, da.Name(), db.Name())
	for _, d := range []*backend.Device{da, db} {
		found, err := backend.DeviceByName(d.Name())
		require.NoError(t, err, "device %s in the registry", d.Name())
		assert.Equal(t, d.Name(), found.Name())
	}
	free, total, err := ca.Memory(0)
	require.NoError(t, err)
	assert.Positive(t, total)
	assert.LessOrEqual(t, free, total)
	_, err = ca.Device(1)
	require.ErrorIs(t, err, ggml.ErrInvalid)

	bea, err := ca.Init(0)
	require.NoError(t, err)
	defer bea.Close()
	beb, err := cb.Init(0)
	require.NoError(t, err)
	defer beb.Close()
	assert.True(t, rpc.IsRPC(bea))
	cpu := backendtest.CPU(t)
	assert.False(t, rpc.IsRPC(cpu))

	const nIn, nHid, nOut = 24, 40, 12
	bta, err := ca.BufferType(0)
	require.NoError(t, err)
	btb, err := cb.BufferType(0)
	require.NoError(t, err)
	assert.False(t, bta.IsHost())
	l1 := newLayer(t, rng, bta, nIn, nHid, "w1")
	l2 := newLayer(t, rng, btb, nHid, nOut, "w2")
	got1, err := ggml.Data[float32](l1.w)
	require.NoError(t, err)
	assert.Equal(t, l1.wv, got1, "the weights read back from the server")

	s, err := sched.New([]*backend.Backend{bea, beb, cpu}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	for _, batch := range []int{3, 8} {
		require.NoError(t, s.Reset())
		g, x, h, y := mlpGraph(t, l1.w, l2.w, nIn, batch)
		require.NoError(t, s.AllocGraph(g))
		assert.Same(t, beb, s.TensorBackend(y), "w2 lives on server b")
		for range 2 {
			xv := testutil.RandF32(rng, nIn*batch)
			require.NoError(t, ggml.SetData(x, xv))
			require.NoError(t, s.Compute(context.Background(), g))
			hw := relu64(matmul64(l1.wv, f64(xv), nIn, nHid, batch))
			gotH, err := ggml.Data[float32](h)
			require.NoError(t, err)
			requireNear(t, hw, gotH)
			gotY, err := ggml.Data[float32](y)
			require.NoError(t, err)
			requireNear(t, matmul64(l2.wv, hw, nHid, nOut, batch), gotY)
		}
	}
}

// TestBackendCompute: a graph allocated on one server's device and computed
// there by its backend, without a scheduler.
func TestBackendCompute(t *testing.T) {
	needRPC(t)
	rng := testutil.NewRNG(t)
	c := connect(t, startServer(t, 0).Endpoint)
	be, err := c.Init(0)
	require.NoError(t, err)
	defer be.Close()
	ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer ctx.Close()
	const n, m = 33, 17
	a := ctx.NewTensor(ggml.TypeF32, n, m)
	x := ctx.NewTensor(ggml.TypeF32, n, 2)
	y := ctx.Scale(ctx.MulMat(a, x), 0.5)
	g, err := ctx.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(ctx, be)
	require.NoError(t, err)
	defer buf.Close()
	av, xv := testutil.RandF32(rng, n*m), testutil.RandF32(rng, n*2)
	require.NoError(t, ggml.SetData(a, av))
	require.NoError(t, ggml.SetData(x, xv))
	require.NoError(t, be.Compute(context.Background(), g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	want := matmul64(av, f64(xv), n, m, 2)
	for i := range want {
		want[i] *= 0.5
	}
	requireNear(t, want, got)
}

// TestBadEndpoint: endpoints ggml's client would misparse are refused.
func TestBadEndpoint(t *testing.T) {
	needRPC(t)
	for _, ep := range []string{"", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "[::1]:50052", ":50052", "127.0.0.1:x"} {
		_, err := rpc.Connect(ep, nil)
		require.ErrorIs(t, err, ggml.ErrInvalid, "%q", ep)
		var re *rpc.Error
		require.True(t, errors.As(err, &re), "%q", ep)
	}
}
