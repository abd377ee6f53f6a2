package backend_test

import (
	"context"
	"fmt"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// A backend on the CPU device, a buffer of its own buffer type holding a
// context's tensors, and a compute on it.
func Example() {
	dev, err := backend.DeviceByName("CPU")
	if err != nil {
		panic(err)
	}
	be, err := dev.Init("") // "": the device's default parameters
	if err != nil {
		panic(err)
	}
	defer be.Close()
	fmt.Println("device:", dev.Name(), dev.Type())

	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	a := c.NewTensor(ggml.TypeF32, 4)
	y := c.Scale(c.Add(a, a), 0.5) // (a + a) / 2
	g, err := c.BuildGraph(y)
	if err != nil {
		panic(err)
	}
	buf, err := backend.AllocContextTensors(c, be) // one buffer for a and the results
	if err != nil {
		panic(err)
	}
	defer buf.Close()
	fmt.Println("buffer type:", buf.Type().Name())
	if err := ggml.SetData(a, []float32{1, 2, 3, 4}); err != nil {
		panic(err)
	}
	if err := be.Compute(context.Background(), g); err != nil {
		panic(err)
	}
	ys, err := ggml.Data[float32](y)
	if err != nil {
		panic(err)
	}
	fmt.Println("y:", ys)
	// Output:
	// device: CPU CPU
	// buffer type: CPU
	// y: [1 2 3 4]
}
