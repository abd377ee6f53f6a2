//go:build cgo

package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// serveEnv carries a child's server options (JSON) from StartServer to
// MaybeServe.
const serveEnv = "GOGGML_RPC_SERVE"

// exitPortInUse is the exit status of a child whose port was taken.
const exitPortInUse = 3

// childConfig is what StartServer passes to the child.
type childConfig struct {
	Server   ServerOptions
	Lifetime time.Duration
}

// ProcessOptions configure StartServer.
type ProcessOptions struct {
	// Server configures the server; Server.Port 0 picks a free port on
	// Server.Host (127.0.0.1 by default). Server.Warn is not used: the
	// child writes its warning to Output.
	Server ServerOptions
	// Lifetime bounds the server's life: it exits by itself after this
	// long (0: 10 minutes). It also exits when this process ends, or
	// closes its end of the server's lifeline (Stop).
	Lifetime time.Duration
	// Output receives the server's output (ggml's banner and connection
	// messages); nil discards it.
	Output io.Writer
	// Timeout bounds the wait for the server to listen (0: 30 s).
	Timeout time.Duration
	// Executable is the program to start; "" is this program
	// (os.Executable), which must call MaybeServe first thing in main (or
	// TestMain).
	Executable string
}

// Process is an RPC server running in a child process (StartServer).
type Process struct {
	// Endpoint is where it listens, "host:port".
	Endpoint string
	cmd      *exec.Cmd
	lifeline *os.File // the write end of the child's lifeline
	done     chan struct{}
	mu       sync.Mutex
	err      error // how it exited
}

// StartServer starts an RPC server in a child process: this program again
// (see ProcessOptions.Executable), which MaybeServe turns into a server.
// It returns once the server accepts connections. The server's life is
// bounded: it exits after ProcessOptions.Lifetime, when Stop or Kill is
// called, and when this process ends (it watches a pipe whose other end
// only this process holds).
func StartServer(opts ProcessOptions) (*Process, error) {
	if !Have {
		return nil, unsupported("StartServer")
	}
	exe := opts.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("rpc.StartServer: %w", err)
		}
	}
	if opts.Lifetime <= 0 {
		opts.Lifetime = 10 * time.Minute
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Server.Host == "" {
		opts.Server.Host = "127.0.0.1"
	}
	opts.Server.Warn = nil
	pick := opts.Server.Port == 0
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		cfg := childConfig{Server: opts.Server, Lifetime: opts.Lifetime}
		if pick {
			port, err := freePort(cfg.Server.Host)
			if err != nil {
				return nil, err
			}
			cfg.Server.Port = port
		}
		p, err := startChild(exe, cfg, opts)
		if err == nil {
			return p, nil
		}
		lastErr = err
		if !pick || !errors.Is(err, errPortInUse) {
			break
		}
	}
	return nil, lastErr
}

var errPortInUse = errors.New("port in use")

// freePort returns a port on host that nobody listens on now.
func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp4", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("rpc.StartServer: no free port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func startChild(exe string, cfg childConfig, opts ProcessOptions) (*Process, error) {
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("rpc.StartServer: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serveEnv+"="+string(js))
	cmd.ExtraFiles = []*os.File{r} // fd 3 in the child
	cmd.Stdout, cmd.Stderr = opts.Output, opts.Output
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("rpc.StartServer: %w", err)
	}
	r.Close()
	ep := net.JoinHostPort(cfg.Server.Host, strconv.Itoa(cfg.Server.Port))
	p := &Process{Endpoint: ep, cmd: cmd, lifeline: w, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		w.Close()
		close(p.done)
	}()
	// Ready when it accepts a connection (which it then serves: an empty
	// one, closed at once). Bounded by opts.Timeout; every 20 ms.
	deadline := time.Now().Add(opts.Timeout)
	for {
		select {
		case <-p.done:
			p.mu.Lock()
			err := p.err
			p.mu.Unlock()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == exitPortInUse {
				return nil, fmt.Errorf("rpc.StartServer: %s: %w", ep, errPortInUse)
			}
			return nil, fmt.Errorf("%w: rpc.StartServer: the server for %s exited before it listened: %v", ErrConnect, ep, err)
		default:
		}
		if c, err := net.DialTimeout("tcp4", ep, time.Second); err == nil {
			c.Close()
			return p, nil
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("%w: rpc.StartServer: the server for %s did not listen within %v", ErrConnect, ep, opts.Timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pid returns the server's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the server has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Kill ends the server at once (SIGKILL on Unix) and waits for it: to the
// clients, a server that crashed.
func (p *Process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	err := p.cmd.Process.Kill()
	<-p.done
	if errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	return err
}

// Stop asks the server to exit (it closes the server's lifeline) and waits
// for it, at most timeout, then kills it.
func (p *Process) Stop(timeout time.Duration) error {
	p.lifeline.Close()
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return p.Kill()
	}
}

// MaybeServe turns this process into an RPC server when StartServer
// started it, and never returns then; otherwise it returns at once. Call
// it first thing in main (or TestMain) of a program that starts servers
// with StartServer.
func MaybeServe() {
	js := os.Getenv(serveEnv)
	if js == "" {
		return
	}
	os.Unsetenv(serveEnv)
	var cfg childConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "rpc server: bad %s: %v\n", serveEnv, err)
		os.Exit(2)
	}
	// The lifeline: EOF when the parent closes it or ends.
	go func() {
		f := os.NewFile(3, "lifeline")
		if f != nil {
			io.Copy(io.Discard, f)
		}
		os.Exit(0)
	}()
	if cfg.Lifetime > 0 {
		time.AfterFunc(cfg.Lifetime, func() { os.Exit(0) })
	}
	cfg.Server.Warn = os.Stderr
	err := Serve(cfg.Server)
	fmt.Fprintf(os.Stderr, "rpc server: %v\n", err)
	var oe *net.OpError
	if errors.As(err, &oe) {
		os.Exit(exitPortInUse)
	}
	os.Exit(1)
}
