//go:build !linux

package sysmem

func available() (uint64, bool) { return 0, false }
