//go:build cgo

// Package backendtest holds helpers for tests that run ggml graphs, as
// net/http/httptest does for HTTP: go-ggml's own tests use them, and so
// may a user's. CPU starts a CPU backend (ggml_backend_init_by_name) that
// the test closes; F16HalfAccumulation says how the linked ggml sums f16
// products, which sets how close an f16 result can be held to a float64
// reference. Both work the same on either provider; the answer of
// F16HalfAccumulation depends on how the provider's ggml was built.
package backendtest

import (
	"testing"

	"github.com/go-ggml/ggml/backend"
)

// CPU starts a CPU backend (ggml_backend_init_by_name "CPU") that the
// test closes when it ends; it fails the test if there is none.
func CPU(tb testing.TB) *backend.Backend {
	tb.Helper()
	be, err := backend.InitByName("CPU", "")
	if err != nil {
		tb.Fatalf("the CPU backend: %v", err)
	}
	tb.Cleanup(func() { be.Close() })
	return be
}
