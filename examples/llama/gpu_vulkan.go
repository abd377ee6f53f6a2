//go:build vulkan

package main

// With -tags vulkan the Vulkan devices join the registry: the model runs on
// the first GPU (lavapipe, a CPU-type device, needs GGML_VK_VISIBLE_DEVICES=0).
import _ "github.com/go-ggml/ggml/vulkan"
