package life

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// problems collects what goroutines saw go wrong, for the test's goroutine
// to report (t.FailNow must not run elsewhere).
type problems struct {
	mu   sync.Mutex
	list []string
}

func (p *problems) addf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.list) < 20 {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

func (p *problems) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.list {
		t.Error(s)
	}
}

const (
	raceRounds  = 30
	raceWorkers = 8
)

// TestLifeConcurrentAcquireClose holds that while many goroutines Acquire
// and Release a Life, a Close (two, racing) makes every later Acquire fail
// with the closed error, and the free runs exactly once, after the last
// user released: never while a goroutine holds the Life.
func TestLifeConcurrentAcquireClose(t *testing.T) {
	for round := range raceRounds {
		errL := fmt.Errorf("%w: round %d", ErrClosed, round)
		var inUse, frees, acquires atomic.Int64
		var bad problems
		l := New(nil, errL, func() {
			if n := inUse.Load(); n != 0 {
				bad.addf("free ran with %d users holding the Life", n)
			}
			frees.Add(1)
		})
		var wg sync.WaitGroup
		for range raceWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					if err := l.Acquire(); err != nil {
						if !errors.Is(err, errL) {
							bad.addf("Acquire: %v, want the closed error", err)
						}
						return
					}
					inUse.Add(1)
					acquires.Add(1)
					if frees.Load() != 0 {
						bad.addf("acquired a freed Life")
					}
					runtime.Gosched()
					inUse.Add(-1)
					l.Release()
				}
			}()
		}
		for acquires.Load() < raceWorkers {
			runtime.Gosched()
		}
		var closers sync.WaitGroup
		for range 2 {
			closers.Add(1)
			go func() {
				defer closers.Done()
				if err := l.Close("the thing", false); err != nil {
					bad.addf("Close: %v", err)
				}
			}()
		}
		closers.Wait()
		require.ErrorIs(t, l.Acquire(), errL, "Acquire after Close returned")
		wg.Wait()
		bad.check(t)
		require.EqualValues(t, 1, frees.Load(), "round %d: frees", round)
		require.Zero(t, l.state.Load()&(lifeUsers|lifeBusy))
	}
}

// TestLifeConcurrentChildren holds that a parent used through several
// children is freed exactly once, after every child's user released and
// while no child is held, when the parent and the children are closed
// concurrently with their use; each child is freed exactly once too.
func TestLifeConcurrentChildren(t *testing.T) {
	const children = 3
	for round := range raceRounds {
		var inUse, pfrees atomic.Int64
		var bad problems
		p := New(nil, fmt.Errorf("%w: parent", ErrClosed), func() {
			if n := inUse.Load(); n != 0 {
				bad.addf("parent freed with %d child users", n)
			}
			pfrees.Add(1)
		})
		var cs []*Life
		cfrees := make([]atomic.Int64, children)
		cinUse := make([]atomic.Int64, children)
		for i := range children {
			cs = append(cs, New(p, fmt.Errorf("%w: child %d", ErrClosed, i), func() {
				if n := cinUse[i].Load(); n != 0 {
					bad.addf("child %d freed with %d users", i, n)
				}
				cfrees[i].Add(1)
			}))
		}
		var started atomic.Int64
		var wg sync.WaitGroup
		for w := range raceWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				i := w % children
				c := cs[i]
				for {
					err := c.Acquire()
					if err != nil {
						if !errors.Is(err, ErrClosed) {
							bad.addf("child %d Acquire: %v", i, err)
						}
						return
					}
					inUse.Add(1)
					cinUse[i].Add(1)
					started.Add(1)
					if pfrees.Load() != 0 || cfrees[i].Load() != 0 {
						bad.addf("child %d acquired after a free", i)
					}
					runtime.Gosched()
					cinUse[i].Add(-1)
					inUse.Add(-1)
					c.Release()
				}
			}()
		}
		for started.Load() < raceWorkers {
			runtime.Gosched()
		}
		var closers sync.WaitGroup
		for _, l := range append([]*Life{p}, cs...) {
			closers.Add(1)
			go func() {
				defer closers.Done()
				if err := l.Close("", false); err != nil {
					bad.addf("Close: %v", err)
				}
			}()
		}
		closers.Wait()
		wg.Wait()
		bad.check(t)
		require.EqualValues(t, 1, pfrees.Load(), "round %d: parent frees", round)
		for i := range cfrees {
			require.EqualValues(t, 1, cfrees[i].Load(), "round %d: child %d frees", round, i)
		}
	}
}

// contend starts n goroutines that call try at the same instant; each
// whose try succeeded keeps what it took until all have tried, then runs
// undo. It returns the errors, in goroutine order.
func contend(n int, try func(i int) error, undo func(i int)) []error {
	errs := make([]error, n)
	var start, tried, done sync.WaitGroup
	start.Add(1)
	tried.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			start.Wait()
			errs[i] = try(i)
			tried.Done()
			if errs[i] == nil {
				tried.Wait()
				undo(i)
			}
		}()
	}
	start.Done()
	done.Wait()
	return errs
}

// TestLifeConcurrentEnter holds that of goroutines that Enter one Life at
// once, exactly one wins and every other gets ErrBusy naming what.
func TestLifeConcurrentEnter(t *testing.T) {
	for _, kind := range []struct {
		name string
		make func() *Life
	}{
		{"plain", func() *Life { return New(nil, ErrClosed, nil) }},
		{"child", func() *Life { return New(New(nil, ErrClosed, nil), ErrClosed, nil) }},
		{"link", func() *Life { return NewLink(testEndpoint, nil, nil, nil).Life() }},
	} {
		t.Run(kind.name, func(t *testing.T) {
			for range raceRounds {
				l := kind.make()
				errs := contend(raceWorkers, func(int) error { return l.Enter(testWhat) }, func(int) { l.Leave() })
				wins := 0
				for _, err := range errs {
					if err == nil {
						wins++
						continue
					}
					require.ErrorIs(t, err, ErrBusy)
				}
				require.Equal(t, 1, wins, "winners of Enter")
				require.Zero(t, l.state.Load(), "all left")
				if p := l.Parent(); p != nil {
					require.Zero(t, p.state.Load(), "parent released")
				}
			}
		})
	}
}

// TestLifeConcurrentEnterIdle holds that on a guarded Life, EnterIdle and
// Acquire racing never both succeed: exactly one does, the other gets
// ErrBusy.
func TestLifeConcurrentEnterIdle(t *testing.T) {
	for range raceRounds * 3 {
		l := NewGuard(ErrClosed)
		errs := contend(2, func(i int) error {
			if i == 0 {
				return l.EnterIdle("the graph")
			}
			return l.Acquire()
		}, func(i int) {
			if i == 0 {
				l.LeaveIdle(false)
			} else {
				l.Release()
			}
		})
		require.True(t, (errs[0] == nil) != (errs[1] == nil), "exactly one of EnterIdle (%v) and Acquire (%v) succeeds", errs[0], errs[1])
		for _, err := range errs {
			if err != nil {
				require.ErrorIs(t, err, ErrBusy)
			}
		}
		require.Zero(t, l.state.Load())
	}
}

// TestLifeConcurrentCloseEnter holds that Close and Enter racing resolve
// one way: Enter wins and Close is ErrBusy (nothing freed), or Close wins
// and Enter gets the closed error; the free runs once in the end.
func TestLifeConcurrentCloseEnter(t *testing.T) {
	for range raceRounds * 3 {
		var frees atomic.Int32
		errL := fmt.Errorf("%w: closed", ErrClosed)
		l := New(nil, errL, func() { frees.Add(1) })
		errs := contend(2, func(i int) error {
			if i == 0 {
				return l.Enter(testWhat)
			}
			return l.Close(testWhat, false)
		}, func(i int) {
			if i == 0 {
				l.Leave()
			}
		})
		if errs[0] == nil {
			require.ErrorIs(t, errs[1], ErrBusy)
			require.Zero(t, frees.Load())
			require.NoError(t, l.Close(testWhat, false))
		} else {
			require.ErrorIs(t, errs[0], errL)
			require.NoError(t, errs[1])
		}
		require.EqualValues(t, 1, frees.Load())
	}
}

// TestLifeConcurrentLeaveIdleClose holds that LeaveIdle(true) on a Life
// that is not guarded, with users acquiring meanwhile, frees it exactly
// once and never while a user holds it.
func TestLifeConcurrentLeaveIdleClose(t *testing.T) {
	for round := range raceRounds {
		var inUse, frees, acquires atomic.Int64
		var bad problems
		l := New(nil, ErrClosed, func() {
			if n := inUse.Load(); n != 0 {
				bad.addf("freed with %d users", n)
			}
			frees.Add(1)
		})
		require.NoError(t, l.EnterIdle("the thing"))
		var wg sync.WaitGroup
		for range raceWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for l.Acquire() == nil {
					inUse.Add(1)
					acquires.Add(1)
					runtime.Gosched()
					inUse.Add(-1)
					l.Release()
				}
			}()
		}
		for acquires.Load() < raceWorkers {
			runtime.Gosched()
		}
		l.LeaveIdle(true)
		wg.Wait()
		bad.check(t)
		require.EqualValues(t, 1, frees.Load(), "round %d", round)
	}
}

// TestHoldsConcurrent holds that goroutines each adding the same Lives
// (some twice) to their own Holds, while the Lives are closed, leave each
// Life freed exactly once, after every set released it.
func TestHoldsConcurrent(t *testing.T) {
	const lives = 6
	for round := range raceRounds {
		var bad problems
		var inUse [lives]atomic.Int64
		var frees [lives]atomic.Int64
		var ls []*Life
		for i := range lives {
			ls = append(ls, New(nil, ErrClosed, func() {
				if n := inUse[i].Load(); n != 0 {
					bad.addf("life %d freed with %d sets holding it", i, n)
				}
				frees[i].Add(1)
			}))
		}
		var wg sync.WaitGroup
		var rounds atomic.Int64
		for w := range raceWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var h Holds
					var held []int
					for k := range lives + 2 {
						i := (w + k) % lives
						if h.Add(ls[i]) == nil {
							held = append(held, i)
						}
					}
					seen := map[int]bool{}
					for _, i := range held {
						if !seen[i] {
							seen[i] = true
							inUse[i].Add(1)
						}
					}
					for i := range seen {
						inUse[i].Add(-1)
					}
					h.Release()
					rounds.Add(1)
					if len(held) == 0 {
						return
					}
				}
			}()
		}
		for rounds.Load() < raceWorkers {
			runtime.Gosched()
		}
		for _, l := range ls {
			require.NoError(t, l.Close("", false))
		}
		wg.Wait()
		bad.check(t)
		for i := range frees {
			assert.EqualValues(t, 1, frees[i].Load(), "round %d: life %d", round, i)
		}
	}
}

// TestLinkConcurrentBreak holds that while goroutines Hold a link (each
// admitted alone, or ErrBusy), concurrent Breaks leave it broken with one
// cause, every Hold that starts after a Break returned fails with the
// link's *LinkError (ErrBroken and that cause), OnBreak runs exactly once,
// and no use of the link is left.
func TestLinkConcurrentBreak(t *testing.T) {
	for round := range raceRounds {
		tl := newTestLink(testEndpoint)
		child := New(tl.Life(), ErrClosed, nil)
		var bad problems
		var broken atomic.Bool
		var holds, admitted atomic.Int64
		var wg sync.WaitGroup
		for w := range raceWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				after := 0
				for after < 5 {
					was := broken.Load()
					var err error
					if w%2 == 0 {
						var release func()
						if release, err = (Links{tl.Link}).Hold(); err == nil {
							if n := admitted.Add(1); n != 1 {
								bad.addf("%d goroutines admitted at once", n)
							}
							runtime.Gosched()
							admitted.Add(-1)
							release()
						}
					} else if err = child.Acquire(); err == nil {
						child.Release()
					}
					holds.Add(1)
					if !was {
						if err != nil && !errors.Is(err, ErrBusy) && !errors.Is(err, ErrBroken) {
							bad.addf("Hold before Break: %v", err)
						}
						continue
					}
					after++
					var le *LinkError
					switch {
					case err == nil:
						bad.addf("Hold succeeded after Break returned")
					case !errors.As(err, &le) || le.Endpoint != testEndpoint:
						bad.addf("Hold after Break: %v is no LinkError of the endpoint", err)
					case !errors.Is(err, ErrBroken):
						bad.addf("Hold after Break: %v is not ErrBroken", err)
					}
				}
			}()
		}
		for holds.Load() < raceWorkers {
			runtime.Gosched()
		}
		causes := []error{errors.New("cause 0"), errors.New("cause 1"), errors.New("cause 2")}
		var breakers sync.WaitGroup
		for _, c := range causes {
			breakers.Add(1)
			go func() {
				defer breakers.Done()
				tl.Break(c)
			}()
		}
		breakers.Wait()
		broken.Store(true)
		wg.Wait()
		bad.check(t)
		require.EqualValues(t, 1, tl.breaks.Load(), "round %d: OnBreak runs", round)
		require.True(t, tl.Broken())
		err := tl.Err()
		n := 0
		for _, c := range causes {
			if errors.Is(err, c) {
				n++
			}
		}
		require.Equal(t, 1, n, "one cause sticks: %v", err)
		_, herr := Links{tl.Link}.Hold()
		require.Equal(t, err.Error(), herr.Error(), "Hold reports the same cause as Err")
		require.Zero(t, tl.Life().state.Load()&(lifeUsers|lifeBusy), "no use of the link is left")
		require.Zero(t, child.state.Load()&lifeUsers)
		require.Zero(t, tl.Life().own.n)
	}
}
