//go:build !ggml_system && !(darwin && arm64) && linux && amd64 && !ggml_native && !ggml_portable && cgo

package cpu

/*
void goggml_amx_register(void);
*/
import "C"

import (
	// ggml's AMX buffer type and kernels, which amx.cpp registers on CPUs
	// that have AMX.
	_ "github.com/go-ggml/ggml/internal/provider/embedded/cpuamx"
)

func init() { C.goggml_amx_register() }
