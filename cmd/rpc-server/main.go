// Command rpc-server serves this machine's ggml devices to ggml RPC
// clients: go-ggml's rpc.Connect, or llama.cpp's --rpc. It runs ggml's own
// server (ggml_backend_rpc_start_server, protocol 5.1.0), which serves one
// client at a time, until it is killed.
//
//	rpc-server [-host 127.0.0.1] [-port 50052] [-threads N] [-devices CPU,...] [-cache DIR] [-lifetime D]
//	rpc-server -list-devices
//
// The protocol has no authentication and no encryption: whoever reaches
// the port can read and write this machine's memory through ggml. The
// default host is 127.0.0.1; any other address prints a loud warning.
//
// Build it with -tags ggml_system: only upstream ggml (built with
// -DGGML_RPC=ON) has the RPC backend.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/rpc"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command: it returns the exit status, or does not return
// while it serves.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rpc-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("host", "127.0.0.1", "IPv4 address to listen on (no authentication: anything but loopback is reachable by others)")
	port := fs.Int("port", rpc.DefaultPort, "port to listen on")
	threads := fs.Int("threads", runtime.NumCPU(), "CPU threads per CPU-like backend")
	devices := fs.String("devices", "CPU", "comma-separated names of the devices to serve (see -list-devices)")
	cache := fs.String("cache", "", "directory that caches the tensors clients send (none by default)")
	lifetime := fs.Duration("lifetime", 0, "exit after this long (0: serve until killed)")
	list := fs.Bool("list-devices", false, "list the devices and exit")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: rpc-server [-host IP] [-port N] [-devices NAMES] [flags]

rpc-server serves this machine's devices to ggml's RPC clients (go-ggml's
rpc.Connect, llama.cpp's --rpc): ggml's own RPC server, which serves one
client at a time. It needs ggml's RPC backend, which only upstream ggml has:
build with -tags ggml_system (see docs/providers.md). The protocol has no
authentication and no encryption: keep it on loopback or a network of your own.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rpc-server: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *list {
		for d := range backend.Devices() {
			free, total := d.Memory()
			fmt.Fprintf(stdout, "%s\t%s\t%s\t%d MiB free of %d MiB\n", d.Name(), d.Type(), d.Description(), free>>20, total>>20)
		}
		return 0
	}
	var names []string
	for _, n := range strings.Split(*devices, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if *lifetime < 0 {
		fmt.Fprintln(stderr, "rpc-server: -lifetime must not be negative")
		return 2
	}
	if *lifetime > 0 {
		time.AfterFunc(*lifetime, func() {
			fmt.Fprintf(stderr, "rpc-server: -lifetime %v is over\n", *lifetime)
			os.Exit(0)
		})
	}
	err := rpc.Serve(rpc.ServerOptions{Host: *host, Port: *port, Threads: *threads, Devices: names, CacheDir: *cache, Warn: stderr})
	fmt.Fprintf(stderr, "rpc-server: %v\n", err)
	return 1
}
