package backend

// #include "goggml.h"
import "C"

// Each constant below is ggml's number for it (the constants are written
// as Go numbers, so that go doc shows them): an index out of range here, a
// compile error, means the linked ggml numbers one otherwise.
func _() {
	_ = [1]struct{}{}[SplitMirrored-C.GOGGML_SPLIT_MIRRORED]
	_ = [1]struct{}{}[C.GOGGML_SPLIT_MIRRORED-SplitMirrored]
	_ = [1]struct{}{}[SplitPartial-C.GOGGML_SPLIT_PARTIAL]
	_ = [1]struct{}{}[C.GOGGML_SPLIT_PARTIAL-SplitPartial]
	_ = [1]struct{}{}[DeviceCPU-C.GGML_BACKEND_DEVICE_TYPE_CPU]
	_ = [1]struct{}{}[C.GGML_BACKEND_DEVICE_TYPE_CPU-DeviceCPU]
	_ = [1]struct{}{}[DeviceGPU-C.GGML_BACKEND_DEVICE_TYPE_GPU]
	_ = [1]struct{}{}[C.GGML_BACKEND_DEVICE_TYPE_GPU-DeviceGPU]
	_ = [1]struct{}{}[DeviceIGPU-C.GGML_BACKEND_DEVICE_TYPE_IGPU]
	_ = [1]struct{}{}[C.GGML_BACKEND_DEVICE_TYPE_IGPU-DeviceIGPU]
	_ = [1]struct{}{}[DeviceAccel-C.GGML_BACKEND_DEVICE_TYPE_ACCEL]
	_ = [1]struct{}{}[C.GGML_BACKEND_DEVICE_TYPE_ACCEL-DeviceAccel]
	_ = [1]struct{}{}[DeviceMeta-C.GOGGML_DEVICE_TYPE_META]
	_ = [1]struct{}{}[C.GOGGML_DEVICE_TYPE_META-DeviceMeta]
}
