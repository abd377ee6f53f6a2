//go:build unix && !linux

package gguf

const mapNoReserve = 0
