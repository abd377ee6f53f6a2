//go:build vulkan && cgo

package gguf_test

// With -tags vulkan the Vulkan devices join the registry, so that
// TestLoadOnDevices loads into device buffers.
import _ "github.com/go-ggml/ggml/vulkan"
