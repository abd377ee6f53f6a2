package backend

// #include "goggml.h"
import "C"

import (
	"fmt"
	"iter"
	"unsafe"
)

// DeviceType is the kind of a device (enum ggml_backend_dev_type).
type DeviceType int

// Device types.
const (
	DeviceCPU   DeviceType = C.GGML_BACKEND_DEVICE_TYPE_CPU   // the CPU, system memory
	DeviceGPU   DeviceType = C.GGML_BACKEND_DEVICE_TYPE_GPU   // a GPU with its own memory
	DeviceIGPU  DeviceType = C.GGML_BACKEND_DEVICE_TYPE_IGPU  // an integrated GPU using host memory
	DeviceAccel DeviceType = C.GGML_BACKEND_DEVICE_TYPE_ACCEL // an accelerator used beside the CPU (BLAS, AMX)
)

// String returns "CPU", "GPU", "IGPU" or "ACCEL".
func (t DeviceType) String() string {
	switch t {
	case DeviceCPU:
		return "CPU"
	case DeviceGPU:
		return "GPU"
	case DeviceIGPU:
		return "IGPU"
	case DeviceAccel:
		return "ACCEL"
	}
	return fmt.Sprintf("DeviceType(%d)", int(t))
}

// Device is a device in ggml's backend registry (ggml_backend_dev_t). It is
// owned by ggml and lives as long as the process (or until its backend
// library is unloaded); it has no Close. Devices are safe to share between
// goroutines.
type Device struct {
	c C.ggml_backend_dev_t
}

func deviceFromC(c C.ggml_backend_dev_t) *Device {
	if c == nil {
		return nil
	}
	return &Device{c: c}
}

// DeviceCount returns the number of registered devices (ggml_backend_dev_count).
func DeviceCount() int { return int(C.ggml_backend_dev_count()) }

// DeviceAt returns device i of the registry, or nil when out of range
// (ggml_backend_dev_get).
func DeviceAt(i int) *Device {
	if i < 0 || i >= DeviceCount() {
		return nil
	}
	return deviceFromC(C.ggml_backend_dev_get(C.size_t(i)))
}

// Devices iterates over the registered devices (ggml_backend_dev_get).
func Devices() iter.Seq[*Device] {
	return func(yield func(*Device) bool) {
		for i := range DeviceCount() {
			if !yield(DeviceAt(i)) {
				return
			}
		}
	}
}

// DeviceByName returns the device of that name, compared without regard to
// case (ggml_backend_dev_by_name), or an ErrNotFound error.
func DeviceByName(name string) (*Device, error) {
	cs, free := cstring(name)
	defer free()
	if d := deviceFromC(C.ggml_backend_dev_by_name(cs)); d != nil {
		return d, nil
	}
	return nil, fmt.Errorf("%w: no device named %q", ErrNotFound, name)
}

// DeviceByType returns the first device of type t (ggml_backend_dev_by_type),
// or an ErrNotFound error.
func DeviceByType(t DeviceType) (*Device, error) {
	if d := deviceFromC(C.ggml_backend_dev_by_type(C.enum_ggml_backend_dev_type(t))); d != nil {
		return d, nil
	}
	return nil, fmt.Errorf("%w: no %v device", ErrNotFound, t)
}

// Name returns the device's short name, e.g. "CPU" (ggml_backend_dev_name).
func (d *Device) Name() string { return C.GoString(C.ggml_backend_dev_name(d.c)) }

// Description returns the device's description, e.g. the CPU model
// (ggml_backend_dev_description).
func (d *Device) Description() string { return C.GoString(C.ggml_backend_dev_description(d.c)) }

// Type returns the kind of device (ggml_backend_dev_type).
func (d *Device) Type() DeviceType { return DeviceType(C.ggml_backend_dev_type(d.c)) }

// Memory returns the device's free and total memory in bytes
// (ggml_backend_dev_memory).
func (d *Device) Memory() (free, total uint64) {
	var f, t C.size_t
	C.ggml_backend_dev_memory(d.c, &f, &t)
	return uint64(f), uint64(t)
}

// String returns "name (description)".
func (d *Device) String() string { return d.Name() + " (" + d.Description() + ")" }

// procAddress returns a function the device's registry offers by name
// (ggml_backend_reg_get_proc_address), or nil.
func (d *Device) procAddress(name string) unsafe.Pointer {
	reg := C.ggml_backend_dev_backend_reg(d.c)
	if reg == nil {
		return nil
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return C.ggml_backend_reg_get_proc_address(reg, cs)
}
