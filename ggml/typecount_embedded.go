//go:build !ggml_system

package ggml

// TypeCount is one past the largest type number of the linked ggml
// (GGML_TYPE_COUNT): 40 in the embedded provider, 43 in upstream v0.21.0
// (-tags ggml_system). enum_check.go checks it against ggml.h.
const TypeCount Type = 40
