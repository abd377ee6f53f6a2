// Package bridge carries what go-ggml's packages share but users must not
// see: typed views of the handles that several packages work on (views.go)
// with the code they share on them, the transfer checks of buffer types,
// ggml's log callback (log.go, installed before any backend starts), and
// the few functions that only package ggml (graph.go) or package
// backend (backend.go) can run, which they install at init for the
// packages above them to call. The lifetimes that the handles rest on are
// in internal/life, below it. cgo types are per package, so C pointers
// cross package boundaries here as unsafe.Pointer. It is the same on both
// providers, but for UpstreamVersion (provider.go).
package bridge
