//go:build cgo

package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A relay stands between ggml's RPC client and one server: ggml's client
// connects to the relay (a listener of this process on 127.0.0.1), which
// connects to the server and passes the exchanges through, reading them
// as ggml's protocol frames them. It gives a Client what ggml's client
// does not have:
//
//   - time limits: each wait for the server (an answer, or the server
//     taking a request) is bounded, by Connect's deadline while Connect
//     runs and by Options.IOTimeout afterwards;
//   - certainty about which connection failed: the relay sees the server
//     hang up, go silent or answer with the wrong size, and records it
//     before ggml's client hears of it;
//   - no abort while ggml holds a lock: while Connect runs, ggml's client
//     asks the server under the locks of its caches, and an abort there
//     would leave them held (every later RPC call of the process would
//     hang). After a failure, the relay answers those requests itself:
//     HELLO with a version ggml refuses (ggml then returns "no
//     connection" without aborting), the others with placeholders of the
//     right size, which Connect never lets anyone use (it fails). HELLO is
//     answered so at any time, since ggml always sends it under its
//     connection cache's lock. Every other request after a failure ends
//     with the relay hanging up on ggml's client, which aborts on the
//     calling goroutine, holding no lock: the binding recovers it.
//
// The cost: each exchange crosses one more loopback hop; large payloads
// are spliced between the sockets by the kernel, small ones copied in Go.
type relay struct {
	target  string // the server, "ip:port"
	ln      net.Listener
	port    int           // the listener's port on 127.0.0.1
	timeout time.Duration // Options.IOTimeout after Connect (0: none)
	devices int           // the device count the handshake was told
	onFail  func(error)   // the first failure, after Connect (breaks the link)

	mu         sync.Mutex
	connecting bool      // Connect runs: answer for a failed server
	deadline   time.Time // Connect's deadline
	err        error     // the first failure; the relay passes nothing after it
	sessions   map[*session]bool
	buffers    map[uint64]uint64 // the server's buffers: remote_ptr -> size
	closed     bool
	reported   atomic.Bool // onAbort returned this failure once
	wg         sync.WaitGroup
}

// session is one connection of ggml's client through the relay.
type session struct {
	r       *relay
	client  net.Conn // ggml's client's connection
	server  net.Conn // the server's, nil when it could not be made
	pending chan expect
}

// expect is an answer ggml's client waits for: to request cmd, size
// bytes. arg is what the relay checks the answer against: the size asked
// for (ALLOC_BUFFER), the buffer (BUFFER_GET_BASE).
type expect struct {
	cmd  byte
	size uint64
	arg  uint64
}

// The commands of protocol 5.1.0 (rpc_cmd) that the relay tells apart,
// and the size of the answer to each (-1: no answer; GET_TENSOR's is the
// size it asks for).
const (
	cmdAllocBuffer   = 0
	cmdGetAlignment  = 1
	cmdGetMaxSize    = 2
	cmdBufferGetBase = 3
	cmdFreeBuffer    = 4
	cmdGetTensor     = 8
	cmdGetAllocSize  = 13
	cmdCount         = 18
)

// The bounds the relay holds a server's numbers to (see check).
const (
	// MaxDevices is the most devices a server may offer: ggml's client
	// makes a device object for each one the server counts.
	MaxDevices = 256
	// maxAlignment is the largest buffer alignment taken (GPUs ask for
	// 256 bytes at most).
	maxAlignment = 1 << 20
	// maxBytes bounds every size a server names (buffers, tensors): 1
	// PiB, far from where ggml's size arithmetic would wrap.
	maxBytes = 1 << 50
)

var (
	answerSize = [cmdCount]int{
		0: 16, 1: 8, 2: 8, 3: 8, 4: 0, 5: 0, 6: -1, 7: 1, 8: 0, 9: 1,
		10: -1, 11: 16, 12: 0, 13: 8, 14: helloRspSize, 15: 4, 16: -1, 17: 0,
	}
	cmdNames = [cmdCount]string{
		"ALLOC_BUFFER", "GET_ALIGNMENT", "GET_MAX_SIZE", "BUFFER_GET_BASE",
		"FREE_BUFFER", "BUFFER_CLEAR", "SET_TENSOR", "SET_TENSOR_HASH",
		"GET_TENSOR", "COPY_TENSOR", "GRAPH_COMPUTE", "GET_DEVICE_MEMORY",
		"INIT_TENSOR", "GET_ALLOC_SIZE", "HELLO", "DEVICE_COUNT",
		"GRAPH_RECOMPUTE", "MEMSET_TENSOR",
	}
)

// chunk is the most the relay moves per wait (deadlines are renewed per
// chunk: a slow but moving transfer is not a timeout).
const chunk = 4 << 20

// newRelay listens on 127.0.0.1 for ggml's client, for a server at
// target, in Connect's mode until serve, with deadline bounding every wait
// meanwhile.
func newRelay(target string, deadline time.Time, timeout time.Duration, devices int) (*relay, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%w: the relay for ggml's client cannot listen on 127.0.0.1: %v", ErrConnect, err)
	}
	r := &relay{target: target, ln: ln, port: ln.Addr().(*net.TCPAddr).Port, timeout: timeout, devices: devices,
		connecting: true, deadline: deadline, sessions: map[*session]bool{}, buffers: map[uint64]uint64{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		s := &session{r: r, client: c, pending: make(chan expect, 64)}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			c.Close()
			return
		}
		r.sessions[s] = true
		failed := r.err != nil
		deadline := r.waitDeadline()
		r.mu.Unlock()
		if !failed {
			d := net.Dialer{Deadline: deadline}
			sc, err := d.Dial("tcp4", r.target)
			if err != nil {
				kind := ErrBroken
				if r.isConnecting() {
					kind = ErrConnect
				}
				r.fail(fmt.Errorf("%w: cannot connect to the server again: %v", kind, err))
			} else {
				r.mu.Lock()
				s.server = sc
				if r.err != nil || r.closed {
					sc.Close() // failed meanwhile
				}
				r.mu.Unlock()
			}
		}
		r.wg.Add(2)
		go s.requests()
		go s.answers()
	}
}

// waitDeadline is the deadline of a wait that starts now (under mu); zero
// is none.
func (r *relay) waitDeadline() time.Time {
	if r.connecting {
		return r.deadline
	}
	if r.timeout > 0 {
		return time.Now().Add(r.timeout)
	}
	return time.Time{}
}

// deadlineNow is waitDeadline under the lock.
func (r *relay) deadlineNow() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waitDeadline()
}

// fail records the relay's first failure and ends every server connection;
// after Connect it also hangs up on ggml's client and reports it (onFail).
func (r *relay) fail(err error) { r.failWith(err, true) }

// failWith is fail; notify false skips onFail (the link is breaking
// already).
func (r *relay) failWith(err error, notify bool) {
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return
	}
	r.err = err
	connecting := r.connecting
	for s := range r.sessions {
		if s.server != nil {
			s.server.Close()
		}
		if !connecting {
			s.client.Close()
		}
	}
	r.mu.Unlock()
	if notify && !connecting && r.onFail != nil {
		r.onFail(err)
	}
}

// Err returns the relay's failure, or nil.
func (r *relay) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// serve ends Connect's mode: failures now hang up on ggml's client, and
// waits are bounded by the exchange timeout.
func (r *relay) serve(onFail func(error)) {
	r.mu.Lock()
	r.connecting = false
	r.onFail = onFail
	err := r.err
	r.mu.Unlock()
	if err != nil {
		r.mu.Lock()
		for s := range r.sessions {
			s.client.Close()
		}
		r.mu.Unlock()
		if onFail != nil {
			onFail(err)
		}
	}
}

// close ends the relay: its listener and every connection.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	r.ln.Close()
	for s := range r.sessions {
		s.client.Close()
		if s.server != nil {
			s.server.Close()
		}
	}
	r.mu.Unlock()
}

// probe reports a failure of the relay, or a server that hung up on an
// idle connection (seen without reading: it peeks).
func (r *relay) probe() error {
	r.mu.Lock()
	err := r.err
	var conns []net.Conn
	for s := range r.sessions {
		if s.server != nil {
			conns = append(conns, s.server)
		}
	}
	r.mu.Unlock()
	if err != nil {
		r.reported.Store(true) // the refused use reports it; no abort follows
		return err
	}
	for _, c := range conns {
		sc, ok := c.(syscall.Conn)
		if !ok {
			continue
		}
		raw, rerr := sc.SyscallConn()
		if rerr != nil {
			continue
		}
		var perr error
		if raw.Control(func(fd uintptr) { perr = probeSocket(int(fd)) }) == nil && perr != nil {
			r.reported.Store(true)
			r.fail(fmt.Errorf("%w: %v", ErrBroken, perr))
			return r.Err()
		}
	}
	return nil
}

// requests passes ggml's client's requests to the server, noting the
// answer each waits for before the server can send it.
func (s *session) requests() {
	r := s.r
	defer r.wg.Done()
	defer func() {
		close(s.pending)
		if s.server != nil {
			s.server.Close()
		}
		r.mu.Lock()
		delete(r.sessions, s)
		r.mu.Unlock()
	}()
	var hdr [9]byte
	small := make([]byte, 4096)
	for {
		if _, err := io.ReadFull(s.client, hdr[:]); err != nil {
			return // ggml's client closed its connection
		}
		cmd, n := hdr[0], binary.LittleEndian.Uint64(hdr[1:])
		if int(cmd) >= cmdCount {
			r.fail(fmt.Errorf("%w: ggml's client sent command %d, which protocol %v does not have", ErrBroken, cmd, ProtocolVersion))
			s.client.Close()
			return
		}
		var payload []byte // small requests are read whole
		if n <= uint64(len(small)) {
			payload = small[:n]
			if _, err := io.ReadFull(s.client, payload); err != nil {
				return
			}
		}
		if cmd == cmdHello && n == connCapsSize {
			clear(payload) // plain TCP: no transport upgrade past the relay
		}
		if cmd == cmdFreeBuffer && n == 8 {
			r.mu.Lock()
			delete(r.buffers, binary.LittleEndian.Uint64(payload))
			r.mu.Unlock()
		}
		if want := answerSize[cmd]; want >= 0 {
			e := expect{cmd: cmd, size: uint64(want)}
			switch {
			case cmd == cmdGetTensor && payload != nil && n >= 16:
				e.size = binary.LittleEndian.Uint64(payload[n-8:])
			case cmd == cmdAllocBuffer && n == 12: // | device (4) | size (8) |, packed
				e.arg = binary.LittleEndian.Uint64(payload[4:])
			case cmd == cmdBufferGetBase && n == 8: // | remote_ptr (8) |
				e.arg = binary.LittleEndian.Uint64(payload)
			case cmd == cmdGetTensor, cmd == cmdAllocBuffer, cmd == cmdBufferGetBase:
				r.fail(fmt.Errorf("%w: ggml's client sent a malformed %s", ErrBroken, cmdNames[cmd]))
				s.client.Close()
				return
			}
			s.pending <- e
		}
		if r.Err() != nil || s.server == nil {
			// Not passed on: answers() answers or hangs up.
			if payload == nil {
				if _, err := io.CopyN(io.Discard, s.client, int64(n)); err != nil {
					return
				}
			}
			continue
		}
		err := s.send(hdr[:])
		if err == nil && payload != nil {
			err = s.send(payload)
		}
		if err == nil && payload == nil {
			err = s.sendFrom(s.client, n)
		}
		if errors.Is(err, errClientGone) {
			return
		}
		if err != nil {
			r.fail(s.serverErr(err, "taking request "+cmdNames[cmd]))
		}
	}
}

// errClientGone: ggml's client closed its connection mid-request.
var errClientGone = errors.New("ggml's client closed its connection")

// send writes b to the server within the wait's deadline.
func (s *session) send(b []byte) error {
	if err := s.server.SetWriteDeadline(s.r.deadlineNow()); err != nil {
		return err
	}
	_, err := s.server.Write(b)
	return err
}

// sendFrom copies n bytes of a large request from ggml's client to the
// server, chunk by chunk, each within a deadline.
func (s *session) sendFrom(src net.Conn, n uint64) error {
	for n > 0 {
		m := min(n, chunk)
		if err := s.server.SetWriteDeadline(s.r.deadlineNow()); err != nil {
			return err
		}
		// TCP to TCP: the kernel moves the bytes (splice), Go copies none.
		k, err := io.CopyN(s.server, src, int64(m))
		n -= uint64(k)
		if errors.Is(err, io.EOF) {
			return errClientGone
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// answers passes the server's answers to ggml's client, each checked
// against the size its request asks for; after a failure it answers for
// the server, or hangs up (see relay).
func (s *session) answers() {
	r := s.r
	defer r.wg.Done()
	for e := range s.pending {
		if r.Err() == nil && s.server != nil {
			partial, err := s.pass(e)
			switch {
			case err == nil:
				continue
			case errors.Is(err, errClientGone):
				s.drain()
				return
			}
			r.fail(err)
			if partial {
				s.client.Close() // part of the answer was passed: only hanging up is left
				s.drain()
				return
			}
		}
		r.mu.Lock()
		stand := r.connecting || e.cmd == cmdHello
		r.mu.Unlock()
		if !stand {
			s.client.Close()
			s.drain()
			return
		}
		if s.standIn(e) != nil {
			s.drain()
			return
		}
	}
}

// drain consumes the expectations left after answers gave up.
func (s *session) drain() {
	for range s.pending {
	}
}

// pass copies one answer from the server to ggml's client; partial: part
// of it reached ggml's client before err.
func (s *session) pass(e expect) (partial bool, err error) {
	// One deadline for the header and a small answer: a server that
	// trickles bytes does not renew it.
	deadline := s.r.deadlineNow()
	var hdr [8]byte
	if err := s.recv(hdr[:], deadline); err != nil {
		return false, s.serverErr(err, "answering "+cmdNames[e.cmd])
	}
	if got := binary.LittleEndian.Uint64(hdr[:]); got != e.size {
		kind := ErrBroken
		if s.r.isConnecting() {
			kind = ErrVersion
		}
		return false, fmt.Errorf("%w: the server answered %s with %d bytes, not %d: not a ggml RPC server of protocol %v, or a faulty one", kind, cmdNames[e.cmd], got, e.size, ProtocolVersion)
	}
	if e.size <= 256 {
		// Small answers pass whole, so that one cut short can still be
		// answered for (while Connect runs).
		var buf [256 + 8]byte
		copy(buf[:], hdr[:])
		if err := s.recv(buf[8:8+e.size], deadline); err != nil {
			return false, s.serverErr(err, "answering "+cmdNames[e.cmd])
		}
		if err := s.r.check(e, buf[8:8+e.size]); err != nil {
			return false, err
		}
		if _, err := s.client.Write(buf[:8+e.size]); err != nil {
			return false, errClientGone
		}
		return false, nil
	}
	if _, err := s.client.Write(hdr[:]); err != nil {
		return false, errClientGone
	}
	for n := e.size; n > 0; {
		m := min(n, chunk)
		if err := s.server.SetReadDeadline(s.r.deadlineNow()); err != nil {
			return true, err
		}
		// As in sendFrom, spliced; an error is the server's (ggml's
		// client does not close its socket while it waits for an answer).
		k, err := io.CopyN(s.client, s.server, int64(m))
		n -= uint64(k)
		if err != nil {
			return true, s.serverErr(err, "answering "+cmdNames[e.cmd])
		}
	}
	return false, nil
}

// recv reads len(b) bytes from the server by deadline (zero: none).
func (s *session) recv(b []byte, deadline time.Time) error {
	if err := s.server.SetReadDeadline(deadline); err != nil {
		return err
	}
	for len(b) > 0 {
		n, err := s.server.Read(b)
		b = b[n:]
		if err != nil && len(b) > 0 {
			return err
		}
	}
	return nil
}

// isConnecting reports whether Connect runs.
func (r *relay) isConnecting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.connecting
}

// serverErr names a failed wait for the server: ErrConnect while Connect
// runs, ErrBroken after; ErrTimeout too when the wait ran out.
func (s *session) serverErr(err error, what string) error {
	r := s.r
	connecting := r.isConnecting()
	kind := ErrBroken
	if connecting {
		kind = ErrConnect
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		if connecting {
			return fmt.Errorf("%w: %w: the server did not answer ggml's client in time (%s; Options.Timeout bounds Connect)", kind, ErrTimeout, what)
		}
		return fmt.Errorf("%w: %w: the server sent nothing for %v (%s; Options.IOTimeout)", kind, ErrTimeout, r.timeout, what)
	}
	if errors.Is(err, io.EOF) || isReset(err) {
		return fmt.Errorf("%w: the server closed the connection (it died or restarted) while %s", kind, what)
	}
	return fmt.Errorf("%w: %s: %v", kind, what, err)
}

// standIn answers request e for a failed server (see relay).
func (s *session) standIn(e expect) error {
	buf := make([]byte, 8+e.size)
	binary.LittleEndian.PutUint64(buf, e.size)
	ans := buf[8:]
	switch e.cmd {
	case cmdHello:
		ans[0] = 0xff // a major version ggml refuses: get_socket returns no socket
	case cmdGetAlignment:
		binary.LittleEndian.PutUint64(ans, 32)
	case cmdGetMaxSize:
		binary.LittleEndian.PutUint64(ans, 1)
	case cmdDeviceCount:
		binary.LittleEndian.PutUint32(ans, 1)
	}
	// ALLOC_BUFFER: remote_ptr 0, which ggml returns as no buffer; the
	// rest: zeros.
	_, err := s.client.Write(buf)
	return err
}

// check holds a server's answer to request e to what ggml's client can
// take: every number in it that ggml uses to size, align or place memory.
// ggml's client trusts them (a device count of 2^32-1 ran it out of
// memory; an alignment of 0 divided by zero in ggml-alloc).
func (r *relay) check(e expect, ans []byte) error {
	u64 := func() uint64 { return binary.LittleEndian.Uint64(ans) }
	var bad string
	switch e.cmd {
	case cmdDeviceCount:
		n := binary.LittleEndian.Uint32(ans)
		if n == 0 || n > MaxDevices || (r.devices > 0 && int(n) != r.devices) {
			bad = fmt.Sprintf("a device count of %d (the handshake was told %d; at most %d)", n, r.devices, MaxDevices)
		}
	case cmdGetAlignment:
		if a := u64(); a == 0 || a > maxAlignment || a&(a-1) != 0 {
			bad = fmt.Sprintf("an alignment of %d (want a power of two up to %d)", a, maxAlignment)
		}
	case cmdGetMaxSize:
		if m := u64(); m == 0 {
			bad = "a largest buffer of 0 bytes"
		}
	case cmdGetAllocSize:
		if m := u64(); m > maxBytes {
			bad = fmt.Sprintf("a tensor size of %d bytes (at most %d)", m, uint64(maxBytes))
		}
	case cmdAllocBuffer:
		ptr, size := u64(), binary.LittleEndian.Uint64(ans[8:])
		if ptr == 0 {
			break // no buffer: ggml's client returns NULL, an error in Go
		}
		if size < e.arg || size > max(e.arg, maxBytes) {
			bad = fmt.Sprintf("a buffer of %d bytes for %d asked", size, e.arg)
			break
		}
		r.mu.Lock()
		r.buffers[ptr] = size
		r.mu.Unlock()
	case cmdBufferGetBase:
		base := u64()
		r.mu.Lock()
		size := r.buffers[e.arg]
		r.mu.Unlock()
		if base == 0 || base > math.MaxUint64-size {
			bad = fmt.Sprintf("a buffer of %d bytes at 0x%x", size, base)
		}
	}
	if bad == "" {
		return nil
	}
	kind := ErrBroken
	if r.isConnecting() {
		kind = ErrConnect
	}
	return fmt.Errorf("%w: %w: the server answered %s with %s", kind, ErrBadAnswer, cmdNames[e.cmd], bad)
}
