package backend_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// Close racing compute, transfers and a second compute (issue #17). These
// tests also run under -race and -asan (make test-asan): a use after free
// that happens not to crash shows there.

// products is a graph of count products ys[i] = w·x, all outputs, with w in
// a buffer of its own and the rest in a compute buffer.
type products struct {
	be         *backend.Backend
	wctx, cctx *ggml.Context
	wbuf, cbuf *backend.Buffer
	w, x       *ggml.Tensor
	ys         []*ggml.Tensor
	g          *ggml.Graph
	xv         []float32
	ref        []float64
	k, m, n    int
}

func newProducts(t *testing.T, rng *rand.Rand, be *backend.Backend, k, m, n, count int) *products {
	return newProductsOf(t, rng, be, ggml.TypeF32, k, m, n, count)
}

// newProductsOf is newProducts with weights of type wt (f32 or f16). With
// f16 weights ggml converts x to f16 in the backend's work buffer, which
// two computes at once on one backend would share.
func newProductsOf(t *testing.T, rng *rand.Rand, be *backend.Backend, wt ggml.Type, k, m, n, count int) *products {
	t.Helper()
	p := &products{be: be, k: k, m: m, n: n}
	var err error
	p.wctx, err = ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(t, err)
	p.w = p.wctx.NewTensor(wt, int64(k), int64(m))
	p.wbuf, err = backend.AllocContextTensors(p.wctx, be)
	require.NoError(t, err)
	wv := testutil.RandF32(rng, k*m)
	xq := func(v []float32) []float32 { return v } // what the kernel sees of x
	if wt == ggml.TypeF32 {
		require.NoError(t, ggml.SetData(p.w, wv))
	} else {
		round := func(v []float32) []float32 {
			b, err := ggml.Quantize(wt, v, int64(k), nil)
			require.NoError(t, err)
			out, err := ggml.Dequantize(wt, b)
			require.NoError(t, err)
			return out
		}
		b, err := ggml.Quantize(wt, wv, int64(k), nil)
		require.NoError(t, err)
		require.NoError(t, ggml.SetBytes(p.w, b))
		wv, xq = round(wv), round
	}
	p.cctx, err = ggml.NewContext(ggml.ContextParams{MaxTensors: count + 1, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	p.x = p.cctx.NewTensor(ggml.TypeF32, int64(k), int64(n)).SetInput()
	for range count {
		p.ys = append(p.ys, p.cctx.MulMat(p.w, p.x).SetOutput())
	}
	p.g, err = p.cctx.BuildGraph(p.ys...)
	require.NoError(t, err)
	p.cbuf, err = backend.AllocContextTensors(p.cctx, be)
	require.NoError(t, err)
	p.xv = testutil.RandF32(rng, k*n)
	require.NoError(t, ggml.SetData(p.x, p.xv))
	xs := xq(p.xv)
	p.ref = make([]float64, m*n)
	for j := range n {
		for i := range m {
			s := 0.0
			for l := range k {
				s += float64(wv[i*k+l]) * float64(xs[j*k+l])
			}
			p.ref[j*m+i] = s
		}
	}
	t.Cleanup(func() {
		p.cbuf.Close()
		p.wbuf.Close()
		p.cctx.Close()
		p.wctx.Close()
	})
	return p
}

// check returns an error unless got is w·x within float32 rounding.
func (p *products) check(got []float32) error {
	for i, r := range p.ref {
		if math.Abs(float64(got[i])-r) > 1e-4*float64(p.k)*(1+math.Abs(r)) {
			return fmt.Errorf("wrong product at %d: %v, want %v", i, got[i], r)
		}
	}
	return nil
}

// allowed reports whether err is one of the kinds a close race may give.
func allowed(err error) bool {
	return err == nil || errors.Is(err, ggml.ErrClosed) || errors.Is(err, ggml.ErrBusy) || errors.Is(err, ggml.ErrNotAllocated)
}

// A buffer closed while a compute reads it is freed when the compute is
// over: the compute's results are right.
func TestBufferCloseDuringCompute(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	for i := range 20 {
		p := newProducts(t, rng, be, 128, 128, 32, 24)
		done := make(chan error, 1)
		go func() { done <- be.Compute(context.Background(), p.g) }()
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		require.NoError(t, p.wbuf.Close())
		err := <-done
		if err != nil {
			require.ErrorIs(t, err, ggml.ErrClosed, "round %d", i)
			continue
		}
		for _, y := range p.ys {
			got, err := ggml.Data[float32](y)
			require.NoError(t, err)
			require.NoError(t, p.check(got), "round %d", i)
		}
		_, err = ggml.Data[float32](p.w)
		require.ErrorIs(t, err, ggml.ErrClosed)
	}
}

// One backend, two goroutines computing on it: one of them is refused
// (ErrBusy) while the other runs; no compute returns wrong numbers.
func TestBackendComputeFromTwoGoroutines(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	ps := []*products{newProductsOf(t, rng, be, ggml.TypeF16, 64, 64, 16, 4), newProductsOf(t, rng, be, ggml.TypeF16, 64, 48, 8, 4)}
	var busy atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	const want = 40 // verified computes each goroutine must do
	done := make([]int, len(ps))
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := 0; done[i] < want && attempt < 100000; attempt++ {
				err := be.Compute(context.Background(), p.g)
				if errors.Is(err, ggml.ErrBusy) {
					busy.Add(1)
					time.Sleep(10 * time.Microsecond)
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				got, err := ggml.Data[float32](p.ys[0])
				if err == nil {
					err = p.check(got)
				}
				if err != nil {
					errs <- err
					return
				}
				done[i]++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, []int{want, want}, done, "verified computes per goroutine")
	t.Logf("%d computes refused with ErrBusy", busy.Load())
}

// Backend and context Close from another goroutine during a compute: ErrBusy
// until the compute is over, then they close.
func TestCloseBackendAndContextDuringCompute(t *testing.T) {
	rng := newRNG(t)
	for range 10 {
		be, err := backend.InitByName("CPU", "")
		require.NoError(t, err)
		p := newProducts(t, rng, be, 128, 128, 32, 32)
		done := make(chan error, 1)
		go func() { done <- be.Compute(context.Background(), p.g) }()
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		var beErr, ctxErr error
		for {
			ctxErr = p.cctx.Close()
			if ctxErr == nil {
				break
			}
			require.ErrorIs(t, ctxErr, ggml.ErrBusy)
			runtime_Gosched()
		}
		beErr = be.Close()
		err = <-done
		require.True(t, allowed(err), "compute: %v", err)
		require.True(t, allowed(beErr), "backend close: %v", beErr)
		require.NoError(t, be.Close()) // the compute is over: closes now
		require.ErrorIs(t, be.Compute(context.Background(), p.g), ggml.ErrClosed)
	}
}

func runtime_Gosched() { time.Sleep(50 * time.Microsecond) }

// A bounded stress run: goroutines compute, read, write and close the
// handles of one set of products in random order. Every call returns nil or
// an error of a documented kind; every read that succeeds sees right
// numbers; nothing crashes (run it under -race and -asan too).
func TestCloseRacesComputeAndData(t *testing.T) {
	rng := newRNG(t)
	be := cpu(t)
	deadline := time.Now().Add(1500 * time.Millisecond)
	rounds := 0
	for time.Now().Before(deadline) {
		rounds++
		p := newProducts(t, rng, be, 48, 32, 8, 6)
		// The outputs hold the products before the race starts; computes
		// during it write the same values again.
		require.NoError(t, be.Compute(context.Background(), p.g))
		seed := rng.Uint64()
		var wg sync.WaitGroup
		bad := make(chan error, 8)
		report := func(what string, err error) {
			if !allowed(err) {
				select {
				case bad <- errors.Join(errors.New(what), err):
				default:
				}
			}
		}
		stop := make(chan struct{})
		run := func(f func()) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					f()
				}
			}()
		}
		run(func() { report("compute", be.Compute(context.Background(), p.g)) })
		var next atomic.Int64
		run(func() {
			got, err := ggml.Data[float32](p.ys[int(next.Add(1))%len(p.ys)])
			report("data", err)
			if err == nil {
				report("values", p.check(got))
			}
		})
		run(func() { report("set data", ggml.SetData(p.x, p.xv)) })
		closers := []func() error{p.wbuf.Close, p.cbuf.Close, p.cctx.Close, p.wctx.Close}
		order := rand.New(rand.NewPCG(seed, 1)).Perm(len(closers))
		for _, i := range order {
			time.Sleep(time.Duration(seed%500) * time.Microsecond)
			for {
				err := closers[i]()
				if err == nil {
					break
				}
				report("close", err)
				require.ErrorIs(t, err, ggml.ErrBusy)
				runtime_Gosched()
			}
		}
		time.Sleep(200 * time.Microsecond)
		close(stop)
		wg.Wait()
		close(bad)
		for err := range bad {
			require.NoError(t, err, "round %d", rounds)
		}
	}
	t.Logf("%d rounds", rounds)
	assert.Positive(t, rounds)
}

// AllocGraph and Reserve may replace the allocator's buffers: while a
// compute uses tensors it placed (here from a custom op of that compute)
// they are ErrBusy. Before, an allocation of a larger graph freed the buffer
// the running compute used (heap-use-after-free under -asan).
func TestGallocrAllocWhileItsTensorsComputeIsBusy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	be := cpu(t)
	newCtx := func() *ggml.Context {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	big := newCtx()
	y := big.NewTensor(ggml.TypeF32, 1<<20).SetInput()
	g2, err := big.BuildGraph(big.Exp(big.Exp(y)))
	require.NoError(t, err)
	ga, err := backend.NewGallocr(be.DefaultBufferType())
	require.NoError(t, err)
	defer ga.Close()

	c := newCtx()
	const n = 64
	x := c.NewTensor(ggml.TypeF32, n).SetInput()
	var g *ggml.Graph
	var errs []error
	cu := c.MapCustom1(x, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
		if ith == 0 {
			copy(dst.Float32s(), src[0].Float32s())
			errs = append(errs, ga.AllocGraph(g2), ga.Reserve(g2), ga.AllocGraph(g))
		}
	}, 1)
	out := c.Neg(cu)
	g, err = c.BuildGraph(out)
	require.NoError(t, err)
	require.NoError(t, ga.AllocGraph(g))
	xv := testutil.RandF32(rng, n)
	require.NoError(t, ggml.SetData(x, xv))
	require.NoError(t, be.Compute(context.Background(), g))
	require.Len(t, errs, 3)
	for _, err := range errs {
		require.ErrorIs(t, err, ggml.ErrBusy)
	}
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	for i := range xv {
		assert.Equal(t, -xv[i], got[i])
	}
	// Afterwards the allocation goes through, and the old tensors are gone.
	require.NoError(t, ga.AllocGraph(g2))
	_, err = ggml.Data[float32](out)
	require.ErrorIs(t, err, ggml.ErrClosed)
}

// Two tensors placed at the same address (TensorAlloc): a node that writes
// one changes the indices that get_rows reads through the other, after the
// check made before compute. The graph is refused: writers are found by
// the memory they overlap, not only by view sources.
func TestIndicesAliasedByANodeAreRefused(t *testing.T) {
	be := cpu(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 8, 4)
	idx := c.NewTensor(ggml.TypeI32, 4).SetInput()
	bad := c.NewTensor(ggml.TypeI32, 4).SetInput()
	w := c.Cont(bad)
	rows := c.GetRows(a, idx)
	g, err := c.BuildGraph(w, rows)
	require.NoError(t, err)
	buf, err := be.AllocBuffer(4096)
	require.NoError(t, err)
	defer buf.Close()
	require.NoError(t, backend.TensorAlloc(buf, a, 0))
	require.NoError(t, backend.TensorAlloc(buf, idx, 1024))
	require.NoError(t, backend.TensorAlloc(buf, w, 1024))
	require.NoError(t, backend.TensorAlloc(buf, bad, 2048))
	require.NoError(t, backend.TensorAlloc(buf, rows, 3072))
	require.NoError(t, ggml.SetData(a, make([]float32, 32)))
	require.NoError(t, ggml.SetData(idx, []int32{0, 1, 2, 3}))
	require.NoError(t, ggml.SetData(bad, []int32{1 << 20, 1 << 20, 1 << 20, 1 << 20}))
	require.ErrorIs(t, be.Compute(context.Background(), g), ggml.ErrInvalid)
}

// HostMemory.Bytes returns C memory that the HostMemory's cleanup frees:
// a slice kept after the last use of the HostMemory (no Close) points to
// freed memory. Not fixed: a slice of C memory cannot keep its owner alive.
func TestHostMemoryBytesOutliveTheHandle(t *testing.T) {
	rng := newRNG(t)
	want := randBytes(rng, 1<<16)
	b := func() []byte {
		m, err := backend.AllocHostMemory(uint64(len(want)))
		require.NoError(t, err)
		b := m.Bytes()
		copy(b, want)
		return b // m is dropped here
	}()
	for range 5 {
		runtime.GC()
		// Churn the heap so that freed memory would be reused.
		for range 20 {
			_ = make([]byte, 1<<16)
		}
	}
	require.Equal(t, want, b)
	b[0] ^= 0xff // writing is fine too

	// After Close, too.
	m, err := backend.AllocHostMemory(64)
	require.NoError(t, err)
	kept := m.Bytes()
	require.NoError(t, m.Close())
	assert.Nil(t, m.Bytes())
	kept[63] = 1
}
