package life

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdsEnv is a set of Lives whose frees record, in order, when they ran;
// each is closed before the set releases it, so each free runs at its
// Release, and the log shows Holds.Release's order.
type holdsEnv struct {
	log   []string
	lives []*Life
}

func newHoldsEnv(n int) *holdsEnv {
	e := &holdsEnv{}
	for i := range n {
		name := fmt.Sprint("l", i)
		e.lives = append(e.lives, New(nil, fmt.Errorf("%w: %s", ErrClosed, name), func() { e.log = append(e.log, name) }))
	}
	return e
}

func users(l *Life) uint64 { return l.state.Load() & lifeUsers }

// TestHoldsAdd holds, for each way of filling a set, how many users each
// Life counts while held, the error of Add, and that Release drops every
// hold exactly once, running frees in reverse order of Add and then the
// deferred functions in reverse order of Defer.
func TestHoldsAdd(t *testing.T) {
	cases := []struct {
		name      string
		lives     int
		adds      []int // indexes into the env's Lives, -1 for nil
		defers    int
		wantUsers []uint64 // per Life, while held
		wantLog   []string // frees and defers, at Release
	}{
		{name: "empty"},
		{name: "nil", adds: []int{-1, -1}},
		{name: "one", lives: 1, adds: []int{0}, wantUsers: []uint64{1}, wantLog: []string{"l0"}},
		{name: "same twice", lives: 1, adds: []int{0, 0}, wantUsers: []uint64{1}, wantLog: []string{"l0"}},
		{name: "two, reversed", lives: 2, adds: []int{1, 0}, wantUsers: []uint64{1, 1}, wantLog: []string{"l0", "l1"}},
		{name: "four (small array)", lives: 4, adds: []int{0, 1, 2, 3}, wantUsers: []uint64{1, 1, 1, 1}, wantLog: []string{"l3", "l2", "l1", "l0"}},
		{name: "six (spills over)", lives: 6, adds: []int{0, 1, 2, 3, 4, 5}, wantUsers: []uint64{1, 1, 1, 1, 1, 1}, wantLog: []string{"l5", "l4", "l3", "l2", "l1", "l0"}},
		{name: "six with repeats in both parts", lives: 6, adds: []int{0, 1, 2, 3, 4, 5, 5, 0, 4, 3}, wantUsers: []uint64{1, 1, 1, 1, 1, 1}, wantLog: []string{"l5", "l4", "l3", "l2", "l1", "l0"}},
		{name: "defers only", defers: 2, wantLog: []string{"defer1", "defer0"}},
		{name: "defers after frees", lives: 5, adds: []int{0, 1, 2, 3, 4}, defers: 3, wantUsers: []uint64{1, 1, 1, 1, 1}, wantLog: []string{"l4", "l3", "l2", "l1", "l0", "defer2", "defer1", "defer0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newHoldsEnv(c.lives)
			var h Holds
			for _, i := range c.adds {
				var l *Life
				if i >= 0 {
					l = e.lives[i]
				}
				require.NoError(t, h.Add(l))
			}
			for i := range c.defers {
				h.Defer(func() { e.log = append(e.log, fmt.Sprint("defer", i)) })
			}
			for i, l := range e.lives {
				assert.Equal(t, c.wantUsers[i], users(l), "users of l%d while held", i)
				require.NoError(t, l.Close("", false))
			}
			assert.Empty(t, e.log, "nothing runs before Release")
			h.Release()
			assert.Equal(t, c.wantLog, e.log)
			for i, l := range e.lives {
				assert.Zero(t, users(l), "users of l%d after Release", i)
			}
			h.Release() // a second Release has nothing left to release
			assert.Equal(t, c.wantLog, e.log, "a second Release runs nothing")
		})
	}
}

// TestHoldsAddRefused holds that an Add the Life refuses (closed, a
// guard being changed, a child of a closed parent) returns that error and
// leaves the set without it: Release does not release it, and the Lives
// added before and after are held and released as usual.
func TestHoldsAddRefused(t *testing.T) {
	errP := fmt.Errorf("%w: parent", ErrClosed)
	cases := []struct {
		name    string
		refused func() *Life
		want    error
	}{
		{"closed", func() *Life {
			l := New(nil, fmt.Errorf("%w: closed one", ErrClosed), nil)
			require.NoError(t, l.Close("", false))
			return l
		}, ErrClosed},
		{"guard being changed", func() *Life {
			l := NewGuard(ErrClosed)
			require.NoError(t, l.EnterIdle("the graph"))
			return l
		}, ErrBusy},
		{"child of a closed parent", func() *Life {
			p := New(nil, errP, nil)
			require.NoError(t, p.Close("", false))
			return New(p, ErrClosed, nil)
		}, errP},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newHoldsEnv(2)
			bad := c.refused()
			before := bad.state.Load()
			var h Holds
			require.NoError(t, h.Add(e.lives[0]))
			require.ErrorIs(t, h.Add(bad), c.want)
			require.ErrorIs(t, h.Add(bad), c.want, "still refused: it was not recorded as held")
			require.NoError(t, h.Add(e.lives[1]))
			assert.Equal(t, before, bad.state.Load(), "the refused Life is unchanged")
			h.Release() // would panic if it released bad
			assert.Equal(t, before, bad.state.Load())
			assert.Zero(t, users(e.lives[0]))
			assert.Zero(t, users(e.lives[1]))
		})
	}
}

// TestHoldsChild holds that adding a child holds its parent too (and adding
// the parent as well counts it twice, once per Life), so that the parent's
// Close with refuseInUse is ErrBusy until Release.
func TestHoldsChild(t *testing.T) {
	p := New(nil, ErrClosed, nil)
	c := New(p, ErrClosed, nil)
	var h Holds
	require.NoError(t, h.Add(c))
	require.NoError(t, h.Add(p))
	require.NoError(t, h.Add(c))
	assert.EqualValues(t, 2, users(p))
	assert.EqualValues(t, 1, users(c))
	require.ErrorIs(t, p.Close("the parent", true), ErrBusy)
	h.Release()
	assert.Zero(t, users(p))
	require.NoError(t, p.Close("the parent", true))
}

// TestHoldsReuse holds that a set is empty again after Release: a Life it
// held before is acquired again by the next Add.
func TestHoldsReuse(t *testing.T) {
	e := newHoldsEnv(6)
	var h Holds
	for _, l := range e.lives {
		require.NoError(t, h.Add(l))
	}
	h.Release()
	for _, l := range e.lives {
		require.NoError(t, h.Add(l))
		assert.EqualValues(t, 1, users(l))
	}
	h.Release()
	for _, l := range e.lives {
		assert.Zero(t, users(l))
	}
}
