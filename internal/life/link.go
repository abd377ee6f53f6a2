package life

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// ErrBroken is the kind of the errors of a link whose connection failed
// (the server died, restarted, or answered garbage) when its owner gave it
// no kind of its own (NewLink's broken; package rpc gives rpc.ErrBroken).
var ErrBroken = errors.New("connection broken")

// LinkError is the error of a link about its server when the link's owner
// gave it no error of its own (NewLink's wrap): it names the server's
// endpoint; Err wraps the kind (ErrBroken, ErrClosed, ErrBusy) and the
// cause. Package rpc gives its links its own rpc.Error.
type LinkError struct {
	Endpoint string
	Err      error
}

// Error returns "ggml rpc: server <endpoint>: <Err>".
func (e *LinkError) Error() string {
	return fmt.Sprintf("ggml rpc: server %s: %v", e.Endpoint, e.Err)
}

// Unwrap returns Err.
func (e *LinkError) Unwrap() error { return e.Err }

// Link is one connection of ggml's RPC client to a server (package rpc):
// the devices, buffer types, buffers and backends that use it fail
// together. Its Life is the parent of the Lives of its buffers and
// backends, so that once the link is broken (Break, or the probe finds the
// connection dead) every use of them fails with the link's error, and
// their frees skip the C calls that would talk to the server (the C
// objects are leaked: ggml's client aborts on a failed exchange).
type Link struct {
	Endpoint string
	life     *Life
	probe    func() error // reports a dead connection without using its stream
	reason   atomic.Pointer[error]
	broken   atomic.Bool
	mu       sync.Mutex // Break
	onBreak  func()     // runs once, when the link breaks (package rpc shuts its socket)
	wrap     func(error) error
	kind     error // of a broken link's errors
}

// OnBreak sets f to run once when the link breaks (not when it is closed).
// Call it before the link is shared.
func (k *Link) OnBreak(f func()) { k.onBreak = f }

// linkClosed is the Life error of a broken or closed link: it reads the
// link's reason when reported.
type linkClosed struct{ k *Link }

func (e linkClosed) err() error {
	if r := e.k.reason.Load(); r != nil {
		return *r
	}
	return e.k.wrap(fmt.Errorf("%w: the connection was closed (Client.Close)", ErrClosed))
}

// Error returns the link's *LinkError's text.
func (e linkClosed) Error() string { return e.err().Error() }

// Unwrap returns the link's *LinkError.
func (e linkClosed) Unwrap() error { return e.err() }

// NewLink returns an open link to endpoint. probe, if not nil, is called
// before each use (Acquire of its Life or of a child's): an error breaks
// the link. wrap makes the link's errors: it returns err as the error of
// the server at endpoint (package rpc passes its *rpc.Error's); nil makes
// a *LinkError. broken is the kind of a broken link's errors (package rpc
// passes rpc.ErrBroken); nil means ErrBroken.
func NewLink(endpoint string, probe func() error, wrap func(err error) error, broken error) *Link {
	if wrap == nil {
		wrap = func(err error) error { return &LinkError{Endpoint: endpoint, Err: err} }
	}
	if broken == nil {
		broken = ErrBroken
	}
	k := &Link{Endpoint: endpoint, probe: probe, wrap: wrap, kind: broken}
	k.life = &Life{own: &owner{endpoint: endpoint, wrap: wrap}}
	k.life.own.cond.L = &k.life.own.mu
	k.life.closedErr = linkClosed{k}
	k.life.probe = func() error {
		if k.life.Closed() {
			return k.life.closedErr // the probe's file may be gone
		}
		if k.probe == nil {
			return nil
		}
		if err := k.probe(); err != nil {
			k.Break(err)
			return k.life.closedErr
		}
		return nil
	}
	return k
}

// Life returns the link's lifetime: the parent of its buffers' and
// backends' Lives.
func (k *Link) Life() *Life {
	if k == nil {
		return nil
	}
	return k.life
}

// Err returns nil while the link is usable (probing it), else its error.
func (k *Link) Err() error {
	if k == nil {
		return nil
	}
	if err := k.life.Err(); err != nil {
		return err
	}
	return k.life.probe()
}

// Broken reports whether the link was broken (not merely closed), without
// probing.
func (k *Link) Broken() bool { return k != nil && k.broken.Load() }

// dead reports whether the link is broken, probing it while it is open. A
// link closed by the user is not dead: the frees of its objects still talk
// to the server.
func (k *Link) dead() bool {
	if k.broken.Load() {
		return true
	}
	if k.life.Closed() {
		return false
	}
	return k.Err() != nil && k.broken.Load()
}

// Break marks the link broken because of cause (the first cause sticks):
// every later use of its objects fails with the link's error (wrap).
func (k *Link) Break(cause error) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.broken.Load() {
		return
	}
	// The cause is the server's as it came (the owner passes no error of
	// the link's own making, which already names the endpoint), but for a
	// *LinkError of this link's.
	var le *LinkError
	var err error
	switch {
	case errors.As(cause, &le) && le.Endpoint == k.Endpoint && errors.Is(cause, k.kind):
		err = cause
	case errors.Is(cause, k.kind):
		err = k.wrap(cause)
	default:
		err = k.wrap(fmt.Errorf("%w: %w", k.kind, cause))
	}
	if !k.life.Closed() {
		k.reason.Store(&err)
	}
	k.broken.Store(true)
	k.life.Close("", false)
	if k.onBreak != nil {
		k.onBreak()
	}
}

// Close closes the link without a fault (the user disconnected): later
// uses fail with the link's error saying "connection closed".
func (k *Link) Close() {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.life.Close("", false)
}

// links maps the C devices (ggml_backend_dev_t) of every connection to its
// Link; nLinks counts them, so that a process without RPC pays one atomic
// load per lookup.
var (
	links  sync.Map
	nLinks atomic.Int64
)

// RegisterLink records that device dev (a ggml_backend_dev_t) talks through
// link k.
func RegisterLink(dev unsafe.Pointer, k *Link) {
	if _, loaded := links.Swap(dev, k); !loaded {
		nLinks.Add(1)
	}
}

// LinkOf returns the link of device dev (a ggml_backend_dev_t), or nil for
// a local device.
func LinkOf(dev unsafe.Pointer) *Link {
	if dev == nil || nLinks.Load() == 0 {
		return nil
	}
	if v, ok := links.Load(dev); ok {
		return v.(*Link)
	}
	return nil
}

// anyBroken reports whether a link of ks is broken (probing the open
// ones): the free of a C object that spans them must be skipped.
func anyBroken(ks []*Link) bool {
	for _, k := range ks {
		if k != nil && k.dead() {
			return true
		}
	}
	return false
}

// FreeOver runs free, a C call that frees objects on the servers of links
// ks: skipped (the C objects leaked) when a link is broken, and an abort
// in it (the server died meanwhile) breaks the link instead of ending the
// process. It is for frees that run from Close and from cleanups: it waits
// (up to freeWait) while another goroutine's work uses a link, since ggml's
// client has one socket per server and no lock; after that the objects
// are leaked rather than freed over a socket in use.
func FreeOver(ks []*Link, free func()) {
	if len(ks) == 0 {
		free()
		return
	}
	for i, k := range ks {
		if !k.life.own.wait(freeWait) {
			for _, o := range ks[:i] {
				o.life.own.give()
			}
			return
		}
	}
	defer func() {
		for _, k := range ks {
			k.life.own.give()
		}
	}()
	if anyBroken(ks) {
		return
	}
	var err error
	func() {
		defer Catch(&err)
		free()
	}()
	if err == nil {
		return
	}
	for _, k := range ks {
		if k.Broken() {
			return // a link's abort handler found the link that failed
		}
	}
	for _, k := range ks {
		k.Break(err) // which one failed is unknown: its socket may be mid-exchange
	}
}

// OnAbort sets f to see every *ggml.AssertError that Catch recovers for
// as long as the link is watched: f breaks the link if an RPC failure on
// it caused the abort, and returns the error to report instead (a
// *LinkError naming the endpoint), or nil. Package rpc, which owns the
// link, passes f down here; OnAbort(nil) stops the watch.
func (k *Link) OnAbort(f func(ae error) error) {
	if f == nil {
		if _, loaded := watched.LoadAndDelete(k); loaded {
			nWatched.Add(-1)
		}
		return
	}
	if _, loaded := watched.Swap(k, f); !loaded {
		nWatched.Add(1)
	}
}

// watched maps each link with an abort handler (OnAbort) to it; nWatched
// counts them, so that a process without RPC pays one atomic load per
// recovered abort.
var (
	watched  sync.Map
	nWatched atomic.Int64
)

// linkAbort asks each watched link's handler about ae: the error to
// report instead of ae (the error of the link that failed, or those
// of several joined), or nil.
func linkAbort(ae error) error {
	if nWatched.Load() == 0 {
		return nil
	}
	var errs []error
	watched.Range(func(_, f any) bool {
		if e := f.(func(error) error)(ae); e != nil {
			errs = append(errs, e)
		}
		return true
	})
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// Links are the RPC connections a C object depends on: none for local
// devices, one for an RPC device, those of its devices for a meta device.
type Links []*Link

// Err returns the first broken connection's error (probing each), or nil.
func (ls Links) Err() error {
	for _, k := range ls {
		if err := k.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Parent returns the Life a handle on these connections is a child of:
// the connection's when there is one; over several (a meta device over
// several servers), a chain of Lives that acquires each connection in
// turn, so that work on the handle is refused once any of them is closed
// or broken, and holds each (one goroutine at a time) while it runs.
func (ls Links) Parent() *Life {
	var p *Life
	for _, k := range ls {
		switch {
		case k == nil:
		case p == nil:
			p = k.life
		default:
			p = &Life{parent: p, probe: k.life.probe, own: k.life.own, closedErr: k.life.closedErr, link: k.life}
		}
	}
	return p
}

// Hold acquires each connection for a call that talks to its server (as
// a child handle's Acquire does): the first closed or broken connection's
// error, or ErrBusy while another goroutine's work uses one. Call release
// after the C call.
func (ls Links) Hold() (release func(), err error) {
	if len(ls) == 0 {
		return noRelease, nil
	}
	for i, k := range ls {
		if k == nil {
			continue
		}
		if err := k.life.Acquire(); err != nil {
			for _, o := range ls[:i] {
				if o != nil {
					o.life.Release()
				}
			}
			return nil, err
		}
	}
	return func() {
		for _, k := range ls {
			if k != nil {
				k.life.Release()
			}
		}
	}, nil
}

func noRelease() {}

// Broken reports whether a connection was broken (no probe).
func (ls Links) Broken() bool {
	for _, k := range ls {
		if k.Broken() {
			return true
		}
	}
	return false
}

// freeWait bounds FreeOver's wait for a link that other work uses.
var freeWait = 30 * time.Second

// owner admits the work on one RPC connection from one goroutine at a
// time: ggml's RPC client sends one server's exchanges over one socket
// without a lock, so two goroutines' exchanges would interleave (one
// reads the other's answer: a wrong result, no error). A goroutine may
// hold it several times over (a compute acquires its backend and its
// buffers, each a child of the link); another gets ErrBusy, or, freeing,
// waits.
type owner struct {
	endpoint string
	wrap     func(error) error // the link's
	mu       sync.Mutex
	cond     sync.Cond
	g        uint64 // the holding goroutine, while n > 0
	n        int
}

// take admits work of the calling goroutine: ErrBusy while another's
// holds the connection.
func (o *owner) take() error {
	g := goid()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n > 0 && o.g != g {
		return o.wrap(fmt.Errorf("%w: another goroutine's work uses this server's connection: ggml's RPC client sends a server's exchanges over one socket without a lock, so use one server's devices, buffers and backends from one goroutine at a time (asynchronous work holds it until Synchronize)", ErrBusy))
	}
	o.g = g
	o.n++
	return nil
}

// wait is take for a free: it waits up to d for other work to end, and
// reports whether it holds the connection.
func (o *owner) wait(d time.Duration) bool {
	g := goid()
	end := time.Now().Add(d)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n > 0 && o.g != g {
		t := time.AfterFunc(d, func() { o.mu.Lock(); o.cond.Broadcast(); o.mu.Unlock() })
		defer t.Stop()
		for o.n > 0 && o.g != g {
			if !time.Now().Before(end) {
				return false
			}
			o.cond.Wait()
		}
	}
	o.g = g
	o.n++
	return true
}

// give ends what take or wait admitted (nil: no owner).
func (o *owner) give() {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.n--
	if o.n < 0 {
		o.mu.Unlock()
		panic("go-ggml: RPC connection released more often than taken")
	}
	if o.n == 0 {
		o.g = 0
		o.cond.Broadcast()
	}
	o.mu.Unlock()
}

// goid returns the calling goroutine's id, read from the head of its
// stack trace ("goroutine 123 [running]:"). Only RPC connections ask for
// it, once per use, where an exchange over the network costs far more.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
