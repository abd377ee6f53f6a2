package gguf

import "golang.org/x/sys/unix"

// mapNoReserve: a private writable mapping reserves no swap for pages never
// written (Linux's MAP_NORESERVE; strict overcommit ignores it).
const mapNoReserve = unix.MAP_NORESERVE
