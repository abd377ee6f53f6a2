//go:build ggml_native

package ggml_test

// cpuLevelTag is the build tag that chose the CPU level of ggml's code
// (internal/provider/embedded/cpu), "" for the default.
const cpuLevelTag = "ggml_native"
