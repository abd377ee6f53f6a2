//go:build !vulkan

package gpureg_test

const vulkanTag = false
