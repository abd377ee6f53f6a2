package backend

import (
	"fmt"

	"github.com/go-ggml/ggml/ggml"
)

// GPUKind is one GPU backend of ggml's registry (Vulkan, CUDA): its
// registry entry's name and its own device count. Packages vulkan and cuda
// are built on it; with it a GPU package finds its entry and devices by
// index, with errors that say what is missing.
type GPUKind struct {
	Name  string     // the registry entry's name, e.g. "Vulkan"
	Count func() int // the backend's own device count, once registered
}

// Reg returns the backend's registry entry (ggml_backend_reg_by_name).
func (k GPUKind) Reg() (*Reg, error) {
	r, err := RegByName(k.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (no driver or device?)", k.Name, err)
	}
	return r, nil
}

// DeviceCount returns the number of devices, 0 when the backend is absent.
func (k GPUKind) DeviceCount() int {
	if _, err := k.Reg(); err != nil {
		return 0
	}
	return k.Count()
}

// Check checks device index i: ggml.ErrInvalid out of range.
func (k GPUKind) Check(i int) error {
	if n := k.DeviceCount(); i < 0 || i >= n {
		return fmt.Errorf("%w: %s device %d of %d", ggml.ErrInvalid, k.Name, i, n)
	}
	return nil
}

// Device returns device i as a registry device (ggml_backend_reg_dev_get).
func (k GPUKind) Device(i int) (*Device, error) {
	if err := k.Check(i); err != nil {
		return nil, err
	}
	r, err := k.Reg()
	if err != nil {
		return nil, err
	}
	if d := r.Device(i); d != nil {
		return d, nil
	}
	return nil, fmt.Errorf("%w: %s device %d", ErrNotFound, k.Name, i)
}

// Init starts a backend on device i (ggml_backend_dev_init).
func (k GPUKind) Init(i int) (*Backend, error) {
	d, err := k.Device(i)
	if err != nil {
		return nil, err
	}
	return d.Init("")
}
