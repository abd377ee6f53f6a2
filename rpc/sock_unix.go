//go:build unix && cgo

package rpc

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// probeSocket reports whether the peer of socket fd is gone: it peeks
// without waiting and without consuming (an exchange of ggml's client may
// be in flight on another goroutine: bytes waiting mean alive).
func probeSocket(fd int) error {
	var b [1]byte
	for {
		n, _, err := unix.Recvfrom(fd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN || err == unix.EWOULDBLOCK:
			return nil
		case err != nil:
			return fmt.Errorf("the connection failed: %v", err)
		case n == 0:
			return errors.New("the server closed the connection (it died or restarted)")
		}
		return nil
	}
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
