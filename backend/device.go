package backend

// #include "goggml.h"
import "C"

import (
	"fmt"
	"iter"
	"runtime"
	"strings"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// DeviceType is the kind of a device (enum ggml_backend_dev_type).
type DeviceType int

// Device types, with ggml's numbers: enum_check.go does not compile where
// the linked provider's ggml-backend.h numbers them otherwise (ggml
// renumbered GGML_BACKEND_DEVICE_TYPE_ACCEL when it added the IGPU type).
const (
	DeviceCPU   DeviceType = 0 // the CPU, system memory
	DeviceGPU   DeviceType = 1 // a GPU with its own memory
	DeviceIGPU  DeviceType = 2 // an integrated GPU using host memory
	DeviceAccel DeviceType = 3 // an accelerator used beside the CPU (BLAS, AMX)
	// DeviceMeta is a meta device over other devices (NewMetaDevice;
	// upstream ggml only).
	DeviceMeta DeviceType = 4
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
	case DeviceMeta:
		return "META"
	}
	return fmt.Sprintf("DeviceType(%d)", int(t))
}

// Device is a device in ggml's backend registry (ggml_backend_dev_t). It is
// owned by ggml and lives as long as its registry (the process, unless its
// backend library is unloaded); it has no Close. Devices are safe to share
// between goroutines.
type Device struct {
	// The fields up to c are bridge.Device's (bridge.View[bridge.Device];
	// TestViewLayouts checks the match).
	deviceKind
	c   C.ggml_backend_dev_t
	reg *Reg
}

// deviceKind marks Device for bridge.View[bridge.Device]; it has no size, and users
// see neither it nor a method of it.
type deviceKind = bridge.Kind[bridge.Device]

func deviceFromC(c C.ggml_backend_dev_t) *Device {
	if c == nil {
		return nil
	}
	return &Device{c: c, reg: regFromC(C.ggml_backend_dev_backend_reg(c))}
}

func (d *Device) usable() error {
	if d == nil || d.c == nil {
		return fmt.Errorf("%w: nil *Device", ggml.ErrInvalid)
	}
	if d.reg == nil {
		return nil // a meta device: in no registry entry
	}
	return d.reg.usable()
}

// link returns the RPC connections the device is on (a meta device's are
// those of its devices), or none.
func (d *Device) link() linkSet { return linksOfDevice(d.c) }

// DeviceCount returns the number of registered devices (ggml_backend_dev_count).
func DeviceCount() int {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return int(C.ggml_backend_dev_count())
}

// DeviceAt returns device i of the registry, or nil when out of range
// (ggml_backend_dev_get).
func DeviceAt(i int) *Device {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if i < 0 || i >= int(C.ggml_backend_dev_count()) {
		return nil
	}
	return deviceFromC(C.ggml_backend_dev_get(C.size_t(i)))
}

// Devices iterates over the registered devices (ggml_backend_dev_get).
func Devices() iter.Seq[*Device] {
	return func(yield func(*Device) bool) {
		for i := range DeviceCount() {
			d := DeviceAt(i)
			if d == nil || !yield(d) {
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
	registryMu.RLock()
	defer registryMu.RUnlock()
	if d := deviceFromC(C.ggml_backend_dev_by_name(cs)); d != nil {
		return d, nil
	}
	return nil, fmt.Errorf("%w: no device named %q; the devices are %s", ErrNotFound, name, deviceNamesLocked())
}

// deviceNames lists the registry's devices for an error message ("CPU,
// Vulkan0"; "none").
func deviceNames() string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return deviceNamesLocked()
}

// deviceNamesLocked is deviceNames under registryMu.
func deviceNamesLocked() string {
	var names []string
	for i := range int(C.ggml_backend_dev_count()) {
		names = append(names, C.GoString(C.ggml_backend_dev_name(C.ggml_backend_dev_get(C.size_t(i)))))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// DeviceByType returns the first device of type t (ggml_backend_dev_by_type),
// or an ErrNotFound error.
func DeviceByType(t DeviceType) (*Device, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if d := deviceFromC(C.ggml_backend_dev_by_type(C.enum_ggml_backend_dev_type(t))); d != nil {
		return d, nil
	}
	return nil, fmt.Errorf("%w: no %v device; the devices are %s", ErrNotFound, t, deviceNamesLocked())
}

// Name returns the device's short name, e.g. "CPU" (ggml_backend_dev_name).
func (d *Device) Name() string {
	if d.usable() != nil {
		return ""
	}
	return C.GoString(C.ggml_backend_dev_name(d.c))
}

// Description returns the device's description, e.g. the CPU model
// (ggml_backend_dev_description); for a device of an RPC server, the
// server's "host:port".
func (d *Device) Description() string {
	if d.usable() != nil {
		return ""
	}
	if k := life.LinkOf(unsafe.Pointer(d.c)); k != nil {
		// ggml's RPC client describes a device by the endpoint it
		// connected to, which is the rpc package's relay (and a string
		// of its own per connection): the server's is the link's.
		return k.Endpoint
	}
	return C.GoString(C.ggml_backend_dev_description(d.c))
}

// Type returns the kind of device (ggml_backend_dev_type).
func (d *Device) Type() DeviceType {
	if d.usable() != nil {
		return DeviceCPU
	}
	return DeviceType(C.ggml_backend_dev_type(d.c))
}

// Memory returns the device's free and total memory in bytes
// (ggml_backend_dev_memory). ggml's CPU device reports free equal to total
// on Linux and macOS (it calls free system memory ill-defined); what the
// system can give now is for the caller to judge.
// For a device on an RPC server whose connection is broken it returns 0, 0
// (MemoryErr says why).
func (d *Device) Memory() (free, total uint64) {
	free, total, _ = d.MemoryErr()
	return free, total
}

// MemoryErr is Memory with the error that makes it return zeros: a closed
// registry entry, or a broken connection to the device's RPC server (a
// *rpc.Error naming the endpoint).
func (d *Device) MemoryErr() (free, total uint64, err error) {
	if err := d.usable(); err != nil {
		return 0, 0, err
	}
	release, err := d.link().Hold()
	if err != nil {
		return 0, 0, err
	}
	defer release()
	var f, t C.size_t
	err = func() (err error) {
		defer life.Catch(&err) // a server that dies now: an error
		C.ggml_backend_dev_memory(d.c, &f, &t)
		return nil
	}()
	if err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}

// Caps are what a device can do (struct ggml_backend_dev_caps).
type Caps struct {
	Async             bool // asynchronous operations
	HostBuffer        bool // a pinned host buffer type
	BufferFromHostPtr bool // buffers over caller memory
	Events            bool // event synchronization
	// Mmap: the device can load tensors from memory-mapped files
	// (mmap_support). Only upstream ggml reports it; with the embedded
	// provider it is false (unknown: map nothing for the device), as
	// Props' other fields that a provider does not report are zero.
	Mmap bool
}

// Props are all of a device's properties (struct ggml_backend_dev_props).
type Props struct {
	Name        string
	Description string
	ID          string // the device's id (may be empty)
	DeviceID    string // the PCI bus id "domain:bus:device.function", if known
	MemoryFree  uint64
	MemoryTotal uint64
	Type        DeviceType
	Caps        Caps
	// Driver and compute capability versions, where the backend reports
	// them. ID and these fields are reported only by the embedded
	// provider's ggml: with another provider they are zero.
	DriverMajor, DriverMinor, ComputeMajor, ComputeMinor int
	Integrated                                           bool
	Library                                              string // the backend library, where known
}

func goStringOrEmpty(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// Props returns the device's properties (ggml_backend_dev_get_props).
func (d *Device) Props() (props Props, err error) {
	if err := d.usable(); err != nil {
		return Props{}, err
	}
	release, err := d.link().Hold()
	if err != nil {
		return Props{}, err
	}
	defer release()
	var p C.struct_ggml_backend_dev_props
	if err := func() (err error) {
		defer life.Catch(&err) // an RPC device asks its server
		C.ggml_backend_dev_get_props(d.c, &p)
		return nil
	}(); err != nil {
		return Props{}, err
	}
	var e C.struct_goggml_dev_props
	C.goggml_dev_props_extra(&p, &e)
	caps := Caps{Async: bool(p.caps.async), HostBuffer: bool(p.caps.host_buffer), BufferFromHostPtr: bool(p.caps.buffer_from_host_ptr),
		Events: bool(p.caps.events), Mmap: bool(C.goggml_caps_mmap(&p))}
	return Props{
		Name:         goStringOrEmpty(p.name),
		Description:  goStringOrEmpty(p.description),
		ID:           goStringOrEmpty(e.id),
		DeviceID:     goStringOrEmpty(p.device_id),
		MemoryFree:   uint64(p.memory_free),
		MemoryTotal:  uint64(p.memory_total),
		Type:         DeviceType(p._type),
		Caps:         caps,
		DriverMajor:  int(e.driver_major),
		DriverMinor:  int(e.driver_minor),
		ComputeMajor: int(e.compute_major),
		ComputeMinor: int(e.compute_minor),
		Integrated:   e.integrated != 0,
		Library:      goStringOrEmpty(e.library),
	}, nil
}

// Reg returns the registry entry (backend) the device belongs to
// (ggml_backend_dev_backend_reg).
func (d *Device) Reg() *Reg {
	if d == nil {
		return nil
	}
	return d.reg
}

// Init starts a backend on the device, with optional backend-specific
// params ("" for none) (ggml_backend_dev_init).
func (d *Device) Init(params string) (*Backend, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	release, err := d.link().Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	cp, free := cstring(params)
	defer free()
	c := C.ggml_backend_dev_init(d.c, cp)
	if c == nil {
		return nil, fmt.Errorf("%w: device %s could not start a backend", ErrUnsupported, d.Name())
	}
	return newBackend(c), nil
}

// BufferType returns the device's own buffer type
// (ggml_backend_dev_buffer_type).
func (d *Device) BufferType() *BufferType {
	if d.usable() != nil {
		return nil
	}
	if err := d.link().Err(); err != nil {
		return nil // its RPC connection broke (the call asks no server)
	}
	defer readMeta()()
	return bufferTypeFromC(C.ggml_backend_dev_buffer_type(d.c))
}

// HostBufferType returns the device's pinned host-memory buffer type, for
// fast transfers (ggml_backend_dev_host_buffer_type), or an ErrUnsupported
// error when the device has none (the CPU has none).
func (d *Device) HostBufferType() (*BufferType, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	bt := bufferTypeFromC(C.ggml_backend_dev_host_buffer_type(d.c))
	if bt == nil {
		return nil, fmt.Errorf("%w: device %s has no host buffer type", ErrUnsupported, d.Name())
	}
	return bt, nil
}

// SupportsOp reports whether the device can compute tensor t's op
// (ggml_backend_dev_supports_op), less what the binding refuses on the
// device (on Mesa's lavapipe, a mul_mat of an im2col: see the vulkan
// package).
func (d *Device) SupportsOp(t *ggml.Tensor) bool {
	if d.usable() != nil {
		return false
	}
	tc, err := tensorPtr(t)
	if err != nil {
		return false
	}
	defer runtime.KeepAlive(t)
	return bool(C.ggml_backend_dev_supports_op(d.c, tc)) && (!isLavapipe(d) || bridge.Refusal(d.Name(), unsafe.Pointer(tc)) == nil)
}

// SupportsBufferType reports whether the device can use buffers of type bt
// (ggml_backend_dev_supports_buft).
func (d *Device) SupportsBufferType(bt *BufferType) bool {
	if d.usable() != nil || bt.usable() != nil {
		return false
	}
	return bool(C.ggml_backend_dev_supports_buft(d.c, bt.c))
}

// OffloadOp reports whether the device wants to run op t even though its
// weights live elsewhere, as a scheduler asks (ggml_backend_dev_offload_op).
func (d *Device) OffloadOp(t *ggml.Tensor) bool {
	if d.usable() != nil {
		return false
	}
	tc, err := tensorPtr(t)
	if err != nil {
		return false
	}
	defer runtime.KeepAlive(t)
	return bool(C.ggml_backend_dev_offload_op(d.c, tc))
}

// String returns "name (description)".
func (d *Device) String() string { return d.Name() + " (" + d.Description() + ")" }

// procAddress returns a function the device's registry offers by name
// (ggml_backend_reg_get_proc_address), or nil.
func (d *Device) procAddress(name string) unsafe.Pointer {
	if d == nil || d.reg == nil {
		return nil
	}
	return d.reg.ProcAddress(name)
}

// Reset asks the device to drop its state, such as cached memory pools
// (ggml_backend_dev_reset); a no-op for devices without one (the CPU).
// Close the device's backends and buffers first. Only the embedded
// provider's ggml has it: with another provider it returns an
// ErrUnsupported error.
func (d *Device) Reset() error {
	if err := d.usable(); err != nil {
		return err
	}
	if !haveOllamaExtras {
		return embeddedOnly("Device.Reset (ggml_backend_dev_reset)")
	}
	C.goggml_dev_reset(d.c)
	return nil
}
