package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/sched"
)

var sink int64

// pair runs the Go and the C side of one figure back to back, as
// sub-benchmarks name/go and name/c (just go and c for name ""),
// GOGGML_BENCH_PAIRS times (make bench sets it to BENCH_COUNT), the C side
// first in every other pair (testutil.RunPair): bench/table divides each
// Go sample by the C sample of its pair. The pairs are made here, not
// with go test's -count, which repeats each sub-benchmark in a row and
// which testutil.BenchPairs refuses.
func pair(b *testing.B, name string, goSide, cSide func(*testing.B)) {
	for i := range testutil.BenchPairs(b) {
		testutil.RunPair(b, i, name, goSide, cSide)
	}
}

// solo runs a figure that has no C side doing the same work as name/go,
// as many times as pair would.
func solo(b *testing.B, name string, goSide func(*testing.B)) {
	pair(b, name, goSide, nil)
}

func cpuBackend(tb testing.TB) *backend.Backend {
	return backendtest.CPU(tb)
}

// ---- 1. per-call overhead -------------------------------------------------

func BenchmarkCall(b *testing.B) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(b, err)
	defer c.Close()
	t := c.NewTensor(ggml.TypeF32, 64, 64)
	ct := cTensorPtr(t)
	pair(b, "Elements",
		// The Go loops sum into a local, as the C loops sum in a register:
		// a sum into the global sink would make each Go iteration wait on
		// the last one's store.
		func(b *testing.B) { // the binding reads the C struct: no cgo call
			var s int64
			for i := range b.N {
				s += t.Elements() ^ int64(i)
			}
			sink += s
		},
		func(b *testing.B) { sink += cNelementsLoop(t, b.N) })
	pair(b, "Bytes",
		func(b *testing.B) { // ggml_nbytes computed in Go from the C struct: no cgo call
			var s int64
			for range b.N {
				s += int64(t.Bytes())
			}
			sink += s
		},
		func(b *testing.B) { sink += cNbytesLoop(t, b.N) })
	pair(b, "Bytes-cgo",
		func(b *testing.B) {
			var s int64
			for range b.N {
				s += int64(cgoNbytes(ct))
			}
			sink += s
		},
		func(b *testing.B) { sink += cNbytesLoop(t, b.N) })
	pair(b, "Bytes-cgo-noescape",
		func(b *testing.B) {
			var s int64
			for range b.N {
				s += int64(cgoNbytesNoescape(ct))
			}
			sink += s
		},
		func(b *testing.B) { sink += cNbytesLoop(t, b.N) })
}

// ---- 2. graph building ----------------------------------------------------

const (
	gbD, gbT, gbLayers, gbGraphSize = 256, 32, 128, 4096
)

// gbWeights makes the weights of the layer stack: norm, wq, wk, wv, wo, w1, w2.
func gbWeights(tb testing.TB) (*ggml.Context, []*ggml.Tensor) {
	wc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
	require.NoError(tb, err)
	ws := []*ggml.Tensor{
		wc.NewTensor(ggml.TypeF32, gbD),
		wc.NewTensor(ggml.TypeF32, gbD, gbD), wc.NewTensor(ggml.TypeF32, gbD, gbD),
		wc.NewTensor(ggml.TypeF32, gbD, gbD), wc.NewTensor(ggml.TypeF32, gbD, gbD),
		wc.NewTensor(ggml.TypeF32, gbD, 4*gbD), wc.NewTensor(ggml.TypeF32, 4*gbD, gbD),
	}
	return wc, ws
}

// goBuildGraph builds, through the binding, the stack cb_build_graph builds.
func goBuildGraph(ws []*ggml.Tensor) (int, error) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: gbLayers*32 + 8, NoAlloc: true, Graph: true, GraphSize: gbGraphSize})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	norm, wq, wk, wv, wo, w1, w2 := ws[0], ws[1], ws[2], ws[3], ws[4], ws[5], ws[6]
	cur := c.NewTensor(ggml.TypeF32, gbD, gbT)
	for range gbLayers {
		h := c.Mul(cur, norm)
		q, k, v := c.MulMat(wq, h), c.MulMat(wk, h), c.MulMat(wv, h)
		kq := c.SoftMaxExt(c.MulMat(k, q), nil, 0.125, 0)
		vt := c.Cont(c.Transpose(v))
		o := c.MulMat(wo, c.MulMat(vt, kq))
		cur = c.Add(cur, o)
		ff := c.MulMat(w2, c.Silu(c.MulMat(w1, cur)))
		cur = c.Add(cur, ff)
	}
	g, err := c.BuildGraph(cur)
	if err != nil {
		return 0, err
	}
	return g.NumNodes(), nil
}

func BenchmarkGraphBuild(b *testing.B) {
	wc, ws := gbWeights(b)
	defer wc.Close()
	n, err := goBuildGraph(ws)
	require.NoError(b, err)
	pair(b, "",
		func(b *testing.B) {
			for range b.N {
				if _, err := goBuildGraph(ws); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/node")
		},
		func(b *testing.B) {
			for range b.N {
				sink += int64(cBuildGraph(ws, gbD, gbT, gbLayers, gbGraphSize))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/node")
		})
}

// BenchmarkGraphBuildCgo is GraphBuild's floor: the same stack built from
// Go with one bare cgo call per ggml call (cgoBuildGraph: no checks, no
// handles, no graph mirror) against the same calls from C. What the
// binding adds on top of this is its own cost; this part any op-by-op cgo
// binding pays.
func BenchmarkGraphBuildCgo(b *testing.B) {
	wc, ws := gbWeights(b)
	defer wc.Close()
	n := cgoBuildGraph(ws, gbD, gbT, gbLayers, gbGraphSize)
	pair(b, "",
		func(b *testing.B) {
			for range b.N {
				sink += int64(cgoBuildGraph(ws, gbD, gbT, gbLayers, gbGraphSize))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/node")
		},
		func(b *testing.B) {
			for range b.N {
				sink += int64(cBuildGraph(ws, gbD, gbT, gbLayers, gbGraphSize))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/node")
		})
}

// ---- 3. data transfer -----------------------------------------------------

func BenchmarkTransfer(b *testing.B) {
	be := cpuBackend(b)
	for _, size := range []int{1 << 10, 1 << 16, 1 << 20, 16 << 20, 256 << 20} {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
		require.NoError(b, err)
		t := c.NewTensor(ggml.TypeF32, int64(size/4))
		buf, err := backend.AllocContextTensors(c, be)
		require.NoError(b, err)
		base, err := buf.Base()
		require.NoError(b, err)
		src := make([]float32, size/4)
		dst := make([]float32, size/4)
		// Touch every page once, so that no side pays the first faults.
		require.NoError(b, ggml.SetData(t, src))
		require.NoError(b, ggml.DataInto(t, dst))
		name := fmt.Sprintf("%dKiB", size>>10)
		gbs := func(b *testing.B) {
			b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		}
		goSet := func(b *testing.B) {
			b.SetBytes(int64(size))
			for range b.N {
				if err := ggml.SetData(t, src); err != nil {
					b.Fatal(err)
				}
			}
			gbs(b)
		}
		goGet := func(b *testing.B) {
			b.SetBytes(int64(size))
			for range b.N {
				if err := ggml.DataInto(t, dst); err != nil {
					b.Fatal(err)
				}
			}
			gbs(b)
		}
		memcpySide := func(to, from unsafe.Pointer) func(b *testing.B) {
			return func(b *testing.B) {
				b.SetBytes(int64(size))
				for range b.N {
					cMemcpy(to, from, size)
				}
				gbs(b)
			}
		}
		pair(b, "SetData-"+name, goSet, memcpySide(base, unsafe.Pointer(&src[0])))
		pair(b, "Data-"+name, goGet, memcpySide(unsafe.Pointer(&dst[0]), base))
		// The same transfers against ggml driven from C: ggml_backend_tensor_set
		// and _get in a C loop, no cgo call per transfer. The memcpy rows
		// above pay one cgo call per copy on the C side (~35 ns), which is
		// what a Go caller of C pays, not what a C program does. From 1 MiB
		// up that call is under 0.2 % of the copy.
		if size <= 1<<16 {
			pair(b, "SetData-"+name+"-fromC", goSet, func(b *testing.B) {
				b.SetBytes(int64(size))
				cTensorSetLoop(t, unsafe.Pointer(&src[0]), size, b.N)
				gbs(b)
			})
			pair(b, "Data-"+name+"-fromC", goGet, func(b *testing.B) {
				b.SetBytes(int64(size))
				cTensorGetLoop(t, unsafe.Pointer(&dst[0]), size, b.N)
				gbs(b)
			})
		}
		runtime.KeepAlive(buf)
		buf.Close()
		c.Close()
	}
}

// ---- 4. compute -----------------------------------------------------------

// mulMatGraph makes y = mul_mat(w, x) with w of type ty [k, m] (random,
// quantized in C where needed) and x f32 [k, n], allocated on be.
func mulMatGraph(tb testing.TB, be *backend.Backend, ty ggml.Type, k, m, n int64) (*ggml.Graph, *ggml.Tensor, func()) {
	rng := rand.New(rand.NewPCG(1, 2))
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(tb, err)
	w := c.NewTensor(ty, k, m)
	x := c.NewTensor(ggml.TypeF32, k, n)
	y := c.MulMat(w, x)
	g, err := c.BuildGraph(y)
	require.NoError(tb, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(tb, err)
	wf := make([]float32, k*m)
	for i := range wf {
		wf[i] = float32(rng.NormFloat64())
	}
	switch ty {
	case ggml.TypeF32:
		require.NoError(tb, ggml.SetData(w, wf))
	default:
		raw := make([]byte, w.Bytes())
		require.Equal(tb, len(raw), cQuantize(int(ty), wf, raw, m, k))
		require.NoError(tb, ggml.SetBytes(w, raw))
	}
	xf := make([]float32, k*n)
	for i := range xf {
		xf[i] = float32(rng.NormFloat64())
	}
	require.NoError(tb, ggml.SetData(x, xf))
	return g, y, func() { buf.Close(); c.Close() }
}

func graphPtr(g *ggml.Graph) unsafe.Pointer {
	p, err := bridge.View[bridge.Graph](g).Ptr()
	if err != nil {
		panic(err)
	}
	return p
}

func backendPtr(be *backend.Backend) unsafe.Pointer {
	p, err := bridge.View[bridge.Backend](be).Ptr()
	if err != nil {
		panic(err)
	}
	return p
}

func BenchmarkCompute(b *testing.B) {
	be := cpuBackend(b)
	cases := []struct {
		name    string
		ty      ggml.Type
		k, m, n int64
	}{
		{"mul_mat-f32-2048", ggml.TypeF32, 2048, 2048, 2048},
		{"mul_mat-f16-2048", ggml.TypeF16, 2048, 2048, 2048},
		{"mul_mat-q8_0-2048", ggml.TypeQ8_0, 2048, 2048, 2048},
		{"mul_mat-q4_0-2048", ggml.TypeQ4_0, 2048, 2048, 2048},
		{"mul_vec-f32-4096", ggml.TypeF32, 4096, 4096, 1},
		{"mul_vec-f16-4096", ggml.TypeF16, 4096, 4096, 1},
		{"mul_vec-q8_0-4096", ggml.TypeQ8_0, 4096, 4096, 1},
		{"mul_vec-q4_0-4096", ggml.TypeQ4_0, 4096, 4096, 1},
	}
	for _, cs := range cases {
		// Each case makes its graph inside its own sub-benchmark, so that
		// a run of one figure (make bench-level runs them one at a time)
		// quantizes no other figure's weights.
		b.Run(cs.name, func(b *testing.B) {
			g, _, done := mulMatGraph(b, be, cs.ty, cs.k, cs.m, cs.n)
			defer done()
			flops := 2 * float64(cs.k*cs.m*cs.n)
			gflops := func(b *testing.B) {
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			}
			pair(b, "",
				func(b *testing.B) {
					for range b.N {
						if err := be.Compute(context.Background(), g); err != nil {
							b.Fatal(err)
						}
					}
					gflops(b)
				},
				func(b *testing.B) {
					bp, gp := backendPtr(be), graphPtr(g)
					for range b.N {
						if st := cCompute(bp, gp); st != 0 {
							b.Fatal(st)
						}
					}
					gflops(b)
				})
		})
	}
}

// BenchmarkPeak measures this machine's f32 FMA throughput on every core:
// the roof the compute figures are read against.
func BenchmarkPeak(b *testing.B) {
	pair(b, "fma-f32", nil, func(b *testing.B) {
		var g float64
		for range b.N {
			g = cPeakGFLOPS(runtime.NumCPU(), 20_000_000)
		}
		b.ReportMetric(g, "GFLOPS")
		b.ReportMetric(float64(cSIMDLanes()), "lanes")
	})
}

// ---- 5. scheduler ---------------------------------------------------------

// BenchmarkSched: a graph computed through a scheduler, the binding's
// sched.Scheduler against a scheduler made and run from C over the same
// backend. Each side has its own copy of the graph (the same weights and
// inputs), so that neither scheduler re-places the other's tensors.
func BenchmarkSched(b *testing.B) {
	be := cpuBackend(b)
	g, _, done := mulMatGraph(b, be, ggml.TypeF32, 512, 512, 512)
	defer done()
	gc, _, doneC := mulMatGraph(b, be, ggml.TypeF32, 512, 512, 512)
	defer doneC()
	s, err := sched.New([]*backend.Backend{be}, sched.Options{})
	require.NoError(b, err)
	defer s.Close()
	cs := cSchedNew(backendPtr(be))
	defer cs.free()
	pair(b, "mul_mat-512",
		func(b *testing.B) {
			for range b.N {
				if err := s.Compute(context.Background(), g); err != nil {
					b.Fatal(err)
				}
			}
		},
		func(b *testing.B) {
			gp := graphPtr(gc)
			for range b.N {
				if st := cs.compute(gp); st != 0 {
					b.Fatal(st)
				}
			}
		})
}

// ---- 5a. cancellation -----------------------------------------------------

// BenchmarkCancel measures how soon a CPU compute returns after its context
// is cancelled: a custom op early in a long chain of 128×128 products
// cancels, the abort flag stops the compute between nodes, and
// ns-after-cancel is the mean time from the cancel to Compute's return
// (ns/op is the whole call). backend's TestCancelStopsCompute checks that a
// cancel stops a compute; how fast belongs here.
func BenchmarkCancel(b *testing.B) {
	be := cpuBackend(b)
	const n, k, m = 2000, 128, 64 // ~4 GFLOP if the cancel were ignored
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: n + 8, NoAlloc: true, Graph: true})
	require.NoError(b, err)
	defer c.Close()
	w := c.NewTensor(ggml.TypeF32, k, k)
	x := c.NewTensor(ggml.TypeF32, k, m)
	var cancel atomic.Pointer[context.CancelFunc]
	var at atomic.Int64 // when the custom op cancelled, in ns since start
	start := time.Now()
	y := c.MapCustom1InPlace(c.MulMat(w, x), func(_ ggml.CustomView, _ []ggml.CustomView, ith, _ int) {
		if ith == 0 {
			at.Store(int64(time.Since(start)))
			(*cancel.Load())()
		}
	}, 0)
	for range n {
		y = c.MulMat(w, y)
	}
	g, err := c.BuildGraph(y)
	require.NoError(b, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(b, err)
	defer buf.Close()
	require.NoError(b, buf.Clear(0))
	solo(b, "latency", func(b *testing.B) {
		var after time.Duration
		for range b.N {
			ctx, cf := context.WithCancel(context.Background())
			cancel.Store(&cf)
			err := be.Compute(ctx, g)
			after += time.Since(start) - time.Duration(at.Load())
			cf()
			if !errors.Is(err, context.Canceled) {
				b.Fatalf("Compute returned %v, want context.Canceled", err)
			}
		}
		b.ReportMetric(float64(after.Nanoseconds())/float64(b.N), "ns-after-cancel")
	})
}

// ---- 6. lifetimes ---------------------------------------------------------

func BenchmarkLifetime(b *testing.B) {
	be := cpuBackend(b)
	mk := func() (*ggml.Context, *backend.Buffer) {
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
		if err != nil {
			b.Fatal(err)
		}
		c.NewTensor(ggml.TypeF32, 256)
		buf, err := backend.AllocContextTensors(c, be)
		if err != nil {
			b.Fatal(err)
		}
		return c, buf
	}
	solo(b, "close", func(b *testing.B) {
		for range b.N {
			c, buf := mk()
			buf.Close()
			c.Close()
		}
	})
	solo(b, "cleanup", func(b *testing.B) { // dropped: the GC's cleanups free them
		for range b.N {
			mk()
		}
		// Count the collection that queues the cleanups. Their frees run
		// on the runtime's cleanup goroutine, which nothing here waits for:
		// some fall into later iterations, or after the timer stops.
		runtime.GC()
	})
}

// ---- the bench package's tests: both sides compute the same ---------------

func TestGraphBuildSidesAgree(t *testing.T) {
	wc, ws := gbWeights(t)
	defer wc.Close()
	n, err := goBuildGraph(ws)
	require.NoError(t, err)
	require.Equal(t, cBuildGraph(ws, gbD, gbT, gbLayers, gbGraphSize), n)
	require.Greater(t, n, 1000, "a few thousand nodes")
}

// TestTransferSidesAgree checks that the C loops of the -fromC transfer rows
// move the same bytes as SetData and DataInto.
func TestTransferSidesAgree(t *testing.T) {
	be := cpuBackend(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, 256)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	rng := testutil.NewRNG(t)
	src, back := testutil.RandF32(rng, 256), make([]float32, 256)
	cTensorSetLoop(x, unsafe.Pointer(&src[0]), 1024, 3)
	require.NoError(t, ggml.DataInto(x, back))
	require.Equal(t, src, back, "ggml_backend_tensor_set from C, read by DataInto")
	src = testutil.RandF32(rng, 256)
	require.NoError(t, ggml.SetData(x, src))
	clear(back)
	cTensorGetLoop(x, unsafe.Pointer(&back[0]), 1024, 3)
	require.Equal(t, src, back, "SetData, read by ggml_backend_tensor_get from C")
}

func TestComputeSidesAgree(t *testing.T) {
	be := cpuBackend(t)
	for _, ty := range []ggml.Type{ggml.TypeF32, ggml.TypeQ4_0} {
		g, y, done := mulMatGraph(t, be, ty, 64, 32, 8)
		require.NoError(t, be.Compute(context.Background(), g))
		viaGo, err := ggml.Data[float32](y)
		require.NoError(t, err)
		require.NoError(t, ggml.SetData(y, make([]float32, len(viaGo)))) // C must write it anew
		require.Equal(t, 0, cCompute(backendPtr(be), graphPtr(g)))
		viaC, err := ggml.Data[float32](y)
		require.NoError(t, err)
		require.Equal(t, viaGo, viaC, "%v", ty)
		done()
	}
}

func TestPeakIsPositive(t *testing.T) {
	require.Positive(t, cPeakGFLOPS(1, 100_000))
}
