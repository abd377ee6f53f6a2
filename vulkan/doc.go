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
package vulkan

import "errors"

// ErrNotBuilt is what every function returns in a binary built without
// -tags vulkan.
var ErrNotBuilt = errors.New("vulkan: built without -tags vulkan; run make vulkan and build with -tags vulkan")
