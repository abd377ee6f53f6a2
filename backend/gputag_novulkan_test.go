//go:build !vulkan

package backend_test

const vulkanTag = false
