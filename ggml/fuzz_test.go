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
	f.Fuzz(func(t *testing.T, data []byte) { fuzzGraph(t, be, data, firstOps) })
}

// FuzzOpsMore is FuzzOps over the ops added after FuzzOps' corpus was
// recorded (moreOps).
//
//	go test ./ggml -run '^$' -fuzz FuzzOpsMore -fuzztime 3m
func FuzzOpsMore(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte{12, 3, 3, 1, 9, 200, 17, 4, 4, 4, 30, 1, 2, 99, 5, 6, 7, 8, 1, 1})
	f.Add([]byte{39, 2, 1, 1, 0, 0, 1, 3, 2, 2, 1, 0, 0, 30, 1, 1, 1, 0, 0, 0, 0})
	be, err := backend.InitByName("CPU", "")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { be.Close() })
	f.Fuzz(func(t *testing.T, data []byte) { fuzzGraph(t, be, data, moreOps) })
}

// opPicker builds one op from the fuzz bytes.
type opPicker func(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor

// fuzzGraph builds up to 12 ops from data with op, then builds, allocates
// and computes the graph of the last one that succeeded.
func fuzzGraph(t *testing.T, be *backend.Backend, data []byte, op opPicker) {

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
		out := op(c, r, a, b, pick)
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
}

// firstOps is FuzzOps' op picker: its byte mapping is that of the seed
// corpus in testdata/fuzz/FuzzOps, so keep it as it is.
func firstOps(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) (out *ggml.Tensor) {
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
			out = moreOps(c, r, a, b, pick)
		}
	}
	return out
}

// moreOps reaches the ops added after the fuzz corpus was first recorded:
// the seeds keep their meaning above, the rest comes through here.
func moreOps(c *ggml.Context, r *byteReader, a, b *ggml.Tensor, pick func() *ggml.Tensor) *ggml.Tensor {
	f := func(k int) float32 { return float32(r.n(k)) - float32(k/2) }
	mode := ggml.ScaleMode(r.n(3))
	switch r.n(60) {
	case 0:
		return c.Silu(a)
	case 1:
		return c.Clamp(a, f(5), f(5))
	case 2:
		return c.TopK(a, r.n(6))
	case 3:
		return c.ArgsortTopK(a, r.n(6))
	case 4:
		return c.Repeat4D(a, int64(r.n(9)), int64(r.n(5)), int64(r.n(3)), 1)
	case 5:
		return c.PadExt(a, ggml.Padding{{r.n(3), r.n(3)}, {r.n(2), r.n(2)}})
	case 6:
		return c.Roll(a, r.n(5)-2, r.n(3)-1, 0, 0)
	case 7:
		return c.Cast(a, []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0, ggml.TypeI32, ggml.TypeQ4_K, ggml.TypeIQ2_XXS}[r.n(6)])
	case 8:
		return c.Dup(a)
	case 9:
		return c.Set1D(a, b, uint64(4*r.n(10)))
	case 10:
		return c.SetRows(a, b, pick())
	case 11:
		return c.GroupNorm(a, r.n(4), 1e-5)
	case 12:
		return c.FlashAttnExt(a, b, pick(), []*ggml.Tensor{nil, pick()}[r.n(2)], ggml.FlashAttnParams{Scale: 0.5, MaxBias: f(3), LogitSoftcap: float32(r.n(2)) * 10})
	case 13:
		return c.Rope(a, b, ggml.RopeParams{Dims: r.n(10), Mode: []ggml.RopeMode{ggml.RopeMRope, ggml.RopeIMRope, ggml.RopeVision}[r.n(3)],
			Sections: [4]int{r.n(3), r.n(3), r.n(2), 0}, FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
	case 14:
		return c.AddInPlace(a, b)
	case 15:
		return c.UnaryInPlace(a, ggml.UnaryOp(r.n(24)))
	case 16:
		return c.Unary(a, ggml.UnaryOp(r.n(24)))
	case 17:
		return c.Acc(a, b, uint64(4*r.n(8)), uint64(4*r.n(16)), 0, uint64(4*r.n(4)))
	case 18:
		return c.AddCast(a, b, []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeQ8_0}[r.n(3)])
	case 19:
		return c.RepeatBack(a, b)
	case 20:
		return c.Diag(a)
	case 21:
		return c.Tri(a, ggml.TriType(r.n(5)))
	case 22:
		return c.Fill(a, f(5))
	case 23:
		return c.ContND(a, int64(r.n(9)), int64(1+r.n(4)))
	case 24:
		return c.SwigluOAI(a, b, 1.7, float32(r.n(4)))
	case 25:
		return c.SiluBack(a, b)
	case 26:
		return c.RMSNormBack(a, b, 1e-5)
	case 27:
		return c.SoftMaxExtBack(a, b, 1, 0)
	case 28:
		return c.GetRowsBack(a, b, pick())
	case 29:
		return c.OutProd(a, b)
	case 30:
		return c.MulMatID(a, b, pick())
	case 31:
		return c.AddID(a, b, pick())
	case 32:
		return c.SSMConv(a, b)
	case 33:
		return c.SolveTri(a, b, true, true, false)
	case 34:
		return c.WinPart(a, r.n(4))
	case 35:
		return c.GetRelPos(a, r.n(4), r.n(4))
	case 36:
		return c.CrossEntropyLoss(a, b)
	case 37:
		return c.Im2Col(a, b, 1+r.n(2), 1+r.n(2), r.n(2), r.n(2), 1+r.n(2), 1, r.n(2) == 0, []ggml.Type{ggml.TypeF32, ggml.TypeF16}[r.n(2)])
	case 38:
		return c.Conv1D(a, b, 1+r.n(2), r.n(2), 1+r.n(2))
	case 39:
		return c.Conv2D(a, b, 1+r.n(2), 1+r.n(2), r.n(2), r.n(2), 1, 1)
	case 40:
		return c.Conv2DDW(a, b, 1, 1, r.n(2), r.n(2), 1, 1)
	case 41:
		return c.ConvTranspose1D(a, b, 1+r.n(2), 0, 1)
	case 42:
		return c.ConvTranspose2D(a, b, 1+r.n(2))
	case 43:
		return c.Pool1D(a, ggml.PoolOp(r.n(3)), 1+r.n(3), 1+r.n(3), r.n(2))
	case 44:
		return c.Pool2D(a, ggml.PoolOp(r.n(3)), 1+r.n(3), 1+r.n(3), 1+r.n(2), 1+r.n(2), r.n(2), r.n(2))
	case 45:
		return c.Upscale(a, r.n(4), mode)
	case 46:
		return c.Interpolate(a, int64(r.n(9)), int64(r.n(5)), int64(1+r.n(2)), 1, mode|ggml.ScaleMode(r.n(2)<<8))
	case 47:
		return c.TimestepEmbedding(a, r.n(9), 10000)
	case 48:
		return c.PadReflect1D(a, r.n(3), r.n(3))
	case 49:
		return c.Conv2DDirect(a, b, 1, 1, r.n(2), r.n(2), 1, 1)
	case 50:
		return c.MapCustom1(a, func(dst ggml.CustomView, src []ggml.CustomView, ith, nth int) {
			if ith == 0 {
				copy(dst.Bytes(), src[0].Bytes())
			}
		}, r.n(3))
	case 51:
		return c.SoftMaxExtSinks(a, []*ggml.Tensor{nil, b}[r.n(2)], pick(), 1, 0)
	case 52:
		return c.Set2D(a, b, uint64(4*r.n(16)), uint64(4*r.n(4)))
	case 53:
		return c.OptStepSGD(a, b, pick())
	case 54:
		return c.LeakyReluInPlace(a, 0.1)
	case 55:
		return c.SoftMaxInPlace(a)
	case 56:
		return c.XIELU(a, 0.8, 0.8, 0.5, -1e-6)
	case 57:
		return c.MulMatPrec(a, b, ggml.Precision(10*r.n(2)))
	case 58:
		return c.Conv1DDW(a, b, 1, r.n(2), 1)
	default:
		return c.RopeBack(a, b, ggml.RopeParams{Dims: r.n(10), Mode: ggml.RopeMode(2 * r.n(2)), FreqBase: 10000, FreqScale: 1, AttnFactor: 1})
	}
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
