package life

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testEndpoint = "10.0.0.1:50052"

// onOther runs f on a goroutine of its own (another owner of a link's
// connection) and waits for it.
func onOther(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// holdOnOther reports the error of a Links.Hold of ls from another
// goroutine, releasing at once what it took.
func holdOnOther(ls Links) (err error) {
	onOther(func() {
		var release func()
		release, err = ls.Hold()
		if err == nil {
			release()
		}
	})
	return err
}

// testLink is a link with counters on its probe and its OnBreak.
type testLink struct {
	*Link
	probes   atomic.Int32
	breaks   atomic.Int32
	probeErr atomic.Pointer[error]
	rel      []func() // releases of Holds taken by TestLinkOwner
}

func newTestLink(endpoint string) *testLink {
	tl := &testLink{}
	tl.Link = NewLink(endpoint, func() error {
		tl.probes.Add(1)
		if p := tl.probeErr.Load(); p != nil {
			return *p
		}
		return nil
	}, nil, nil)
	tl.OnBreak(func() { tl.breaks.Add(1) })
	return tl
}

// TestLinkNil holds that a nil *Link is a local device's: usable, never
// broken, and Break and Close do nothing.
func TestLinkNil(t *testing.T) {
	var k *Link
	assert.Nil(t, k.Life())
	assert.NoError(t, k.Err())
	assert.False(t, k.Broken())
	k.Break(errors.New("x"))
	k.Close()
	ls := Links{nil, nil}
	assert.Nil(t, ls.Parent())
	assert.NoError(t, ls.Err())
	assert.False(t, ls.Broken())
	release, err := ls.Hold()
	require.NoError(t, err)
	release()
}

// TestLinkStates holds, for each way a link ends (or not), what Err,
// Broken, dead, Hold and a child Life's Acquire report, and how often
// OnBreak ran.
func TestLinkStates(t *testing.T) {
	cause := errors.New("read: connection reset by peer")
	cause2 := errors.New("a later fault")
	ownLinkErr := &LinkError{Endpoint: testEndpoint, Err: fmt.Errorf("%w: garbage answer", ErrBroken)}
	otherLinkErr := &LinkError{Endpoint: "elsewhere:1", Err: fmt.Errorf("%w: garbage answer", ErrBroken)}
	brokenEOF := fmt.Errorf("%w: EOF", ErrBroken)
	probeErr := errors.New("probe: socket closed by peer")
	cases := []struct {
		name     string
		setup    func(tl *testLink)
		wantIs   []error // nil for a usable link
		wantNot  []error
		wantText string
		same     error // Err is exactly this error
		broken   bool
		breaks   int32
	}{
		{name: "open", setup: func(*testLink) {}},
		{
			name:     "closed",
			setup:    func(tl *testLink) { tl.Close() },
			wantIs:   []error{ErrClosed},
			wantNot:  []error{ErrBroken},
			wantText: "ggml rpc: server " + testEndpoint + ": " + ErrClosed.Error() + ": the connection was closed (Client.Close)",
		},
		{
			name:     "broken",
			setup:    func(tl *testLink) { tl.Break(cause) },
			wantIs:   []error{ErrBroken, cause},
			wantNot:  []error{ErrClosed},
			wantText: "ggml rpc: server " + testEndpoint + ": connection broken: " + cause.Error(),
			broken:   true, breaks: 1,
		},
		{
			name:    "broken twice: the first cause sticks",
			setup:   func(tl *testLink) { tl.Break(cause); tl.Break(cause2) },
			wantIs:  []error{ErrBroken, cause},
			wantNot: []error{cause2},
			broken:  true, breaks: 1,
		},
		{
			name:   "broken by its own LinkError",
			setup:  func(tl *testLink) { tl.Break(ownLinkErr) },
			wantIs: []error{ErrBroken, ownLinkErr},
			same:   ownLinkErr,
			broken: true, breaks: 1,
		},
		{
			name:     "broken by another endpoint's LinkError",
			setup:    func(tl *testLink) { tl.Break(otherLinkErr) },
			wantIs:   []error{ErrBroken, otherLinkErr},
			wantText: "ggml rpc: server " + testEndpoint + ": " + otherLinkErr.Error(),
			broken:   true, breaks: 1,
		},
		{
			name:     "broken by an ErrBroken",
			setup:    func(tl *testLink) { tl.Break(brokenEOF) },
			wantIs:   []error{ErrBroken, brokenEOF},
			wantText: "ggml rpc: server " + testEndpoint + ": connection broken: EOF",
			broken:   true, breaks: 1,
		},
		{
			name:    "closed, then broken: the close is what it reports",
			setup:   func(tl *testLink) { tl.Close(); tl.Break(cause) },
			wantIs:  []error{ErrClosed},
			wantNot: []error{ErrBroken, cause},
			broken:  true, breaks: 1,
		},
		{
			name:    "broken, then closed",
			setup:   func(tl *testLink) { tl.Break(cause); tl.Close() },
			wantIs:  []error{ErrBroken, cause},
			wantNot: []error{ErrClosed},
			broken:  true, breaks: 1,
		},
		{
			name: "probe failed",
			setup: func(tl *testLink) {
				tl.probeErr.Store(&probeErr)
				_ = tl.Err() // probes, and breaks the link
			},
			wantIs: []error{ErrBroken, probeErr},
			broken: true, breaks: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl := newTestLink(testEndpoint)
			var frees atomic.Int32
			child := New(tl.Life(), fmt.Errorf("%w: the buffer is closed", ErrClosed), func() { frees.Add(1) })
			c.setup(tl)
			checks := map[string]error{"Err": tl.Err(), "Life.Err": tl.Life().Err(), "child Err": child.Err(), "child Acquire": child.Acquire(), "child Enter": child.Enter("the backend")}
			release, holdErr := Links{tl.Link}.Hold()
			checks["Hold"] = holdErr
			if c.wantIs == nil {
				for what, err := range checks {
					require.NoError(t, err, what)
				}
				release()
				child.Leave()
				child.Release()
			} else {
				for what, err := range checks {
					var le *LinkError
					require.ErrorAs(t, err, &le, what)
					assert.Equal(t, testEndpoint, le.Endpoint, what)
					for _, w := range c.wantIs {
						require.ErrorIs(t, err, w, what)
					}
					for _, w := range c.wantNot {
						require.NotErrorIs(t, err, w, what)
					}
					if c.wantText != "" {
						assert.Equal(t, c.wantText, err.Error(), what)
					}
					if c.same != nil {
						require.ErrorAs(t, err, &le)
						assert.Same(t, c.same, le, what)
					}
				}
			}
			assert.Equal(t, c.broken, tl.Broken(), "Broken")
			assert.Equal(t, c.broken, tl.dead(), "dead")
			assert.Equal(t, c.broken, Links{tl.Link}.Broken(), "Links.Broken")
			assert.Equal(t, c.wantIs != nil, Links{nil, tl.Link}.Err() != nil, "Links.Err")
			assert.Equal(t, c.breaks, tl.breaks.Load(), "OnBreak runs")
			// the child's free runs at its Close whatever the link's state
			// (FreeOver is what skips the C calls)
			require.NoError(t, child.Close("", true))
			assert.EqualValues(t, 1, frees.Load())
			assert.Zero(t, tl.Life().state.Load()&lifeUsers, "no use of the link is left")
		})
	}
}

// TestLinkProbe holds that the probe runs before each use of the link or
// of a child (Acquire, Enter, Err), that a failing probe breaks the link
// once, and that a closed link is not probed any more.
func TestLinkProbe(t *testing.T) {
	tl := newTestLink(testEndpoint)
	child := New(tl.Life(), ErrClosed, nil)
	uses := []func() error{
		tl.Err,
		tl.Life().Acquire,
		child.Acquire,
		func() error { return child.Enter("the backend") },
		func() error { return tl.Life().Enter("the link") },
	}
	for i, use := range uses {
		before := tl.probes.Load()
		require.NoError(t, use(), "use %d", i)
		assert.Equal(t, before+1, tl.probes.Load(), "use %d probes once", i)
	}
	tl.Life().Leave()
	child.Leave()
	child.Release()
	tl.Life().Release()
	assert.Zero(t, tl.Life().state.Load())

	perr := errors.New("dead")
	tl.probeErr.Store(&perr)
	err := child.Acquire()
	require.ErrorIs(t, err, ErrBroken)
	require.ErrorIs(t, err, perr)
	assert.True(t, tl.Broken())
	assert.EqualValues(t, 1, tl.breaks.Load())
	probes := tl.probes.Load()
	for _, use := range uses {
		require.ErrorIs(t, use(), perr)
	}
	assert.Equal(t, probes, tl.probes.Load(), "a closed link is not probed")
	assert.EqualValues(t, 1, tl.breaks.Load())
}

// TestLinkOwner holds which uses of a link's connection by a second
// goroutine are admitted while the first goroutine holds it in each way:
// work (Acquire, Enter, a child's Acquire, Hold) takes the connection,
// re-entrantly on its own goroutine, ErrBusy on another; keep takes none.
func TestLinkOwner(t *testing.T) {
	type hold struct {
		name    string
		take    func(tl *testLink, child *Life) error
		release func(tl *testLink, child *Life)
	}
	acquire := hold{"Acquire", func(tl *testLink, _ *Life) error { return tl.Life().Acquire() }, func(tl *testLink, _ *Life) { tl.Life().Release() }}
	enter := hold{"Enter", func(tl *testLink, _ *Life) error { return tl.Life().Enter("the link") }, func(tl *testLink, _ *Life) { tl.Life().Leave() }}
	childAcq := hold{"child Acquire", func(_ *testLink, c *Life) error { return c.Acquire() }, func(_ *testLink, c *Life) { c.Release() }}
	childEnter := hold{"child Enter", func(_ *testLink, c *Life) error { return c.Enter("the backend") }, func(_ *testLink, c *Life) { c.Leave() }}
	keep := hold{"keep", func(tl *testLink, _ *Life) error { return tl.Life().Keep() }, func(tl *testLink, _ *Life) { tl.Life().Unkeep() }}
	childKeep := hold{"child keep", func(_ *testLink, c *Life) error { return c.Keep() }, func(_ *testLink, c *Life) { c.Unkeep() }}
	hld := hold{"Hold", func(tl *testLink, _ *Life) error {
		r, err := Links{tl.Link}.Hold()
		if err == nil {
			tl.rel = append(tl.rel, r)
		}
		return err
	}, func(tl *testLink, _ *Life) {
		tl.rel[len(tl.rel)-1]()
		tl.rel = tl.rel[:len(tl.rel)-1]
	}}

	cases := []struct {
		first  []hold // taken on the test's goroutine, in order
		second hold   // tried on another goroutine while first is held
		busy   bool
	}{
		{[]hold{acquire}, acquire, true},
		{[]hold{acquire}, hld, true},
		{[]hold{acquire}, childAcq, true},
		{[]hold{acquire}, childEnter, true},
		{[]hold{acquire}, keep, false},
		{[]hold{acquire}, childKeep, false},
		{[]hold{acquire, acquire}, hld, true},
		{[]hold{acquire, childAcq, hld}, acquire, true},
		{[]hold{enter}, acquire, true},
		{[]hold{enter}, keep, false},
		{[]hold{childAcq}, hld, true},
		{[]hold{childEnter}, childAcq, true},
		{[]hold{hld}, childEnter, true},
		{[]hold{keep}, acquire, false},
		{[]hold{keep}, enter, false},
		{[]hold{childKeep}, hld, false},
		{[]hold{keep, childKeep}, childEnter, false},
	}
	for _, c := range cases {
		var names []string
		for _, h := range c.first {
			names = append(names, h.name)
		}
		t.Run(fmt.Sprint(names, " then ", c.second.name), func(t *testing.T) {
			tl := newTestLink(testEndpoint)
			child := New(tl.Life(), ErrClosed, nil)
			child2 := New(tl.Life(), ErrClosed, nil)
			for _, h := range c.first {
				require.NoError(t, h.take(tl, child), "first %s", h.name)
			}
			var err error
			other := &testLink{Link: tl.Link}
			onOther(func() {
				if err = c.second.take(other, child2); err == nil {
					c.second.release(other, child2)
				}
			})
			if c.busy {
				require.ErrorIs(t, err, ErrBusy)
				var le *LinkError
				require.ErrorAs(t, err, &le)
				assert.Equal(t, testEndpoint, le.Endpoint)
				assert.Contains(t, err.Error(), "another goroutine's work uses this server's connection")
			} else {
				require.NoError(t, err)
			}
			for i := len(c.first) - 1; i >= 0; i-- {
				c.first[i].release(tl, child)
			}
			require.NoError(t, holdOnOther(Links{tl.Link}), "free for another goroutine once released")
			assert.Zero(t, tl.Life().state.Load())
			assert.Zero(t, child.state.Load())
			assert.Zero(t, child2.state.Load())
			assert.Zero(t, tl.Life().own.n)
		})
	}
}

// TestLinkOwnerRefusals holds that a use refused after the connection was
// taken (a closed or busy child, a busy Enter) gives the connection back.
func TestLinkOwnerRefusals(t *testing.T) {
	cases := []struct {
		name string
		try  func(tl *testLink) error
		want error
	}{
		{"closed child", func(tl *testLink) error {
			c := New(tl.Life(), ErrClosed, nil)
			require.NoError(t, c.Close("", false))
			return c.Acquire()
		}, ErrClosed},
		{"closed child Enter", func(tl *testLink) error {
			c := New(tl.Life(), ErrClosed, nil)
			require.NoError(t, c.Close("", false))
			return c.Enter("the backend")
		}, ErrClosed},
		{"busy guard child", func(tl *testLink) error {
			c := NewPlacement(tl.Life(), ErrClosed)
			require.NoError(t, c.EnterIdle("the tensors"))
			return c.Acquire()
		}, ErrBusy},
		{"busy Enter of the link", func(tl *testLink) error {
			require.NoError(t, tl.Life().Enter("the link"))
			err := tl.Life().Enter("the link")
			tl.Life().Leave()
			return err
		}, ErrBusy},
		{"busy Enter of a child", func(tl *testLink) error {
			c := New(tl.Life(), ErrClosed, nil)
			require.NoError(t, c.Enter("the backend"))
			err := c.Enter("the backend")
			c.Leave()
			return err
		}, ErrBusy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl := newTestLink(testEndpoint)
			require.ErrorIs(t, c.try(tl), c.want)
			assert.Zero(t, tl.Life().own.n, "the connection was given back")
			assert.Zero(t, tl.Life().state.Load()&lifeUsers)
			require.NoError(t, holdOnOther(Links{tl.Link}))
		})
	}
}

// TestLinkOwnerGiveTooOften holds that giving a connection back more often
// than it was taken panics.
func TestLinkOwnerGiveTooOften(t *testing.T) {
	tl := newTestLink(testEndpoint)
	require.PanicsWithValue(t, "go-ggml: RPC connection released more often than taken", tl.Life().own.give)
	var none *owner
	none.give() // no owner: nothing to give
}

// TestLinksHold holds that Links.Hold acquires each connection or none:
// a refusal (closed, broken, another goroutine's work) returns that link's
// error and releases the ones it took before.
func TestLinksHold(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(a, b *testLink) (undo func())
		wantIs []error
		from   int // index of the link whose error it is
	}{
		{name: "both open", setup: func(a, b *testLink) func() { return func() {} }},
		{name: "first closed", setup: func(a, b *testLink) func() { a.Close(); return func() {} }, wantIs: []error{ErrClosed}, from: 0},
		{name: "second closed", setup: func(a, b *testLink) func() { b.Close(); return func() {} }, wantIs: []error{ErrClosed}, from: 1},
		{name: "second broken", setup: func(a, b *testLink) func() { b.Break(errors.New("eof")); return func() {} }, wantIs: []error{ErrBroken}, from: 1},
		{name: "second in use by another goroutine", setup: func(a, b *testLink) func() {
			held := make(chan struct{})
			done := make(chan struct{})
			finished := make(chan struct{})
			go func() {
				defer close(finished)
				r, err := Links{b.Link}.Hold()
				if err != nil {
					panic(err)
				}
				close(held)
				<-done
				r()
			}()
			<-held
			return func() { close(done); <-finished }
		}, wantIs: []error{ErrBusy}, from: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := newTestLink("a:1"), newTestLink("b:2")
			undo := c.setup(a, b)
			ls := Links{a.Link, nil, b.Link}
			release, err := ls.Hold()
			if c.wantIs == nil {
				require.NoError(t, err)
				assert.EqualValues(t, 1, a.Life().state.Load()&lifeUsers)
				assert.EqualValues(t, 1, b.Life().state.Load()&lifeUsers)
				require.ErrorIs(t, holdOnOther(Links{b.Link}), ErrBusy)
				release()
			} else {
				require.Nil(t, release)
				for _, w := range c.wantIs {
					require.ErrorIs(t, err, w)
				}
				var le *LinkError
				require.ErrorAs(t, err, &le)
				assert.Equal(t, []string{"a:1", "b:2"}[c.from], le.Endpoint)
			}
			undo()
			for _, k := range []*testLink{a, b} {
				assert.Zero(t, k.Life().state.Load()&lifeUsers, "%s released", k.Endpoint)
				assert.Zero(t, k.Life().own.n, "%s given back", k.Endpoint)
			}
		})
	}
	release, err := Links(nil).Hold()
	require.NoError(t, err)
	release()
}

// TestLinksParent holds that the parent of a handle on several links is a
// chain that takes each connection for its work and refuses it once any
// link is closed, with that link's error; on one link it is the link's
// Life, on none nil.
func TestLinksParent(t *testing.T) {
	a, b := newTestLink("a:1"), newTestLink("b:2")
	assert.Nil(t, Links{}.Parent())
	assert.Same(t, a.Life(), Links{nil, a.Link}.Parent())
	p := Links{a.Link, b.Link}.Parent()
	require.NotSame(t, a.Life(), p)
	require.NotSame(t, b.Life(), p)
	child := New(p, ErrClosed, nil)
	require.NoError(t, child.Acquire())
	assert.EqualValues(t, 1, a.probes.Load())
	assert.EqualValues(t, 1, b.probes.Load())
	require.ErrorIs(t, holdOnOther(Links{a.Link}), ErrBusy)
	require.ErrorIs(t, holdOnOther(Links{b.Link}), ErrBusy)
	child.Release()
	require.NoError(t, holdOnOther(Links{a.Link, b.Link}))

	b.Close()
	err := child.Acquire()
	var le *LinkError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "b:2", le.Endpoint)
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, holdOnOther(Links{a.Link}), "a's connection was not taken")

	a2, b2 := newTestLink("a:1"), newTestLink("b:2")
	child2 := New(Links{a2.Link, b2.Link}.Parent(), ErrClosed, nil)
	a2.Break(errors.New("eof"))
	err = child2.Acquire()
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "a:1", le.Endpoint)
	require.ErrorIs(t, err, ErrBroken)
	require.NoError(t, holdOnOther(Links{b2.Link}), "b's connection was given back")
	assert.Zero(t, b2.Life().own.n)
}

// TestLinksParentErr holds that Err of a handle on several links reports
// why its work is refused: once a link of the chain other than the first
// is closed or broken, Acquire fails with that link's error, and Err (the
// doc of Life.Acquire: it "fails with Err's error") must report it too.
func TestLinksParentErr(t *testing.T) {
	for _, end := range []struct {
		name string
		do   func(k *testLink)
		want error
	}{
		{"closed", func(k *testLink) { k.Close() }, ErrClosed},
		{"broken", func(k *testLink) { k.Break(errors.New("eof")) }, ErrBroken},
	} {
		t.Run(end.name, func(t *testing.T) {
			a, b := newTestLink("a:1"), newTestLink("b:2")
			child := New(Links{a.Link, b.Link}.Parent(), ErrClosed, nil)
			end.do(b)
			acqErr := child.Acquire()
			require.ErrorIs(t, acqErr, end.want)
			require.ErrorIs(t, child.Err(), end.want)
		})
	}
}

// TestRegisterLink holds that LinkOf finds the link a device was
// registered with (the latest registration), nil for others and for nil.
func TestRegisterLink(t *testing.T) {
	a, b := newTestLink("a:1"), newTestLink("b:2")
	dev1, dev2, dev3 := unsafe.Pointer(new(int64)), unsafe.Pointer(new(int64)), unsafe.Pointer(new(int64))
	n := nLinks.Load()
	RegisterLink(dev1, a.Link)
	RegisterLink(dev2, a.Link)
	assert.Equal(t, n+2, nLinks.Load())
	assert.Same(t, a.Link, LinkOf(dev1))
	assert.Same(t, a.Link, LinkOf(dev2))
	assert.Nil(t, LinkOf(dev3))
	assert.Nil(t, LinkOf(nil))
	RegisterLink(dev2, b.Link)
	assert.Equal(t, n+2, nLinks.Load(), "registering a device again counts it once")
	assert.Same(t, b.Link, LinkOf(dev2))
}

// TestFreeOver holds when FreeOver runs a free over links (none, open or
// closed ones: yes; a broken one: no, the C objects are leaked), that it
// holds every connection while the free runs and gives them back after,
// that an assert in the free breaks the links (or the one whose abort
// handler broke it), and that a connection another goroutine keeps past freeWait
// makes it skip the free.
func TestFreeOver(t *testing.T) {
	aerr := errors.New("GGML_ASSERT(socket) failed")
	cases := []struct {
		name       string
		links      int
		setup      func(ks []*testLink) (undo func())
		free       func(ks []*testLink)
		wantRun    bool
		wantBroken []bool
	}{
		{name: "no links", wantRun: true},
		{name: "open", links: 2, wantRun: true, wantBroken: []bool{false, false}},
		{name: "closed", links: 1, setup: func(ks []*testLink) func() { ks[0].Close(); return nil }, wantRun: true, wantBroken: []bool{false}},
		{name: "one broken", links: 2, setup: func(ks []*testLink) func() { ks[1].Break(errors.New("eof")); return nil }, wantBroken: []bool{false, true}},
		{name: "probe finds it dead", links: 2, setup: func(ks []*testLink) func() {
			e := errors.New("dead")
			ks[0].probeErr.Store(&e)
			return nil
		}, wantBroken: []bool{true, false}},
		{name: "assert breaks every link", links: 2, free: func([]*testLink) { panic(AssertPanic{Err: aerr}) }, wantRun: true, wantBroken: []bool{true, true}},
		{name: "assert, a link's abort handler breaks it", links: 2, free: func([]*testLink) { panic(AssertPanic{Err: aerr}) },
			setup: func(ks []*testLink) func() {
				ks[1].OnAbort(func(ae error) error { ks[1].Break(ae); return nil })
				return func() { ks[1].OnAbort(nil) }
			}, wantRun: true, wantBroken: []bool{false, true}},
		{name: "in use past freeWait", links: 2, setup: func(ks []*testLink) func() {
			return holdElsewhere(ks[1], nil)
		}, wantBroken: []bool{false, false}},
		{name: "in use, released within freeWait", links: 2, setup: func(ks []*testLink) func() {
			return holdElsewhere(ks[1], time.After(5*time.Millisecond))
		}, wantRun: true, wantBroken: []bool{false, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func(w time.Duration) { freeWait = w }(freeWait)
			freeWait = 200 * time.Millisecond
			if c.name == "in use past freeWait" {
				freeWait = 20 * time.Millisecond
			}
			var ks []*testLink
			var ls []*Link
			for i := range c.links {
				k := newTestLink(fmt.Sprint("s", i, ":1"))
				ks = append(ks, k)
				ls = append(ls, k.Link)
			}
			var undo func()
			if c.setup != nil {
				undo = c.setup(ks)
			}
			ran := 0
			FreeOver(ls, func() {
				ran++
				for _, k := range ks {
					assert.Equal(t, 1, k.Life().own.n, "%s is held during the free", k.Endpoint)
				}
				for _, k := range ks {
					var err error
					onOther(func() {
						if err = k.Life().own.take(); err == nil {
							k.Life().own.give()
						}
					})
					require.ErrorIs(t, err, ErrBusy, "another goroutine waits for the free over %s", k.Endpoint)
				}
				if c.free != nil {
					c.free(ks)
				}
			})
			if undo != nil {
				undo()
			}
			assert.Equal(t, c.wantRun, ran == 1, "free ran")
			assert.LessOrEqual(t, ran, 1)
			for i, k := range ks {
				assert.Equal(t, c.wantBroken[i], k.Broken(), "%s broken", k.Endpoint)
				assert.Zero(t, k.Life().own.n, "%s given back", k.Endpoint)
				if c.free != nil && c.wantBroken[i] {
					require.ErrorIs(t, k.Err(), aerr)
					require.ErrorIs(t, k.Err(), ErrBroken)
				}
			}
		})
	}
}

// holdElsewhere holds k's connection on another goroutine until until
// fires (nil: until the returned undo runs), and returns undo, which waits
// for that goroutine to end.
func holdElsewhere(k *testLink, until <-chan time.Time) (undo func()) {
	held := make(chan struct{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		r, err := Links{k.Link}.Hold()
		if err != nil {
			panic(err)
		}
		close(held)
		select {
		case <-until:
		case <-stop:
		}
		r()
	}()
	<-held
	return func() { close(stop); <-done }
}

// TestFreeOverPanic holds that a panic in the free that is no assert
// propagates, with every connection given back.
func TestFreeOverPanic(t *testing.T) {
	k := newTestLink(testEndpoint)
	require.PanicsWithValue(t, "boom", func() { FreeOver([]*Link{k.Link}, func() { panic("boom") }) })
	assert.Zero(t, k.Life().own.n)
	assert.False(t, k.Broken())
}

// TestLinkAbortHandlers: Catch asks each watched link's handler
// (Link.OnAbort) about a recovered abort and reports what they return
// instead of it (one error, or several joined); a handler that says nil,
// or a link no longer watched, leaves the abort as it was.
func TestLinkAbortHandlers(t *testing.T) {
	aerr := errors.New("GGML_ASSERT(ggml-rpc) failed")
	catch := func() (err error) {
		defer Catch(&err)
		panic(AssertPanic{Err: aerr})
	}
	mine := func(k *testLink) func(error) error {
		return func(ae error) error {
			return &LinkError{Endpoint: k.Endpoint, Err: fmt.Errorf("%w: %w", ErrBroken, ae)}
		}
	}
	none := func(error) error { return nil }
	for _, c := range []struct {
		name     string
		handlers func(a, b *testLink) []func(error) error // for a and b; nil: not watched
		want     []string                                 // endpoints in the error, none: aerr itself
	}{
		{"none watched", func(a, b *testLink) []func(error) error { return []func(error) error{nil, nil} }, nil},
		{"both say nil", func(a, b *testLink) []func(error) error { return []func(error) error{none, none} }, nil},
		{"one claims it", func(a, b *testLink) []func(error) error { return []func(error) error{none, mine(b)} }, []string{"b:1"}},
		{"both claim it", func(a, b *testLink) []func(error) error { return []func(error) error{mine(a), mine(b)} }, []string{"a:1", "b:1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := nWatched.Load()
			a, b := newTestLink("a:1"), newTestLink("b:1")
			for i, f := range c.handlers(a, b) {
				if f != nil {
					[]*testLink{a, b}[i].OnAbort(f)
				}
			}
			err := catch()
			require.ErrorIs(t, err, aerr)
			var le *LinkError
			if len(c.want) == 0 {
				assert.Same(t, aerr, err)
			} else {
				require.ErrorAs(t, err, &le)
				for _, ep := range c.want {
					assert.Contains(t, err.Error(), "server "+ep+":")
				}
			}
			a.OnAbort(nil)
			b.OnAbort(nil)
			b.OnAbort(nil) // idempotent
			assert.Equal(t, n, nWatched.Load(), "every handler removed")
			assert.Same(t, aerr, catch(), "no handler after OnAbort(nil)")
		})
	}
}
