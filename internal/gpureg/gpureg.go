// Package gpureg holds what the GPU packages (vulkan, cuda) share: finding
// their registry entry and devices by index.
package gpureg

import (
	"fmt"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// Kind is one GPU backend: its registry name and its own device count.
type Kind struct {
	Name  string     // the registry entry's name, e.g. "Vulkan"
	Count func() int // the backend's own device count, once registered
}

// Reg returns the backend's registry entry.
func (k Kind) Reg() (*backend.Reg, error) {
	r, err := backend.RegByName(k.Name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (no driver or device?)", k.Name, err)
	}
	return r, nil
}

// DeviceCount returns the number of devices, 0 when the backend is absent.
func (k Kind) DeviceCount() int {
	if _, err := k.Reg(); err != nil {
		return 0
	}
	return k.Count()
}

// Check checks device index i.
func (k Kind) Check(i int) error {
	if n := k.DeviceCount(); i < 0 || i >= n {
		return fmt.Errorf("%w: %s device %d of %d", ggml.ErrInvalid, k.Name, i, n)
	}
	return nil
}

// Device returns device i as a registry device.
func (k Kind) Device(i int) (*backend.Device, error) {
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
	return nil, fmt.Errorf("%w: %s device %d", backend.ErrNotFound, k.Name, i)
}

// Init starts a backend on device i.
func (k Kind) Init(i int) (*backend.Backend, error) {
	d, err := k.Device(i)
	if err != nil {
		return nil, err
	}
	return d.Init("")
}
