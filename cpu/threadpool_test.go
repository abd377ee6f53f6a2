package cpu_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/cpu"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/sched"
)

// mulMatJob is a small mul_mat graph on one backend: y = a·bᵀ with a of
// shape [k, m] and b of [k, n] (ggml's order, dimension 0 first).
type mulMatJob struct {
	k, m, n int
	a, b, y *ggml.Tensor
	g       *ggml.Graph
	buf     *backend.Buffer
}

func newMulMatJob(be *backend.Backend, k, m, n int) (*mulMatJob, error) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	if err != nil {
		return nil, err
	}
	j := &mulMatJob{k: k, m: m, n: n}
	j.a = c.NewTensor(ggml.TypeF32, int64(k), int64(m))
	j.b = c.NewTensor(ggml.TypeF32, int64(k), int64(n))
	j.y = c.MulMat(j.a, j.b)
	if j.g, err = c.BuildGraph(j.y); err != nil {
		return nil, err
	}
	if j.buf, err = backend.AllocContextTensors(c, be); err != nil {
		return nil, err
	}
	return j, nil
}

// run sets random inputs, computes with compute and checks y against a
// float64 reference computed in Go.
func (j *mulMatJob) run(rng *rand.Rand, compute func(*ggml.Graph) error) error {
	av, bv := make([]float32, j.k*j.m), make([]float32, j.k*j.n)
	for i := range av {
		av[i] = float32(rng.NormFloat64())
	}
	for i := range bv {
		bv[i] = float32(rng.NormFloat64())
	}
	if err := ggml.SetData(j.a, av); err != nil {
		return err
	}
	if err := ggml.SetData(j.b, bv); err != nil {
		return err
	}
	if err := compute(j.g); err != nil {
		return err
	}
	got, err := ggml.Data[float32](j.y)
	if err != nil {
		return err
	}
	for r := range j.n {
		for c := range j.m {
			var want, mag float64
			for i := range j.k {
				p := float64(av[c*j.k+i]) * float64(bv[r*j.k+i])
				want += p
				mag += math.Abs(p)
			}
			if d := math.Abs(float64(got[r*j.m+c]) - want); d > 1e-5*mag+1e-6 {
				return fmt.Errorf("y[%d][%d] = %g, want %g (|diff| %g)", r, c, got[r*j.m+c], want, d)
			}
		}
	}
	return nil
}

// Three CPU backends that share a pool, each computing on its own
// goroutine (one by Compute, one through a plan, one through a scheduler),
// while another goroutine pauses and resumes the pool: ggml's pool runs one
// graph at a time, so go-ggml serializes them. Before, two backends alone
// deadlocked in 1 of 3 to 8 runs or computed wrong results. With poll 0
// the pool's threads sleep between graphs and wake by ggml's condition
// variable; with 50 they spin first: both wake-ups are raced.
func TestSharedThreadPoolConcurrentCompute(t *testing.T) {
	for _, poll := range []int{0, 50} {
		t.Run(fmt.Sprintf("poll %d", poll), func(t *testing.T) { sharedPoolCompute(t, poll) })
	}
}

func sharedPoolCompute(t *testing.T, poll int) {
	const iters = 200
	seed := testutil.Seed(t)
	pp := cpu.DefaultThreadPoolParams(2)
	pp.Poll = poll
	tp, err := cpu.NewThreadPool(pp)
	require.NoError(t, err)
	var bes [3]*backend.Backend
	var jobs [3]*mulMatJob
	for i := range bes {
		be, err := cpu.New(2)
		require.NoError(t, err)
		bes[i] = be
		require.NoError(t, cpu.SetThreadPool(be, tp))
		jobs[i], err = newMulMatJob(be, 64, 24+8*i, 16)
		require.NoError(t, err)
	}
	ctx := context.Background()
	plan, err := bes[1].NewPlan(jobs[1].g)
	require.NoError(t, err)
	s, err := sched.New(bes[2:], sched.Options{})
	require.NoError(t, err)
	computes := []func(*ggml.Graph) error{
		func(g *ggml.Graph) error { return bes[0].Compute(ctx, g) },
		func(*ggml.Graph) error { return plan.Compute(ctx) },
		func(g *ggml.Graph) error { return s.Compute(ctx, g) },
	}
	errs := make(chan error, len(bes))
	for i := range bes {
		go func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for it := range iters {
				if err := jobs[i].run(rng, computes[i]); err != nil {
					errs <- fmt.Errorf("compute %d, iteration %d: %w", i, it, err)
					return
				}
			}
			errs <- nil
		}()
	}
	stop, paused := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				paused <- nil
				return
			default:
			}
			if err := tp.Pause(); err != nil {
				paused <- err
				return
			}
			runtime.Gosched()
			if err := tp.Resume(); err != nil {
				paused <- err
				return
			}
		}
	}()
	timeout := time.After(2 * time.Minute)
	for range bes {
		select {
		case err := <-errs:
			require.NoError(t, err)
		case <-timeout:
			t.Fatal("computes on a shared thread pool did not finish in 2 minutes: deadlock")
		}
	}
	close(stop)
	require.NoError(t, <-paused)
	require.NoError(t, s.Close())
	require.NoError(t, plan.Close())
	for i := range bes {
		require.NoError(t, jobs[i].buf.Close())
		require.NoError(t, bes[i].Close())
	}
	require.NoError(t, tp.Close())
}

// Pools dropped without Close are freed by their cleanups, in parallel
// (ggml_threadpool_free joins each pool's threads): all of them, in time.
func TestDroppedThreadPoolsAreFreed(t *testing.T) {
	const n = 200
	before := cpu.PoolsFreed()
	for range n {
		_, err := cpu.NewThreadPool(cpu.DefaultThreadPoolParams(2))
		require.NoError(t, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for cpu.PoolsFreed()-before < n && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, int64(n), cpu.PoolsFreed()-before, "dropped pools freed within 30 s")
}

// Every method of a nil *ThreadPool returns an error or a zero value.
func TestNilThreadPool(t *testing.T) {
	var tp *cpu.ThreadPool
	for name, call := range map[string]func() error{
		"Pause":  tp.Pause,
		"Resume": tp.Resume,
	} {
		require.NotPanics(t, func() { require.ErrorIs(t, call(), ggml.ErrInvalid, name) }, name)
	}
	require.NotPanics(t, func() { require.NoError(t, tp.Close()) })
	require.NotPanics(t, func() { require.Zero(t, tp.Threads()) })
	be, err := cpu.New(1)
	require.NoError(t, err)
	defer be.Close()
	require.NoError(t, cpu.SetThreadPool(be, tp), "a nil pool detaches")
}

// Attaching or detaching a pool from a callback of the backend's own
// compute (a custom op here) is ErrBusy, not a wait for the compute that
// waits for the callback (a deadlock before: the backend's own pool is
// held by the compute).
func TestSetThreadPoolDuringComputeIsBusy(t *testing.T) {
	be, err := cpu.New(2)
	require.NoError(t, err)
	defer be.Close()
	tp, err := cpu.NewThreadPool(cpu.DefaultThreadPoolParams(2))
	require.NoError(t, err)
	defer tp.Close()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 8)
	errs := make(chan error, 2)
	y := c.MapCustom1(x, func(dst ggml.CustomView, srcs []ggml.CustomView, ith, nth int) {
		if ith == 0 {
			errs <- cpu.SetThreadPool(be, tp)
			errs <- cpu.SetThreadPool(be, nil)
		}
	}, 1)
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	done := make(chan error, 1)
	go func() { done <- be.Compute(context.Background(), g) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the compute did not return: SetThreadPool waited for it")
	}
	require.ErrorIs(t, <-errs, ggml.ErrBusy)
	require.ErrorIs(t, <-errs, ggml.ErrBusy)
	// After the compute, it attaches.
	require.NoError(t, cpu.SetThreadPool(be, tp))
	require.NoError(t, cpu.SetThreadPool(be, nil))
}
