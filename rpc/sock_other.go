//go:build !unix && cgo

package rpc

import "net"

// On this system the rpc package cannot find ggml's socket: a dead server
// is noticed only when an exchange with it fails.

type sockID struct{ fd int }

func socketsTo(*net.TCPAddr) []sockID { return nil }
func newSocket(_, _ []sockID) int     { return -1 }
func probeSocket(int) error           { return nil }
func shutdownSocket(int)              {}
func isReset(error) bool              { return false }
