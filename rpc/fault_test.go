package rpc_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/rpc"
	"github.com/go-ggml/ggml/sched"
)

// requireBroken checks err is an *rpc.Error of kind ErrBroken naming ep.
func requireBroken(t *testing.T, err error, ep string) *rpc.Error {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, rpc.ErrBroken)
	var re *rpc.Error
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, ep, re.Endpoint)
	assert.Contains(t, err.Error(), ep)
	return re
}

// freePort returns a port of 127.0.0.1 nobody listens on now.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestConnectNoServer: nobody listens at the endpoint.
func TestConnectNoServer(t *testing.T) {
	needRPC(t)
	ep := "127.0.0.1:" + strconv.Itoa(freePort(t))
	_, err := rpc.Connect(ep, &rpc.Options{Timeout: 5 * time.Second})
	require.ErrorIs(t, err, rpc.ErrConnect)
	var re *rpc.Error
	require.True(t, errors.As(err, &re))
	assert.Equal(t, ep, re.Endpoint)
}

// fakeServer accepts connections on 127.0.0.1 and hands each to serve,
// for the test's life.
func fakeServer(t *testing.T, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(30 * time.Second))
			serve(c)
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestConnectVersion: servers of other protocol versions are named in the
// error, and ggml's client never meets them.
func TestConnectVersion(t *testing.T) {
	needRPC(t)
	// A newer server: it answers HELLO with major version 6.
	newer := fakeServer(t, func(c net.Conn) {
		var req [1 + 8 + 24]byte
		if _, err := io.ReadFull(c, req[:]); err != nil {
			return
		}
		var rsp [8 + 28]byte
		binary.LittleEndian.PutUint64(rsp[:], 28)
		rsp[8], rsp[9], rsp[10] = 6, 0, 2
		c.Write(rsp[:])
	})
	_, err := rpc.Connect(newer, &rpc.Options{Timeout: 10 * time.Second})
	require.ErrorIs(t, err, rpc.ErrVersion)
	assert.Contains(t, err.Error(), "6.0.2")
	assert.Contains(t, err.Error(), newer)

	// An older server (protocol 3): HELLO has no payload; one with a
	// payload makes it hang up.
	older := fakeServer(t, func(c net.Conn) {
		var hdr [9]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil || hdr[0] != 14 || binary.LittleEndian.Uint64(hdr[1:]) != 0 {
			return
		}
		var rsp [8 + 3]byte
		binary.LittleEndian.PutUint64(rsp[:], 3)
		rsp[8], rsp[9], rsp[10] = 3, 0, 0
		c.Write(rsp[:])
	})
	_, err = rpc.Connect(older, &rpc.Options{Timeout: 10 * time.Second})
	require.ErrorIs(t, err, rpc.ErrVersion)
	assert.Contains(t, err.Error(), "3.0.0")

	// Not an RPC server at all: it hangs up.
	rude := fakeServer(t, func(net.Conn) {})
	_, err = rpc.Connect(rude, &rpc.Options{Timeout: 10 * time.Second})
	require.ErrorIs(t, err, rpc.ErrVersion)
}

// TestConnectBusy: ggml's server serves one client at a time; while
// another holds it, Connect times out with a message that says so.
func TestConnectBusy(t *testing.T) {
	needRPC(t)
	p := startServer(t, 0)
	other, err := net.Dial("tcp4", p.Endpoint)
	require.NoError(t, err)
	defer other.Close()
	var hello [1 + 8 + 24]byte
	hello[0] = 14
	binary.LittleEndian.PutUint64(hello[1:], 24)
	_, err = other.Write(hello[:])
	require.NoError(t, err)
	var rsp [8 + 28]byte
	_, err = io.ReadFull(other, rsp[:]) // served: the server is ours now
	require.NoError(t, err)
	_, err = rpc.Connect(p.Endpoint, &rpc.Options{Timeout: 500 * time.Millisecond})
	require.ErrorIs(t, err, rpc.ErrConnect)
	assert.Contains(t, err.Error(), "one client at a time")
	other.Close()
	c := connect(t, p.Endpoint) // free again
	require.NoError(t, c.Err())
}

// rig is one server, a client, a backend and weights on the server, and a
// scheduler over the server's backend and the CPU.
type rig struct {
	proc  *rpc.Process
	c     *rpc.Client
	be    *backend.Backend
	l1    *layer
	l2    *layer
	s     *sched.Scheduler
	g     *ggml.Graph
	x, y  *ggml.Tensor
	nIn   int
	batch int
	rng   *rand.Rand
}

func newRig(t *testing.T, ep string, proc *rpc.Process) *rig {
	t.Helper()
	return newRigWith(t, connect(t, ep), proc)
}

// newRigWith is newRig over a connected client.
func newRigWith(t *testing.T, c *rpc.Client, proc *rpc.Process) *rig {
	t.Helper()
	rng := testutil.NewRNG(t)
	r := &rig{proc: proc, c: c, nIn: 16, batch: 4}
	var err error
	r.be, err = r.c.Init(0)
	require.NoError(t, err)
	t.Cleanup(func() { r.be.Close() })
	bt, err := r.c.BufferType(0)
	require.NoError(t, err)
	r.l1 = newLayer(t, rng, bt, r.nIn, 32, "w1")
	r.l2 = newLayer(t, rng, bt, 32, 8, "w2")
	r.s, err = sched.New([]*backend.Backend{r.be, backendtest.CPU(t)}, sched.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { r.s.Close() })
	r.g, r.x, _, r.y = mlpGraph(t, r.l1.w, r.l2.w, r.nIn, r.batch)
	require.NoError(t, r.s.AllocGraph(r.g))
	r.rng = rng
	r.check(t) // one good compute first
	return r
}

// check computes the rig's graph on fresh input and checks the result.
func (r *rig) check(t *testing.T) {
	t.Helper()
	xv := testutil.RandF32(r.rng, r.nIn*r.batch)
	require.NoError(t, ggml.SetData(r.x, xv))
	require.NoError(t, r.s.Compute(context.Background(), r.g))
	got, err := ggml.Data[float32](r.y)
	require.NoError(t, err)
	requireNear(t, matmul64(r.l2.wv, relu64(matmul64(r.l1.wv, f64(xv), r.nIn, 32, r.batch)), 32, 8, r.batch), got)
}

// checkDead checks that every use of the rig fails with ErrBroken naming
// ep, that closing it all is fine, and that the collector's cleanups of
// what it leaves do not end the process.
func (r *rig) checkDead(t *testing.T, ep string) {
	t.Helper()
	// The first use: refused before ggml's client talks (the socket is
	// seen closed), or, when the server's end is not closed yet, ggml's
	// client fails the exchange and aborts: an error either way.
	_, err := ggml.Data[float32](r.l1.w)
	requireBroken(t, err, ep)
	requireBroken(t, r.c.Err(), ep)
	requireBroken(t, r.s.Compute(context.Background(), r.g), ep)
	requireBroken(t, r.be.Compute(context.Background(), r.g), ep)
	_, err = r.c.Init(0)
	requireBroken(t, err, ep)
	bt, err := r.c.BufferType(0)
	requireBroken(t, err, ep)
	assert.Nil(t, bt)
	_, _, err = r.c.Memory(0)
	requireBroken(t, err, ep)
	// The devices left the registry.
	d := r.c.Devices()[0]
	_, err = backend.DeviceByName(d.Name())
	require.ErrorIs(t, err, backend.ErrNotFound, "device %s still in the registry", d.Name())
	// Closing is quiet (the frees that would talk to the server are
	// skipped), and so are the cleanups of what is left to the collector.
	require.NoError(t, r.s.Close())
	require.NoError(t, r.be.Close())
	require.NoError(t, r.l1.buf.Close())
	require.NoError(t, r.c.Close())
	for range 3 {
		runtime.GC()
	}
}

// TestServerKilledIdle: a server killed between two uses: the next use is
// refused before ggml's client talks to it.
func TestServerKilledIdle(t *testing.T) {
	needRPC(t)
	p := startServer(t, 0)
	r := newRig(t, p.Endpoint, p)
	require.NoError(t, p.Kill())
	r.checkDead(t, p.Endpoint)
}

// TestServerKilledMidCompute: the server dies while ggml's client waits
// for it: ggml's client aborts on the calling goroutine, which gets an
// *rpc.Error wrapping the abort. A proxy between client and server makes
// the timing exact: it forwards the compute, kills the server, and hangs
// up on the client once the client waits for the result.
func TestServerKilledMidCompute(t *testing.T) {
	needRPC(t)
	p := startServer(t, 0)
	px := newProxy(t, p.Endpoint)
	r := newRig(t, px.endpoint, p)
	px.arm(func() { p.Kill() })
	require.NoError(t, r.s.Compute(context.Background(), r.g), "the compute is sent, not answered")
	_, err := ggml.Data[float32](r.y)
	re := requireBroken(t, err, px.endpoint)
	var ae *ggml.AssertError
	require.True(t, errors.As(err, &ae), "the abort of ggml's client: %v", err)
	assert.Contains(t, ae.Message, "Remote RPC server crashed")
	assert.ErrorIs(t, re, rpc.ErrBroken)
	r.checkDead(t, px.endpoint)
}

// TestServerRestarted: the server is killed and started again on the same
// port: the old connection is broken, a new Connect works (with new device
// names), and computes right.
func TestServerRestarted(t *testing.T) {
	needRPC(t)
	p := startServer(t, 0)
	port := p.Endpoint[len("127.0.0.1:"):]
	old := newRig(t, p.Endpoint, p)
	oldName := old.c.Devices()[0].Name()
	oldKey := rpc.Key(old.c)
	require.NoError(t, p.Kill())
	pn, _ := strconv.Atoi(port)
	p2 := startServer(t, pn)
	require.Equal(t, p.Endpoint, p2.Endpoint)
	old.checkDead(t, p.Endpoint)

	fresh := newRig(t, p2.Endpoint, p2) // computes and checks once
	assert.NotSame(t, old.c, fresh.c)
	assert.NotEqual(t, oldName, fresh.c.Devices()[0].Name())
	assert.NotEqual(t, oldKey, rpc.Key(fresh.c))
	_, err := backend.DeviceByName(fresh.c.Devices()[0].Name())
	require.NoError(t, err)
}

// TestRelayed: ggml's client connects through the Client's relay, and
// the devices describe themselves by the server's endpoint, not the
// relay's.
func TestRelayed(t *testing.T) {
	needRPC(t)
	p := startServer(t, 0)
	c := connect(t, p.Endpoint)
	assert.Positive(t, rpc.RelayPort(c))
	assert.Contains(t, rpc.Key(c), strconv.Itoa(rpc.RelayPort(c)))
	for _, d := range c.Devices() {
		assert.Equal(t, p.Endpoint, d.Description())
	}
}

// proxy forwards TCP connections to a server. Armed, it runs kill after
// forwarding the client's next compute (GRAPH_COMPUTE or GRAPH_RECOMPUTE), then hangs up on the client
// when the client sends its next request (it then waits for an answer).
type proxy struct {
	endpoint string
	target   string
	mu       sync.Mutex
	kill     func()
	garbage  bool // answer the next request with a malformed header
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	px := &proxy{endpoint: ln.Addr().String(), target: target}
	serveProxy(t, ln, target, func(c, s net.Conn) {
		go func() { io.Copy(c, s) }() // server to client; on EOF the client is left waiting
		px.forward(c, s)
	})
	return px
}

// serveProxy accepts connections on ln for the test's life, connects each
// to target and runs pass(client, server) on a goroutine of its own; the
// connections are closed, and the goroutines waited for, when the test
// ends.
func serveProxy(t *testing.T, ln net.Listener, target string, pass func(c, s net.Conn)) {
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp4", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Store(c, true)
			conns.Store(s, true)
			wg.Add(1)
			go func() { defer wg.Done(); pass(c, s) }()
		}
	}()
}

func (px *proxy) arm(kill func()) {
	px.mu.Lock()
	px.kill = kill
	px.mu.Unlock()
}

// forward copies the client's requests (| cmd | size (8) | payload |) to
// the server, watching for GRAPH_COMPUTE (cmd 10) while armed.
func (px *proxy) forward(c, s net.Conn) {
	defer s.Close()
	killed := false
	for {
		var hdr [9]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		if killed {
			c.Close() // the client now waits for an answer that never comes
			return
		}
		n := binary.LittleEndian.Uint64(hdr[1:])
		px.mu.Lock()
		garbage := px.garbage
		px.garbage = false
		px.mu.Unlock()
		if garbage {
			// Swallow the request; answer with a size no exchange has.
			if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
				return
			}
			var bogus [8]byte
			binary.LittleEndian.PutUint64(bogus[:], 12345)
			c.Write(bogus[:])
			continue
		}
		if _, err := s.Write(hdr[:]); err != nil {
			return
		}
		if _, err := io.CopyN(s, c, int64(n)); err != nil {
			return
		}
		px.mu.Lock()
		kill := px.kill
		if (hdr[0] == 10 || hdr[0] == 16) && kill != nil { // GRAPH_COMPUTE, GRAPH_RECOMPUTE
			px.kill = nil
		} else {
			kill = nil
		}
		px.mu.Unlock()
		if kill != nil {
			kill()
			killed = true
		}
	}
}

// TestGarbageAnswer: a live server (here a proxy) answers an exchange with
// a malformed message: the relay sees it, hangs up on ggml's client (which
// aborts), and breaks that connection only: another stays usable.
func TestGarbageAnswer(t *testing.T) {
	needRPC(t)
	p := startServer(t, 0)
	px := newProxy(t, p.Endpoint)
	r := newRig(t, px.endpoint, p)
	p2 := startServer(t, 0)
	other := newRig(t, p2.Endpoint, p2)
	px.mu.Lock()
	px.garbage = true
	px.mu.Unlock()
	_, err := ggml.Data[float32](r.l1.w)
	requireBroken(t, err, px.endpoint)
	assert.Contains(t, err.Error(), "12345 bytes")
	assert.NotContains(t, err.Error(), other.c.Endpoint())
	var ae *ggml.AssertError
	require.True(t, errors.As(err, &ae), "%v", err)
	requireBroken(t, r.c.Err(), px.endpoint)
	r.checkDead(t, px.endpoint)
	// The other connection computes on.
	require.NoError(t, other.c.Err())
	other.check(t)
	// The server was released (the relay hung up): a new connection.
	fresh := newRig(t, p.Endpoint, p)
	require.NoError(t, fresh.c.Err())
}
