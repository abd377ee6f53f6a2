package ggml_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// FuzzViews makes views (View1D..View4D, of a tensor or of a view of it)
// with strides and offsets from a table of extremes (2^63, values that wrap
// to small negatives, the source's size) or raw 64-bit values. A view must
// be refused with ErrShape or lie inside its source: Cont of an accepted
// view computes, and equals the elements read in Go at the view's strides.
//
//	go test ./ggml -run '^$' -fuzz FuzzViews -fuzztime 3m
func FuzzViews(f *testing.F) {
	f.Add([]byte{1, 0, 1, 3, 9, 0})                                 // View2D(x, 1, 3, 1<<63, 0): wrapped past the check
	f.Add([]byte{1, 0, 1, 2, 10, 0, 0})                             // View2D(x, 1, 2, -4, 0): read 4 bytes before x
	f.Add([]byte{3, 1, 32, 4, 1, 1, 1, 2, 0, 0, 0, 0, 10, 0, 1, 0}) // View4D of a view, nb3 -4
	f.Add([]byte{1, 0, 4, 3, 4, 0, 2, 0})                           // View2D(x, 4, 3, 16, 8): in bounds
	be, err := backend.InitByName("CPU", "")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { be.Close() })
	f.Fuzz(func(t *testing.T, data []byte) { fuzzView(t, be, data) })
}

func fuzzView(t *testing.T, be *backend.Backend, data []byte) {
	const n = 64 // f32 elements of the source
	r := &byteReader{b: data}
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true, Graph: true, GraphSize: 16})
	require.NoError(t, err)
	defer c.Close()
	x := c.NewTensor(ggml.TypeF32, n)
	// A stride or offset: small multiples of 4, the extremes, or 8 raw bytes.
	num := func() uint64 {
		switch k := r.n(12); k {
		case 0, 1, 2, 3, 4, 5, 6:
			return uint64(4 * k * (1 + r.n(8)))
		case 7:
			return 4 * n
		case 8:
			return 4*n - 4
		case 9:
			return 1 << 63
		case 10:
			return math.MaxUint64 - 4*uint64(r.n(4)) - 3 // -4, -8, ...
		default:
			var b [8]byte
			for i := range b {
				b[i] = byte(r.n(256))
			}
			return binary.LittleEndian.Uint64(b[:])
		}
	}
	dims := 1 + r.n(4)
	src := x
	if r.n(2) == 1 {
		src = c.View1D(x, int64(r.n(n+1)), 4*uint64(r.n(n+1)))
		if src.Err() != nil {
			require.ErrorIs(t, src.Err(), ggml.ErrShape)
			return
		}
	}
	var ne [4]int64
	for i := range dims {
		ne[i] = int64(r.n(5))
	}
	var v *ggml.Tensor
	switch dims {
	case 1:
		v = c.View1D(src, ne[0], num())
	case 2:
		v = c.View2D(src, ne[0], ne[1], num(), num())
	case 3:
		v = c.View3D(src, ne[0], ne[1], ne[2], num(), num(), num())
	default:
		v = c.View4D(src, ne[0], ne[1], ne[2], ne[3], num(), num(), num(), num())
	}
	if err := v.Err(); err != nil {
		var ae *ggml.AssertError
		require.False(t, errors.As(err, &ae), "a view reached a ggml assert: %v", err)
		require.ErrorIs(t, err, ggml.ErrShape)
		if debugFuzz {
			t.Logf("refused: %v", err)
		}
		return
	}
	if v.Elements() == 0 {
		return
	}
	// Every element the view reaches lies in x (uint64 sums, no wrap:
	// the extent check guarantees it).
	vals := make([]float32, n)
	raw := make([]byte, 4*n)
	for i := range vals {
		vals[i] = float32(i)
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(vals[i]))
	}
	vn, nb, offs := v.Ne(), v.Nb(), v.ViewOffset()
	want := make([]float32, 0, v.Elements())
	for i3 := range vn[3] {
		for i2 := range vn[2] {
			for i1 := range vn[1] {
				for i0 := range vn[0] {
					at := offs + uint64(i0)*nb[0] + uint64(i1)*nb[1] + uint64(i2)*nb[2] + uint64(i3)*nb[3]
					require.LessOrEqual(t, at+4, uint64(len(raw)), "element (%d %d %d %d) of view %v nb %v at offset %d", i0, i1, i2, i3, vn, nb, offs)
					want = append(want, math.Float32frombits(binary.LittleEndian.Uint32(raw[at:])))
				}
			}
		}
	}
	if debugFuzz {
		t.Logf("view %v nb %v offset %d accepted", vn, nb, offs)
	}
	out := c.Cont(v)
	require.NoError(t, out.Err())
	g, err := c.BuildGraph(out)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	require.NoError(t, ggml.SetData(x, vals))
	require.NoError(t, be.Compute(context.Background(), g))
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	require.Equal(t, want, got)
}
