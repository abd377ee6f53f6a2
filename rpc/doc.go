// Package rpc is ggml's RPC backend (ggml-rpc, protocol 5.1.0): the
// devices of other processes and machines, used like local ones. A server
// (Serve, cmd/rpc-server, StartServer) offers its devices over TCP; a
// client (Connect) adds them to ggml's registry as RPC0, RPC1, ..., where
// backend.Devices, sched and the meta device see them. Computes run on the
// server; tensor data crosses the connection.
//
// Only the system provider's ggml has the RPC backend (-tags ggml_system,
// upstream ggml built with -DGGML_RPC=ON). With the embedded provider the
// package compiles and every call returns a backend.ErrUnsupported error
// that says so (Have is false).
//
// # Security
//
// The protocol has no authentication and no encryption: whoever reaches a
// server's port can read and write its memory through ggml. Servers listen
// on 127.0.0.1 unless told otherwise, and warn loudly when they are.
//
// # Faults
//
// ggml's client ends every failed exchange with a server in GGML_ABORT
// ("Remote RPC server crashed or returned malformed response"). go-ggml
// turns an abort on the calling goroutine's thread into a Go panic that the
// binding recovers, but the panic skips the C++ destructors of the frames
// it unwinds: memory and references are leaked, and a lock held there
// stays held. The package therefore puts a relay of its own between
// ggml's client and each server (ggml's client connects to a listener of
// this process on 127.0.0.1, which passes the exchanges on, reading them
// as the protocol frames them), and makes each fault an error that names
// the endpoint (an *Error), with the process living on:
//
//   - No server at the endpoint, a server of another protocol version, a
//     server busy with another client: Connect checks the server with a
//     handshake of its own before ggml's client connects. Errors:
//     ErrConnect, ErrVersion.
//   - Connect's time limit (Options.Timeout) bounds every exchange of
//     ggml's client while Connect runs. Those run under the locks of
//     ggml's caches, where an abort would leave the lock held and every
//     later RPC call of the process hanging: when the server fails there
//     (silent, hung up, garbage), the relay answers for it (the handshake
//     with a version ggml refuses, the rest with placeholders that Connect
//     never lets anyone use), so that nothing aborts, and Connect fails
//     (ErrConnect, ErrTimeout or ErrVersion). No behaviour of one server
//     disables RPC for the others.
//   - Numbers ggml's client trusts: a device count, an alignment, the
//     largest buffer, a buffer's size and base address, a tensor's size.
//     ggml's client sizes, aligns and places memory by them (a count of
//     2^32-1 ran it out of memory, an alignment of 0 divided by zero).
//     The relay holds each to what the client can take before passing it
//     on (at most MaxDevices devices, alignments a power of two, buffers
//     no smaller than asked for and not wrapping the address space); a
//     number outside is ErrBadAnswer, with ErrConnect or ErrBroken.
//   - After Connect, Options.IOTimeout (DefaultIOTimeout, 2 minutes,
//     unless set) bounds each wait for the server. A server that goes
//     silent for longer, hangs up, answers with a size its request does
//     not have or with a number it cannot have is seen by the relay
//     before ggml's client: the relay breaks that connection and hangs up
//     on ggml's client, which aborts on the calling goroutine, holding no
//     lock; the call returns the *Error (ErrBroken, with ErrTimeout for a
//     silent server, wrapping the *ggml.AssertError). Other connections are
//     untouched: ggml's client is synchronous, so theirs hold no half
//     exchange.
//   - A server that dies while idle: before each use of a device, buffer
//     or backend of the server, the package peeks at the relay's socket
//     (no data is read); a closed one breaks the connection, and the use
//     fails with ErrBroken without reaching ggml.
//   - ggml's client caches one socket per endpoint string (a map of weak
//     references) and connects anew whenever no buffer holds it. A Client
//     therefore allocates a small buffer on the server for its whole life
//     (the pin): all its exchanges go over one socket, made at Connect.
//   - A broken connection: every later use of the Client's devices, buffer
//     types, buffers and backends, of meta devices over them, and of
//     schedulers over them, fails with the same *Error. Their frees skip
//     the C calls that would talk to the server: those C objects are
//     leaked. The relay has hung up on the server, so a live server that
//     answered garbage is released. The devices leave ggml's registry.
//   - A fresh connection: ggml's client caches sockets, buffer types and
//     devices by endpoint string for the process's life, so each
//     connection gets a string of its own (the relay's port written with
//     leading zeros when a port comes round again). Its devices get new
//     names (the next RPCn); Device.Description gives the server's
//     endpoint.
//   - Two goroutines: ggml's client sends one server's exchanges over one
//     socket without a lock, so interleaved exchanges would read each
//     other's answers. Work on a server (a compute, a transfer, a query of
//     its memory) takes its connection for the calling goroutine; another
//     goroutine's work meanwhile fails with ggml.ErrBusy (an *Error
//     naming the server), never silently wrong. Asynchronous work holds
//     the connection until Synchronize. Frees wait for the connection (up
//     to 30 s, then the object is leaked).
//
// Limits: an abort on one of ggml's own threads still ends the process
// (ggml's RPC client runs its exchanges on the calling thread); each
// exchange crosses one more loopback hop (tensor data is spliced between
// the sockets by the kernel; on loopback a 1 MiB transfer took 1.3 to 1.8
// times as long as without the relay).
//
// # Servers
//
// Serve runs ggml_backend_rpc_start_server on a locked thread of the
// calling goroutine and never returns while it serves: ggml offers no way
// to stop it. Run it in a process of its own: cmd/rpc-server, or
// StartServer, which starts this program again as a server (MaybeServe)
// with a bounded life, as the tests and examples/rpc do.
package rpc
