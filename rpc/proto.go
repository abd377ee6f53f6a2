//go:build cgo

package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The parts of ggml's RPC protocol (src/ggml-rpc/ggml-rpc.cpp, protocol
// 5.1.0) that the Go side speaks itself, to check a server before ggml's
// client connects to it: ggml's client aborts the process on a failed
// handshake, and it does so while holding the lock of its connection
// cache. Written for go-ggml from the protocol's description.
const (
	cmdHello       = 14 // RPC_CMD_HELLO, "must be always 14"
	cmdDeviceCount = 15 // RPC_CMD_DEVICE_COUNT
	connCapsSize   = 24 // RPC_CONN_CAPS_SIZE
	helloRspSize   = 4 + connCapsSize
)

// Version is an RPC protocol version.
type Version struct{ Major, Minor, Patch int }

// String returns "major.minor.patch".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// compatible reports whether ggml's client accepts a server of version v:
// the same major version and a minor version no newer than its own.
func (v Version) compatible(client Version) bool {
	return v.Major == client.Major && v.Minor <= client.Minor
}

// serverInfo is what the handshake learns about a server.
type serverInfo struct {
	version Version
	devices int
}

// errNoHello: the server closed the connection without answering HELLO.
var errNoHello = errors.New("the server closed the connection without answering the handshake")

// handshake connects to addr and asks for its protocol version and device
// count, within timeout, then closes the connection. ggml's server serves
// one client at a time: a server busy with another client does not answer,
// and the handshake times out.
func handshake(addr string, client Version, timeout time.Duration) (serverInfo, error) {
	deadline := time.Now().Add(timeout)
	conn, err := net.DialTimeout("tcp4", addr, timeout)
	if err != nil {
		return serverInfo{}, fmt.Errorf("%w: %v", ErrConnect, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return serverInfo{}, fmt.Errorf("%w: %v", ErrConnect, err)
	}
	// HELLO: | cmd (1) | size (8) | conn_caps (24, zero: plain TCP) |
	var req [1 + 8 + connCapsSize]byte
	req[0] = cmdHello
	binary.LittleEndian.PutUint64(req[1:], connCapsSize)
	if _, err := conn.Write(req[:]); err != nil {
		return serverInfo{}, timeoutOr(err, timeout)
	}
	// | size (8) = 28 | major | minor | patch | pad | conn_caps (24) |
	var size [8]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) {
			return serverInfo{}, errNoHello
		}
		return serverInfo{}, timeoutOr(err, timeout)
	}
	n := binary.LittleEndian.Uint64(size[:])
	if n != helloRspSize {
		if n >= 3 && n <= 64 {
			// Answered with another layout: read its version bytes.
			buf := make([]byte, n)
			if _, err := io.ReadFull(conn, buf); err == nil {
				v := Version{int(buf[0]), int(buf[1]), int(buf[2])}
				return serverInfo{version: v}, fmt.Errorf("%w: the server speaks RPC protocol %v, this binary's ggml %v", ErrVersion, v, client)
			}
		}
		return serverInfo{}, fmt.Errorf("%w: the server answered the handshake with %d bytes, not %d: not a ggml RPC server of protocol %v", ErrVersion, n, helloRspSize, client)
	}
	var rsp [helloRspSize]byte
	if _, err := io.ReadFull(conn, rsp[:]); err != nil {
		return serverInfo{}, timeoutOr(err, timeout)
	}
	info := serverInfo{version: Version{int(rsp[0]), int(rsp[1]), int(rsp[2])}}
	if !info.version.compatible(client) {
		return info, fmt.Errorf("%w: the server speaks RPC protocol %v, this binary's ggml %v (ggml needs the same major version and a minor version no newer)", ErrVersion, info.version, client)
	}
	// DEVICE_COUNT: | cmd | size (8) = 0 |; answer | size (8) = 4 | count (4) |
	var dc [9]byte
	dc[0] = cmdDeviceCount
	if _, err := conn.Write(dc[:]); err != nil {
		return info, timeoutOr(err, timeout)
	}
	var ans [12]byte
	if _, err := io.ReadFull(conn, ans[:]); err != nil {
		return info, timeoutOr(err, timeout)
	}
	if binary.LittleEndian.Uint64(ans[:8]) != 4 {
		return info, fmt.Errorf("%w: malformed answer to DEVICE_COUNT", ErrVersion)
	}
	count := binary.LittleEndian.Uint32(ans[8:])
	if count == 0 {
		return info, fmt.Errorf("%w: the server offers no device", ErrConnect)
	}
	if count > MaxDevices {
		return info, fmt.Errorf("%w: %w: the server claims %d devices (at most %d)", ErrConnect, ErrBadAnswer, count, MaxDevices)
	}
	info.devices = int(count)
	return info, nil
}

// legacyVersion asks a server that refused the current handshake for its
// version the way protocol 3 did (HELLO with no payload; the answer is
// major, minor, patch), so that the error can name it. It returns false
// when the server does not answer that either.
func legacyVersion(addr string, timeout time.Duration) (Version, bool) {
	conn, err := net.DialTimeout("tcp4", addr, timeout)
	if err != nil {
		return Version{}, false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	var req [9]byte
	req[0] = cmdHello
	if _, err := conn.Write(req[:]); err != nil {
		return Version{}, false
	}
	var ans [11]byte
	if _, err := io.ReadFull(conn, ans[:]); err != nil || binary.LittleEndian.Uint64(ans[:8]) != 3 {
		return Version{}, false
	}
	return Version{int(ans[8]), int(ans[9]), int(ans[10])}, true
}

// timeoutOr turns a deadline error into a message that says what a silent
// server usually means.
func timeoutOr(err error, timeout time.Duration) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: no answer within %v (ggml's RPC server serves one client at a time: is another client connected?)", ErrConnect, timeout)
	}
	return fmt.Errorf("%w: %v", ErrConnect, err)
}
