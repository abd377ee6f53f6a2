package gguf_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
)

// Write, read back (from the file, from bytes, from a ReaderAt), load
// (zero-copy, copied, copied through staging) and compare every byte, for
// a tensor of every type the linked ggml knows.
func TestRoundTripEveryType(t *testing.T) {
	rng := newRNG(t)
	pairs := randomPairs(rng, true)
	specs := everyType(rng)
	t.Logf("%d tensor types (%s)", len(specs), ggml.Provider())
	path := writeTemp(t, build(t, pairs, specs))
	raw := readAll(t, path)

	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, uint32(gguf.Version), f.Version())
	assert.Equal(t, uint64(gguf.DefaultAlignment), f.Alignment())
	assert.Equal(t, uint64(len(raw)), f.Size())
	assert.Zero(t, f.DataOffset()%f.Alignment())
	checkFile(t, f, pairs, specs)

	fp, err := gguf.Parse(raw)
	require.NoError(t, err)
	checkFile(t, fp, pairs, specs)
	fr, err := gguf.Read(bytes.NewReader(raw), int64(len(raw)))
	require.NoError(t, err)
	checkFile(t, fr, pairs, specs)

	for _, c := range []struct {
		name    string
		f       *gguf.File
		opts    gguf.LoadOptions
		staging bool
		mapped  bool
	}{
		{"mmap", f, gguf.LoadOptions{}, false, true},
		{"copy", f, gguf.LoadOptions{NoMmap: true}, false, false},
		{"staging", f, gguf.LoadOptions{NoMmap: true, Workers: 3}, true, false},
		{"parsed", fp, gguf.LoadOptions{}, false, false},
		{"reader", fr, gguf.LoadOptions{Workers: 1}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.staging {
				defer gguf.SetCopyThroughStaging()()
			}
			m, err := gguf.Load(context.Background(), c.f, c.opts)
			require.NoError(t, err)
			defer m.Close()
			checkModel(t, m, specs)
			if c.mapped {
				// Every tensor is at a multiple of 32 in the file: none is
				// copied.
				assert.Zero(t, m.CopiedBytes())
				assert.Equal(t, totalSize(specs), m.MappedBytes())
			} else {
				assert.Zero(t, m.MappedBytes())
				assert.Equal(t, totalSize(specs), m.CopiedBytes())
			}
		})
	}
}

func totalSize(specs []spec) uint64 {
	n := uint64(0)
	for _, s := range specs {
		n += uint64(len(s.data))
	}
	return n
}

// checkModel checks that m holds specs: names, types, shapes, bytes.
func checkModel(t *testing.T, m *gguf.Model, specs []spec) {
	t.Helper()
	require.Len(t, m.Tensors(), len(specs))
	for i, s := range specs {
		x := m.Tensor(s.name)
		require.NotNil(t, x, s.name)
		require.Same(t, m.Tensors()[i], x)
		assert.Equal(t, s.name, x.Name())
		assert.Equal(t, s.typ, x.Type())
		want := [ggml.MaxDims]int64{1, 1, 1, 1}
		copy(want[:], s.shape)
		assert.Equal(t, want, x.Ne())
		got, err := ggml.Bytes(x)
		require.NoError(t, err)
		require.Equal(t, s.data, got, s.name)
	}
	assert.Nil(t, m.Tensor("no such tensor"))
}

func TestGetters(t *testing.T) {
	rng := newRNG(t)
	pairs := append(randomPairs(rng, true), pair{"own.f32", []float32{1, 2}})
	f, err := gguf.Parse(bytesOf(t, build(t, pairs, nil)))
	require.NoError(t, err)
	want := map[string]any{}
	for _, p := range pairs {
		want[p.key] = p.val
	}
	get := func(key string) any { v, _ := f.Value(key); return v.Any() }
	u8, err := f.Uint8("t.u8")
	require.NoError(t, err)
	assert.Equal(t, want["t.u8"], u8)
	i8, err := f.Int8("t.i8")
	require.NoError(t, err)
	assert.Equal(t, want["t.i8"], i8)
	u16, err := f.Uint16("t.u16")
	require.NoError(t, err)
	assert.Equal(t, want["t.u16"], u16)
	i16, err := f.Int16("t.i16")
	require.NoError(t, err)
	assert.Equal(t, want["t.i16"], i16)
	u32, err := f.Uint32("t.u32")
	require.NoError(t, err)
	assert.Equal(t, want["t.u32"], u32)
	i32, err := f.Int32("t.i32")
	require.NoError(t, err)
	assert.Equal(t, want["t.i32"], i32)
	u64, err := f.Uint64("t.u64")
	require.NoError(t, err)
	assert.Equal(t, want["t.u64"], u64)
	i64, err := f.Int64("t.i64")
	require.NoError(t, err)
	assert.Equal(t, want["t.i64"], i64)
	f32, err := f.Float32("t.f32")
	require.NoError(t, err)
	assert.Equal(t, want["t.f32"], f32)
	f64, err := f.Float64("t.f64")
	require.NoError(t, err)
	assert.Equal(t, want["t.f64"], f64)
	b, err := f.Bool("t.bool")
	require.NoError(t, err)
	assert.Equal(t, want["t.bool"], b)
	s, err := f.String("t.str")
	require.NoError(t, err)
	assert.Equal(t, want["t.str"], s)
	ss, err := f.Strings("a.str")
	require.NoError(t, err)
	assert.Equal(t, want["a.str"], ss)
	fs, err := gguf.Get[[]float32](f, "a.f32")
	require.NoError(t, err)
	assert.Equal(t, want["a.f32"], fs)
	arr, err := f.Array("a.i64")
	require.NoError(t, err)
	assert.Equal(t, gguf.TypeInt64, arr.ElemType())
	assert.Equal(t, len(want["a.i64"].([]int64)), arr.Len())
	nested, err := f.Array("a.nested")
	require.NoError(t, err)
	assert.Equal(t, gguf.TypeArray, nested.ElemType())
	assert.Equal(t, `[[1, 2, 3], ["x", "yz"], [[0.5]], []]`, nested.String())
	assert.Equal(t, `[[1, 2, ... 1 more], ["x", "yz"], ... 2 more]`, nested.Abbrev(2))

	// Arrays come back as copies: changing one changes nothing in f.
	own, err := gguf.Get[[]float32](f, "own.f32")
	require.NoError(t, err)
	own[0]++
	assert.Equal(t, []float32{1, 2}, get("own.f32"))

	// Missing keys and other types are typed errors.
	var ke *gguf.KeyError
	_, err = f.Uint32("no.such.key")
	require.ErrorIs(t, err, gguf.ErrNotFound)
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "no.such.key", ke.Key)
	_, err = f.Uint64("t.u32")
	require.ErrorIs(t, err, gguf.ErrType)
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "u32", ke.Got)
	assert.Equal(t, "u64", ke.Want)
	_, err = f.Strings("a.i32")
	require.ErrorIs(t, err, gguf.ErrType)
	assert.Contains(t, err.Error(), "[]i32")
	_, err = f.Array("t.str")
	require.ErrorIs(t, err, gguf.ErrType)
	_, err = f.Array("nope")
	require.ErrorIs(t, err, gguf.ErrNotFound)
	_, err = f.String("t.u8")
	require.ErrorIs(t, err, gguf.ErrType)

	// Iteration stops when asked to.
	n := 0
	for range f.KV() {
		if n++; n == 3 {
			break
		}
	}
	assert.Equal(t, 3, n)
}

func bytesOf(t testing.TB, b *gguf.Builder) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := b.WriteTo(&buf)
	require.NoError(t, err)
	require.Equal(t, int64(buf.Len()), n)
	return buf.Bytes()
}

func TestValues(t *testing.T) {
	_, err := gguf.ValueOf(3) // int has no GGUF type
	require.ErrorIs(t, err, gguf.ErrType)
	_, err = gguf.ValueOf([]any{1})
	require.ErrorIs(t, err, gguf.ErrType)
	_, err = gguf.ValueOf([]gguf.Value{gguf.NewValue(uint8(1))}) // arrays of arrays hold arrays
	require.ErrorIs(t, err, gguf.ErrType)
	_, err = gguf.ValueOf(gguf.Value{})
	require.ErrorIs(t, err, gguf.ErrType)
	deep := gguf.NewValue([]int8{1})
	for range 20 {
		deep = gguf.NewValue([]gguf.Value{deep})
	}
	_, err = gguf.ValueOf(deep)
	require.ErrorIs(t, err, gguf.ErrType)

	// NewValue copies its slice, As returns a copy.
	src := []uint16{1, 2}
	v := gguf.NewValue(src)
	src[0] = 9
	got, ok := gguf.As[[]uint16](v)
	require.True(t, ok)
	assert.Equal(t, []uint16{1, 2}, got)
	got[1] = 9
	again, _ := gguf.As[[]uint16](v)
	assert.Equal(t, []uint16{1, 2}, again)
	_, ok = gguf.As[[]int16](v)
	assert.False(t, ok)
	assert.Equal(t, gguf.TypeArray, v.Type())
	assert.Equal(t, gguf.TypeUint16, v.ElemType())
	assert.Equal(t, gguf.NewValue(uint16(2)), v.Index(1))
	assert.Equal(t, gguf.TypeString, gguf.NewValue("x").ElemType())
	assert.Zero(t, gguf.NewValue("x").Len())
	assert.Panics(t, func() { gguf.NewValue("x").Index(0) })
	assert.Equal(t, `"a\"b"`, gguf.NewValue(`a"b`).String())
	assert.Equal(t, "0.1", gguf.NewValue(float32(0.1)).String())
	assert.Equal(t, "true", gguf.NewValue(true).String())
	assert.Equal(t, "-3", gguf.NewValue(int64(-3)).String())
	assert.Equal(t, "u32", gguf.TypeUint32.String())
	assert.Equal(t, "ValueType(99)", gguf.ValueType(99).String())
}

func TestBuilderErrors(t *testing.T) {
	b := gguf.NewBuilder()
	require.ErrorIs(t, b.Set("", uint8(1)), gguf.ErrInvalid)
	require.ErrorIs(t, b.Set("k", 1), gguf.ErrType)
	require.ErrorIs(t, b.Set(gguf.KeyAlignment, uint64(64)), gguf.ErrType)
	require.ErrorIs(t, b.Set(gguf.KeyAlignment, uint32(48)), gguf.ErrInvalid)
	require.ErrorIs(t, b.Set(gguf.KeyAlignment, uint32(0)), gguf.ErrInvalid)

	f32 := ggml.TypeF32
	d := make([]byte, 16)
	require.ErrorIs(t, b.AddTensor(strings.Repeat("n", ggml.MaxNameLen+1), f32, []int64{4}, gguf.FromBytes(d)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("a\x00b", f32, []int64{4}, gguf.FromBytes(d)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("x", ggml.Type(-1), []int64{4}, gguf.FromBytes(d)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("x", ggml.TypeCount, []int64{4}, gguf.FromBytes(d)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("x", f32, nil, gguf.FromBytes(d)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("x", f32, []int64{1, 1, 1, 1, 1}, gguf.FromBytes(d)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("x", f32, []int64{-4}, gguf.FromBytes(d)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("x", f32, []int64{5}, gguf.FromBytes(d)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("x", ggml.TypeQ4_0, []int64{16}, gguf.FromBytes(d)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("x", f32, []int64{math.MaxInt64, 4}, gguf.FromBytes(d)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("x", f32, []int64{4}, gguf.Source{}), gguf.ErrInvalid)
	require.NoError(t, b.AddTensor("x", f32, []int64{4}, gguf.FromBytes(d)))
	require.ErrorIs(t, b.AddTensor("x", f32, []int64{4}, gguf.FromBytes(d)), gguf.ErrInvalid)

	// Readers that give too little, too much, or fail.
	for _, c := range []struct {
		name string
		r    func() (io.Reader, error)
		kind error
	}{
		{"short", func() (io.Reader, error) { return bytes.NewReader(make([]byte, 15)), nil }, gguf.ErrInvalid},
		{"long", func() (io.Reader, error) { return bytes.NewReader(make([]byte, 17)), nil }, gguf.ErrInvalid},
		{"open fails", func() (io.Reader, error) { return nil, os.ErrPermission }, os.ErrPermission},
		{"read fails", func() (io.Reader, error) { return io.MultiReader(bytes.NewReader(d[:3]), errReader{}), nil }, os.ErrDeadlineExceeded},
	} {
		b := gguf.NewBuilder()
		require.NoError(t, b.AddTensor("x", f32, []int64{4}, gguf.FromReader(c.r)))
		_, err := b.WriteTo(io.Discard)
		require.ErrorIs(t, err, c.kind, c.name)
	}

	// A failing writer.
	b = gguf.NewBuilder()
	require.NoError(t, b.Set("k", "v"))
	_, err := b.WriteTo(failWriter{})
	require.ErrorIs(t, err, os.ErrClosed)
	require.Error(t, b.WriteFile("/nonexistent/dir/x.gguf"))

	// Source tensors: closed, of another shape, not contiguous.
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 4, MemSize: 1024})
	require.NoError(t, err)
	x := c.NewTensor(f32, 4, 2)
	tr := c.Transpose(x)
	require.NoError(t, c.Err())
	b = gguf.NewBuilder()
	require.ErrorIs(t, b.AddTensor("y", f32, []int64{4}, gguf.FromTensor(x)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddTensor("y", f32, []int64{2, 4}, gguf.FromTensor(tr)), gguf.ErrInvalid)
	require.ErrorIs(t, b.AddGGMLTensor(nil), ggml.ErrInvalid)
	require.NoError(t, b.AddGGMLTensor(x.SetName("x")))
	require.NoError(t, c.Close())
	_, err = b.WriteTo(io.Discard)
	require.ErrorIs(t, err, ggml.ErrClosed)
	require.ErrorIs(t, b.AddGGMLTensor(x), ggml.ErrClosed)
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, os.ErrDeadlineExceeded }

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// A Builder fed from tensors in a backend buffer writes their data, read in
// chunks; a file's KVs copied into a Builder come out the same.
func TestWriteFromTensors(t *testing.T) {
	rng := newRNG(t)
	be := backendtest.CPU(t)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 2, NoAlloc: true})
	require.NoError(t, err)
	defer c.Close()
	big := c.NewTensor(ggml.TypeF32, 1<<20, 3).SetName("big") // 12 MiB: several chunks
	small := c.NewTensor(ggml.TypeI32, 5).SetName("small")
	buf, err := backend.AllocContextTensors(c, be)
	require.NoError(t, err)
	defer buf.Close()
	bigData := testutil.RandF32(rng, 3<<20)
	require.NoError(t, ggml.SetData(big, bigData))
	require.NoError(t, ggml.SetData(small, []int32{1, -2, 3, -4, 5}))

	pairs := randomPairs(rng, true)
	b := build(t, pairs, nil)
	require.NoError(t, b.Set(gguf.KeyAlignment, uint32(64)))
	require.NoError(t, b.AddGGMLTensor(big))
	require.NoError(t, b.AddTensor("small.renamed", ggml.TypeI32, []int64{5}, gguf.FromTensor(small)))
	raw := bytesOf(t, b)
	f, err := gguf.Parse(raw)
	require.NoError(t, err)
	assert.Equal(t, uint64(64), f.Alignment())
	assert.Equal(t, b.Tensors(), f.Tensors())
	m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{})
	require.NoError(t, err)
	defer m.Close()
	gotBig, err := ggml.Data[float32](m.Tensor("big"))
	require.NoError(t, err)
	require.Equal(t, bigData, gotBig)
	gotSmall, err := ggml.Data[int32](m.Tensor("small.renamed"))
	require.NoError(t, err)
	require.Equal(t, []int32{1, -2, 3, -4, 5}, gotSmall)

	// The KVs, copied to a new Builder, write the same bytes.
	b2 := gguf.NewBuilder()
	for k, v := range f.KV() {
		require.NoError(t, b2.Set(k, v))
	}
	require.NoError(t, b2.AddTensor("big", ggml.TypeF32, []int64{1 << 20, 3}, gguf.FromReader(func() (io.Reader, error) { return f.TensorReader("big") })))
	require.NoError(t, b2.AddTensor("small.renamed", ggml.TypeI32, []int64{5}, gguf.FromReader(func() (io.Reader, error) { return f.TensorReader("small.renamed") })))
	assert.Equal(t, raw, bytesOf(t, b2))

	// Setting a key again keeps its place.
	require.NoError(t, b2.Set(pairs[0].key, "replaced"))
	f2, err := gguf.Parse(bytesOf(t, b2))
	require.NoError(t, err)
	for k, v := range f2.KV() {
		assert.Equal(t, pairs[0].key, k)
		assert.Equal(t, "replaced", v.Any())
		break
	}
}

func TestFileClosed(t *testing.T) {
	rng := newRNG(t)
	specs := []spec{randomSpec(rng, "w", ggml.TypeF32)}
	path := writeTemp(t, build(t, nil, specs))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	r, err := f.TensorReader("w")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, f.Close())
	_, err = f.TensorData("w")
	require.ErrorIs(t, err, gguf.ErrClosed)
	_, err = f.TensorReader("w")
	require.ErrorIs(t, err, gguf.ErrClosed)
	_, err = io.ReadAll(r)
	require.ErrorIs(t, err, gguf.ErrClosed)
	_, err = gguf.Load(context.Background(), f, gguf.LoadOptions{})
	require.ErrorIs(t, err, gguf.ErrClosed)
	// The metadata stays.
	assert.Equal(t, 1, f.NumTensors())
	ti, ok := f.Tensor("w")
	require.True(t, ok)
	assert.Equal(t, "w", ti.Name)

	var nilFile *gguf.File
	require.NoError(t, nilFile.Close())
	_, err = gguf.Load(context.Background(), nil, gguf.LoadOptions{})
	require.ErrorIs(t, err, gguf.ErrInvalid)
	_, err = gguf.Read(nil, 0)
	require.ErrorIs(t, err, gguf.ErrInvalid)
	_, err = gguf.Open(t.TempDir())
	require.ErrorIs(t, err, gguf.ErrInvalid)
	_, err = gguf.Open(path + ".missing")
	require.ErrorIs(t, err, os.ErrNotExist)

	f, err = gguf.Parse(readAll(t, path))
	require.NoError(t, err)
	_, err = f.TensorData("nope")
	require.ErrorIs(t, err, gguf.ErrNotFound)
	require.NoError(t, f.Close())
	_, err = f.TensorData("w")
	require.ErrorIs(t, err, gguf.ErrClosed)
}

// Read with a size larger than the reader's data: an ErrFormat error, and
// no allocation of the claimed size.
func TestReadShortReader(t *testing.T) {
	rng := newRNG(t)
	raw := bytesOf(t, build(t, []pair{{"k", strings.Repeat("s", 1<<20)}}, []spec{randomSpec(rng, "w", ggml.TypeF32)}))
	for _, cut := range []int{10, 30, 1 << 19} {
		_, err := gguf.Read(bytes.NewReader(raw[:cut]), int64(len(raw)))
		require.ErrorIs(t, err, gguf.ErrFormat, "cut at %d", cut)
	}
	// The header fits, the data does not: reading the data fails.
	f, err := gguf.Read(bytes.NewReader(raw), int64(len(raw)))
	require.NoError(t, err)
	ti, _ := f.Tensor("w")
	end := int64(f.DataOffset() + ti.Offset + ti.Size)
	f2, err := gguf.Read(io.NewSectionReader(bytes.NewReader(raw), 0, end-1), int64(len(raw)))
	require.NoError(t, err)
	_, err = f2.TensorData("w")
	require.ErrorIs(t, err, gguf.ErrFormat)
	_, err = gguf.Load(context.Background(), f2, gguf.LoadOptions{})
	require.ErrorIs(t, err, gguf.ErrFormat)
	_, err = f.TensorData("w")
	require.NoError(t, err)
	// A reader that fails.
	_, err = gguf.Read(failReaderAt{}, 100)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

type failReaderAt struct{}

func (failReaderAt) ReadAt([]byte, int64) (int, error) { return 0, os.ErrDeadlineExceeded }

// Tensors larger than one step of the copy, copied through staging as into
// a GPU's buffers by several workers: every byte arrives. A worker per
// chunk had two goroutines write one tensor at once, which TensorSet
// refuses (ErrBusy), so that a real model failed to load onto CUDA.
func TestLoadTensorsLargerThanAChunk(t *testing.T) {
	rng := newRNG(t)
	var specs []spec
	for i, typ := range []ggml.Type{ggml.TypeF32, ggml.TypeF16, ggml.TypeF32} {
		// 2 to 3 chunks each, and a row count that leaves a partial chunk.
		ne0 := int64(1024)
		rows := (int64(2*gguf.LoadChunk) + rng.Int64N(int64(gguf.LoadChunk))) / (ne0 * int64(typ.Size()))
		data := make([]byte, ne0*rows*int64(typ.Size()))
		for k := range data {
			data[k] = byte(rng.Uint32())
		}
		if typ == ggml.TypeF16 {
			for k := 1; k < len(data); k += 2 {
				data[k] &= 0x3b // finite halves: no NaN or Inf bit patterns
			}
		} else {
			for k := 3; k < len(data); k += 4 {
				data[k] &= 0x3f
			}
		}
		specs = append(specs, spec{fmt.Sprintf("big.%d", i), typ, []int64{ne0, rows}, data})
	}
	path := writeTemp(t, build(t, nil, specs))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	defer gguf.SetCopyThroughStaging()()
	var last uint64
	m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{NoMmap: true, Workers: 4, Validate: true,
		Progress: func(done, total uint64) { last = done }})
	require.NoError(t, err)
	defer m.Close()
	checkModel(t, m, specs)
	assert.Equal(t, totalSize(specs), last)
}
