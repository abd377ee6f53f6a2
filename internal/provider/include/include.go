// Package include holds goggml.h, the header every cgo package of go-ggml
// includes (through the -I line of its provider_gen.go), and goggml_isa.h.
// It has no Go code: it is a package so that go mod vendor, which copies
// the directories of packages, copies these headers with the C files that
// include them. Package provider imports it.
package include

import (
	// The forwarding headers, for the same reason.
	_ "github.com/go-ggml/ggml/internal/provider/include/goggml"
)
