// Command quickstart multiplies two small matrices with go-ggml on the best
// backend in ggml's registry and checks the product against float64. It is
// the README's "Using the library" program.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(out io.Writer) error {
	// w has m rows of k values, x has n rows of k values; y = w·x has n rows of m.
	k, m, n := 4, 2, 3
	ws := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	xs := []float32{1, 0, 0, 1, 0, 1, 1, 0, 0.5, 0.5, -1, 2}

	be, err := backend.InitBest() // the best device in ggml's registry (GPU, else CPU)
	if err != nil {
		return err
	}
	defer be.Close()

	// The weights: tensor metadata in a context, the data in a backend buffer.
	// NewTensor takes int64 sizes (ggml's int64_t): convert int variables.
	weights, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	if err != nil {
		return err
	}
	defer weights.Close()
	w := weights.NewTensor(ggml.TypeF32, int64(k), int64(m)) // ne0 = k (innermost), ne1 = m
	wbuf, err := backend.AllocContextTensors(weights, be)
	if err != nil {
		return err
	}
	defer wbuf.Close()
	if err := ggml.SetData(w, ws); err != nil {
		return err
	}

	// The graph. Ops are methods of the context that owns their result; an
	// op that fails records its error there, and BuildGraph returns it.
	compute, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	if err != nil {
		return err
	}
	defer compute.Close()
	x := compute.NewTensor(ggml.TypeF32, int64(k), int64(n)).SetName("x").SetInput()
	y := compute.MulMat(w, x).SetName("y").SetOutput() // shape [m n]
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
	if err := be.Compute(context.Background(), g); err != nil { // a cancelled context stops the CPU between nodes
		return err
	}
	ys, err := ggml.Data[float32](y)
	if err != nil {
		return err
	}

	// The same product in float64: y[j][i] = sum over l of w[i][l] * x[j][l].
	fmt.Fprintf(out, "y = w·x on %s, shape %v:\n", be.Name(), y.Shape())
	maxDiff := 0.0
	for j := range n {
		for i := range m {
			ref := 0.0
			for l := range k {
				ref += float64(ws[i*k+l]) * float64(xs[j*k+l])
			}
			maxDiff = math.Max(maxDiff, math.Abs(float64(ys[j*m+i])-ref))
			fmt.Fprintf(out, " %6.2f", ys[j*m+i])
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "largest difference from float64: %.3g\n", maxDiff)
	if maxDiff > 1e-4 {
		return fmt.Errorf("the product differs from float64 by %.3g", maxDiff)
	}
	return nil
}
