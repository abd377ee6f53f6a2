package sched_test

import (
	"context"
	"fmt"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/sched"
)

// The usage from ggml's header comment: reserve with a graph of the largest
// size, compute a graph ten times, then for new inputs build a graph,
// reset, allocate, set the inputs and compute.
func Example() {
	cpu, err := backend.InitByName("CPU", "")
	if err != nil {
		panic(err)
	}
	defer cpu.Close()

	// Weights in a buffer of their own, marked as weights.
	weights, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	defer weights.Close()
	w := weights.NewTensor(ggml.TypeF32, 3, 2).SetName("w") // a 2x3 matrix, rows of 3
	wbuf, err := backend.AllocContextTensors(weights, cpu)
	if err != nil {
		panic(err)
	}
	defer wbuf.Close()
	_ = wbuf.SetUsage(backend.UsageWeights)
	_ = ggml.SetData(w, []float32{1, 2, 3, 4, 5, 6})

	s, err := sched.New([]*backend.Backend{cpu}, sched.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	// build returns y = w · x for a batch of columns of 3.
	build := func(batch int64) (*ggml.Graph, *ggml.Tensor, *ggml.Tensor, func()) {
		c, _ := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
		x := c.NewTensor(ggml.TypeF32, 3, batch).SetName("x").SetInput()
		y := c.MulMat(w, x).SetName("y").SetOutput()
		g, err := c.BuildGraph(y)
		if err != nil {
			panic(err)
		}
		return g, x, y, func() { c.Close() }
	}

	// Initialize the buffers from a graph of the largest size.
	reserve, _, _, done := build(8)
	if err := s.Reserve(reserve); err != nil {
		panic(err)
	}
	done()

	// Compute: the first compute allocates the graph.
	g, x, y, done := build(1)
	defer done()
	if err := s.AllocGraph(g); err != nil {
		panic(err)
	}
	_ = ggml.SetData(x, []float32{1, 1, 1})
	for range 10 {
		if err := s.Compute(context.Background(), g); err != nil {
			panic(err)
		}
	}
	out, err := ggml.Data[float32](y)
	if err != nil {
		panic(err)
	}
	fmt.Println("y =", out)

	// New inputs: a new graph, reset, allocate, set the inputs, compute.
	g2, x2, y2, done2 := build(2)
	defer done2()
	_ = s.Reset()
	if err := s.AllocGraph(g2); err != nil {
		panic(err)
	}
	_ = ggml.SetData(x2, []float32{1, 0, 0, 0, 0, 1})
	if err := s.Compute(context.Background(), g2); err != nil {
		panic(err)
	}
	out2, err := ggml.Data[float32](y2)
	if err != nil {
		panic(err)
	}
	fmt.Println("y =", out2)
	_, err = ggml.Data[float32](y)
	fmt.Println("the first graph's output after the reset:", err)
	// Output:
	// y = [6 15]
	// y = [1 4 3 6]
	// the first graph's output after the reset: ggml: Data: tensor not allocated: the scheduler that allocated the tensor was reset since
}
