//go:build !ggml_system && !(darwin && arm64) && cgo

package provider

import (
	// The embedded provider's core and CPU backend, compiled by go-ggml's
	// own cgo packages with go-ggml's CPU flags (see their docs): a plain
	// go build runs ggml's SIMD code, with no environment.
	_ "github.com/go-ggml/ggml/internal/provider/embedded/cpu"

	// The provider module itself: no package of it is compiled here, but
	// importing this small one makes the go command download the module
	// (whose C sources the forwarding sources include) and keeps it in
	// go.mod and go.sum through go mod tidy.
	_ "github.com/ollama/ollama/version"
)
