// Package vulkan is ggml's Vulkan backend, compiled in with -tags vulkan.
// Built in, its devices join ggml's registry at start-up, so
// backend.InitBest, backend.Devices and sched see them in any program built
// with the tag, whether or not it imports this package (package backend
// registers them); this package adds what is Vulkan's own.
//
// What it links depends on the provider. The embedded provider's backend is
// built by `make vulkan` from the embedded sources into build/vulkan/lib
// (a static library). Under -tags "ggml_system vulkan" it links upstream's
// libggml-vulkan.so from the install pkg-config finds, which must be built
// with -DGGML_VULKAN=ON (GOGGML_UPSTREAM_VULKAN=1 build/upstream.sh builds
// one from ggml v0.21.0; make test-system-vulkan tests it on lavapipe); the
// link fails with "cannot find -lggml-vulkan" on an install without it.
// The API and its behaviour are the same under both: every function here
// is in upstream's ggml-vulkan.h too, and Memory asks the registry device
// under both. The two are never mixed: build/vulkan/lib is not linked under
// ggml_system.
//
// Without the tag every function returns ErrNotBuilt.
//
// ggml hides Vulkan devices of CPU type, such as Mesa's software driver
// (lavapipe), unless GGML_VK_VISIBLE_DEVICES names them, e.g. "0"; set it
// before the program starts.
//
// # Convolutions on lavapipe
//
// On lavapipe the binding refuses a mul_mat node whose operand is an
// im2col node (through views), which is what Conv1D, Conv2D and Conv2DDW
// build: Backend.Compute, Plan, a scheduler's Compute and SupportsOp (of
// the backend or device) answer backend.ErrUnsupported. Conv2DDirect, the
// im2col alone and mul_mat of other tensors still run. Computed, such a
// graph corrupts the host heap through ggml-vulkan's stale descriptor
// bindings, under both providers; docs/drivers.md has the cause and how it
// was found. Hardware drivers are not refused.
package vulkan

import "errors"

// ErrNotBuilt is what every function returns in a binary built without
// -tags vulkan.
var ErrNotBuilt = errors.New("vulkan: built without -tags vulkan; run make vulkan and build with -tags vulkan (with -tags ggml_system: an upstream ggml built with -DGGML_VULKAN=ON)")
