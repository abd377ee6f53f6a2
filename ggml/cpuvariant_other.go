//go:build !(!ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable)

package ggml

// CPUKernelVariant names the copy of the CPU backend's matrix kernels that
// this process runs, where a build holds several; this build holds one,
// and it returns "". See the amd64 default level's documentation.
func CPUKernelVariant() string { return "" }

func cpuVariantEntries() (total, vnni int) { return 0, 0 }
