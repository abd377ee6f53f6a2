// Command rpc splits a small MLP over RPC servers with the meta device
// (tensor parallelism): the first layer's weight by its output rows, the
// second's by its input columns, so that each server computes its share of
// the hidden layer and a partial sum of the output, which the meta backend
// adds up. It prints each device's share and the error against the same
// MLP on one CPU backend.
//
// It starts the servers itself (children of this program, on free ports of
// 127.0.0.1, stopped at the end), or uses the endpoints it is given:
//
//	go run -tags ggml_system ./examples/rpc                 (2 local servers)
//	go run -tags ggml_system ./examples/rpc -servers 3
//	go run -tags ggml_system ./examples/rpc -endpoints 10.0.0.2:50052,10.0.0.3:50052
//
// Only upstream ggml has the RPC backend and the meta device: build with
// -tags ggml_system (see the README).
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/rpc"
	"github.com/go-ggml/ggml/sched"
)

const nIn, nHid, nOut, batch = 64, 256, 32, 8

func main() {
	rpc.MaybeServe() // the servers this program starts are this program
	servers := flag.Int("servers", 2, "local servers to start (1 to 16)")
	endpoints := flag.String("endpoints", "", "comma-separated host:port of running servers (instead of -servers)")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the random weights and inputs")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `usage: rpc [-servers N | -endpoints HOST:PORT,...] [-seed S]

rpc splits a small MLP over ggml RPC servers with the meta device (tensor
parallelism): it starts N local servers on 127.0.0.1 (children of itself,
stopped at the end) or uses running ones, prints each device's share of
the weights and the result's largest difference from the same MLP on one
CPU backend. It needs upstream ggml: build with -tags ggml_system.

`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*servers, *endpoints, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "rpc:", err)
		os.Exit(1)
	}
}

func run(nServers int, endpoints string, seed uint64) error {
	if !rpc.Have {
		return fmt.Errorf("this binary's ggml (%s) has no RPC backend: build with -tags ggml_system", ggml.Provider())
	}
	var eps []string
	if endpoints != "" {
		eps = strings.Split(endpoints, ",")
	} else {
		if nServers < 1 || nServers > backend.MaxMetaDevices {
			return fmt.Errorf("-servers %d: 1 to %d", nServers, backend.MaxMetaDevices)
		}
		for range nServers {
			p, err := rpc.StartServer(rpc.ProcessOptions{Lifetime: 5 * time.Minute})
			if err != nil {
				return err
			}
			defer p.Stop(5 * time.Second)
			eps = append(eps, p.Endpoint)
		}
	}
	var devs []*backend.Device
	for _, ep := range eps {
		c, err := rpc.Connect(strings.TrimSpace(ep), nil)
		if err != nil {
			return err
		}
		defer c.Close()
		d, err := c.Device(0)
		if err != nil {
			return err
		}
		free, total, err := c.Memory(0)
		if err != nil {
			return err
		}
		fmt.Printf("server %s: device %s, protocol %v, %d of %d MiB free\n", c.Endpoint(), d.Name(), c.ServerVersion(), free>>20, total>>20)
		devs = append(devs, d)
	}
	n := len(devs)

	// The split: w1 [nIn, nHid] by rows (axis 1), w2 [nHid, nOut] by
	// columns (axis 0), the same shares of the hidden layer.
	md, err := backend.NewMetaDevice(devs, func(w *ggml.Tensor) (backend.Split, error) {
		switch w.Name() {
		case "w1":
			return backend.EvenSplit(w, backend.SplitAxis1, n), nil
		case "w2":
			return backend.EvenSplit(w, backend.SplitAxis0, n), nil
		}
		return backend.Mirrored(), nil
	})
	if err != nil {
		return err
	}
	meta, err := md.Init("")
	if err != nil {
		return err
	}
	defer meta.Close()
	cpu, err := backend.InitByName("CPU", "")
	if err != nil {
		return err
	}
	defer cpu.Close()

	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	rnd := func(k int) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.NormFloat64() / math.Sqrt(float64(nIn)))
		}
		return v
	}
	w1v, w2v, xv := rnd(nIn*nHid), rnd(nHid*nOut), rnd(nIn*batch)

	split, err := forward(meta, cpu, w1v, w2v, xv)
	if err != nil {
		return fmt.Errorf("split over %d servers: %w", n, err)
	}
	one, err := forward(nil, cpu, w1v, w2v, xv)
	if err != nil {
		return fmt.Errorf("one CPU backend: %w", err)
	}

	names := make([]string, n)
	for j, d := range devs {
		names[j] = d.Name()
	}
	fmt.Printf("\nMLP %d -> %d -> %d, batch %d, split over meta(%s) (seed %d):\n", nIn, nHid, nOut, batch, strings.Join(names, ", "), seed)
	s1 := backend.EvenSizes(nHid, n, 1) // as EvenSplit gives w1 (axis 1) and w2 (axis 0)
	var off int64
	for j, d := range devs {
		fmt.Printf("  %s (%s): w1 rows %d..%d and w2 columns %d..%d: %d of %d hidden units, %.1f KiB of weights\n",
			d.Name(), d.Description(), off, off+s1[j]-1, off, off+s1[j]-1, s1[j], nHid, float64(s1[j]*(nIn+nOut)*4)/1024)
		off += s1[j]
	}
	var maxErr, maxRef float64
	for i := range one {
		maxErr = math.Max(maxErr, math.Abs(float64(split[i]-one[i])))
		maxRef = math.Max(maxRef, math.Abs(float64(one[i])))
	}
	fmt.Printf("max |split - one device| = %.3g (largest output %.3g)\n", maxErr, maxRef)
	if maxErr > 1e-4*math.Max(1, maxRef) {
		return fmt.Errorf("the split result differs from one device's by %g", maxErr)
	}
	return nil
}

// forward computes y = w2 · relu(w1 · x) with the weights on meta (nil: on
// cpu alone), under a scheduler that ends with cpu.
func forward(meta, cpu *backend.Backend, w1v, w2v, xv []float32) ([]float32, error) {
	wc, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	if err != nil {
		return nil, err
	}
	defer wc.Close()
	w1 := wc.NewTensor(ggml.TypeF32, nIn, nHid).SetName("w1")
	w2 := wc.NewTensor(ggml.TypeF32, nHid, nOut).SetName("w2")
	bes := []*backend.Backend{cpu}
	on := cpu
	if meta != nil {
		bes = []*backend.Backend{meta, cpu}
		on = meta
	}
	wbuf, err := backend.AllocContextTensors(wc, on)
	if err != nil {
		return nil, err
	}
	defer wbuf.Close()
	if err := wbuf.SetUsage(backend.UsageWeights); err != nil {
		return nil, err
	}
	if err := ggml.SetData(w1, w1v); err != nil {
		return nil, err
	}
	if err := ggml.SetData(w2, w2v); err != nil {
		return nil, err
	}
	s, err := sched.New(bes, sched.Options{})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, nIn, batch).SetInput()
	// The output's own op (a scale by 1) reads the sum of the servers'
	// partial sums: ggml reads no partial sum directly.
	y := c.Scale(c.MulMat(w2, c.Relu(c.MulMat(w1, x))), 1).SetOutput()
	g, err := c.BuildGraph(y)
	if err != nil {
		return nil, err
	}
	if err := s.AllocGraph(g); err != nil {
		return nil, err
	}
	if err := ggml.SetData(x, xv); err != nil {
		return nil, err
	}
	if err := s.Compute(context.Background(), g); err != nil {
		return nil, err
	}
	return ggml.Data[float32](y)
}
