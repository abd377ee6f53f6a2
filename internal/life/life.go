package life

import (
	"fmt"
	"sync/atomic"
)

// Life is the lifetime of a C object that work in flight may use: a
// compute, a transfer, a read of tensor data. Work acquires the Life for as
// long as it touches the object; Close marks the Life closed, so that no new
// work starts, and the object is freed (free runs) once the last work in
// flight has released it — at Close when there is none. The state is one
// atomic word, so acquiring costs no lock.
//
// Exclusive work (Enter/Leave) is a compute on a handle that ggml lets only
// one caller use at a time (a backend's work buffer, a scheduler): a second
// Enter while one runs is ErrBusy, never a silent overlap.
//
// A child Life (an allocation of a scheduler or graph allocator) acquires its
// parent too, and reports the parent's error once the parent is closed.
type Life struct {
	state     atomic.Uint64
	parent    *Life // set at birth, or by Reparent before the Life is shared
	closedErr error
	free      func()
	placement bool // one allocation of a scheduler or graph allocator
	guard     bool // Acquire fails while EnterIdle's work runs (placements, graphs)
	// probe, if set (a Link's Life), runs before each Acquire and Enter:
	// an error refuses the work (and has closed the Life).
	probe func() error
	// own, if set (a Link's Life), admits each Acquire and Enter (ErrBusy
	// while another goroutine's work holds the Life) and hears of each
	// Release and Leave.
	own *owner
	// link, in a chain over several connections (Links.Parent), is the
	// connection's own Life, whose closing Err reports.
	link *Life
}

const (
	lifeClosed = 1 << 63
	lifeBusy   = 1 << 62
	lifeUsers  = lifeBusy - 1
)

// New returns an open Life. closedErr is what Err reports once it is
// closed (it should wrap ErrClosed or another kind); free, if not nil, runs
// once, when the Life is closed and has no users.
func New(parent *Life, closedErr error, free func()) *Life {
	return &Life{parent: parent, closedErr: closedErr, free: free}
}

// NewExclusive returns an open, guarded Life that frees nothing (a
// context): work that changes where its tensors live runs between EnterIdle
// and LeaveIdle, alone.
func NewExclusive(closedErr error) *Life {
	return &Life{closedErr: closedErr, guard: true}
}

// NewPlacement returns the Life of the tensors one allocation of a
// scheduler or graph allocator (parent) places: it is closed when that
// allocation ends (a reset, another allocation), after which the tensors are
// simply unplaced, free to be placed again by anyone.
func NewPlacement(parent *Life, closedErr error) *Life {
	return &Life{parent: parent, closedErr: closedErr, placement: true, guard: true}
}

// NewGuard returns an open Life that frees nothing, for what work in flight
// reads and other work changes (a graph's node list): the change runs
// between EnterIdle and LeaveIdle, which refuse it while work holds the
// Life and refuse new work while it runs.
func NewGuard(closedErr error) *Life {
	return &Life{closedErr: closedErr, guard: true}
}

// Ended reports whether l is a placement whose allocation is over (or
// whose allocator is closed): its tensors have no memory any more, and may
// be placed anew.
func (l *Life) Ended() bool { return l != nil && l.placement && l.Err() != nil }

// Err returns nil while the Life (and its parent) is open, else why not:
// the parent's error first, as Acquire meets it (a closed buffer on a
// broken connection reports the connection). A Life of a chain over
// several connections (Links.Parent) reports its connection's too.
func (l *Life) Err() error {
	if l.parent != nil {
		if err := l.parent.Err(); err != nil {
			return err
		}
	}
	if l.link != nil {
		if err := l.link.Err(); err != nil {
			return err
		}
	}
	if l.state.Load()&lifeClosed != 0 {
		return l.closedErr
	}
	return nil
}

// Closed reports whether Close took effect.
func (l *Life) Closed() bool { return l.state.Load()&lifeClosed != 0 }

// Acquire registers a user: the object stays alive until Release. It fails
// with Err's error once the Life or its parent is closed. Under an RPC
// connection (a Link's Life above), it also takes the connection for the
// calling goroutine's work until Release: ErrBusy while another
// goroutine's work holds it (see Keep for holds that do no work).
func (l *Life) Acquire() error { return l.acquire(true) }

// Keep is Acquire for a hold that keeps the object alive without doing
// work on it (a scheduler keeps its backends): it takes no RPC connection.
// End it with Unkeep.
func (l *Life) Keep() error { return l.acquire(false) }

func (l *Life) acquire(work bool) error {
	if l.probe != nil {
		if err := l.probe(); err != nil {
			return err
		}
	}
	own := l.own
	if !work {
		own = nil
	}
	if own != nil {
		if err := own.take(); err != nil {
			return err
		}
	}
	if l.parent != nil {
		if err := l.parent.acquire(work); err != nil {
			own.give()
			return err
		}
	}
	for {
		s := l.state.Load()
		if s&lifeClosed != 0 {
			if l.parent != nil {
				l.parent.release(work)
			}
			own.give()
			return l.closedErr
		}
		if l.guard && s&lifeBusy != 0 {
			if l.parent != nil {
				l.parent.release(work)
			}
			own.give()
			return fmt.Errorf("%w: what this work uses is being changed (memory re-placed, or the graph's nodes) by other work; retry when that is over", ErrBusy)
		}
		if s&lifeUsers == lifeUsers {
			panic("go-ggml: too many users of one handle")
		}
		if l.state.CompareAndSwap(s, s+1) {
			return nil
		}
	}
}

// Release ends a use that Acquire started.
func (l *Life) Release() { l.release(true) }

// Unkeep ends a hold that Keep started.
func (l *Life) Unkeep() { l.release(false) }

func (l *Life) release(work bool) {
	s := l.state.Add(^uint64(0)) // -1
	if s&lifeUsers == lifeUsers {
		panic("go-ggml: Life released more often than acquired")
	}
	if s&lifeClosed != 0 && s&lifeUsers == 0 {
		l.runFree()
	}
	if l.parent != nil {
		l.parent.release(work)
	}
	if work {
		l.own.give()
	}
}

// Enter starts exclusive work: ErrBusy while other exclusive work runs,
// Err's error once closed. It counts as a user until Leave.
func (l *Life) Enter(what string) error {
	if l.probe != nil {
		if err := l.probe(); err != nil {
			return err
		}
	}
	if l.own != nil {
		if err := l.own.take(); err != nil {
			return err
		}
	}
	if l.parent != nil {
		if err := l.parent.Acquire(); err != nil {
			l.own.give()
			return err
		}
	}
	for {
		s := l.state.Load()
		var err error
		switch {
		case s&lifeClosed != 0:
			err = l.closedErr
		case s&lifeBusy != 0:
			err = fmt.Errorf("%w: %s is in use by other work (on another goroutine, or the compute whose callback this is); it does one thing at a time", ErrBusy, what)
		}
		if err != nil {
			if l.parent != nil {
				l.parent.Release()
			}
			l.own.give()
			return err
		}
		if l.state.CompareAndSwap(s, (s|lifeBusy)+1) {
			return nil
		}
	}
}

// Leave ends exclusive work that Enter started.
func (l *Life) Leave() {
	for {
		s := l.state.Load()
		n := (s &^ lifeBusy) - 1
		if l.state.CompareAndSwap(s, n) {
			if n&lifeClosed != 0 && n&lifeUsers == 0 {
				l.runFree()
			}
			break
		}
	}
	if l.parent != nil {
		l.parent.Release()
	}
	l.own.give()
}

// EnterIdle starts work that changes what users of the Life read (a
// placement's memory, a graph's nodes): ErrBusy naming what while any work
// holds the Life, Err's error once it is closed. Until LeaveIdle, Acquire of
// a guarded Life (NewPlacement, NewGuard) fails with ErrBusy. It counts no
// user.
func (l *Life) EnterIdle(what string) error {
	for {
		s := l.state.Load()
		switch {
		case s&lifeClosed != 0:
			return l.closedErr
		case s&(lifeBusy|lifeUsers) != 0:
			return fmt.Errorf("%w: %s cannot change while a compute or transfer uses it (on another goroutine, or the compute whose callback this is); retry when that is over", ErrBusy, what)
		}
		if l.state.CompareAndSwap(s, s|lifeBusy) {
			return nil
		}
	}
}

// LeaveIdle ends what EnterIdle started; with close, the Life is closed
// at the same instant, so that no work acquires it in between.
func (l *Life) LeaveIdle(close bool) {
	for {
		s := l.state.Load()
		n := s &^ lifeBusy
		if close {
			n |= lifeClosed
		}
		if l.state.CompareAndSwap(s, n) {
			if close && s&lifeClosed == 0 && n&lifeUsers == 0 {
				l.runFree()
			}
			return
		}
	}
}

// Busy reports whether exclusive work is running.
func (l *Life) Busy() bool { return l.state.Load()&lifeBusy != 0 }

// Close marks the Life closed: no new work starts, and the object is freed
// once the work in flight is over (at once when there is none). While
// exclusive work runs, or with refuseInUse while any work does, it changes
// nothing and returns ErrBusy naming what. Closing again is a no-op.
func (l *Life) Close(what string, refuseInUse bool) error {
	for {
		s := l.state.Load()
		if s&lifeClosed != 0 {
			return nil
		}
		if s&lifeBusy != 0 || (refuseInUse && s&lifeUsers != 0) {
			return fmt.Errorf("%w: %s cannot be closed while a compute or transfer uses it; close it when that is over", ErrBusy, what)
		}
		if l.state.CompareAndSwap(s, s|lifeClosed) {
			if s&lifeUsers == 0 {
				l.runFree()
			}
			return nil
		}
	}
}

func (l *Life) runFree() {
	if f := l.free; f != nil {
		l.free = nil // exactly one transition reaches here
		f()
	}
}

// Parent returns the Life a child Life was made under, or nil.
func (l *Life) Parent() *Life { return l.parent }

// Reparent makes l a child of parent that frees nothing itself: what it
// stood for is now owned by parent (a buffer joined into a multi-buffer).
// Call it only while no work uses l.
func (l *Life) Reparent(parent *Life) {
	l.parent, l.free = parent, nil
}

// Holds is a set of acquired Lives, released together: the handles that one
// compute or transfer keeps alive. Its zero value is an empty set; the first
// few Lives take no allocation.
type Holds struct {
	small [4]*Life
	n     int
	more  []*Life
	undo  []func()
}

// Defer runs f at Release (after the Lives are released), for holds that
// are no Life (a lock on an index tensor).
func (h *Holds) Defer(f func()) { h.undo = append(h.undo, f) }

func (h *Holds) has(l *Life) bool {
	for _, m := range h.small[:h.n] {
		if m == l {
			return true
		}
	}
	for _, m := range h.more {
		if m == l {
			return true
		}
	}
	return false
}

// Add acquires l unless the set holds it already (nil is ignored).
func (h *Holds) Add(l *Life) error {
	if l == nil || h.has(l) {
		return nil
	}
	if err := l.Acquire(); err != nil {
		return err
	}
	if h.n < len(h.small) {
		h.small[h.n] = l
		h.n++
	} else {
		h.more = append(h.more, l)
	}
	return nil
}

// Release releases every Life of the set, once.
func (h *Holds) Release() {
	for i := len(h.more) - 1; i >= 0; i-- {
		h.more[i].Release()
	}
	for i := h.n - 1; i >= 0; i-- {
		h.small[i].Release()
		h.small[i] = nil
	}
	h.n, h.more = 0, nil
	for i := len(h.undo) - 1; i >= 0; i-- {
		h.undo[i]()
	}
	h.undo = nil
}
