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
// stays held. Knowing where ggml's client holds what, the package makes
// each fault an error that names the endpoint (an *Error), and the process
// lives on:
//
//   - No server at the endpoint, a server of another protocol version, a
//     server busy with another client: Connect checks the server with a
//     handshake of its own before ggml's client connects (ggml holds the
//     lock of its connection cache during its handshake, and aborts there
//     on a server that hangs up: every later RPC call of the process would
//     hang). Errors: ErrConnect, ErrVersion.
//   - ggml's client caches one socket per endpoint string (a map of weak
//     references) and connects anew whenever no buffer holds it. A Client
//     therefore allocates a small buffer on the server for its whole life
//     (the pin): all its exchanges go over one socket, made at Connect, and
//     no later call connects under ggml's lock. The package finds that
//     socket among the process's files (its peer is the server) and watches
//     it.
//   - A server that dies or restarts: before each use of a device, buffer
//     or backend of the server, the package peeks at the socket (no data is
//     read); a closed one breaks the Client's connection, and the use fails
//     with ErrBroken without reaching ggml. A server that dies during an
//     exchange (a compute is sent without an answer; the next read of data
//     waits for it) makes ggml's client abort on the calling goroutine: the
//     error comes back from that call as an *Error (ErrBroken, wrapping the
//     *ggml.AssertError), and the connection is broken.
//   - A broken connection: every later use of the Client's devices, buffer
//     types, buffers and backends, and of schedulers over them, fails with
//     the same *Error. Their frees skip the C calls that would talk to the
//     server (ggml's client would abort there, possibly in a cleanup, where
//     nothing can recover it): those C objects, and the socket, are leaked.
//     The socket is shut down, so a live server that answered garbage is
//     released. The devices leave ggml's registry.
//   - A fresh connection: the aborted exchange leaked a reference to the
//     socket, so ggml's cache would return the dead socket for that
//     endpoint string forever. Connect gives each connection a string of
//     its own (the port with leading zeros: "127.0.0.1:050052" after
//     "127.0.0.1:50052"), so that a Connect after a restart gets a new
//     socket. Its devices get new names (the next RPCn).
//   - A live server that answers garbage leaves its socket open: which
//     connection failed is then unknown, and every open connection is
//     broken. Should ggml's client abort while it holds one of its locks
//     (a server that dies within the instant between Connect's handshake
//     and ggml's), the package refuses every later RPC call of the process
//     (ErrBroken), since they would hang.
//
// Limits: ggml's exchanges have no time limit (a server that stops
// answering without closing its socket hangs the call); ggml's client
// sends the exchanges of one server over one socket without a lock, so use
// one server's devices from one goroutine at a time; an abort on one of
// ggml's own threads still ends the process.
//
// # Servers
//
// Serve runs ggml_backend_rpc_start_server on a locked thread of the
// calling goroutine and never returns while it serves: ggml offers no way
// to stop it. Run it in a process of its own: cmd/rpc-server, or
// StartServer, which starts this program again as a server (MaybeServe)
// with a bounded life, as the tests and examples/rpc do.
package rpc
