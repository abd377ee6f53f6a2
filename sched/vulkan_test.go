//go:build vulkan && cgo

package sched_test

// With -tags vulkan the Vulkan devices join the registry, so the tests
// that need a second device run against it.
import _ "github.com/go-ggml/ggml/vulkan"
