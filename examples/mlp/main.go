// Command mlp runs a small two-layer perceptron with go-ggml on the best
// backend in ggml's registry and checks the result against a float64
// reference computed in Go.
//
//	go run ./examples/mlp      (or: make run)
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

const (
	nIn, nHidden, nOut, batch = 8, 16, 3, 4
)

func main() {
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `usage: mlp

mlp lists ggml's devices, runs a small two-layer perceptron (random weights,
8 inputs, 16 hidden units, 3 outputs, a batch of 4) on the best of them, and
prints its output and largest difference from the same network computed in
float64 in Go. It takes no flags and no input (make run runs it).
`)
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mlp:", err)
		os.Exit(1)
	}
}

func run() error {
	if v := ggml.Version(); v != "" {
		fmt.Printf("ggml provider: %s, ggml %s\n", ggml.Provider(), v)
	} else {
		fmt.Printf("ggml provider: %s\n", ggml.Provider())
	}
	fmt.Println("devices:")
	for d := range backend.Devices() {
		free, total := d.Memory()
		fmt.Printf("  %-6s %-5v %s (%d of %d MiB free)\n", d.Name(), d.Type(), d.Description(), free>>20, total>>20)
	}

	be, err := backend.InitBest()
	if err != nil {
		return err
	}
	defer be.Close()
	fmt.Printf("running on: %s\n", be.Name())

	rng := rand.New(rand.NewPCG(1, 2))
	randn := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	w1, b1 := randn(nIn*nHidden), randn(nHidden)
	w2, b2 := randn(nHidden*nOut), randn(nOut)
	xs := randn(nIn * batch)

	// Weights: metadata in a context, data in a backend buffer.
	weights, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true})
	if err != nil {
		return err
	}
	defer weights.Close()
	tw1 := weights.NewTensor(ggml.TypeF32, nIn, nHidden).SetName("w1")
	tb1 := weights.NewTensor(ggml.TypeF32, nHidden).SetName("b1")
	tw2 := weights.NewTensor(ggml.TypeF32, nHidden, nOut).SetName("w2")
	tb2 := weights.NewTensor(ggml.TypeF32, nOut).SetName("b2")
	wbuf, err := backend.AllocContextTensors(weights, be)
	if err != nil {
		return err
	}
	defer wbuf.Close()
	for _, p := range []struct {
		t *ggml.Tensor
		v []float32
	}{{tw1, w1}, {tb1, b1}, {tw2, w2}, {tb2, b2}} {
		if err := ggml.SetData(p.t, p.v); err != nil {
			return err
		}
	}

	// The graph: y = w2 · relu(w1 · x + b1) + b2.
	compute, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 16, NoAlloc: true, Graph: true})
	if err != nil {
		return err
	}
	defer compute.Close()
	x := compute.NewTensor(ggml.TypeF32, nIn, batch).SetName("x").SetInput()
	h := compute.Relu(compute.Add(compute.MulMat(tw1, x), tb1))
	y := compute.Add(compute.MulMat(tw2, h), tb2).SetName("y").SetOutput()
	g, err := compute.BuildGraph(y)
	if err != nil {
		return err
	}
	cbuf, err := backend.AllocContextTensors(compute, be)
	if err != nil {
		return err
	}
	defer cbuf.Close()
	if err := ggml.SetData(x, xs); err != nil {
		return err
	}
	if err := be.Compute(context.Background(), g); err != nil {
		return err
	}
	out, err := ggml.Data[float32](y)
	if err != nil {
		return err
	}

	// The same network in float64.
	ref := make([]float64, nOut*batch)
	for n := range batch {
		hid := make([]float64, nHidden)
		for j := range nHidden {
			s := float64(b1[j])
			for i := range nIn {
				s += float64(w1[j*nIn+i]) * float64(xs[n*nIn+i])
			}
			hid[j] = math.Max(s, 0)
		}
		for k := range nOut {
			s := float64(b2[k])
			for j := range nHidden {
				s += float64(w2[k*nHidden+j]) * hid[j]
			}
			ref[n*nOut+k] = s
		}
	}

	fmt.Printf("graph: %d nodes, %d leafs\n", g.NumNodes(), g.NumLeafs())
	fmt.Printf("output y %v:\n", y.Shape())
	maxRel := 0.0
	for n := range batch {
		fmt.Printf("  sample %d:", n)
		for k := range nOut {
			v, r := float64(out[n*nOut+k]), ref[n*nOut+k]
			fmt.Printf(" %9.5f", v)
			maxRel = math.Max(maxRel, math.Abs(v-r)/math.Max(math.Abs(r), 1))
		}
		fmt.Println()
	}
	fmt.Printf("largest difference from the float64 reference: %.3g (relative)\n", maxRel)
	if maxRel > 1e-5 {
		return fmt.Errorf("difference %.3g exceeds 1e-5", maxRel)
	}
	return nil
}
