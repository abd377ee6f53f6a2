package gguf_test

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
)

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// The loaded weights compute: y = w·x on the CPU against float64.
func TestLoadCompute(t *testing.T) {
	rng := newRNG(t)
	const k, m, n = 64, 48, 5
	ws, xs := testutil.RandF32(rng, k*m), testutil.RandF32(rng, k*n)
	q8, err := ggml.Quantize(ggml.TypeQ8_0, ws, k, nil)
	require.NoError(t, err)
	// What the q8_0 product sees: w dequantized, and x rounded to q8_0
	// by the CPU's own quantizer, whose ties can round the other way than
	// ggml.Quantize's reference one (a step of one x off, seen once in CI):
	// the q8_0 product is bounded by testutil.Q8Dot over the unrounded x.
	wq, err := ggml.Dequantize(ggml.TypeQ8_0, q8)
	require.NoError(t, err)
	path := writeTemp(t, build(t, []pair{{gguf.KeyArchitecture, "test"}}, []spec{
		{"w.f32", ggml.TypeF32, []int64{k, m}, f32Bytes(ws)},
		{"w.q8_0", ggml.TypeQ8_0, []int64{k, m}, q8},
	}))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	model, err := gguf.Load(context.Background(), f, gguf.LoadOptions{Validate: true})
	require.NoError(t, err)
	defer model.Close()
	require.NoError(t, f.Close()) // the model keeps the mapping

	be := backendtest.CPU(t)
	for _, c := range []struct {
		name  string
		w     []float32
		quant bool
	}{{"w.f32", ws, false}, {"w.q8_0", wq, true}} {
		got := mulMat(t, be, model.Tensor(c.name), xs, n)
		for j := range n {
			for i := range m {
				ref, bound := testutil.Q8Dot(c.w[i*k:(i+1)*k], xs[j*k:(j+1)*k])
				if !c.quant {
					bound = 1e-4 * (1 + math.Abs(ref))
				}
				require.InDelta(t, ref, float64(got[j*m+i]), bound, "%s y[%d][%d]", c.name, j, i)
			}
		}
	}
}

// mulMat computes w·x on backend be, x holding n columns of w's row
// length, and returns the result, n columns of w's rows.
func mulMat(t *testing.T, be *backend.Backend, w *ggml.Tensor, x []float32, n int64) []float32 {
	t.Helper()
	ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, NoAlloc: true, Graph: true})
	require.NoError(t, err)
	defer ctx.Close()
	xt := ctx.NewTensor(ggml.TypeF32, w.Shape()[0], n)
	y := ctx.MulMat(w, xt)
	g, err := ctx.BuildGraph(y)
	require.NoError(t, err)
	buf, err := backend.AllocContextTensors(ctx, be)
	require.NoError(t, err)
	defer buf.Close()
	require.NoError(t, ggml.SetData(xt, x))
	require.NoError(t, be.Compute(context.Background(), g))
	got, err := ggml.Data[float32](y)
	require.NoError(t, err)
	return got
}

func TestLoadPlacementAndProgress(t *testing.T) {
	rng := newRNG(t)
	specs := []spec{
		randomSpec(rng, "blk.0.w", ggml.TypeF32),
		{"big", ggml.TypeF16, []int64{1 << 12, 1 << 10}, randBytes(rng, 8<<20)}, // two chunks
		randomSpec(rng, "blk.1.w", ggml.TypeQ8_0),
		{"empty", ggml.TypeF32, []int64{4, 0}, []byte{}},
	}
	path := writeTemp(t, build(t, nil, specs))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()

	for _, noMmap := range []bool{false, true} {
		var seen []gguf.TensorInfo
		var calls [][2]uint64
		m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{
			NoMmap: noMmap,
			BufferType: func(ti gguf.TensorInfo) *backend.BufferType {
				seen = append(seen, ti)
				ti.Shape[0] = -1 // a copy: changes nothing
				if ti.Name == "blk.0.w" {
					return nil // the CPU's
				}
				return backend.CPUBufferType()
			},
			Progress: func(done, total uint64) { calls = append(calls, [2]uint64{done, total}) },
		})
		require.NoError(t, err)
		checkModel(t, m, specs)
		require.Len(t, seen, len(specs))
		for i, ti := range seen {
			assert.Equal(t, specs[i].name, ti.Name)
		}
		want := totalSize(specs)
		require.NotEmpty(t, calls)
		for i, c := range calls {
			assert.Equal(t, want, c[1])
			if i > 0 {
				assert.GreaterOrEqual(t, c[0], calls[i-1][0])
			}
		}
		assert.Equal(t, want, calls[len(calls)-1][0])
		if noMmap {
			assert.Equal(t, uint64(0), calls[0][0])
			assert.Equal(t, want, m.CopiedBytes())
		} else {
			assert.Equal(t, want, calls[0][0]) // all mapped: nothing to wait for
			assert.Equal(t, want, m.MappedBytes())
		}
		for _, b := range m.Buffers() {
			assert.Equal(t, backend.UsageWeights, b.Usage())
			assert.True(t, b.IsHost())
		}
		require.NoError(t, m.Close())
		require.NoError(t, m.Close())
		_, err = ggml.Bytes(m.Tensors()[0])
		require.ErrorIs(t, err, ggml.ErrClosed)
	}
	var nilModel *gguf.Model
	require.NoError(t, nilModel.Close())
	assert.Nil(t, nilModel.Tensor("x"))
	_, err = gguf.Load(context.Background(), f, gguf.LoadOptions{Workers: -1})
	require.ErrorIs(t, err, gguf.ErrInvalid)
}

// With an alignment of 8, tensors that fall on a multiple of 32 in the file
// are mapped and the others copied.
func TestLoadMixedAlignment(t *testing.T) {
	rng := newRNG(t)
	var specs []spec
	for i := range 12 {
		specs = append(specs, spec{string(rune('a' + i)), ggml.TypeI8, []int64{int64(1 + rng.IntN(40))}, nil})
		specs[i].data = randBytes(rng, int(specs[i].shape[0]))
	}
	path := writeTemp(t, build(t, []pair{{gguf.KeyAlignment, uint32(8)}}, specs))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var mapped, copied uint64
	for _, ti := range f.Tensors() {
		if (f.DataOffset()+ti.Offset)%32 == 0 {
			mapped += ti.Size
		} else {
			copied += ti.Size
		}
	}
	m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{})
	require.NoError(t, err)
	defer m.Close()
	checkModel(t, m, specs)
	assert.Equal(t, mapped, m.MappedBytes())
	assert.Equal(t, copied, m.CopiedBytes())
}

// Writes to a zero-copy tensor stay in this process: the file does not
// change.
func TestLoadMappedWritesStayPrivate(t *testing.T) {
	rng := newRNG(t)
	specs := []spec{randomSpec(rng, "w", ggml.TypeF32)}
	path := writeTemp(t, build(t, nil, specs))
	before := readAll(t, path)
	f, err := gguf.Open(path)
	require.NoError(t, err)
	m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{})
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, uint64(len(specs[0].data)), m.MappedBytes())
	w := m.Tensor("w")
	vals := testutil.RandF32(rng, int(w.Elements()))
	require.NoError(t, ggml.SetData(w, vals))
	got, err := ggml.Data[float32](w)
	require.NoError(t, err)
	assert.Equal(t, vals, got)
	data, err := f.TensorData("w")
	require.NoError(t, err)
	assert.Equal(t, specs[0].data, data)
	require.NoError(t, f.Close())
	assert.Equal(t, before, readAll(t, path))
	got, err = ggml.Data[float32](w) // the mapping outlives the File
	require.NoError(t, err)
	assert.Equal(t, vals, got)
}

func TestLoadValidate(t *testing.T) {
	rng := newRNG(t)
	good := testutil.RandF32(rng, 64)
	bad := append([]float32(nil), good...)
	bad[37] = float32(math.NaN())
	path := writeTemp(t, build(t, nil, []spec{
		{"good", ggml.TypeF32, []int64{64}, f32Bytes(good)},
		{"bad", ggml.TypeF32, []int64{8, 8}, f32Bytes(bad)},
		{"raw", ggml.TypeI8, []int64{4}, []byte{1, 2, 3, 4}}, // not validated
	}))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	for _, noMmap := range []bool{false, true} {
		m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{Validate: true, NoMmap: noMmap})
		require.ErrorIs(t, err, ggml.ErrInvalid)
		assert.Contains(t, err.Error(), `tensor "bad"`)
		assert.Nil(t, m)
		m, err = gguf.Load(context.Background(), f, gguf.LoadOptions{NoMmap: noMmap})
		require.NoError(t, err)
		require.NoError(t, m.Close())
	}
}

func TestLoadCancel(t *testing.T) {
	rng := newRNG(t)
	specs := []spec{{"big", ggml.TypeF32, []int64{1 << 20, 8}, randBytes(rng, 32<<20)}}
	path := writeTemp(t, build(t, nil, specs))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = gguf.Load(ctx, f, gguf.LoadOptions{})
	require.ErrorIs(t, err, context.Canceled)

	// Cancelled after the first chunk: the rest is not copied.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	var last uint64
	m, err := gguf.Load(ctx, f, gguf.LoadOptions{NoMmap: true, Workers: 1, Progress: func(done, total uint64) {
		last = done
		if done > 0 {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, m)
	assert.Less(t, last, uint64(32<<20))

	// Cancelled and forgotten loads free what they made.
	testutil.LeakLoop(t, 120, 64<<20, func() {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := gguf.Load(ctx, f, gguf.LoadOptions{NoMmap: true, Workers: 2, Progress: func(done, _ uint64) {
			if done > 0 {
				cancel()
			}
		}})
		require.ErrorIs(t, err, context.Canceled)
		_, err = gguf.Load(context.Background(), f, gguf.LoadOptions{}) // mapped, dropped
		require.NoError(t, err)
	})
	// The file's mapping is unmapped once no buffer uses it: the File's own
	// mapping is the only one left.
	testutil.Settle(5)
	assert.Equal(t, 1, mappings(t, path))
	require.NoError(t, f.Close())
	assert.Equal(t, 0, mappings(t, path))
}

// mappings counts the mappings of the file at path (/proc/self/maps); a
// mapping may show as several lines, one per range of pages.
func mappings(t *testing.T, path string) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("needs /proc/self/maps")
	}
	starts := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 6 && f[5] == path && f[2] == "00000000" {
			starts[f[0]] = true
		}
	}
	return len(starts)
}

// One File, several loads at once (run with -race).
func TestLoadConcurrent(t *testing.T) {
	rng := newRNG(t)
	specs := everyType(rng)
	path := writeTemp(t, build(t, randomPairs(rng, false), specs))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	models := make([]*gguf.Model, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			models[i], errs[i] = gguf.Load(context.Background(), f, gguf.LoadOptions{NoMmap: i%2 == 0, Workers: 1 + i%3})
		}()
	}
	wg.Wait()
	for i, m := range models {
		require.NoError(t, errs[i])
		checkModel(t, m, specs)
		require.NoError(t, m.Close())
	}
}

// Tensors placed on every device of the registry that is not the CPU (a
// GPU under -tags vulkan or cuda), the rest on the CPU: the bytes arrive.
func TestLoadOnDevices(t *testing.T) {
	var devs []*backend.Device
	for d := range backend.Devices() {
		if d.Type() != backend.DeviceCPU {
			devs = append(devs, d)
		}
	}
	if len(devs) == 0 {
		t.Skip("no device besides the CPU (build with -tags vulkan or cuda on a machine that has one)")
	}
	rng := newRNG(t)
	specs := everyType(rng)
	path := writeTemp(t, build(t, nil, specs))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	for _, d := range devs {
		bts := []*backend.BufferType{d.BufferType()}
		if h, err := d.HostBufferType(); err == nil {
			bts = append(bts, h)
		}
		m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{BufferType: func(ti gguf.TensorInfo) *backend.BufferType {
			switch i := len(ti.Name) % 3; {
			case i < len(bts):
				return bts[i]
			}
			return nil
		}})
		require.NoError(t, err, d.Name())
		checkModel(t, m, specs)
		names := map[string]bool{}
		for _, b := range m.Buffers() {
			names[b.Type().Name()] = true
		}
		t.Logf("%s: buffers %v, %d bytes mapped, %d copied", d.Name(), names, m.MappedBytes(), m.CopiedBytes())
		assert.True(t, names[d.BufferType().Name()])
		require.NoError(t, m.Close())
	}
}
