//go:build unix && cgo

package rpc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// sockID identifies an open socket: its file number and inode.
type sockID struct {
	fd       int
	dev, ino uint64
}

// socketsTo lists the process's open TCP sockets connected to addr
// (IPv4). ggml's client keeps its socket to itself; the rpc package finds
// it this way to watch it (probe) and to shut it down when the connection
// breaks.
func socketsTo(addr *net.TCPAddr) []sockID {
	dir := "/dev/fd"
	if runtime.GOOS == "linux" {
		dir = "/proc/self/fd"
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	ip4 := addr.IP.To4()
	var out []sockID
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || uint32(st.Mode)&unix.S_IFMT != unix.S_IFSOCK {
			continue
		}
		sa, err := unix.Getpeername(fd)
		if err != nil {
			continue
		}
		in4, ok := sa.(*unix.SockaddrInet4)
		if !ok || in4.Port != addr.Port || ip4 == nil || !net.IP(in4.Addr[:]).Equal(ip4) {
			continue
		}
		out = append(out, sockID{fd: fd, dev: uint64(st.Dev), ino: uint64(st.Ino)})
	}
	return out
}

// newSocket returns the one socket of after that is not in before, or -1.
func newSocket(before, after []sockID) int {
	found := -1
	for _, a := range after {
		old := false
		for _, b := range before {
			if a == b {
				old = true
				break
			}
		}
		if old {
			continue
		}
		if found >= 0 {
			return -1 // two new sockets: which is ggml's is unknown
		}
		found = a.fd
	}
	return found
}

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

// shutdownSocket ends both directions of socket fd without closing it
// (ggml's client still owns the file number): the server sees the client
// leave, and any further exchange of ggml's client fails at once.
func shutdownSocket(fd int) { _ = unix.Shutdown(fd, unix.SHUT_RDWR) }

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
