package rpc

/*
#include "goggml.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
	_ "github.com/go-ggml/ggml/internal/provider"
)

// haveC is what goggml.h says of the RPC backend; Have (have_embedded.go,
// have_system.go) must agree (TestHaveAgreesWithC).
var haveC = C.GOGGML_HAVE_RPC != 0

// ProtocolVersion is the RPC protocol of this binary's ggml (5.1.0 for
// upstream ggml v0.21.0; zero without the RPC backend).
var ProtocolVersion = Version{int(C.GOGGML_RPC_PROTO_MAJOR), int(C.GOGGML_RPC_PROTO_MINOR), int(C.GOGGML_RPC_PROTO_PATCH)}

// Error kinds, for errors.Is. Every error about a server is an *Error
// naming its endpoint and wrapping one of these (or ggml.ErrClosed after
// Close, ggml.ErrInvalid for a bad endpoint).
var (
	// ErrConnect: no server answers at the endpoint (refused, unreachable,
	// no answer in time), or it offers no device.
	ErrConnect = errors.New("cannot connect")
	// ErrVersion: the server speaks another RPC protocol version.
	ErrVersion = errors.New("protocol version mismatch")
	// ErrBroken: the connection failed after it was made (the server
	// died, restarted, answered garbage or, with Options.IOTimeout, went
	// silent); its devices, buffers and backends are unusable. Connect
	// again for a fresh connection.
	ErrBroken = errors.New("connection broken")
	// ErrTimeout: the server did not answer in time (Options.Timeout
	// while Connect runs, Options.IOTimeout after). It comes with
	// ErrConnect or ErrBroken.
	ErrTimeout = errors.New("no answer in time")
	// ErrBadAnswer: the server sent a number ggml's client cannot take
	// (more than MaxDevices devices, an alignment that is not a power of
	// two, a buffer smaller than asked for, ...). The relay checks every
	// number ggml's client sizes, aligns or places memory by before it
	// gets there. It comes with ErrConnect or ErrBroken.
	ErrBadAnswer = errors.New("invalid answer")
)

// Error is an error about one server: Endpoint names it, Err wraps the
// kind (ErrConnect, ErrVersion, ErrBroken, ggml.ErrClosed, ggml.ErrBusy,
// ...) and the cause (an *ggml.AssertError when ggml's RPC client gave up
// on an exchange). Every error of a connection's devices, buffers and
// backends is one, wherever it is returned: errors.As finds it.
type Error struct {
	Endpoint string
	Err      error
}

// Error returns "ggml rpc: server <endpoint>: <Err>".
func (e *Error) Error() string { return fmt.Sprintf("ggml rpc: server %s: %v", e.Endpoint, e.Err) }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// unsupported is the error of every call on a binary without ggml's RPC
// backend.
func unsupported(call string) error {
	return fmt.Errorf("%w: %s, built with -DGGML_RPC=ON", backend.ErrUnsupported, bridge.NeedsUpstream("rpc."+call+" (ggml's RPC backend)"))
}

// DefaultIOTimeout is Options.IOTimeout's value when it is 0: a server
// connected but silent for this long is taken for dead.
const DefaultIOTimeout = 2 * time.Minute

// Options configure Connect.
type Options struct {
	// Timeout bounds Connect: the connection, the handshakes, and every
	// exchange of ggml's client while Connect runs (0: 10 s).
	Timeout time.Duration
	// IOTimeout bounds each wait for the server after Connect: for the
	// answer to a request (ggml's client waits for a compute at the
	// next request that has an answer, so set it above the longest
	// compute) and for the server to take a request. A wait is for a
	// whole answer of up to 256 bytes, or for each 4 MiB of a larger one
	// or of a request: a server that trickles bytes does not renew it. A
	// server silent for longer breaks the connection (ErrBroken with
	// ErrTimeout). 0 is DefaultIOTimeout; a negative value is no limit.
	IOTimeout time.Duration
}

// Client is a connection of ggml's RPC client to one server: the server's
// devices, which join ggml's device registry as RPC0, RPC1, ... (numbered
// in the order servers are added, over the process's life). A Client is
// safe to share between goroutines; the objects it gives (backends,
// buffers) follow go-ggml's usual rules, with one more: ggml's client
// sends every exchange of one server over one socket without a lock, so
// use the devices of one server from one goroutine at a time.
type Client struct {
	endpoint string // host:port as given (port in decimal)
	key      string // the endpoint as ggml knows this connection (see Connect)
	version  Version
	relay    *relay // between ggml's client and the server (relay.go)
	link     *life.Link
	reg      C.ggml_backend_reg_t
	devs     []*backend.Device
	bts      []*backend.BufferType
	pin      *backend.Buffer // holds ggml's socket open for the Client's life
	closed   bool            // by Close (under mu)
}

var (
	// mu serializes Connect and Close: they call the functions of ggml's
	// client that hold its locks while talking to a server.
	mu sync.Mutex
	// clients are the open clients by endpoint; keys counts the
	// connections ever made to each endpoint (see Connect).
	clients = map[string]*Client{}
	keys    = map[string]int{}
	// poisoned is set when ggml's client aborted while it held one of
	// its locks: every later call of it that takes that lock would
	// deadlock, so the package refuses them all.
	poisoned error
	// registered are the per-server registry entries ggml's registry
	// holds now; staleRegistry: onAbort broke a link while mu was held.
	registered    = map[C.ggml_backend_reg_t]bool{}
	staleRegistry atomic.Bool
)

// Connect connects to the RPC server at endpoint ("host:port"; an IPv4
// address or a name that resolves to one) and adds its devices to ggml's
// registry (ggml_backend_rpc_add_server, ggml_backend_register). It
// checks the server first with a handshake of its own (the protocol
// version, the device count), so that no server, a server of another
// protocol version, or a server busy with another client is an *Error
// (ErrConnect, ErrVersion) and not an abort in ggml. Connecting to an
// endpoint already connected returns the same Client. After the endpoint's
// connection broke (ErrBroken), Connect makes a fresh one: the devices
// then get new names (RPCn with the next n).
func Connect(endpoint string, opts *Options) (*Client, error) {
	if !Have {
		return nil, unsupported("Connect")
	}
	host, port, err := splitEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	ep := net.JoinHostPort(host, strconv.Itoa(port))
	timeout := 10 * time.Second
	ioTimeout := DefaultIOTimeout
	if opts != nil {
		if opts.Timeout < 0 {
			return nil, &Error{Endpoint: ep, Err: fmt.Errorf("%w: negative Timeout %v", ggml.ErrInvalid, opts.Timeout)}
		}
		if opts.Timeout > 0 {
			timeout = opts.Timeout
		}
		switch {
		case opts.IOTimeout < 0:
			ioTimeout = 0 // none
		case opts.IOTimeout > 0:
			ioTimeout = opts.IOTimeout
		}
	}
	deadline := time.Now().Add(timeout)
	mu.Lock()
	defer mu.Unlock()
	if poisoned != nil {
		return nil, &Error{Endpoint: ep, Err: poisoned}
	}
	if c := clients[ep]; c != nil {
		if c.link.Err() == nil {
			return c, nil
		}
		delete(clients, ep) // broken: a fresh connection below
		c.link.OnAbort(nil)
	}
	ips, err := net.DefaultResolver.LookupIP(context.Background(), "ip4", host)
	if err != nil || len(ips) == 0 {
		return nil, &Error{Endpoint: ep, Err: fmt.Errorf("%w: %s has no IPv4 address (ggml's client speaks IPv4 only): %v", ErrConnect, host, err)}
	}
	addr := &net.TCPAddr{IP: ips[0], Port: port}
	info, err := handshake(addr.String(), ProtocolVersion, time.Until(deadline))
	if errors.Is(err, errNoHello) {
		if v, ok := legacyVersion(addr.String(), timeout); ok {
			err = fmt.Errorf("%w: the server speaks RPC protocol %v, this binary's ggml %v", ErrVersion, v, ProtocolVersion)
		} else {
			err = fmt.Errorf("%w: the server closed the connection at the handshake: it speaks another RPC protocol version, or is not a ggml RPC server", ErrVersion)
		}
	}
	if err != nil {
		return nil, &Error{Endpoint: ep, Err: err}
	}
	r, err := newRelay(addr.String(), deadline, ioTimeout, info.devices)
	if err != nil {
		return nil, &Error{Endpoint: ep, Err: err}
	}
	// ggml's client connects to the relay. It caches its socket, buffer
	// types and devices per endpoint string for the process's life (after
	// a failed exchange the socket is never released: the abort skips
	// the C++ destructors), and a later relay may get the port of an
	// earlier one: each connection therefore gets a string of its own,
	// the relay's address with the port written with leading zeros
	// (ggml parses it with std::stoi): "127.0.0.1:41234", then
	// "127.0.0.1:041234", ...
	rk := strconv.Itoa(r.port)
	n := keys[rk]
	keys[rk] = n + 1
	c := &Client{endpoint: ep, key: "127.0.0.1:" + strings.Repeat("0", n) + rk, version: info.version, relay: r}
	c.link = life.NewLink(ep, c.probe, func(err error) error { return &Error{Endpoint: ep, Err: err} }, ErrBroken)
	c.link.OnBreak(func() {
		r.failWith(fmt.Errorf("%w: the connection was given up", ErrBroken), false)
		// Its devices leave the registry now, unless a Connect or Close
		// runs (it refreshes the registry when it ends).
		if mu.TryLock() {
			refreshRegistry()
			mu.Unlock()
		} else {
			staleRegistry.Store(true)
		}
	})
	if err := c.open(); err != nil {
		if c.pin != nil {
			c.pin.Close() // the relay answers for a failed server meanwhile
		}
		cause := err
		if e, ok := err.(*Error); ok && e.Endpoint == ep {
			cause = e.Err // the link names the endpoint itself
		}
		c.link.Break(cause)
		r.close()
		refreshRegistry()
		return nil, err
	}
	r.serve(func(err error) { c.link.Break(err) })
	clients[ep] = c
	c.link.OnAbort(c.onAbort)
	refreshRegistry()
	return c, nil
}

// open makes ggml's connection (under mu).
func (c *Client) open() (err error) {
	ckey := C.CString(c.key)
	defer C.free(unsafe.Pointer(ckey))
	fail := func(what string, err error) error {
		if rerr := c.relay.Err(); rerr != nil {
			// The relay's failure is the cause; it answered ggml's
			// client for the server, so nothing aborted.
			return &Error{Endpoint: c.endpoint, Err: rerr}
		}
		var ae *ggml.AssertError
		if errors.As(err, &ae) {
			// ggml aborted with one of its client's locks held (its
			// connection cache, its buffer types or its server list).
			poisoned = fmt.Errorf("%w: ggml's RPC client aborted while it held a lock of its own (%s): further RPC calls in this process would hang, so the rpc package refuses them: %v", ErrBroken, what, ae)
			for _, o := range clients {
				o.link.Break(poisoned)
			}
			return &Error{Endpoint: c.endpoint, Err: poisoned}
		}
		return &Error{Endpoint: c.endpoint, Err: err}
	}
	// 1. Buffer type 0: a connection, its handshake, the alignment and
	// the largest buffer, and the server's devices (add_server), all
	// under ggml's locks; the connection closes again at the end.
	var bt0 C.ggml_backend_buffer_type_t
	if err := catch(func() { bt0 = C.goggml_rpc_buffer_type(ckey, 0) }); err != nil {
		return fail("ggml_backend_rpc_buffer_type", err)
	}
	if bt0 == nil {
		return fail("", fmt.Errorf("%w: ggml's client could not connect (see the log)", ErrConnect))
	}
	if err := c.relay.Err(); err != nil {
		return fail("", err)
	}
	var reg C.ggml_backend_reg_t
	if err := catch(func() { reg = C.goggml_rpc_add_server(ckey) }); err != nil {
		return fail("ggml_backend_rpc_add_server", err)
	}
	if reg == nil {
		return fail("", fmt.Errorf("%w: ggml's client found no device on the server", ErrConnect))
	}
	if err := c.relay.Err(); err != nil {
		return fail("", err)
	}
	c.reg = reg
	n := int(C.ggml_backend_reg_dev_count(reg))
	for i := range n {
		p := unsafe.Pointer(C.ggml_backend_reg_dev_get(reg, C.size_t(i)))
		life.RegisterLink(p, c.link)
		c.devs = append(c.devs, bridge.Handle[backend.Device](bridge.WrapDevice(p)))
	}
	// 2. The pin: a small buffer whose C object holds ggml's socket for
	// the Client's life, so that every later call reuses this one
	// connection (ggml connects anew, under its cache's lock, whenever
	// no buffer holds the socket).
	bt := bridge.NewBufferType[backend.BufferType](unsafe.Pointer(bt0))
	c.pin, err = bt.AllocBuffer(max(bt.Alignment(), 1))
	if err == nil {
		err = c.relay.Err()
	}
	if err != nil {
		return fail("the first buffer's connection", err)
	}
	// 3. The other devices' buffer types, over the pinned socket.
	c.bts = append(c.bts, bt)
	for i := 1; i < n; i++ {
		var p C.ggml_backend_buffer_type_t
		if err := catch(func() { p = C.goggml_rpc_buffer_type(ckey, C.uint32_t(i)) }); err != nil {
			return fail("ggml_backend_rpc_buffer_type", err)
		}
		if p == nil {
			return fail("", fmt.Errorf("%w: no buffer type for device %d", ErrConnect, i))
		}
		if err := c.relay.Err(); err != nil {
			return fail("", err)
		}
		c.bts = append(c.bts, bridge.NewBufferType[backend.BufferType](unsafe.Pointer(p)))
	}
	return nil
}

// catch runs f, a C call, and returns an abort in it as an error.
func catch(f func()) (err error) {
	defer life.Catch(&err)
	f()
	return nil
}

// probe is the link's check before each use: the relay failed, or the
// server hung up.
func (c *Client) probe() error { return c.relay.probe() }

// splitEndpoint checks "host:port" as ggml's client parses it (the host
// is what comes before the first ':').
func splitEndpoint(endpoint string) (string, int, error) {
	host, ps, err := net.SplitHostPort(endpoint)
	if err == nil && (host == "" || strings.Contains(host, ":")) {
		err = errors.New("the host must be an IPv4 address or a name")
	}
	var port int
	if err == nil {
		port, err = strconv.Atoi(ps)
		if err == nil && (port < 1 || port > 65535) {
			err = errors.New("the port must be 1 to 65535")
		}
	}
	if err != nil {
		return "", 0, &Error{Endpoint: endpoint, Err: fmt.Errorf("%w: endpoint %q: %v (want host:port)", ggml.ErrInvalid, endpoint, err)}
	}
	return host, port, nil
}

// Endpoint returns the server's "host:port".
func (c *Client) Endpoint() string { return c.endpoint }

// ServerVersion returns the RPC protocol version the server reported.
func (c *Client) ServerVersion() Version { return c.version }

// Err returns nil while the connection is usable, else an *Error saying
// why not (ErrBroken: the server died or restarted; ggml.ErrClosed after
// Close). It checks the socket without talking to the server.
func (c *Client) Err() error {
	if c == nil {
		return fmt.Errorf("%w: nil *rpc.Client", ggml.ErrInvalid)
	}
	return c.link.Err()
}

// NumDevices returns the number of the server's devices.
func (c *Client) NumDevices() int { return len(c.devs) }

// Devices returns the server's devices, as they are in ggml's registry.
func (c *Client) Devices() []*backend.Device { return append([]*backend.Device(nil), c.devs...) }

// Device returns the server's device i.
func (c *Client) Device(i int) (*backend.Device, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	if i < 0 || i >= len(c.devs) {
		return nil, fmt.Errorf("%w: device %d of %s: the server has %d", ggml.ErrInvalid, i, c.endpoint, len(c.devs))
	}
	return c.devs[i], nil
}

// Init starts a backend on the server's device i (ggml_backend_rpc_init,
// through the registry device). Its computes run on the server.
func (c *Client) Init(i int) (*backend.Backend, error) {
	d, err := c.Device(i)
	if err != nil {
		return nil, err
	}
	return d.Init("")
}

// BufferType returns the buffer type of the server's device i: memory on
// the server (ggml_backend_rpc_buffer_type).
func (c *Client) BufferType(i int) (*backend.BufferType, error) {
	if _, err := c.Device(i); err != nil {
		return nil, err
	}
	return c.bts[i], nil
}

// Memory returns the free and total memory of the server's device i in
// bytes, as the server reports them (ggml_backend_rpc_get_device_memory,
// through the registry device).
func (c *Client) Memory(i int) (free, total uint64, err error) {
	d, err := c.Device(i)
	if err != nil {
		return 0, 0, err
	}
	return d.MemoryErr()
}

// Close ends the connection: the Client's devices leave the registry and
// every later use of its devices, backends and buffers fails with
// ggml.ErrClosed. ggml's socket closes once the buffers allocated on the
// server are closed too (each holds it); close them first. It is
// idempotent.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	mu.Lock()
	defer mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	err := c.pin.Close()
	c.link.Close()
	// No new connection through the relay; ggml's socket passes on until
	// the last buffer on the server is closed (each holds it).
	c.relay.ln.Close()
	if clients[c.endpoint] == c {
		delete(clients, c.endpoint)
	}
	c.link.OnAbort(nil)
	refreshRegistry()
	return err
}

// refreshRegistry makes the RPC devices in ggml's registry those of the
// open, unbroken clients (under mu). ggml's RPC devices
// all point to ggml's one RPC registry entry, so unloading that entry
// (ggml_backend_unload; nothing is unloaded from memory: the entry is
// built in) removes every RPC device; the entries of the live servers are
// then registered again (ggml_backend_register).
func refreshRegistry() {
	staleRegistry.Store(false)
	var keep []C.ggml_backend_reg_t
	for _, c := range clients {
		if !c.link.Broken() && !c.closed {
			keep = append(keep, c.reg)
		}
	}
	bridge.RegistryMu.Lock()
	defer bridge.RegistryMu.Unlock()
	if base := C.goggml_rpc_reg(); base != nil {
		C.ggml_backend_unload(base)
		C.ggml_backend_register(base)
	}
	for r := range registered {
		C.ggml_backend_unload(r)
		delete(registered, r)
	}
	for _, r := range keep {
		C.ggml_backend_register(r)
		registered[r] = true
	}
}

// onAbort sees every ggml abort that go-ggml recovers while c is in
// clients (its link's handler, life.Link.OnAbort). An abort in ggml's
// RPC client after a failed exchange follows a failure that the
// connection's relay saw first (it hung up on ggml's client to end the
// exchange): the error is that connection's *Error. Other connections
// say nil: ggml's client is synchronous, so their streams hold no half
// exchange.
func (c *Client) onAbort(err error) error {
	var ae *ggml.AssertError
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "ggml-rpc") {
		return nil
	}
	rerr := c.relay.Err()
	if rerr == nil || c.relay.reported.Swap(true) {
		return nil
	}
	c.link.Break(rerr) // done by the relay already, unless Connect runs
	return &Error{Endpoint: c.endpoint, Err: fmt.Errorf("%w; ggml's client gave up: %w", rerr, ae)}
}

// Refresh removes the devices of broken connections from ggml's registry
// (it happens by itself at the next Connect or Close, and when a failure
// is noticed while no Connect runs).
func Refresh() {
	if !Have {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	for ep, c := range clients {
		if c.link.Err() != nil {
			delete(clients, ep)
			c.link.OnAbort(nil)
		}
	}
	refreshRegistry()
}

// IsRPC reports whether be computes on an RPC server (ggml_backend_is_rpc).
func IsRPC(be *backend.Backend) bool {
	if !Have {
		return false
	}
	p, err := bridge.View[bridge.Backend](be).Ptr()
	if err != nil {
		return false
	}
	defer runtime.KeepAlive(be)
	return bool(C.goggml_backend_is_rpc(C.ggml_backend_t(p)))
}
