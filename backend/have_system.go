//go:build ggml_system

package backend

// HaveMeta reports whether this binary's ggml has the meta device: only
// the system provider's (-tags ggml_system, upstream ggml v0.21.0) does.
const HaveMeta = true
