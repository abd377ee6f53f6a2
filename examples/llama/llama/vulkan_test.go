//go:build vulkan && cgo

package llama

// With -tags vulkan the Vulkan devices join the registry and the GPU tests
// run on the first (lavapipe here: GGML_VK_VISIBLE_DEVICES=0).
import _ "github.com/go-ggml/ggml/vulkan"
