package ggml_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// FuzzOps builds random graphs from the op set: random types, shapes, views
// and parameters, from bytes. Whatever the ops accept is allocated and
// computed on the CPU. The property: no input ends the process (a ggml
// assert or a crash); invalid inputs are errors.
//
//	go test ./ggml -run '^$' -fuzz FuzzOps -fuzztime 3m
func FuzzOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{7, 3, 3, 1, 9, 200, 17, 4, 4, 4, 30, 1, 2, 99, 5, 6, 7, 8, 1, 1})
	f.Add([]byte{255, 254, 0, 0, 128, 64, 32, 16, 8, 4, 2, 1})
	be, err := backend.InitByName("CPU", "")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { be.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{b: data}
		c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 64, NoAlloc: true, Graph: true, GraphSize: 256})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		types := []ggml.Type{ggml.TypeF32, ggml.TypeF32, ggml.TypeF16, ggml.TypeI32, ggml.TypeQ8_0, ggml.TypeBF16, ggml.TypeQ4_0, ggml.TypeI8}
		var pool []*ggml.Tensor
		newT := func() *ggml.Tensor {
			ty := types[r.n(len(types))]
			ne := []int64{int64(r.n(9)), int64(1 + r.n(4)), int64(1 + r.n(3)), int64(1 + r.n(2))}
			if ty.BlockSize() > 1 {
				ne[0] = ty.BlockSize() * int64(r.n(3))
			}
			return c.NewTensor(ty, ne[:1+r.n(4)]...)
		}
		pick := func() *ggml.Tensor {
			if len(pool) == 0 || r.n(4) == 0 {
				t := newT()
				pool = append(pool, t)
				return t
			}
			return pool[r.n(len(pool))]
		}
		for step := 0; step < 12 && !r.done(); step++ {
			a, b := pick(), pick()
			var out *ggml.Tensor
			switch r.n(30) {
			case 0:
				out = c.Add(a, b)
			case 1:
				out = c.Sub(a, b)
			case 2:
				out = c.Mul(a, b)
			case 3:
				out = c.Div(a, b)
			case 4:
				out = c.MulMat(a, b)
			case 5:
				out = c.Scale(a, float32(r.n(5))-2)
			case 6:
				out = c.Relu(a)
			case 7:
				out = c.Exp(a)
			case 8:
				out = c.SoftMaxExt(a, []*ggml.Tensor{nil, b}[r.n(2)], 0.5, float32(r.n(2)))
			case 9:
				out = c.SumRows(a)
			case 10:
				out = c.Reshape(a, int64(r.n(9)), int64(1+r.n(4)))
			case 11:
				out = c.View2D(a, int64(r.n(9)), int64(r.n(4)), uint64(r.n(64)), uint64(r.n(64)))
			case 12:
				out = c.Permute(a, r.n(4), r.n(4), r.n(4), r.n(4))
			case 13:
				out = c.Transpose(a)
			case 14:
				out = c.Cont(a)
			case 15:
				out = c.GetRows(a, b)
			case 16:
				out = c.Cpy(a, b)
			case 17:
				out = c.Sum(a)
			case 18:
				out = c.Mean(a)
			case 19:
				out = c.Argmax(a)
			case 20:
				out = c.RMSNorm(a, 1e-5)
			case 21:
				out = c.Repeat(a, b)
			case 22:
				out = c.Concat(a, b, r.n(5))
			case 23:
				out = c.Rope(a, b, ggml.RopeParams{Dims: r.n(10), Mode: ggml.RopeMode(2 * r.n(2)), FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
			case 24:
				out = c.GLU(a, ggml.GLUOp(r.n(7)), r.n(2) == 0)
			case 25:
				out = c.DiagMaskInf(a, r.n(3))
			case 26:
				out = c.Argsort(a, ggml.SortOrder(r.n(2)))
			case 27:
				out = c.Pad(a, r.n(3), r.n(3), 0, 0)
			case 28:
				out = c.View1D(a, int64(r.n(20)), uint64(r.n(40)))
			default:
				switch r.n(5) {
				case 0:
					out = c.ScaleBias(a, float32(r.n(5))-2, 1)
				case 1:
					out = c.L2Norm(a, float32(r.n(3))-1)
				case 2:
					out = c.Add1(a, b)
				case 3:
					out = c.Arange(float32(r.n(9))-4, float32(r.n(9))-4, float32(r.n(5))-1)
				default:
					out = c.Silu(a)
				}
			}
			if out.Err() == nil {
				pool = append(pool, out)
			}
			if c.Err() != nil {
				break
			}
		}
		var ae *ggml.AssertError
		if errors.As(c.Err(), &ae) {
			t.Fatalf("an op reached a ggml assert (a check is missing): %v", c.Err())
		}
		if c.Err() != nil || len(pool) == 0 {
			return // the errors are the point: the process lives
		}
		g, err := c.BuildGraph(pool[len(pool)-1])
		if err != nil {
			return
		}
		if g.NumNodes() == 0 {
			return
		}
		buf, err := backend.AllocContextTensors(c, be)
		if err != nil {
			return
		}
		defer buf.Close()
		for _, t := range pool { // indices must be valid rows: zero is
			if t.Type() == ggml.TypeI32 && t.IsContiguous() && t.ViewSource() == nil {
				_ = ggml.SetData(t, make([]int32, t.Elements()))
			}
		}
		if debugFuzz {
			for _, n := range g.Nodes() {
				t.Logf("node %s %v %v nb %v src %v", n.Op(), n.Type(), n.Ne(), n.Nb(), n.Sources())
			}
			for _, n := range g.Leafs() {
				t.Logf("leaf %v %v nb %v", n.Type(), n.Ne(), n.Nb())
			}
		}
		if err := be.Compute(context.Background(), g); errors.As(err, &ae) {
			// Recovered on this thread, but ggml's worker threads may be
			// left waiting: a check is missing.
			t.Fatalf("compute reached a ggml assert (a check is missing): %v", err)
		}
	})
}

type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) done() bool { return r.i >= len(r.b) }

// n returns a number in [0, k) from the next byte (0 once the bytes run out).
func (r *byteReader) n(k int) int {
	if r.i >= len(r.b) || k <= 0 {
		return 0
	}
	v := int(r.b[r.i]) % k
	r.i++
	return v
}

var debugFuzz = os.Getenv("GGML_FUZZ_DEBUG") != ""
