// Package vulkan is ggml's Vulkan backend, compiled in with -tags vulkan
// after `make vulkan` (which builds it from the embedded provider's sources
// into build/vulkan/lib). Built in, its devices join ggml's registry at
// start-up, so backend.InitBest, backend.Devices and sched see them;
// this package adds what is Vulkan's own.
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
// the test keeping every buffer alive. ggml v0.21.0 binds the same way.
// Only the im2col-then-mul_mat graph triggered it among the ops tested, so
// that is what is refused; other graphs leave stale bindings too, so a
// process that frees Vulkan buffers between graphs on lavapipe may still be
// exposed. Hardware drivers were not tested; the refusal is for lavapipe
// only.
package vulkan

import "errors"

// ErrNotBuilt is what every function returns in a binary built without
// -tags vulkan.
var ErrNotBuilt = errors.New("vulkan: built without -tags vulkan; run make vulkan and build with -tags vulkan")
