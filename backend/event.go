package backend

// #include "goggml.h"
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// Event marks a point in a backend's queued work, for synchronizing
// backends of one device without waiting on the host
// (ggml_backend_event_t). Close frees it; an unreachable Event is freed by
// the garbage collector.
type Event struct {
	_       bridge.NoCopy
	c       C.ggml_backend_event_t
	dev     *Device
	cleanup runtime.Cleanup

	// waiters: the backends whose queued work waits on the event (Wait),
	// which Close synchronizes before it frees the event: upstream's
	// Vulkan backend queues a wait on the VkEvent itself, and a command
	// buffer naming a destroyed event hung the backend's next synchronize
	// (lavapipe).
	mu      sync.Mutex
	waiters []*Backend
}

// NewEvent creates an event on the device (ggml_backend_event_new), or an
// ErrUnsupported error when the device has no events (the CPU has none).
func (d *Device) NewEvent() (*Event, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	p, err := d.Props()
	if err != nil {
		return nil, err
	}
	if !p.Caps.Events {
		return nil, fmt.Errorf("%w: device %s has no events", ErrUnsupported, d.Name())
	}
	c := C.ggml_backend_event_new(d.c)
	if c == nil {
		return nil, fmt.Errorf("%w: device %s could not create an event", ErrUnsupported, d.Name())
	}
	e := &Event{c: c, dev: d}
	e.cleanup = runtime.AddCleanup(e, func(c C.ggml_backend_event_t) { C.ggml_backend_event_free(c) }, c)
	return e, nil
}

func (e *Event) usable() error {
	if e == nil {
		return fmt.Errorf("%w: nil *Event", ggml.ErrInvalid)
	}
	if e.c == nil {
		return fmt.Errorf("%w: the event is closed", ggml.ErrClosed)
	}
	return nil
}

// sameDevice checks that backend b runs on the event's device, as ggml's
// event functions require.
func (e *Event) sameDevice(b *Backend) error {
	if err := b.usable(); err != nil {
		return err
	}
	if b.dev == nil || b.dev.c != e.dev.c {
		return fmt.Errorf("%w: the event belongs to device %s, the backend runs on %s", ggml.ErrInvalid, e.dev.Name(), b.dev.Name())
	}
	return nil
}

// Record marks the current end of backend b's queued work
// (ggml_backend_event_record). b must run on the event's device.
func (e *Event) Record(b *Backend) error {
	if err := e.usable(); err != nil {
		return err
	}
	if err := e.sameDevice(b); err != nil {
		return err
	}
	C.ggml_backend_event_record(e.c, b.c)
	runtime.KeepAlive(e)
	runtime.KeepAlive(b)
	return nil
}

// Synchronize waits on the host until the recorded work is done
// (ggml_backend_event_synchronize).
func (e *Event) Synchronize() error {
	if err := e.usable(); err != nil {
		return err
	}
	C.ggml_backend_event_synchronize(e.c)
	runtime.KeepAlive(e)
	return nil
}

// Wait makes backend b's later work wait for the recorded work, without
// blocking the host (ggml_backend_event_wait). b must be a backend of the
// same kind (registry entry) as the event's device, on any of its devices.
func (e *Event) Wait(b *Backend) error {
	if err := e.usable(); err != nil {
		return err
	}
	if err := b.usable(); err != nil {
		return err
	}
	if b.dev == nil || b.dev.reg != e.dev.reg {
		return fmt.Errorf("%w: an event of %s cannot make a %s backend wait", ggml.ErrInvalid, e.dev.reg.Name(), b.Name())
	}
	if err := b.enter(); err != nil { // it queues work on b's stream
		return err
	}
	defer b.leave()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c == nil { // closed meanwhile
		return fmt.Errorf("%w: the event is closed", ggml.ErrClosed)
	}
	C.ggml_backend_event_wait(b.c, e.c)
	// The queued wait reads the event until b synchronizes.
	b.pending = append(b.pending, e)
	if !slices.Contains(e.waiters, b) {
		e.waiters = append(e.waiters, b)
	}
	runtime.KeepAlive(e)
	runtime.KeepAlive(b)
	return nil
}

// Close frees the event (ggml_backend_event_free). It first synchronizes
// the backends that Wait made wait on it and that are still open, as their
// queued work reads the event; while one of them computes it changes
// nothing and returns ggml.ErrBusy. It is idempotent and safe on nil.
func (e *Event) Close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c == nil {
		return nil
	}
	for len(e.waiters) > 0 {
		w := e.waiters[len(e.waiters)-1]
		if err := w.Synchronize(); err != nil && !errors.Is(err, ggml.ErrClosed) {
			return fmt.Errorf("closing an event that backend %s waits on: %w", w.Name(), err)
		}
		e.waiters = e.waiters[:len(e.waiters)-1]
	}
	e.cleanup.Stop()
	C.ggml_backend_event_free(e.c)
	e.c = nil
	return nil
}
