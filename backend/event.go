package backend

// #include "goggml.h"
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/life"
)

// Event marks a point in a backend's queued work, for synchronizing
// backends of one device without waiting on the host
// (ggml_backend_event_t). Close frees it; an unreachable Event is freed by
// the garbage collector.
type Event struct {
	_       life.NoCopy
	c       C.ggml_backend_event_t
	res     *eventRes // c's references: this Event's and its waiters'
	dev     *Device
	cleanup runtime.Cleanup

	// waiters: the backends whose queued work uses the event (Record,
	// Wait), which Close synchronizes before it frees the event: upstream's
	// Vulkan backend queues a wait on the VkEvent itself, and a command
	// buffer naming a destroyed event hung the backend's next synchronize
	// (lavapipe). Weak: a long-lived event must not keep dropped backends
	// alive; one collected synchronizes in its cleanup, and holds its own
	// reference to the event's C handle until then.
	mu      sync.Mutex
	waiters []weak.Pointer[Backend]
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
	// The registry entry of the device counts its live events: Unload
	// refuses while one is alive (ggml_backend_event_free runs the
	// library's code).
	res := &eventRes{c: c, reg: d.reg}
	res.refs.Store(1)
	if res.reg != nil {
		regs.Lock()
		res.reg.events++
		regs.Unlock()
	}
	e := &Event{c: c, res: res, dev: d}
	e.cleanup = runtime.AddCleanup(e, collectEvent, res)
	life.Leaks.Opened("Event", res)
	return e, nil
}

// eventRes is an event's C handle, freed (ggml_backend_event_free) when
// its last reference goes: the Event's (dropped by Close or the garbage
// collector) and one for each backend whose queued work records or waits
// on it (dropped once that backend has synchronized or been freed). An Event
// and its waiting backend that become unreachable together are collected
// in any order; the event must outlive the queued wait, or the backend's
// last synchronize hangs (lavapipe) or reads freed memory.
type eventRes struct {
	c    C.ggml_backend_event_t
	reg  *Reg // the device's registry entry, which counts its live events
	refs atomic.Int32
	// cmu serializes ggml's calls on the event (record, wait, synchronize):
	// Event's methods and the free of a backend that recorded it
	// (syncRecorded) may run on different goroutines.
	cmu sync.Mutex
}

// collectEvent is the cleanup of an event never closed.
func collectEvent(r *eventRes) {
	life.Leaks.Collected(r)
	r.release()
}

func (r *eventRes) release() {
	if r.refs.Add(-1) == 0 {
		C.ggml_backend_event_free(r.c)
		if r.reg != nil {
			regs.Lock()
			r.reg.events--
			regs.Unlock()
		}
	}
}

// waitedEvents holds a backend's references to the events its queued work
// records or waits on (Event.Record, Event.Wait), until it synchronizes or
// is freed.
type waitedEvents struct {
	mu   sync.Mutex
	list []*eventRes
}

// add takes a reference to r, one per backend until it synchronizes.
func (w *waitedEvents) add(r *eventRes) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if slices.Contains(w.list, r) {
		return
	}
	r.refs.Add(1)
	w.list = append(w.list, r)
}

// syncRecorded synchronizes each event in the list and drops the
// references: the backend that recorded them has synchronized, or is
// about to be freed. Upstream's Vulkan event keeps a pointer to the
// recording backend's command buffer until the event is synchronized, and
// a synchronize after that backend was freed used the freed buffer
// (aborting the process, lavapipe); synchronized while the backend lives,
// the event lets the buffer go. The recorded work is done by then, so
// this returns at once, unless another backend has recorded the event
// since: then it waits for that record too.
func (w *waitedEvents) syncRecorded() {
	for _, r := range w.take() {
		r.cmu.Lock()
		C.ggml_backend_event_synchronize(r.c)
		r.cmu.Unlock()
		r.release()
		recorderSyncs.Add(1)
	}
}

// recorderSyncs counts the events syncRecorded synchronized, for the
// tests: each is an event synchronized while its recorder lived.
var recorderSyncs atomic.Int64

// releaseAll drops the references; the backend's queued work is done.
func (w *waitedEvents) releaseAll() {
	for _, r := range w.take() {
		r.release()
	}
}

// take empties the list and returns what it held.
func (w *waitedEvents) take() []*eventRes {
	w.mu.Lock()
	defer w.mu.Unlock()
	list := w.list
	w.list = nil
	return list
}

// usable refuses a nil Event; a closed one is refused under e.mu (lock).
func (e *Event) usable() error {
	if e == nil {
		return fmt.Errorf("%w: nil *Event", ggml.ErrInvalid)
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
	// The queued record writes the event (Vulkan's set event). b keeps a
	// reference until it synchronizes or is freed, and synchronizes the
	// event then.
	return e.queue(b, func() {
		C.ggml_backend_event_record(e.c, b.c)
		b.recorded.add(e.res)
	})
}

// queue runs f, which queues work on b's stream that uses the event, with
// b entered and the event locked (and open). b then holds a reference to
// the event until it synchronizes or is freed, and Close synchronizes b.
func (e *Event) queue(b *Backend, f func()) error {
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	if err := e.lock(); err != nil {
		return err
	}
	defer e.mu.Unlock()
	e.res.cmu.Lock()
	f()
	e.res.cmu.Unlock()
	b.events.add(e.res)
	if w := weak.Make(b); !slices.Contains(e.waiters, w) {
		e.waiters = append(e.waiters, w)
	}
	runtime.KeepAlive(e)
	runtime.KeepAlive(b)
	return nil
}

// lock takes e.mu, or returns ErrClosed (and holds nothing) when the event
// is closed: Close may run on another goroutine.
func (e *Event) lock() error {
	e.mu.Lock()
	if e.c == nil {
		e.mu.Unlock()
		return fmt.Errorf("%w: the event is closed", ggml.ErrClosed)
	}
	return nil
}

// Synchronize waits on the host until the recorded work is done
// (ggml_backend_event_synchronize).
func (e *Event) Synchronize() error {
	if err := e.usable(); err != nil {
		return err
	}
	if err := e.lock(); err != nil {
		return err
	}
	defer e.mu.Unlock()
	e.res.cmu.Lock()
	C.ggml_backend_event_synchronize(e.c)
	e.res.cmu.Unlock()
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
	// The queued wait reads the event.
	return e.queue(b, func() { C.ggml_backend_event_wait(b.c, e.c) })
}

// Close frees the event (ggml_backend_event_free). It first synchronizes
// the backends whose queued work uses it (Record, Wait) and that are still
// open; while one of them computes it changes nothing and returns
// ggml.ErrBusy. A backend that Close cannot reach (one dropped, or
// collected with the event) keeps the event's C handle until it has
// synchronized or been freed. It is idempotent and safe on nil.
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
		if w := e.waiters[len(e.waiters)-1].Value(); w != nil {
			if err := w.Synchronize(); err != nil && !errors.Is(err, ggml.ErrClosed) {
				return fmt.Errorf("closing an event that backend %s waits on: %w", w.Name(), err)
			}
		}
		e.waiters = e.waiters[:len(e.waiters)-1]
	}
	e.cleanup.Stop()
	life.Leaks.Closed(e.res)
	e.res.release()
	e.c = nil
	return nil
}
