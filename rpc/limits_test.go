package rpc_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/rpc"
)

// answerHandshake plays a server of this binary's protocol with one
// device for Connect's own handshake (HELLO, DEVICE_COUNT) on c.
func answerHandshake(c net.Conn) bool {
	if !answerHello(c) {
		return false
	}
	var dc [9]byte
	if _, err := io.ReadFull(c, dc[:]); err != nil || dc[0] != 15 {
		return false
	}
	var ans [12]byte
	binary.LittleEndian.PutUint64(ans[:], 4)
	binary.LittleEndian.PutUint32(ans[8:], 1)
	_, err := c.Write(ans[:])
	return err == nil
}

// answerHello reads HELLO from c and answers it as a server of this
// binary's protocol.
func answerHello(c net.Conn) bool {
	var req [1 + 8 + 24]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[0] != 14 {
		return false
	}
	var rsp [8 + 28]byte
	binary.LittleEndian.PutUint64(rsp[:], 28)
	v := rpc.ProtocolVersion
	rsp[8], rsp[9], rsp[10] = byte(v.Major), byte(v.Minor), byte(v.Patch)
	_, err := c.Write(rsp[:])
	return err == nil
}

// TestConnectBadSecondConnection: servers that answer Connect's own
// handshake and then misbehave on the connection of ggml's client, which
// talks under the locks of its caches. Each Connect returns within its
// Timeout with an error, and RPC stays usable in the process: a real
// server connects and computes afterwards. (Before the relay, each of
// these hung Connect or disabled RPC for the process.)
func TestConnectBadSecondConnection(t *testing.T) {
	needRPC(t)
	const timeout = time.Second
	discard := func(c net.Conn) { io.Copy(io.Discard, c) }
	cases := []struct {
		name  string
		serve func(net.Conn)
		kinds []error
	}{
		{"silent at HELLO", discard, []error{rpc.ErrConnect, rpc.ErrTimeout}},
		{"silent after HELLO", func(c net.Conn) {
			if answerHello(c) {
				discard(c)
			}
		}, []error{rpc.ErrConnect, rpc.ErrTimeout}},
		{"hangs up at HELLO", func(c net.Conn) {
			var b [9]byte
			io.ReadFull(c, b[:])
		}, []error{rpc.ErrConnect}},
		{"hangs up after HELLO", func(c net.Conn) {
			if answerHello(c) {
				var b [9]byte
				io.ReadFull(c, b[:])
			}
		}, []error{rpc.ErrConnect}},
		{"garbage HELLO", func(c net.Conn) {
			var req [1 + 8 + 24]byte
			io.ReadFull(c, req[:])
			var rsp [8 + 28]byte
			binary.LittleEndian.PutUint64(rsp[:], 999)
			c.Write(rsp[:])
			discard(c)
		}, []error{rpc.ErrVersion}},
		{"garbage after HELLO", func(c net.Conn) {
			if answerHello(c) {
				var b [9 + 4]byte
				io.ReadFull(c, b[:])
				var rsp [8]byte
				binary.LittleEndian.PutUint64(rsp[:], 12345)
				c.Write(rsp[:])
				discard(c)
			}
		}, []error{rpc.ErrVersion}},
	}
	p := startServer(t, 0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			ep := fakeServer(t, func(c net.Conn) {
				if n.Add(1) == 1 {
					answerHandshake(c)
					return
				}
				tc.serve(c)
			})
			// Without a bound, Connect would hang here until the test's
			// own timeout: returning at all, with ErrTimeout where the
			// server went silent, is what is checked.
			_, err := rpc.Connect(ep, &rpc.Options{Timeout: timeout})
			require.Error(t, err)
			for _, k := range tc.kinds {
				require.ErrorIs(t, err, k)
			}
			var re *rpc.Error
			require.ErrorAs(t, err, &re)
			assert.Equal(t, ep, re.Endpoint)
			// RPC still works in this process.
			r := newRig(t, p.Endpoint, p)
			r.check(t)
			require.NoError(t, r.c.Close())
		})
	}
}

// stallProxy forwards TCP connections to a server; once stalled, it
// passes nothing more in either direction (the sockets stay open).
type stallProxy struct {
	endpoint string
	stalled  atomic.Bool
	hold     chan struct{} // set: answers wait for it to close
	held     chan struct{} // receives once an answer waits on hold
	mu       sync.Mutex
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	px := &stallProxy{endpoint: ln.Addr().String(), held: make(chan struct{}, 1)}
	pipe := func(dst, src net.Conn, answers bool) {
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && answers {
				px.mu.Lock()
				h := px.hold
				px.mu.Unlock()
				if h != nil {
					select {
					case px.held <- struct{}{}:
					default:
					}
					<-h
				}
			}
			if n > 0 && !px.stalled.Load() {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				dst.Close()
				return
			}
		}
	}
	serveProxy(t, ln, target, func(c, s net.Conn) {
		done := make(chan struct{})
		go func() { pipe(s, c, false); close(done) }()
		pipe(c, s, true)
		<-done
	})
	return px
}

// TestIOTimeout: a server that stops answering after Connect, its socket
// open: with Options.IOTimeout, the wait ends with ErrBroken and
// ErrTimeout, and the connection is broken as after a crash.
func TestIOTimeout(t *testing.T) {
	needRPC(t)
	p := startServer(t, 0)
	px := newStallProxy(t, p.Endpoint)
	c, err := rpc.Connect(px.endpoint, &rpc.Options{Timeout: 30 * time.Second, IOTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	r := newRigWith(t, c, p)
	px.stalled.Store(true)
	_, err = ggml.Data[float32](r.l1.w) // would hang without IOTimeout
	requireBroken(t, err, px.endpoint)
	require.ErrorIs(t, err, rpc.ErrTimeout)
	assert.Contains(t, err.Error(), "GET_TENSOR")
	r.checkDead(t, px.endpoint)
}

// TestTwoGoroutinesOneServer: while one goroutine's exchange with a
// server is in flight, another goroutine's use of the same server is
// ErrBusy, never an exchange interleaved on the one socket; the first
// gets its right answer, and the second may go on afterwards.
func TestTwoGoroutinesOneServer(t *testing.T) {
	needRPC(t)
	p := startServer(t, 0)
	px := newStallProxy(t, p.Endpoint)
	r := newRig(t, px.endpoint, p)
	hold := make(chan struct{})
	px.mu.Lock()
	px.hold = hold
	px.mu.Unlock()
	done := make(chan struct{})
	var got []float32
	var gotErr error
	go func() {
		defer close(done)
		got, gotErr = ggml.Data[float32](r.l1.w) // waits in the proxy
	}()
	select { // the first goroutine is in its exchange
	case <-px.held:
	case <-done:
		t.Fatalf("the first goroutine's exchange ended before the proxy held it: %v", gotErr)
	case <-time.After(20 * time.Second):
		t.Fatal("the first goroutine's exchange did not start")
	}
	_, err := ggml.Data[float32](r.l2.w)
	require.ErrorIs(t, err, ggml.ErrBusy)
	var re *rpc.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, px.endpoint, re.Endpoint)
	require.ErrorIs(t, ggml.SetData(r.l2.w, r.l2.wv), ggml.ErrBusy)
	require.ErrorIs(t, r.be.Compute(context.Background(), r.g), ggml.ErrBusy)
	require.ErrorIs(t, r.s.Compute(context.Background(), r.g), ggml.ErrBusy)
	_, _, err = r.c.Memory(0)
	require.ErrorIs(t, err, ggml.ErrBusy)
	px.mu.Lock()
	px.hold = nil
	px.mu.Unlock()
	close(hold)
	<-done
	require.NoError(t, gotErr)
	assert.Equal(t, r.l1.wv, got)
	require.NoError(t, r.c.Err())
	r.check(t)
}
