package ggml

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/internal/cabort"
	"github.com/go-ggml/ggml/internal/hashsize"
	"github.com/go-ggml/ggml/internal/life"
)

// A ggml assert on the calling goroutine's thread comes back as an
// *AssertError, several times in a row, and the process lives.
func TestAssertBecomesError(t *testing.T) {
	for i := range 3 {
		msg := fmt.Sprintf("test assert %d", i)
		err := cabort.Raise(msg)
		var ae *AssertError
		require.ErrorAs(t, err, &ae)
		require.Contains(t, ae.Message, msg)
	}
}

type capture struct {
	mu    sync.Mutex
	lines []string
	level []slog.Level
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, r.Message)
	c.level = append(c.level, r.Level)
	return nil
}
func (c *capture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *capture) WithGroup(string) slog.Handler      { return c }

// ggml's log reaches the slog logger set with SetLogger, one record per line.
func TestLogRouting(t *testing.T) {
	h := &capture{}
	SetLogger(slog.New(h))
	defer SetLogger(nil)

	c, err := NewContext(ContextParams{MaxTensors: 8, MemSize: 1 << 10, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(TypeF32, 4).SetName("a")
	b := c.Add(a, a).SetName("sum")
	g, err := c.BuildGraph(b)
	require.NoError(t, err)
	require.NoError(t, g.Print())

	h.mu.Lock()
	defer h.mu.Unlock()
	all := strings.Join(h.lines, "\n")
	require.Contains(t, all, "n_nodes = 1")
	require.Contains(t, all, "n_leafs = 1")
	for i, l := range h.lines {
		require.NotContains(t, l, "\n", "a record is one line")
		require.Equal(t, slog.LevelInfo, h.level[i])
	}
}

// Partial lines and GGML_LOG_LEVEL_CONT pieces are joined before logging.
func TestLogLineAssembly(t *testing.T) {
	h := &capture{}
	SetLogger(slog.New(h))
	defer SetLogger(nil)
	feedLog([]logPiece{{levelWarn, "first "}, {levelCont, "line\nsecond"}, {levelCont, " line\n"}, {levelError, "third\n"}})
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Equal(t, []string{"first line", "second line", "third"}, h.lines)
	require.Equal(t, []slog.Level{slog.LevelWarn, slog.LevelWarn, slog.LevelError}, h.level)
}

func TestSIMDWarning(t *testing.T) {
	require.Contains(t, simdWarning("amd64", true, true, false), "AVX2")
	require.Contains(t, simdWarning("amd64", true, true, false), "ggml_portable", "go-ggml built it: the tag is the cause")
	require.Contains(t, simdWarning("arm64", true, true, false), "NEON")
	require.Contains(t, simdWarning("amd64", false, true, false), "GGML_NATIVE", "an installed ggml is rebuilt, not go-ggml")
	require.Empty(t, simdWarning("amd64", true, true, true), "built with it")
	require.Empty(t, simdWarning("amd64", false, true, true), "built with it")
	require.Empty(t, simdWarning("amd64", true, false, false), "the CPU lacks it")
	require.Empty(t, simdWarning("riscv64", true, true, false))
}

// The pool use go-ggml counts (so that ops need no cgo call to check room)
// is what ggml reports, for allocating and NoAlloc contexts, views, ops
// and graphs.
func TestUsedMemTracking(t *testing.T) {
	for _, noAlloc := range []bool{false, true} {
		p := ContextParams{MaxTensors: 64, NoAlloc: noAlloc, Graph: true}
		if !noAlloc {
			p.MemSize = 1 << 20
		}
		c, err := NewContext(p)
		require.NoError(t, err)
		check := func(what string) {
			require.Equal(t, c.UsedMem(), c.used.Load(), "%s (noAlloc %v)", what, noAlloc)
		}
		check("empty")
		a := c.NewTensor(TypeF32, 13, 7)
		check("new f32")
		q := c.NewTensor(TypeQ4_0, 64, 3)
		check("new q4_0")
		b := c.NewTensor(TypeF32, 13)
		s := c.Add(a, b)
		check("add")
		m := c.MulMat(a, c.NewTensor(TypeF32, 13, 5))
		check("mul_mat")
		v := c.View2D(a, 4, 2, a.Nb()[1], 8)
		check("view")
		r := c.Reshape(a, 91)
		check("reshape")
		tr := c.Cont(c.Permute(c.Reshape(a, 13, 7, 1, 1), 1, 0, 2, 3))
		check("permute+cont")
		sm := c.SoftMax(c.Scale(s, 0.5))
		check("scale+soft_max")
		_ = c.GetRows(q, c.NewTensor(TypeI32, 2))
		check("get_rows")
		_, err = c.BuildGraph(sm, m, v, r, tr)
		require.NoError(t, err)
		check("graph")
		require.NoError(t, c.Err())
		c.Close()
	}
}

// graphOverhead, computed in Go with overflow checks, is ggml's
// ggml_graph_overhead_custom for every size ggml can take, and reports the
// sizes whose bytes overflow 64 bits instead of wrapping as C does.
func TestGraphOverhead(t *testing.T) {
	sizes := []uint64{}
	for s := uint64(1); s <= 5000; s++ {
		sizes = append(sizes, s)
	}
	for _, p := range hashsize.Primes() {
		sizes = append(sizes, p/2-1, p/2, p/2+1, p-1, p, p+1)
	}
	sizes = append(sizes, MaxGraphSize-1, MaxGraphSize, 1<<40, 1<<50)
	for _, s := range sizes {
		for _, grads := range []bool{false, true} {
			got, ok := graphOverhead(s, grads)
			require.True(t, ok, "size %d", s)
			require.Equal(t, cGraphOverhead(s, grads), got, "size %d grads %v", s, grads)
		}
	}
	for _, s := range []uint64{1 << 60, 1 << 62, math.MaxInt64, math.MaxUint64} {
		_, ok := graphOverhead(s, false)
		require.False(t, ok, "size %d", s)
	}
	n, err := GraphOverhead(DefaultGraphSize)
	require.NoError(t, err)
	require.Equal(t, cGraphOverhead(DefaultGraphSize, false), n)
	for _, s := range []int{0, -1, MaxGraphSize + 1, math.MaxInt64} {
		_, err := GraphOverhead(s)
		require.ErrorIs(t, err, ErrInvalid, "size %d", s)
	}
}

// A slab of tensor handles is a small object for the runtime (at most
// 32 KiB): larger ones are allocated under the heap lock and zeroed page
// by page, which graph building paid every 512 tensors.
func TestTensorSlabIsSmall(t *testing.T) {
	require.LessOrEqual(t, tensorSlab*unsafe.Sizeof(Tensor{}), uintptr(32<<10))
}

// The index checks keep what the graph's structure and placement decided
// (indexPlan) for the next computes of the same graph; every compute still
// checks the values, and a new placement or a changed graph makes a new
// plan.
func TestIndexPlanKeptAndRenewed(t *testing.T) {
	c, err := NewContext(ContextParams{MaxTensors: 16, MemSize: 1 << 16, Graph: true, GraphSize: 16})
	require.NoError(t, err)
	defer c.Close()
	const rows = 16
	a := c.NewTensor(TypeF32, 4, rows)
	idx := c.NewTensor(TypeI32, rows)
	spare := c.NewTensor(TypeI32, rows) // a second home for idx's data
	g, err := c.BuildGraph(c.GetRows(a, idx))
	require.NoError(t, err)
	good, bad := make([]int32, rows), make([]int32, rows)
	for i := range good {
		good[i], bad[i] = int32(rows-1-i), int32(i)
	}
	bad[3] = rows // one past the end
	check := func() error {
		var h life.Holds
		defer h.Release()
		return g.checkAllIndices(&h)
	}

	require.NoError(t, SetData(idx, good))
	require.NoError(t, check())
	plan := g.indexPlan.Load()
	require.NotNil(t, plan)
	require.Len(t, plan.data, 1, "one node reads index data")
	require.NoError(t, check())
	require.Same(t, plan, g.indexPlan.Load(), "the same graph and placement keep the plan")

	require.NoError(t, SetData(idx, bad))
	err = check()
	require.ErrorIs(t, err, ErrInvalid, "values are checked at every compute")
	require.Contains(t, err.Error(), "outside")
	require.Same(t, plan, g.indexPlan.Load())

	// A new placement of idx: its data now lies where spare's does.
	require.NoError(t, SetData(spare, good))
	old := swapData(idx, dataPtr(spare))
	require.NoError(t, check(), "the good values at idx's new address")
	require.NotSame(t, plan, g.indexPlan.Load(), "a new placement makes a new plan")
	require.Equal(t, dataPtr(spare), unsafe.Pointer(g.indexPlan.Load().data[0].q.data))
	swapData(idx, old)
	require.ErrorIs(t, check(), ErrInvalid, "back at the old address, with the bad values")

	// A changed graph (another output) makes a new plan too.
	plan = g.indexPlan.Load()
	require.NoError(t, g.Expand(c.Sum(a)))
	require.ErrorIs(t, check(), ErrInvalid)
	require.NotSame(t, plan, g.indexPlan.Load(), "a new node list makes a new plan")
}

func TestBuildWarnings(t *testing.T) {
	require.Empty(t, buildWarnings(true, false))
	w := buildWarnings(false, true)
	require.Len(t, w, 2)
	require.Contains(t, w[0], "-DGGML_LLAMAFILE=ON")
	require.Contains(t, w[1], "-DGGML_OPENMP=OFF")
	require.Len(t, buildWarnings(true, true), 1)
}
