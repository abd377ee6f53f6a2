package modeltest

import (
	"strings"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/model"
)

// GPU returns model.DefaultGPU: a test of a GPU build (-tags vulkan,
// -tags cuda) runs on it, and skips without one.
func GPU() *backend.Device { return model.DefaultGPU() }

// GPUTolerances are Tol per weight type on a GPU, against the plain float64 reference:
// GPU kernels round differently from the CPU's (f16 accumulators,
// activations kept in f32 or quantized to q8_1), so no emulation applies.
// f32 models on upstream v0.21.0's Vulkan (lavapipe, with f16) come out at
// f16's precision: over six seeds the best token's error was
// 0.00052–0.00104 (CI's seed 1795833575603832906 the last, above the 1e-3
// this table had), the worst 0.0047.
var GPUTolerances = map[ggml.Type]Tol{
	ggml.TypeF32:  {Best: 2e-3, Worst: 1e-2},
	ggml.TypeF16:  {Best: 1e-2, Worst: 5e-2},
	ggml.TypeQ8_0: {Best: 5e-2, Worst: 0.15},
	ggml.TypeQ4_0: {Best: 5e-2, Worst: 0.15},
}

// cudaTolerance replaces GPUTolerances' entries on CUDA, where ggml
// multiplies f32 matrices in TF32 (cuBLAS's TF32 tensor-op math and its
// own mmf kernels: a 10-bit mantissa, as f16's), and its quantized kernels
// (MMQ, MMVQ) take activations as q8_1, whose block sums are kept in f16:
// q4_0's and the k-quants' offset terms carry that rounding. On an H200
// (2026-11-27) the best token's error was 0.00176 for f32, 0.0565 for
// q4_0 (worst 0.118) and 0.0552 for the q4_K_M mix (worst 0.103).
var cudaTolerance = map[ggml.Type]Tol{
	ggml.TypeF32:  {Best: 1e-2, Worst: 5e-2}, // f16's
	ggml.TypeQ4_0: {Best: 8e-2, Worst: 0.2},
}

// GPUTolerance is the tolerance of a model with weights of type typ on
// the GPU dev (GPUTolerances, CUDA's own where it differs).
func GPUTolerance(dev *backend.Device, typ ggml.Type) Tol {
	if tl, ok := cudaTolerance[typ]; ok && strings.HasPrefix(dev.Name(), "CUDA") {
		return tl
	}
	return GPUTolerances[typ]
}
