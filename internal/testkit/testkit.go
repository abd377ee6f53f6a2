//go:build cgo

// Package testkit holds what go-ggml's tests share that uses packages ggml
// and backend (internal/testutil holds the rest, below them). Only test
// files import it; in ARCHITECTURE.md's layers it stands with the
// programs, above every package it serves.
package testkit

import (
	"testing"

	"github.com/go-ggml/ggml/backend"
)

// CPU starts a CPU backend that the test closes when it ends.
func CPU(tb testing.TB) *backend.Backend {
	tb.Helper()
	be, err := backend.InitByName("CPU", "")
	if err != nil {
		tb.Fatalf("the CPU backend: %v", err)
	}
	tb.Cleanup(func() { be.Close() })
	return be
}
