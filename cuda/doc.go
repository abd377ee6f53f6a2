// Package cuda is ggml's CUDA backend, compiled in with -tags cuda after
// `make cuda` (which builds it from the embedded provider's sources with
// CMake and nvcc into build/cuda/lib). Built in, its devices join ggml's
// registry at start-up; this package adds what is CUDA's own.
//
// Not verified on a GPU yet: go-ggml's CI has no CUDA toolkit or GPU, and
// checks this package with `go vet -tags cuda` only. Without the tag every
// function returns ErrNotBuilt.
package cuda

import "errors"

// ErrNotBuilt is what every function returns in a binary built without
// -tags cuda.
var ErrNotBuilt = errors.New("cuda: built without -tags cuda; run make cuda and build with -tags cuda")
