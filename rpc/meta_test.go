package rpc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/sched"
)

// TestMetaOverTwoServers: a meta device over the devices of two servers
// computes an MLP split between them (w1 by rows, w2 by columns: the
// second layer is a partial sum on each server, all-reduced by the meta
// backend), under a scheduler with the CPU.
func TestMetaOverTwoServers(t *testing.T) {
	needRPC(t)
	rng := testutil.NewRNG(t)
	ca, cb := connect(t, startServer(t, 0).Endpoint), connect(t, startServer(t, 0).Endpoint)
	da, err := ca.Device(0)
	require.NoError(t, err)
	db, err := cb.Device(0)
	require.NoError(t, err)
	const nIn, nHid, nOut, batch = 16, 24, 8, 3
	md, err := backend.NewMetaDevice([]*backend.Device{da, db}, func(w *ggml.Tensor) (backend.Split, error) {
		switch w.Name() {
		case "w1":
			return backend.SplitSizes(backend.SplitAxis1, 16, 8), nil // uneven on purpose
		case "w2":
			return backend.SplitSizes(backend.SplitAxis0, 16, 8), nil
		}
		return backend.Mirrored(), nil
	})
	require.NoError(t, err)
	meta, err := md.Init("")
	require.NoError(t, err)
	defer meta.Close()

	wc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	defer wc.Close()
	w1 := wc.NewTensor(ggml.TypeF32, nIn, nHid).SetName("w1")
	w2 := wc.NewTensor(ggml.TypeF32, nHid, nOut).SetName("w2")
	wbuf, err := backend.AllocContextTensors(wc, meta)
	require.NoError(t, err)
	defer wbuf.Close()
	require.NoError(t, wbuf.SetUsage(backend.UsageWeights))
	w1v, w2v := testutil.RandF32(rng, nIn*nHid), testutil.RandF32(rng, nHid*nOut)
	require.NoError(t, ggml.SetData(w1, w1v))
	require.NoError(t, ggml.SetData(w2, w2v))
	got1, err := ggml.Data[float32](w1)
	require.NoError(t, err)
	require.Equal(t, w1v, got1, "w1 read back from its two halves")

	s, err := sched.New([]*backend.Backend{meta, testutil.CPU(t)}, sched.Options{})
	require.NoError(t, err)
	defer s.Close()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, nIn, batch).SetInput()
	h := c.Relu(c.MulMat(w1, x))
	out := c.Scale(c.MulMat(w2, h), 1).SetOutput()
	g, err := c.BuildGraph(out)
	require.NoError(t, err)
	require.NoError(t, s.AllocGraph(g))
	for range 2 {
		xv := testutil.RandF32(rng, nIn*batch)
		require.NoError(t, ggml.SetData(x, xv))
		require.NoError(t, s.Compute(context.Background(), g))
		got, err := ggml.Data[float32](out)
		require.NoError(t, err)
		hw := relu64(matmul64(w1v, f64(xv), nIn, nHid, batch))
		requireNear(t, matmul64(w2v, hw, nHid, nOut, batch), got)
	}
}
