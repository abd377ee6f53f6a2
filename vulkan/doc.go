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
// im2col alone and mul_mat of other tensors still run. Computing a
// convolution that way corrupted the host heap: a test that ran other
// graphs first and then a Conv2D died in about half its runs with glibc's
// "malloc(): unsorted double linked list corrupted" in a later malloc or
// free; the process died on neither the CPU nor lavapipe when each graph's
// buffers stayed allocated.
//
// The cause is ggml-vulkan's descriptor handling meeting lavapipe (Mesa
// 22.3 here), not the binding: ggml-vulkan allocates its descriptor sets
// with one layout of twelve storage-buffer bindings, reuses them from graph
// to graph, and rewrites only the bindings a dispatch uses
// (ggml_vk_dispatch_pipeline), so the others still name buffers that were
// freed after an earlier graph. Vulkan lets a set hold such descriptors when
// the pipeline does not use them, but lavapipe dereferences them when it
// runs the command buffer: under Electric Fence with freed memory protected
// its queue thread faults on an atomic increment (a reference count) in
// freed memory, which in a normal run lands in a free chunk of glibc's heap.
// The same test ran clean in 20 runs of 20 with a ggml-vulkan changed to
// rewrite all twelve bindings (against 8 crashes in 20 unchanged), and with
// the test keeping every buffer alive. Upstream ggml v0.21.0 binds the
// same way (one layout of twelve bindings, only the used ones rewritten),
// so the refusal holds under the system provider too.
// Only the im2col-then-mul_mat graph triggered it among the ops tested, so
// that is what is refused; other graphs leave stale bindings too, so a
// process that frees Vulkan buffers between graphs on lavapipe may still be
// exposed. Hardware drivers were not tested; the refusal is for lavapipe
// only.
package vulkan

import "errors"

// ErrNotBuilt is what every function returns in a binary built without
// -tags vulkan.
var ErrNotBuilt = errors.New("vulkan: built without -tags vulkan; run make vulkan and build with -tags vulkan (with -tags ggml_system: an upstream ggml built with -DGGML_VULKAN=ON)")
