package ggml_test

import (
	"context"
	"fmt"
	"math"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// A graph built in a context, its tensors allocated in a CPU backend's
// buffer, computed, and its result read back.
func Example() {
	be, err := backend.InitByName("CPU", "")
	if err != nil {
		panic(err)
	}
	defer be.Close()
	// Room for 8 tensors' metadata and one graph; the data lives in
	// backend buffers (NoAlloc).
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	w := c.NewTensor(ggml.TypeF32, 3, 2) // 2 rows of 3: ne[0] is the innermost size
	x := c.NewTensor(ggml.TypeF32, 3, 1)
	y := c.MulMat(w, x) // [2 1], shown as [2]: each row of w times x
	g, err := c.BuildGraph(y)
	if err != nil {
		panic(err)
	}
	buf, err := backend.AllocContextTensors(c, be)
	if err != nil {
		panic(err)
	}
	defer buf.Close()
	if err := ggml.SetData(w, []float32{1, 2, 3, 4, 5, 6}); err != nil {
		panic(err)
	}
	if err := ggml.SetData(x, []float32{1, 0, -1}); err != nil {
		panic(err)
	}
	if err := be.Compute(context.Background(), g); err != nil {
		panic(err)
	}
	ys, err := ggml.Data[float32](y)
	if err != nil {
		panic(err)
	}
	fmt.Println(y.Shape(), ys)
	// Output: [2] [-2 -2]
}

// Quantize packs float32 rows into a quantized type's blocks; Dequantize
// unpacks them.
func ExampleQuantize() {
	src := make([]float32, 64) // two rows of 32: one q8_0 block each
	for i := range src {
		src[i] = float32(i%32) - 15.5
	}
	q, err := ggml.Quantize(ggml.TypeQ8_0, src, 32, nil)
	if err != nil {
		panic(err)
	}
	back, err := ggml.Dequantize(ggml.TypeQ8_0, q)
	if err != nil {
		panic(err)
	}
	worst := 0.0
	for i := range src {
		worst = math.Max(worst, math.Abs(float64(back[i]-src[i])))
	}
	step := 15.5 / 127 // a block's scale: its largest magnitude over 127
	fmt.Printf("%d floats in %d bytes; every value within half a step: %v\n", len(src), len(q), worst <= step/2+1e-6)
	// Output: 64 floats in 68 bytes; every value within half a step: true
}
