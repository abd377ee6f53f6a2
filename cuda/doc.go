// Package cuda is ggml's CUDA backend, compiled in with -tags cuda after
// `make cuda` (which builds it from the embedded provider's sources with
// CMake and nvcc into build/cuda/lib). Built in, its devices join ggml's
// registry at start-up in any program built with the tag, whether or not it
// imports this package (package backend registers them); this package adds
// what is CUDA's own.
//
// What has run on a GPU:
//   - ggml's CUDA code built as a loadable module (make cuda-dl, loaded
//     with backend.Load by a binary without the tag). On an NVIDIA H100
//     (CUDA 13.0, sm_90), TestLoadCUDAModule in package backend checked
//     ops of every family against the CPU and ran a scheduler over CUDA
//     and the CPU.
//   - The static link of this package, `make cuda` then -tags cuda, on an
//     NVIDIA H200 (CUDA 13.0, sm_90, 2026-11-27), linked there with
//     build/cudakit.sh from objects compiled where Go is: the tests of
//     backend, sched, gguf and ggml (TestGradients on CUDA0 included)
//     passed. The Llama reference tests were just outside bounds set on
//     lavapipe (CUDA multiplies f32 in TF32), and a 1b model failed to
//     load (gguf.Load wrote two chunks of one tensor at once): both fixed
//     since, neither rerun on a GPU yet (docs/providers.md).
//
// go-ggml's CI has no CUDA toolkit or GPU and type-checks this package
// with `go vet -tags cuda` (make vet-cuda) only.
//
// Under -tags "ggml_system cuda" the package links upstream's
// libggml-cuda.so from the install pkg-config finds (built with
// -DGGML_CUDA=ON), not build/cuda/lib; that too has never been linked or
// run here (go vet -tags "ggml_system cuda" type-checks it). Without the tag
// every function returns ErrNotBuilt.
package cuda

import "errors"

// ErrNotBuilt is what every function returns in a binary built without
// -tags cuda.
var ErrNotBuilt = errors.New("cuda: built without -tags cuda; run make cuda and build with -tags cuda")
