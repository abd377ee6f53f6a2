// Package metal is what ggml's Metal backend has of its own. On
// darwin/arm64 the embedded provider compiles Metal in and registers it, so
// backend.InitBest picks the GPU there with no build tag.
//
// Not compiled on go-ggml's CI (Linux): it is small on purpose. Elsewhere
// every function returns ErrNotBuilt.
package metal

import "errors"

// ErrNotBuilt is what every function returns where Metal is not compiled
// in (anything but darwin/arm64 with cgo).
var ErrNotBuilt = errors.New("metal: Metal is compiled in on darwin/arm64 only")
