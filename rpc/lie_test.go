package rpc_test

import (
	"encoding/binary"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/rpc"
)

// liar forwards connections to a real server, reading the exchanges as
// the protocol frames them, and rewrites the answer to one command: its
// nth answer over all connections (0: every one) goes through edit. With
// slow set, that answer is sent a byte at a time, one every slow, instead;
// off keeps it honest until cleared.
type liar struct {
	endpoint string
	cmd      byte
	nth      int
	edit     func(ans []byte)
	slow     time.Duration
	off      atomic.Bool

	mu   sync.Mutex
	seen int
}

func newLiar(t *testing.T, target string, cmd byte, nth int, edit func([]byte)) *liar {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	l := &liar{endpoint: ln.Addr().String(), cmd: cmd, nth: nth, edit: edit}
	serveProxy(t, ln, target, l.pass)
	return l
}

// pass serves one connection: a request, then its answer, in turn (ggml's
// client waits for each answer before its next request).
func (l *liar) pass(c, s net.Conn) {
	defer c.Close()
	defer s.Close()
	for {
		var hdr [9]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		cmd, n := hdr[0], binary.LittleEndian.Uint64(hdr[1:])
		if int(cmd) >= rpc.CommandCount || n > 1<<30 {
			return
		}
		req := make([]byte, n)
		if _, err := io.ReadFull(c, req); err != nil {
			return
		}
		if _, err := s.Write(append(hdr[:], req...)); err != nil {
			return
		}
		if !rpc.HasAnswer(cmd) {
			continue
		}
		var size [8]byte
		if _, err := io.ReadFull(s, size[:]); err != nil {
			return
		}
		ans := make([]byte, binary.LittleEndian.Uint64(size[:]))
		if _, err := io.ReadFull(s, ans); err != nil {
			return
		}
		lie := false
		if cmd == l.cmd && !l.off.Load() {
			l.mu.Lock()
			l.seen++
			lie = l.nth == 0 || l.seen == l.nth
			l.mu.Unlock()
		}
		if lie && l.edit != nil {
			l.edit(ans)
		}
		out := append(size[:], ans...)
		if lie && l.slow > 0 {
			for i := range out {
				time.Sleep(l.slow)
				if _, err := c.Write(out[i : i+1]); err != nil {
					return
				}
			}
			continue
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func put64(v uint64) func([]byte) {
	return func(b []byte) { binary.LittleEndian.PutUint64(b, v) }
}

func put32(v uint32) func([]byte) {
	return func(b []byte) { binary.LittleEndian.PutUint32(b, v) }
}

// TestLyingServerAtConnect: a server whose numbers ggml's client would
// trust to size, align or place memory, lying while Connect runs. Each
// lie is an ErrConnect with ErrBadAnswer naming the number, the process
// lives on, and a real server still connects and computes. (Before: a
// device count of 2^32-1 threw std::bad_alloc out of ggml and ended the
// process; an alignment of 0 passed Connect and a scheduler allocating on
// it died with SIGFPE.)
func TestLyingServerAtConnect(t *testing.T) {
	needRPC(t)
	const (
		allocBuffer  = 0
		getAlignment = 1
		getMaxSize   = 2
		deviceCount  = 15
	)
	cases := []struct {
		name string
		cmd  byte
		nth  int
		edit func([]byte)
		says string
	}{
		{"2^32-1 devices", deviceCount, 0, put32(math.MaxUint32), "4294967295 devices"},
		{"MaxDevices+1 devices", deviceCount, 0, put32(rpc.MaxDevices + 1), "257 devices"},
		// The handshake is told the truth, ggml's client another count.
		{"another count for ggml's client", deviceCount, 2, put32(2), "device count of 2"},
		{"alignment 0", getAlignment, 0, put64(0), "alignment of 0"},
		{"alignment 48", getAlignment, 0, put64(48), "alignment of 48"},
		{"alignment 2^40", getAlignment, 0, put64(1 << 40), "alignment of 1099511627776"},
		{"largest buffer 0", getMaxSize, 0, put64(0), "largest buffer of 0"},
		{"a buffer smaller than asked", allocBuffer, 0, func(b []byte) { binary.LittleEndian.PutUint64(b[8:], 1) }, "a buffer of 1 bytes"},
		{"a buffer of 2^63 bytes", allocBuffer, 0, func(b []byte) { binary.LittleEndian.PutUint64(b[8:], 1<<63) }, "a buffer of 9223372036854775808 bytes"},
	}
	p := startServer(t, 0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiar(t, p.Endpoint, tc.cmd, tc.nth, tc.edit)
			c, err := rpc.Connect(l.endpoint, &rpc.Options{Timeout: 30 * time.Second})
			if err == nil {
				c.Close()
			}
			require.ErrorIs(t, err, rpc.ErrConnect)
			require.ErrorIs(t, err, rpc.ErrBadAnswer)
			assert.Contains(t, err.Error(), tc.says)
			var re *rpc.Error
			require.ErrorAs(t, err, &re)
			assert.Equal(t, l.endpoint, re.Endpoint)
			// RPC still works in this process, on the same server.
			r := newRig(t, p.Endpoint, p)
			r.check(t)
			require.NoError(t, r.c.Close())
		})
	}
}

// TestLyingServerAfterConnect: lies about a buffer after Connect: the call
// that met the lie fails with ErrBroken and ErrBadAnswer, the connection
// is broken as after garbage, and another server computes on.
func TestLyingServerAfterConnect(t *testing.T) {
	needRPC(t)
	const (
		allocBuffer   = 0
		bufferGetBase = 3
		getAllocSize  = 13
	)
	// Connect allocates one buffer (its pin) and reads no base or
	// tensor size: the lies below hit the test's own tensors.
	cases := []struct {
		name   string
		cmd    byte
		nth    int
		edit   func([]byte)
		tensor func(c *ggml.Context) *ggml.Tensor
		says   string
	}{
		{"a buffer smaller than asked", allocBuffer, 2, func(b []byte) { binary.LittleEndian.PutUint64(b[8:], 4) }, f32Tensor, "a buffer of 4 bytes"},
		{"base 0", bufferGetBase, 1, put64(0), f32Tensor, "at 0x0"},
		{"a base where the buffer wraps", bufferGetBase, 1, put64(math.MaxUint64 - 15), f32Tensor, "at 0xfffffffffffffff0"},
		// ggml's client asks for the size of a quantized tensor whose
		// rows are not a multiple of 512.
		{"a tensor of 2^60 bytes", getAllocSize, 1, put64(1 << 60), q8Tensor, "a tensor size of 1152921504606846976 bytes"},
	}
	p := startServer(t, 0)
	p2 := startServer(t, 0)
	other := newRig(t, p2.Endpoint, p2)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiar(t, p.Endpoint, tc.cmd, tc.nth, tc.edit)
			c := connect(t, l.endpoint)
			bt, err := c.BufferType(0)
			require.NoError(t, err)
			ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
			require.NoError(t, err)
			defer ctx.Close()
			tc.tensor(ctx)
			buf, err := backend.AllocContextTensorsFromType(ctx, bt)
			if err == nil {
				buf.Close()
			}
			requireBroken(t, err, l.endpoint)
			require.ErrorIs(t, err, rpc.ErrBadAnswer)
			assert.Contains(t, err.Error(), tc.says)
			requireBroken(t, c.Err(), l.endpoint)
			require.NoError(t, c.Close())
			other.check(t)
			// The server was released: it takes a new client.
			r := newRig(t, p.Endpoint, p)
			r.check(t)
			require.NoError(t, r.c.Close())
		})
	}
}

func f32Tensor(c *ggml.Context) *ggml.Tensor { return c.NewTensor(ggml.TypeF32, 64, 4) }

func q8Tensor(c *ggml.Context) *ggml.Tensor { return c.NewTensor(ggml.TypeQ8_0, 64, 4) }

// TestIOTimeoutTrickle: a server that sends a small answer a byte at a
// time, each byte within IOTimeout: the wait is for the whole answer, so
// the call ends with ErrTimeout. (Before, each byte renewed the deadline:
// the 24 bytes below took 2.4 s against a limit of 300 ms, and a slower
// trickle held a call for as long as the server liked.)
func TestIOTimeoutTrickle(t *testing.T) {
	needRPC(t)
	const getDeviceMemory = 11
	p := startServer(t, 0)
	l := newLiar(t, p.Endpoint, getDeviceMemory, 0, nil)
	l.slow = 100 * time.Millisecond
	l.off.Store(true)
	c, err := rpc.Connect(l.endpoint, &rpc.Options{Timeout: 30 * time.Second, IOTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	l.off.Store(false)
	_, _, err = c.Memory(0)
	requireBroken(t, err, l.endpoint)
	require.ErrorIs(t, err, rpc.ErrTimeout)
	assert.Contains(t, err.Error(), "GET_DEVICE_MEMORY")
}

// TestIOTimeoutDefault: with no options, a wait after Connect is bounded
// (DefaultIOTimeout: a black-holed server does not hold a call for ever);
// a negative IOTimeout is no limit, a positive one is taken as given.
func TestIOTimeoutDefault(t *testing.T) {
	needRPC(t)
	p := startServer(t, 0)
	for _, tc := range []struct {
		opts *rpc.Options
		want time.Duration
	}{
		{nil, rpc.DefaultIOTimeout},
		{&rpc.Options{}, rpc.DefaultIOTimeout},
		{&rpc.Options{IOTimeout: -1}, 0},
		{&rpc.Options{IOTimeout: 5 * time.Second}, 5 * time.Second},
	} {
		c, err := rpc.Connect(p.Endpoint, tc.opts)
		require.NoError(t, err)
		assert.Equal(t, tc.want, rpc.WaitLimit(c), "%+v", tc.opts)
		require.NoError(t, c.Close())
	}
	assert.Positive(t, rpc.DefaultIOTimeout)
	_, err := rpc.Connect(p.Endpoint, &rpc.Options{Timeout: -1})
	require.ErrorIs(t, err, ggml.ErrInvalid)
}
