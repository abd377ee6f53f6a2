package backend

/*
#include "goggml.h"

static struct ggml_backend_feature * goggml_features(void *fn, ggml_backend_reg_t reg) {
	return ((ggml_backend_get_features_t)fn)(reg);
}
*/
import "C"

import (
	"fmt"
	"iter"
	"os"
	"sync"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// Reg is an entry of ggml's backend registry: one backend implementation
// (CPU, CUDA, Vulkan, ...) and its devices (ggml_backend_reg_t). It is owned
// by ggml; it has no Close. A Reg and its devices are safe to share between
// goroutines. There is one *Reg per registry entry.
type Reg struct {
	c        C.ggml_backend_reg_t
	loaded   bool // by Load: Unload may remove it
	unloaded bool
	backends int // live backends on its devices
	buffers  int // live buffers of its devices' buffer types
	events   int // live events of its devices (their C handles)
}

// registryMu guards ggml's registry, a plain std::vector: loading and
// unloading (writers) must not run beside lookups (readers). GPU packages
// register through bridge.RegisterBackend, under the same lock.
var registryMu = &bridge.RegistryMu

// regs maps ggml's registry entries to their one Go handle.
var regs struct {
	sync.Mutex
	m map[C.ggml_backend_reg_t]*Reg
}

func regFromC(c C.ggml_backend_reg_t) *Reg {
	if c == nil {
		return nil
	}
	regs.Lock()
	defer regs.Unlock()
	if regs.m == nil {
		regs.m = map[C.ggml_backend_reg_t]*Reg{}
	}
	r := regs.m[c]
	if r == nil {
		r = &Reg{c: c}
		regs.m[c] = r
	}
	return r
}

func (r *Reg) usable() error {
	if r == nil || r.c == nil {
		return fmt.Errorf("%w: nil *Reg", ggml.ErrInvalid)
	}
	regs.Lock()
	defer regs.Unlock()
	if r.unloaded {
		return fmt.Errorf("%w: its backend library was unloaded", ggml.ErrClosed)
	}
	return nil
}

// RegCount returns the number of registry entries (ggml_backend_reg_count).
func RegCount() int {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return int(C.ggml_backend_reg_count())
}

// RegAt returns registry entry i, or nil when out of range
// (ggml_backend_reg_get).
func RegAt(i int) *Reg {
	registryMu.RLock()
	defer registryMu.RUnlock()
	if i < 0 || i >= int(C.ggml_backend_reg_count()) {
		return nil
	}
	return regFromC(C.ggml_backend_reg_get(C.size_t(i)))
}

// Regs iterates over the registry entries (ggml_backend_reg_get).
func Regs() iter.Seq[*Reg] {
	return func(yield func(*Reg) bool) {
		for i := range RegCount() {
			r := RegAt(i)
			if r == nil || !yield(r) {
				return
			}
		}
	}
}

// RegByName returns the registry entry of that name, compared without regard
// to case, e.g. "CPU" (ggml_backend_reg_by_name), or an ErrNotFound error.
func RegByName(name string) (*Reg, error) {
	cs, free := cstring(name)
	defer free()
	registryMu.RLock()
	defer registryMu.RUnlock()
	if r := regFromC(C.ggml_backend_reg_by_name(cs)); r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("%w: no backend registered as %q", ErrNotFound, name)
}

// Name returns the entry's name, e.g. "CPU" (ggml_backend_reg_name).
func (r *Reg) Name() string {
	if r.usable() != nil {
		return ""
	}
	return C.GoString(C.ggml_backend_reg_name(r.c))
}

// DeviceCount returns the number of devices of this entry
// (ggml_backend_reg_dev_count).
func (r *Reg) DeviceCount() int {
	if r.usable() != nil {
		return 0
	}
	return int(C.ggml_backend_reg_dev_count(r.c))
}

// Device returns device i of this entry, or nil when out of range
// (ggml_backend_reg_dev_get).
func (r *Reg) Device(i int) *Device {
	if i < 0 || i >= r.DeviceCount() {
		return nil
	}
	return deviceFromC(C.ggml_backend_reg_dev_get(r.c, C.size_t(i)))
}

// Devices iterates over the devices of this entry.
func (r *Reg) Devices() iter.Seq[*Device] {
	return func(yield func(*Device) bool) {
		for i := range r.DeviceCount() {
			d := r.Device(i)
			if d == nil || !yield(d) {
				return
			}
		}
	}
}

// ProcAddress returns an optional function the backend offers by name, such
// as "ggml_backend_set_n_threads", or nil (ggml_backend_reg_get_proc_address).
// Calling it is up to C code that knows its signature.
func (r *Reg) ProcAddress(name string) unsafe.Pointer {
	if r.usable() != nil {
		return nil
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return C.ggml_backend_reg_get_proc_address(r.c, cs)
}

// Feature is one entry of a backend's feature list, e.g. {"AVX2", "1"}.
type Feature struct {
	Name, Value string
}

// Features returns the backend's feature list (the registry's
// "ggml_backend_get_features" function), or an ErrUnsupported error when the
// backend offers none.
func (r *Reg) Features() ([]Feature, error) {
	if err := r.usable(); err != nil {
		return nil, err
	}
	fn := r.ProcAddress("ggml_backend_get_features")
	if fn == nil {
		return nil, fmt.Errorf("%w: backend %s has no feature list", ErrUnsupported, r.Name())
	}
	var out []Feature
	f := C.goggml_features(fn, r.c)
	for ; f != nil && f.name != nil; f = (*C.struct_ggml_backend_feature)(unsafe.Add(unsafe.Pointer(f), C.sizeof_struct_ggml_backend_feature)) {
		out = append(out, Feature{Name: C.GoString(f.name), Value: goStringOrEmpty(f.value)})
	}
	return out, nil
}

// String returns the entry's name.
func (r *Reg) String() string { return r.Name() }

// Load loads a backend library (a shared object such as
// libggml-vulkan.so) and registers its backend (ggml_backend_load).
// The module must be built from the same ggml as this binary's provider
// (build/backend.sh builds from the embedded provider's sources; with
// -tags ggml_system, use the modules of that ggml's own build): ggml checks
// only a backend API version, which the embedded provider and upstream
// ggml share while the structs they exchange differ.
func Load(path string) (*Reg, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	registryMu.Lock()
	defer registryMu.Unlock()
	c := C.ggml_backend_load(cs)
	if c == nil {
		return nil, fmt.Errorf("%w: %s is not a loadable ggml backend (see the log for why)", ErrNotFound, path)
	}
	r := regFromC(c)
	regs.Lock()
	r.loaded, r.unloaded = true, false
	regs.Unlock()
	return r, nil
}

// Unload removes a backend that Load registered, with its devices, and
// unloads its library (ggml_backend_unload). Close every backend, buffer
// and event made from it first: their code goes with the library (an
// event's C handle lives until the backends that queued work on it have
// synchronized). Devices and the Reg report ggml.ErrClosed afterwards.
func Unload(r *Reg) error {
	if err := r.usable(); err != nil {
		return err
	}
	regs.Lock()
	loaded, live, bufs, evs := r.loaded, r.backends, r.buffers, r.events
	regs.Unlock()
	if live > 0 || bufs > 0 || evs > 0 {
		return fmt.Errorf("%w: %d backend(s), %d buffer(s) and %d event(s) of %s are still open: close them first (their code goes with the library)", ggml.ErrInvalid, live, bufs, evs, r.Name())
	}
	if !loaded {
		return fmt.Errorf("%w: backend %s was not loaded with Load; built-in backends stay", ggml.ErrInvalid, r.Name())
	}
	registryMu.Lock()
	C.ggml_backend_unload(r.c)
	registryMu.Unlock()
	regs.Lock()
	r.unloaded = true
	delete(regs.m, r.c)
	regs.Unlock()
	return nil
}

// LoadAll loads every backend library found in the usual places: the
// executable's directory, the current working directory, and
// GGML_BACKEND_PATH (ggml_backend_load_all). Mind the working directory:
// any ggml backend library there is loaded; LoadAllFromPath names one
// directory only.
func LoadAll() {
	registryMu.Lock()
	defer registryMu.Unlock()
	C.ggml_backend_load_all()
}

// LoadAllFromPath loads every backend library found in directory dir
// (ggml_backend_load_all_from_path). dir must be a directory: ggml aborts
// on a file.
func LoadAllFromPath(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ggml.ErrInvalid, dir)
	}
	cs, free := cstring(dir)
	defer free()
	registryMu.Lock()
	defer registryMu.Unlock()
	C.ggml_backend_load_all_from_path(cs)
	return nil
}
