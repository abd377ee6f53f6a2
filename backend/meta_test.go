package backend_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/sched"
)

func needMeta(t *testing.T) {
	t.Helper()
	if !backend.HaveMeta {
		t.Skip("needs the meta device: build with -tags ggml_system (upstream ggml)")
	}
}

func TestMetaUnsupported(t *testing.T) {
	if backend.HaveMeta {
		t.Skip("this binary has the meta device")
	}
	d, err := backend.DeviceByName("CPU")
	require.NoError(t, err)
	_, err = backend.NewMetaDevice([]*backend.Device{d}, func(*ggml.Tensor) (backend.Split, error) { return backend.Mirrored(), nil })
	require.ErrorIs(t, err, backend.ErrUnsupported)
	assert.Contains(t, err.Error(), "-tags ggml_system")
}

// splitsByName is a split function from tensor names; unknown names are
// MIRRORED.
func splitsByName(m map[string]backend.Split) backend.SplitFunc {
	return func(t *ggml.Tensor) (backend.Split, error) {
		if s, ok := m[t.Name()]; ok {
			return s, nil
		}
		return backend.Mirrored(), nil
	}
}

func cpuDevice(t *testing.T) *backend.Device {
	d, err := backend.DeviceByName("CPU")
	require.NoError(t, err)
	return d
}

// metaCPU is a meta device over the CPU device n times.
func metaCPU(t *testing.T, n int, split backend.SplitFunc) *backend.Device {
	t.Helper()
	devs := make([]*backend.Device, n)
	for i := range devs {
		devs[i] = cpuDevice(t)
	}
	md, err := backend.NewMetaDevice(devs, split)
	require.NoError(t, err)
	return md
}

func TestMetaDevice(t *testing.T) {
	needMeta(t)
	md := metaCPU(t, 2, splitsByName(nil))
	assert.Equal(t, backend.DeviceMeta, md.Type())
	// (ggml v0.21.0 names it "Meta()": its constructor reads the device
	// list after moving it.)
	assert.Contains(t, md.Name(), "Meta(")
	assert.Len(t, md.MetaDevices(), 2)
	assert.Nil(t, cpuDevice(t).MetaDevices())
	free, total := md.Memory()
	assert.Positive(t, total)
	assert.LessOrEqual(t, free, total)
	bt := md.BufferType()
	require.NotNil(t, bt)
	assert.True(t, md.SupportsBufferType(bt))
	assert.False(t, md.SupportsBufferType(cpuDevice(t).BufferType()))
	// ggml calls a meta buffer over CPU devices host memory; its addresses
	// are placeholders, so IsHost says no.
	mb, err := bt.AllocBuffer(1 << 12)
	require.NoError(t, err)
	assert.False(t, mb.IsHost(), "a meta buffer's addresses are placeholders")
	require.NoError(t, mb.Close())
	pb, err := cpuDevice(t).BufferType().AllocBuffer(1 << 12)
	require.NoError(t, err)
	assert.True(t, pb.IsHost(), "a CPU buffer is host memory")
	require.NoError(t, pb.Close())

	// What NewMetaDevice refuses.
	mirror := splitsByName(nil)
	_, err = backend.NewMetaDevice(nil, mirror)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	many := make([]*backend.Device, backend.MaxMetaDevices+1)
	for i := range many {
		many[i] = cpuDevice(t)
	}
	_, err = backend.NewMetaDevice(many, mirror)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = backend.NewMetaDevice(many[:backend.MaxMetaDevices], mirror)
	require.NoError(t, err, "16 devices, the same one repeated")
	_, err = backend.NewMetaDevice([]*backend.Device{cpuDevice(t)}, nil)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = backend.NewMetaDevice([]*backend.Device{md}, mirror)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = backend.NewMetaDevice([]*backend.Device{nil}, mirror)
	require.ErrorIs(t, err, ggml.ErrInvalid)
}

// weights makes a NoAlloc context with the given tensors (name → type and
// shape), allocated on bt.
func weights(t *testing.T, bt *backend.BufferType, specs ...tensorSpec) (map[string]*ggml.Tensor, *backend.Buffer, error) {
	t.Helper()
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: len(specs) + 1, NoAlloc: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	out := map[string]*ggml.Tensor{}
	for _, s := range specs {
		out[s.name] = c.NewTensor(s.typ, s.ne...).SetName(s.name)
	}
	buf, err := backend.AllocContextTensorsFromType(c, bt)
	if err == nil {
		t.Cleanup(func() { buf.Close() })
		// Under a scheduler, ops reading weights run on their backend.
		require.NoError(t, buf.SetUsage(backend.UsageWeights))
	}
	return out, buf, err
}

type tensorSpec struct {
	name string
	typ  ggml.Type
	ne   []int64
}

func spec(name string, ne ...int64) tensorSpec { return tensorSpec{name, ggml.TypeF32, ne} }

// TestMetaSplitErrors: splits that do not add up, errors and panics of the
// split function are errors of the allocation, never aborts.
func TestMetaSplitErrors(t *testing.T) {
	needMeta(t)
	cases := []struct {
		name  string
		typ   ggml.Type
		ne    []int64
		split backend.SplitFunc
		want  error
	}{
		{"sum too small", ggml.TypeF32, []int64{8, 4}, func(*ggml.Tensor) (backend.Split, error) {
			return backend.SplitSizes(backend.SplitAxis1, 1, 2), nil
		}, ggml.ErrInvalid},
		{"sizes for 3 devices", ggml.TypeF32, []int64{8, 4}, func(*ggml.Tensor) (backend.Split, error) {
			return backend.SplitSizes(backend.SplitAxis1, 1, 2, 1), nil
		}, ggml.ErrInvalid},
		{"negative", ggml.TypeF32, []int64{8, 4}, func(*ggml.Tensor) (backend.Split, error) {
			return backend.SplitSizes(backend.SplitAxis1, -1, 5), nil
		}, ggml.ErrInvalid},
		{"axis 0 off the block size", ggml.TypeQ8_0, []int64{64, 2}, func(*ggml.Tensor) (backend.Split, error) {
			return backend.SplitSizes(backend.SplitAxis0, 16, 48), nil
		}, ggml.ErrInvalid},
		{"unknown axis", ggml.TypeF32, []int64{8, 4}, func(*ggml.Tensor) (backend.Split, error) {
			return backend.Split{Axis: 7}, nil
		}, ggml.ErrInvalid},
		{"partial f16", ggml.TypeF16, []int64{8, 4}, func(*ggml.Tensor) (backend.Split, error) {
			return backend.Partial(), nil
		}, ggml.ErrInvalid},
		{"mirrored with segments", ggml.TypeF32, []int64{8, 4}, func(*ggml.Tensor) (backend.Split, error) {
			return backend.Split{Axis: backend.SplitMirrored, Segments: []backend.Segment{{Sizes: []int64{1, 1}}}}, nil
		}, ggml.ErrInvalid},
		{"segments along axis 2", ggml.TypeF32, []int64{2, 2, 4}, func(*ggml.Tensor) (backend.Split, error) {
			return backend.Split{Axis: backend.SplitAxis2, Segments: []backend.Segment{{Sizes: []int64{1, 1}}, {Sizes: []int64{1, 1}}}}, nil
		}, ggml.ErrInvalid},
		{"an error", ggml.TypeF32, []int64{8, 4}, func(*ggml.Tensor) (backend.Split, error) {
			return backend.Split{}, errSplit
		}, errSplit},
		{"a panic", ggml.TypeF32, []int64{8, 4}, func(*ggml.Tensor) (backend.Split, error) {
			panic("split function bug")
		}, ggml.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			md := metaCPU(t, 2, tc.split)
			_, _, err := weights(t, md.BufferType(), tensorSpec{"w", tc.typ, tc.ne})
			require.ErrorIs(t, err, tc.want)
		})
	}
}

var errSplit = errors.New("no split for you")

// metaRig is a meta device over the CPU twice, its backend, and a
// scheduler {meta, cpu}.
type metaRig struct {
	md   *backend.Device
	meta *backend.Backend
	s    *sched.Scheduler
}

func newMetaRig(t *testing.T, n int, split backend.SplitFunc) *metaRig {
	t.Helper()
	r := &metaRig{md: metaCPU(t, n, split)}
	var err error
	r.meta, err = r.md.Init("")
	require.NoError(t, err)
	t.Cleanup(func() { r.meta.Close() })
	r.s, err = sched.New([]*backend.Backend{r.meta, backendtest.CPU(t)}, sched.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { r.s.Close() })
	return r
}

// run allocates and computes g on the scheduler.
func (r *metaRig) run(t *testing.T, g *ggml.Graph) error {
	t.Helper()
	require.NoError(t, r.s.Reset())
	if err := r.s.AllocGraph(g); err != nil {
		return err
	}
	return r.s.Compute(context.Background(), g)
}

func computeCtx(t *testing.T) *ggml.Context {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 32, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func setF32(t *testing.T, rng *rand.Rand, x *ggml.Tensor) []float32 {
	t.Helper()
	v := testutil.RandF32(rng, int(x.Elements()))
	require.NoError(t, ggml.SetData(x, v))
	return v
}

func near(t *testing.T, want []float64, got []float32, tol float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], float64(got[i]), tol*math.Max(1, math.Abs(want[i])), "element %d", i)
	}
}

// mm64 is a·b for a [k, m] and b [k, n] (ggml's mul_mat) in float64.
func mm64(a, b []float32, k, m, n int) []float64 {
	out := make([]float64, m*n)
	for j := range n {
		for i := range m {
			s := 0.0
			for l := range k {
				s += float64(a[i*k+l]) * float64(b[j*k+l])
			}
			out[j*m+i] = s
		}
	}
	return out
}

// TestMetaWeightsRoundTrip: weights written through a meta buffer, split
// along each axis, MIRRORED and segmented, read back whole; axis 3 and
// PARTIAL are written but not read (ggml's meta buffer cannot).
func TestMetaWeightsRoundTrip(t *testing.T) {
	needMeta(t)
	rng := testutil.NewRNG(t)
	splits := map[string]backend.Split{
		"a0":  backend.SplitSizes(backend.SplitAxis0, 4, 8),
		"a1":  backend.SplitSizes(backend.SplitAxis1, 3, 0), // a device may hold nothing
		"a2":  backend.SplitSizes(backend.SplitAxis2, 1, 3),
		"a3":  backend.SplitSizes(backend.SplitAxis3, 1, 1),
		"mir": backend.Mirrored(),
		"par": backend.Partial(),
		// Three segments (a fused QKV of 4+2+2 rows), each split between
		// the devices; the last repeated twice.
		"seg": {Axis: backend.SplitAxis1, Segments: []backend.Segment{{Sizes: []int64{3, 1}}, {Sizes: []int64{1, 1}, Repeat: 2}}},
		"q8":  backend.SplitSizes(backend.SplitAxis0, 32, 32),
	}
	md := metaCPU(t, 2, splitsByName(splits))
	w, _, err := weights(t, md.BufferType(),
		spec("a0", 12, 3), spec("a1", 5, 3), spec("a2", 2, 3, 4), spec("a3", 2, 2, 1, 2),
		spec("mir", 6, 2), spec("par", 4, 2), spec("seg", 5, 8))
	require.NoError(t, err)
	for _, name := range []string{"a0", "a1", "a2", "mir", "seg"} {
		v := setF32(t, rng, w[name])
		got, err := ggml.Data[float32](w[name])
		require.NoError(t, err, name)
		assert.Equal(t, v, got, name)
	}
	// Axis 3: ggml's meta buffer neither writes nor reads it.
	err = ggml.SetData(w["a3"], make([]float32, 8))
	require.ErrorIs(t, err, backend.ErrUnsupported)
	_, err = ggml.Data[float32](w["a3"])
	require.ErrorIs(t, err, backend.ErrUnsupported)
	// PARTIAL: written (value/n on each device), never read.
	setF32(t, rng, w["par"])
	_, err = ggml.Data[float32](w["par"])
	require.ErrorIs(t, err, backend.ErrUnsupported)
	assert.Contains(t, err.Error(), "partial sum")

	// A quantized weight split along axis 0 by whole blocks.
	md8 := metaCPU(t, 2, splitsByName(splits))
	w8, _, err := weights(t, md8.BufferType(), tensorSpec{"q8", ggml.TypeQ8_0, []int64{64, 3}})
	require.NoError(t, err)
	raw := make([]byte, w8["q8"].Bytes())
	for i := range raw {
		raw[i] = byte(rng.IntN(256))
	}
	require.NoError(t, ggml.SetBytes(w8["q8"], raw))
	back, err := ggml.Bytes(w8["q8"])
	require.NoError(t, err)
	assert.Equal(t, raw, back)
}

// TestMetaMLP: a two-layer MLP split the Megatron way under the scheduler:
// w1 by output rows (axis 1), w2 by input columns (axis 0); y = w2·h is a
// partial sum on each device, which the meta backend all-reduces for the
// node that reads it. Reading y itself (a partial sum) is refused.
func TestMetaMLP(t *testing.T) {
	needMeta(t)
	rng := testutil.NewRNG(t)
	const nIn, nHid, nOut, batch = 8, 12, 6, 3
	for _, n := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("%d devices", n), func(t *testing.T) {
			r := newMetaRig(t, n, func(w *ggml.Tensor) (backend.Split, error) {
				switch w.Name() {
				case "w1":
					return backend.EvenSplit(w, backend.SplitAxis1, n), nil
				case "w2":
					return backend.EvenSplit(w, backend.SplitAxis0, n), nil
				}
				return backend.Mirrored(), nil
			})
			ws, _, err := weights(t, r.meta.DefaultBufferType(), spec("w1", nIn, nHid), spec("w2", nHid, nOut))
			require.NoError(t, err)
			w1v, w2v := setF32(t, rng, ws["w1"]), setF32(t, rng, ws["w2"])

			c := computeCtx(t)
			x := c.NewTensor(ggml.TypeF32, nIn, batch).SetName("x").SetInput()
			h := c.Relu(c.MulMat(ws["w1"], x)).SetName("h").SetOutput()
			y := c.MulMat(ws["w2"], h).SetName("y").SetOutput()
			out := c.Scale(y, 1).SetName("out").SetOutput()
			g, err := c.BuildGraph(out)
			require.NoError(t, err)
			require.NoError(t, r.s.Reset())
			require.NoError(t, r.s.AllocGraph(g))
			for range 2 {
				xv := setF32(t, rng, x)
				require.NoError(t, r.s.Compute(context.Background(), g))
				hw := mm64(w1v, xv, nIn, nHid, batch)
				for i := range hw {
					hw[i] = math.Max(hw[i], 0)
				}
				gotH, err := ggml.Data[float32](h)
				require.NoError(t, err, "h is split along axis 0: readable")
				near(t, hw, gotH, 1e-5)
				hf := make([]float32, len(hw))
				for i := range hw {
					hf[i] = float32(hw[i])
				}
				got, err := ggml.Data[float32](out)
				require.NoError(t, err)
				near(t, mm64(w2v, hf, nHid, nOut, batch), got, 1e-4)
				if n > 1 {
					_, err = ggml.Data[float32](y)
					require.ErrorIs(t, err, backend.ErrUnsupported, "y is a partial sum on each device")
				}
			}
		})
	}
}

// TestMetaAxes: element-wise ops and mul_mat over weights split along
// axes 1 and 2 and MIRRORED, under the scheduler, against float64.
func TestMetaAxes(t *testing.T) {
	needMeta(t)
	rng := testutil.NewRNG(t)
	r := newMetaRig(t, 2, splitsByName(map[string]backend.Split{
		"w1": backend.SplitSizes(backend.SplitAxis1, 2, 5), // uneven
		"b2": backend.SplitSizes(backend.SplitAxis2, 3, 1),
		"m":  backend.Mirrored(),
	}))
	ws, _, err := weights(t, r.meta.DefaultBufferType(), spec("w1", 6, 7), spec("b2", 4, 3, 4), spec("m", 6, 7))
	require.NoError(t, err)
	w1v, b2v, mv := setF32(t, rng, ws["w1"]), setF32(t, rng, ws["b2"]), setF32(t, rng, ws["m"])

	// mul_mat of an axis-1 weight: the result is split along axis 0.
	c := computeCtx(t)
	x := c.NewTensor(ggml.TypeF32, 6, 2).SetInput()
	y := c.MulMat(ws["w1"], x).SetOutput()
	g, err := c.BuildGraph(y)
	require.NoError(t, err)
	require.NoError(t, r.run(t, g))
	xv := setF32(t, rng, x)
	require.NoError(t, r.s.Compute(context.Background(), g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	near(t, mm64(w1v, xv, 6, 7, 2), got, 1e-5)

	// An axis-2 weight plus a MIRRORED input broadcast along axis 2.
	c2 := computeCtx(t)
	x2 := c2.NewTensor(ggml.TypeF32, 4, 3, 1).SetInput()
	y2 := c2.Add(ws["b2"], x2).SetOutput()
	g2, err := c2.BuildGraph(y2)
	require.NoError(t, err)
	require.NoError(t, r.run(t, g2))
	x2v := setF32(t, rng, x2)
	require.NoError(t, r.s.Compute(context.Background(), g2))
	got2, err := ggml.Data[float32](y2)
	require.NoError(t, err)
	want2 := make([]float64, len(b2v))
	for i := range b2v {
		want2[i] = float64(b2v[i]) + float64(x2v[i%12])
	}
	near(t, want2, got2, 1e-6)

	// MIRRORED everywhere.
	c3 := computeCtx(t)
	x3 := c3.NewTensor(ggml.TypeF32, 6, 3).SetInput()
	y3 := c3.MulMat(ws["m"], x3).SetOutput()
	g3, err := c3.BuildGraph(y3)
	require.NoError(t, err)
	require.NoError(t, r.run(t, g3))
	x3v := setF32(t, rng, x3)
	require.NoError(t, r.s.Compute(context.Background(), g3))
	got3, err := ggml.Data[float32](y3)
	require.NoError(t, err)
	near(t, mm64(mv, x3v, 6, 7, 3), got3, 1e-5)
}

// TestMetaSegmented: a weight and an input split along axis 0 in the same
// three segments: their mul_mat is a partial sum on each device, summed by
// the meta backend; the segments' order does not matter to a sum.
func TestMetaSegmented(t *testing.T) {
	needMeta(t)
	rng := testutil.NewRNG(t)
	seg := backend.Split{Axis: backend.SplitAxis0, Segments: []backend.Segment{
		{Sizes: []int64{2, 2}}, {Sizes: []int64{3, 1}}, {Sizes: []int64{1, 1}, Repeat: 2},
	}} // 4 + 4 + 2·2 = 12
	r := newMetaRig(t, 2, splitsByName(map[string]backend.Split{"w": seg, "x": seg}))
	ws, _, err := weights(t, r.meta.DefaultBufferType(), spec("w", 12, 5), spec("x", 12, 2))
	require.NoError(t, err)
	wv, xv := setF32(t, rng, ws["w"]), setF32(t, rng, ws["x"])
	gotW, err := ggml.Data[float32](ws["w"])
	require.NoError(t, err)
	assert.Equal(t, wv, gotW, "the segmented weight reads back in order")

	c := computeCtx(t)
	y := c.MulMat(ws["w"], ws["x"])
	out := c.Scale(y, 2).SetOutput()
	g, err := c.BuildGraph(out)
	require.NoError(t, err)
	require.NoError(t, r.run(t, g))
	got, err := ggml.Data[float32](out)
	require.NoError(t, err)
	want := mm64(wv, xv, 12, 5, 2)
	for i := range want {
		want[i] *= 2
	}
	near(t, want, got, 1e-5)

	// A segmented weight times a MIRRORED input: ggml keeps each device's
	// slice but forgets the segments; reading the result is refused.
	r2 := newMetaRig(t, 2, splitsByName(map[string]backend.Split{
		"qkv": {Axis: backend.SplitAxis1, Segments: []backend.Segment{{Sizes: []int64{2, 2}}, {Sizes: []int64{1, 1}, Repeat: 2}}},
	}))
	ws2, _, err := weights(t, r2.meta.DefaultBufferType(), spec("qkv", 3, 8))
	require.NoError(t, err)
	setF32(t, rng, ws2["qkv"])
	c2 := computeCtx(t)
	x2 := c2.NewTensor(ggml.TypeF32, 3, 1).SetInput()
	y2 := c2.MulMat(ws2["qkv"], x2).SetOutput()
	g2, err := c2.BuildGraph(y2)
	require.NoError(t, err)
	require.NoError(t, r2.run(t, g2))
	_, err = ggml.Data[float32](y2)
	require.ErrorIs(t, err, backend.ErrUnsupported)
	assert.Contains(t, err.Error(), "device order")
}

// TestMetaRefusals: graphs ggml's meta backend would assert on are errors.
func TestMetaRefusals(t *testing.T) {
	needMeta(t)
	rng := testutil.NewRNG(t)
	r := newMetaRig(t, 2, splitsByName(map[string]backend.Split{
		"a0": backend.SplitSizes(backend.SplitAxis0, 2, 2),
		"b0": backend.SplitSizes(backend.SplitAxis0, 1, 3),
		"p":  backend.Partial(),
	}))
	ws, _, err := weights(t, r.meta.DefaultBufferType(), spec("a0", 4, 3), spec("b0", 4, 2), spec("p", 4, 3))
	require.NoError(t, err)
	setF32(t, rng, ws["a0"])
	setF32(t, rng, ws["b0"])
	setF32(t, rng, ws["p"])

	// mul_mat of two axis-0 sources with different shares.
	c := computeCtx(t)
	g, err := c.BuildGraph(c.MulMat(ws["a0"], ws["b0"]))
	require.NoError(t, err)
	err = r.run(t, g)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	assert.Contains(t, err.Error(), "mul_mat")

	// mul_mat of an axis-0 weight and a MIRRORED input.
	c2 := computeCtx(t)
	x := c2.NewTensor(ggml.TypeF32, 4, 1).SetInput()
	g2, err := c2.BuildGraph(c2.MulMat(ws["a0"], x))
	require.NoError(t, err)
	require.ErrorIs(t, r.run(t, g2), ggml.ErrInvalid)

	// A per-row op of an axis-0 split.
	c3 := computeCtx(t)
	g3, err := c3.BuildGraph(c3.SoftMax(c3.RMSNorm(ws["a0"], 1e-6)))
	require.NoError(t, err)
	require.ErrorIs(t, r.run(t, g3), ggml.ErrInvalid)

	// A non-linear op of a PARTIAL tensor.
	c4 := computeCtx(t)
	g4, err := c4.BuildGraph(c4.Sqr(ws["p"]))
	require.NoError(t, err)
	err = r.run(t, g4)
	require.ErrorIs(t, err, ggml.ErrInvalid)
	assert.Contains(t, err.Error(), "PARTIAL")

	// Tensors placed on a meta buffer other than by AllocContextTensors.
	buf, err := r.meta.DefaultBufferType().AllocBuffer(1 << 16)
	require.NoError(t, err)
	defer buf.Close()
	c5 := computeCtx(t)
	lone := c5.NewTensor(ggml.TypeF32, 4)
	require.ErrorIs(t, backend.TensorAlloc(buf, lone, 0), backend.ErrUnsupported)
	_, err = backend.NewTallocr(buf)
	require.ErrorIs(t, err, backend.ErrUnsupported)
	// Base of a meta buffer: its addresses are placeholders.
	_, err = buf.Base()
	require.ErrorIs(t, err, backend.ErrUnsupported)

	// The CPU backend says it can use a meta buffer of CPU devices (ggml
	// reports it as host memory); its addresses are placeholders.
	c7 := computeCtx(t)
	g7, err := c7.BuildGraph(c7.Scale(ws["a0"], 2))
	require.NoError(t, err)
	ga, err := backend.NewGallocr(backendtest.CPU(t).DefaultBufferType())
	require.NoError(t, err)
	defer ga.Close()
	require.NoError(t, ga.AllocGraph(g7))
	require.ErrorIs(t, backendtest.CPU(t).Compute(context.Background(), g7), backend.ErrUnsupported)

	// The scheduler still works after the refusals.
	c6 := computeCtx(t)
	x6 := c6.NewTensor(ggml.TypeF32, 4, 3).SetInput()
	y6 := c6.Add(x6, x6).SetOutput()
	g6, err := c6.BuildGraph(y6)
	require.NoError(t, err)
	require.NoError(t, r.run(t, g6))
}

// TestMetaAsync: asynchronous transfers through a meta backend take whole,
// one-segment tensors only; the rest is an error, not an abort.
func TestMetaAsync(t *testing.T) {
	needMeta(t)
	rng := testutil.NewRNG(t)
	r := newMetaRig(t, 2, splitsByName(map[string]backend.Split{
		"a1":  backend.SplitSizes(backend.SplitAxis1, 1, 3),
		"seg": {Axis: backend.SplitAxis1, Segments: []backend.Segment{{Sizes: []int64{1, 1}, Repeat: 2}}},
	}))
	ws, _, err := weights(t, r.meta.DefaultBufferType(), spec("a1", 3, 4), spec("seg", 3, 4))
	require.NoError(t, err)
	v := testutil.RandF32(rng, 12)
	raw := make([]byte, 48)
	for i, f := range v {
		bits := math.Float32bits(f)
		raw[4*i], raw[4*i+1], raw[4*i+2], raw[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
	}
	require.NoError(t, r.meta.SetTensorAsync(ws["a1"], raw, 0))
	require.NoError(t, r.meta.Synchronize())
	got, err := ggml.Data[float32](ws["a1"])
	require.NoError(t, err)
	assert.Equal(t, v, got)
	require.ErrorIs(t, r.meta.SetTensorAsync(ws["seg"], raw, 0), backend.ErrUnsupported)
	require.ErrorIs(t, r.meta.SetTensorAsync(ws["a1"], raw[:12], 12), backend.ErrUnsupported)
}
