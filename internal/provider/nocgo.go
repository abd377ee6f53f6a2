//go:build !cgo

package provider

// go-ggml calls ggml's C code through cgo: without it nothing builds. This
// line fails to compile with the reason in its text.
var _ int = "go-ggml needs cgo: build with CGO_ENABLED=1 and a C compiler (gcc or clang)"
