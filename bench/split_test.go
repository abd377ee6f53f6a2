package bench

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/rpc"
	"github.com/go-ggml/ggml/sched"
)

// The split MLP of BenchmarkSplit: y = w2 · relu(w1 · x).
const splitIn, splitHid, splitOut, splitBatch = 512, 2048, 512, 16

// splitMLP allocates the MLP's weights on on (its default buffer type),
// builds its graph and a scheduler over bes, and returns one forward pass.
func splitMLP(b *testing.B, on *backend.Backend, bes []*backend.Backend) func() error {
	rng := rand.New(rand.NewPCG(3, 4))
	wc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(b, err)
	b.Cleanup(func() { wc.Close() })
	w1 := wc.NewTensor(ggml.TypeF32, splitIn, splitHid).SetName("w1")
	w2 := wc.NewTensor(ggml.TypeF32, splitHid, splitOut).SetName("w2")
	wbuf, err := backend.AllocContextTensors(wc, on)
	require.NoError(b, err)
	b.Cleanup(func() { wbuf.Close() })
	require.NoError(b, wbuf.SetUsage(backend.UsageWeights))
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() / 32)
		}
		return v
	}
	require.NoError(b, ggml.SetData(w1, rnd(splitIn*splitHid)))
	require.NoError(b, ggml.SetData(w2, rnd(splitHid*splitOut)))
	s, err := sched.New(bes, sched.Options{})
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
	require.NoError(b, err)
	b.Cleanup(func() { c.Close() })
	x := c.NewTensor(ggml.TypeF32, splitIn, splitBatch).SetInput()
	y := c.Scale(c.MulMat(w2, c.Relu(c.MulMat(w1, x))), 1).SetOutput()
	g, err := c.BuildGraph(y)
	require.NoError(b, err)
	require.NoError(b, s.AllocGraph(g))
	require.NoError(b, ggml.SetData(x, rnd(splitIn*splitBatch)))
	out := make([]float32, splitOut*splitBatch)
	return func() error {
		if err := s.Compute(context.Background(), g); err != nil {
			return err
		}
		return ggml.DataInto(y, out)
	}
}

// megatron splits w1 by rows and w2 by columns over n devices.
func megatron(n int) backend.SplitFunc {
	return func(w *ggml.Tensor) (backend.Split, error) {
		switch w.Name() {
		case "w1":
			return backend.EvenSplit(w, backend.SplitAxis1, n), nil
		case "w2":
			return backend.EvenSplit(w, backend.SplitAxis0, n), nil
		}
		return backend.Mirrored(), nil
	}
}

func loop(f func() error) func(*testing.B) {
	return func(b *testing.B) {
		for range b.N {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSplit: the same MLP forward pass split by the meta device (the
// go side of each figure) against one CPU backend (the c side, here not C:
// the baseline); and RPC transfers over loopback through the binding
// against the same transfers from C (ggml_backend_tensor_set/_get in a C
// loop).
func BenchmarkSplit(b *testing.B) {
	if !backend.HaveMeta {
		b.Skip("the meta device and RPC need -tags ggml_system")
	}
	cpu := cpuBackend(b)
	// The meta device starts its CPU backends itself, with ggml's default
	// thread count (GGML_DEFAULT_N_THREADS, 4: the meta backend has no
	// thread setting to pass ours through), so the baseline of the meta
	// CPU row computes with as many threads.
	cpu4 := cpuBackend(b)
	require.NoError(b, cpu4.SetThreads(4))
	one4 := splitMLP(b, cpu4, []*backend.Backend{cpu4})

	dcpu, err := backend.DeviceByName("CPU")
	require.NoError(b, err)
	md, err := backend.NewMetaDevice([]*backend.Device{dcpu, dcpu}, megatron(2))
	require.NoError(b, err)
	meta, err := md.Init("")
	require.NoError(b, err)
	b.Cleanup(func() { meta.Close() })
	metaCPU := splitMLP(b, meta, []*backend.Backend{meta, cpu})
	pair(b, "mlp-meta-cpu2", loop(metaCPU), loop(one4))

	if !rpc.Have {
		return
	}
	var devs []*backend.Device
	var clients []*rpc.Client
	for range 2 {
		p, err := rpc.StartServer(rpc.ProcessOptions{Lifetime: 10 * time.Minute, Server: rpc.ServerOptions{Threads: 1}})
		require.NoError(b, err)
		b.Cleanup(func() { p.Stop(5 * time.Second) })
		c, err := rpc.Connect(p.Endpoint, nil)
		require.NoError(b, err)
		b.Cleanup(func() { c.Close() })
		d, err := c.Device(0)
		require.NoError(b, err)
		devs = append(devs, d)
		clients = append(clients, c)
	}
	mr, err := backend.NewMetaDevice(devs, megatron(2))
	require.NoError(b, err)
	metaR, err := mr.Init("")
	require.NoError(b, err)
	b.Cleanup(func() { metaR.Close() })
	metaRPC := splitMLP(b, metaR, []*backend.Backend{metaR, cpu})
	// Two servers of one thread each against one backend of one thread
	// per CPU (two here, the machine this row is quoted for).
	one := splitMLP(b, cpu, []*backend.Backend{cpu})
	pair(b, "mlp-meta-rpc2", loop(metaRPC), loop(one))

	// Transfers to and from a buffer on a server, over loopback.
	const size = 1 << 20
	bt, err := clients[0].BufferType(0)
	require.NoError(b, err)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	require.NoError(b, err)
	b.Cleanup(func() { c.Close() })
	t := c.NewTensor(ggml.TypeF32, size/4)
	buf, err := backend.AllocContextTensorsFromType(c, bt)
	require.NoError(b, err)
	b.Cleanup(func() { buf.Close() })
	src, dst := make([]float32, size/4), make([]float32, size/4)
	gbs := func(b *testing.B) {
		b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	}
	pair(b, "rpc-SetData-1MiB", func(b *testing.B) {
		b.SetBytes(size)
		for range b.N {
			if err := ggml.SetData(t, src); err != nil {
				b.Fatal(err)
			}
		}
		gbs(b)
	}, func(b *testing.B) { // the same transfers driven from C
		b.SetBytes(size)
		cTensorSetLoop(t, unsafe.Pointer(&src[0]), size, b.N)
		gbs(b)
	})
	pair(b, "rpc-Data-1MiB", func(b *testing.B) {
		b.SetBytes(size)
		for range b.N {
			if err := ggml.DataInto(t, dst); err != nil {
				b.Fatal(err)
			}
		}
		gbs(b)
	}, func(b *testing.B) {
		b.SetBytes(size)
		cTensorGetLoop(t, unsafe.Pointer(&dst[0]), size, b.N)
		gbs(b)
	})
}
