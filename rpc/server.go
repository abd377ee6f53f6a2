package rpc

/*
#include "goggml.h"
*/
import "C"

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"unsafe"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// DefaultPort is the port llama.cpp's rpc-server listens on by default.
const DefaultPort = 50052

// ServerOptions configure Serve.
type ServerOptions struct {
	// Host is the IPv4 address to listen on; "" is 127.0.0.1. The
	// protocol has no authentication and no encryption: whoever reaches
	// the port can read and write the server's memory through ggml.
	// Another address than a loopback one prints a warning to Warn.
	Host string
	// Port to listen on; 0 is DefaultPort.
	Port int
	// Threads is the CPU threads of each CPU-like backend; 0 is
	// runtime.NumCPU().
	Threads int
	// Devices are the names of the registry devices to serve, e.g.
	// "CPU"; none means the CPU. Clients see them as devices 0, 1, ...
	Devices []string
	// CacheDir, if set, is a directory where the server keeps the
	// tensors clients send (large ones are then sent as a hash only when
	// the server has them).
	CacheDir string
	// Warn receives the warning about a non-loopback Host; nil is
	// os.Stderr.
	Warn io.Writer
}

// Serve runs ggml's RPC server (ggml_backend_rpc_start_server) on the
// calling goroutine, which it locks to its thread: ggml serves one client
// at a time, forever. It returns only when the server cannot start (a bad
// option, a port in use) or stops (ggml's accept failed, or ggml asserted
// on the serving thread: an *ggml.AssertError); the process should then
// exit, since ggml offers no way to stop a server or to free what it held.
// Run it in a process of its own: cmd/rpc-server, or StartServer. ggml
// prints the server's banner and its connection messages to standard
// output.
func Serve(opts ServerOptions) (err error) {
	if !Have {
		return unsupported("Serve")
	}
	host, port, devs, err := checkServerOptions(&opts)
	if err != nil {
		return err
	}
	if !isLoopback(host) {
		w := opts.Warn
		if w == nil {
			w = os.Stderr
		}
		fmt.Fprintf(w, "\n!!! WARNING: serving ggml RPC on %s: the protocol has NO authentication and NO encryption.\n"+
			"!!! Anyone who can reach this port can read and write this machine's memory through ggml.\n"+
			"!!! Serve on 127.0.0.1 (the default) unless the network is yours alone.\n\n", net.JoinHostPort(host, strconv.Itoa(port)))
	}
	// A clear error for a port in use: ggml's own only says "Failed to
	// create server socket" (it sets SO_REUSEADDR, as a test bind with Go
	// does not: a port in TIME_WAIT passes here anyway).
	if ln, lerr := net.Listen("tcp4", net.JoinHostPort(host, strconv.Itoa(port))); lerr != nil {
		return fmt.Errorf("rpc.Serve: cannot listen on %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), lerr)
	} else {
		ln.Close()
	}
	ep := C.CString(net.JoinHostPort(host, strconv.Itoa(port)))
	defer C.free(unsafe.Pointer(ep))
	var cache *C.char
	if opts.CacheDir != "" {
		cache = C.CString(opts.CacheDir)
		defer C.free(unsafe.Pointer(cache))
	}
	arr := (*C.ggml_backend_dev_t)(C.malloc(C.size_t(len(devs)) * C.size_t(unsafe.Sizeof(C.ggml_backend_dev_t(nil)))))
	defer C.free(unsafe.Pointer(arr))
	for i, d := range devs {
		unsafe.Slice(arr, len(devs))[i] = d
	}
	runtime.LockOSThread() // never unlocked: the thread goes with the server
	defer life.Catch(&err)
	C.goggml_rpc_start_server(ep, cache, C.size_t(opts.Threads), C.size_t(len(devs)), arr)
	return fmt.Errorf("%w: ggml's RPC server on %s stopped (see its output)", ErrConnect, net.JoinHostPort(host, strconv.Itoa(port)))
}

// checkServerOptions fills in the defaults and checks what ggml would not:
// an IPv4 host (ggml parses it with inet_addr), a port, the devices.
func checkServerOptions(opts *ServerOptions) (string, int, []C.ggml_backend_dev_t, error) {
	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || ip.To4() == nil {
		return "", 0, nil, fmt.Errorf("%w: rpc.Serve: host %q is not an IPv4 address (ggml's server listens on IPv4 only)", ggml.ErrInvalid, host)
	}
	port := opts.Port
	if port == 0 {
		port = DefaultPort
	}
	if port < 1 || port > 65535 {
		return "", 0, nil, fmt.Errorf("%w: rpc.Serve: port %d is not 1 to 65535", ggml.ErrInvalid, port)
	}
	if opts.Threads < 0 {
		return "", 0, nil, fmt.Errorf("%w: rpc.Serve: %d threads", ggml.ErrInvalid, opts.Threads)
	}
	if opts.Threads == 0 {
		opts.Threads = runtime.NumCPU()
	}
	if opts.CacheDir != "" {
		if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
			return "", 0, nil, fmt.Errorf("%w: rpc.Serve: cache directory: %v", ggml.ErrInvalid, err)
		}
	}
	names := opts.Devices
	if len(names) == 0 {
		names = []string{"CPU"}
	}
	var devs []C.ggml_backend_dev_t
	for _, name := range names {
		d, err := backend.DeviceByName(name)
		if err != nil {
			return "", 0, nil, fmt.Errorf("rpc.Serve: %w", err)
		}
		p, err := bridge.View[bridge.Device](d).Ptr()
		if err != nil {
			return "", 0, nil, fmt.Errorf("rpc.Serve: device %s: %w", name, err)
		}
		if life.LinkOf(p) != nil {
			return "", 0, nil, fmt.Errorf("%w: rpc.Serve: device %s is itself on an RPC server", ggml.ErrInvalid, name)
		}
		if d.Type() == backend.DeviceMeta {
			return "", 0, nil, fmt.Errorf("%w: rpc.Serve: device %s is a meta device", ggml.ErrInvalid, name)
		}
		devs = append(devs, C.ggml_backend_dev_t(p))
	}
	return host, port, devs, nil
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
