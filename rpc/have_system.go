//go:build ggml_system

package rpc

// Have reports whether this binary's ggml has the RPC backend: only the
// system provider's (-tags ggml_system) does.
const Have = true
