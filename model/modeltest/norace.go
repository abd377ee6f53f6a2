//go:build !race

package modeltest

// Race reports whether the race detector is on (go test -race).
const Race = false
