//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable

// Package cpuamx compiles the embedded provider's AMX code, through the
// forwarding sources beside this file: ggml's AMX buffer type (amx/amx.cpp:
// weights re-laid for Intel's AMX tiles when they are set) and its kernels
// (amx/mmq.cpp: the matrix products of q4_0, q4_1, q8_0, q4_K, q5_K, q6_K
// and iq4_xs weights on AMX tiles, with AVX-512 VNNI for the small ones).
// It is compiled for Sapphire Rapids (-march=sapphirerapids: AVX-512 with
// VNNI, BF16 and FP16, AMX), which the default level lacks.
//
// None of this code runs unless package cpu's amx.cpp (ours) finds, at
// start, a CPU with every extension of that level and a Linux kernel that
// grants the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM, which
// ggml_backend_amx_buffer_type asks for): then it puts the AMX buffer type
// first among the CPU device's extra buffer types, as upstream's build for
// such a CPU does. GOGGML_NO_AMX=1 leaves it out (to compare, or to rule
// it out). A test (TestAMXSymbols) checks that this package's objects
// export nothing that the linker could merge with the default level's
// code and that none of their code runs at start. Nothing else should
// import this package.
package cpuamx

/*
#cgo CFLAGS: -O3
#cgo CXXFLAGS: -O3 -std=c++17
#cgo CPPFLAGS: -DNDEBUG
#cgo linux CPPFLAGS: -D_GNU_SOURCE
#cgo CFLAGS: -march=sapphirerapids -mtune=generic
#cgo CXXFLAGS: -march=sapphirerapids -mtune=generic
*/
import "C"
