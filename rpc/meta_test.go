package rpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
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

	s, err := sched.New([]*backend.Backend{meta, backendtest.CPU(t)}, sched.Options{})
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

// metaPair is a meta device over the devices of two rigs' servers, with
// w [16, 24] split by rows (16 on a, 8 on b) in a meta buffer.
type metaPair struct {
	a, b *rig
	w    *ggml.Tensor
	wv   []float32
}

func newMetaPair(t *testing.T, a, b *rig) *metaPair {
	t.Helper()
	da, err := a.c.Device(0)
	require.NoError(t, err)
	db, err := b.c.Device(0)
	require.NoError(t, err)
	md, err := backend.NewMetaDevice([]*backend.Device{da, db}, func(w *ggml.Tensor) (backend.Split, error) {
		return backend.SplitSizes(backend.SplitAxis1, 16, 8), nil
	})
	require.NoError(t, err)
	meta, err := md.Init("")
	require.NoError(t, err)
	t.Cleanup(func() { meta.Close() })
	wc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(t, err)
	t.Cleanup(func() { wc.Close() })
	m := &metaPair{a: a, b: b, w: wc.NewTensor(ggml.TypeF32, 16, 24).SetName("w")}
	wbuf, err := backend.AllocContextTensors(wc, meta)
	require.NoError(t, err)
	t.Cleanup(func() { wbuf.Close() })
	m.wv = testutil.RandF32(a.rng, 16*24)
	require.NoError(t, ggml.SetData(m.w, m.wv))
	got, err := ggml.Data[float32](m.w)
	require.NoError(t, err)
	require.Equal(t, m.wv, got)
	return m
}

// TestMetaMemberFails: one server of a meta device fails (killed while
// idle; answering garbage mid-exchange, which makes ggml's client abort):
// uses of the meta device's memory fail naming that server, and the other
// server's connection stays healthy and computes.
func TestMetaMemberFails(t *testing.T) {
	needRPC(t)
	for _, how := range []string{"killed", "garbage"} {
		t.Run(how, func(t *testing.T) {
			pa, pb := startServer(t, 0), startServer(t, 0)
			ep := pa.Endpoint
			var px *proxy
			if how == "garbage" {
				px = newProxy(t, pa.Endpoint) // it answers for the server
				ep = px.endpoint
			}
			a, b := newRig(t, ep, pa), newRig(t, pb.Endpoint, pb)
			m := newMetaPair(t, a, b)
			switch how {
			case "killed":
				require.NoError(t, pa.Kill())
				require.Eventually(t, func() bool { return a.c.Err() != nil }, 10*time.Second, 10*time.Millisecond)
			case "garbage":
				px.mu.Lock()
				px.garbage = true
				px.mu.Unlock()
			}
			_, err := ggml.Data[float32](m.w)
			requireBroken(t, err, ep)
			assert.NotContains(t, err.Error(), pb.Endpoint)
			requireBroken(t, ggml.SetData(m.w, m.wv), ep)
			require.NoError(t, b.c.Err(), "the healthy server's connection")
			b.check(t)
			a.checkDead(t, ep)
		})
	}
}

// TestMetaMemberClosed: after one member's Client.Close, every use of the
// meta device's memory is ggml.ErrClosed naming that server; the other
// server computes on.
func TestMetaMemberClosed(t *testing.T) {
	needRPC(t)
	pa, pb := startServer(t, 0), startServer(t, 0)
	a, b := newRig(t, pa.Endpoint, pa), newRig(t, pb.Endpoint, pb)
	m := newMetaPair(t, a, b)
	require.NoError(t, b.c.Close())
	_, err := ggml.Data[float32](m.w)
	require.ErrorIs(t, err, ggml.ErrClosed)
	assert.Contains(t, err.Error(), pb.Endpoint)
	require.ErrorIs(t, ggml.SetData(m.w, m.wv), ggml.ErrClosed)
	require.NoError(t, a.c.Err())
	a.check(t)
}
