package gguf_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
)

func newRNG(t testing.TB) *rand.Rand { return testutil.NewRNG(t) }

// pair is a key and a value of one of gguf.Data's types.
type pair struct {
	key string
	val any
}

func randString(rng *rand.Rand, n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyzÄé漢 _.-0123456789"
	r := []rune(letters)
	b := make([]rune, n)
	for i := range b {
		b[i] = r[rng.IntN(len(r))]
	}
	return string(b)
}

// randomPairs returns a key of every value type, scalar and array (empty
// arrays too), with random values; with nested, arrays of arrays as well
// (which ggml's reader refuses).
func randomPairs(rng *rand.Rand, nested bool) []pair {
	n := func() int { return rng.IntN(20) }
	ps := []pair{
		{"general.architecture", "llama"},
		{"t.u8", uint8(rng.Uint32())}, {"t.i8", int8(rng.Uint32())},
		{"t.u16", uint16(rng.Uint32())}, {"t.i16", int16(rng.Uint32())},
		{"t.u32", rng.Uint32()}, {"t.i32", int32(rng.Uint32())},
		{"t.u64", rng.Uint64()}, {"t.i64", int64(rng.Uint64())},
		{"t.f32", float32(rng.NormFloat64())}, {"t.f64", rng.NormFloat64()},
		{"t.bool", rng.IntN(2) == 1}, {"t.str", randString(rng, n())}, {"t.empty_str", ""},
	}
	u8s, i8s, u16s, i16s := make([]uint8, n()), make([]int8, n()), make([]uint16, n()), make([]int16, n())
	u32s, i32s, u64s, i64s := make([]uint32, n()), make([]int32, n()), make([]uint64, n()), make([]int64, n())
	f32s, f64s, bools, strs := make([]float32, n()), make([]float64, n()), make([]bool, n()), make([]string, n())
	for i := range u8s {
		u8s[i] = uint8(rng.Uint32())
	}
	for i := range i8s {
		i8s[i] = int8(rng.Uint32())
	}
	for i := range u16s {
		u16s[i] = uint16(rng.Uint32())
	}
	for i := range i16s {
		i16s[i] = int16(rng.Uint32())
	}
	for i := range u32s {
		u32s[i] = rng.Uint32()
	}
	for i := range i32s {
		i32s[i] = int32(rng.Uint32())
	}
	for i := range u64s {
		u64s[i] = rng.Uint64()
	}
	for i := range i64s {
		i64s[i] = int64(rng.Uint64())
	}
	for i := range f32s {
		f32s[i] = float32(rng.NormFloat64())
	}
	for i := range f64s {
		f64s[i] = rng.NormFloat64()
	}
	for i := range bools {
		bools[i] = rng.IntN(2) == 1
	}
	for i := range strs {
		strs[i] = randString(rng, rng.IntN(12))
	}
	ps = append(ps,
		pair{"a.u8", u8s}, pair{"a.i8", i8s}, pair{"a.u16", u16s}, pair{"a.i16", i16s},
		pair{"a.u32", u32s}, pair{"a.i32", i32s}, pair{"a.u64", u64s}, pair{"a.i64", i64s},
		pair{"a.f32", f32s}, pair{"a.f64", f64s}, pair{"a.bool", bools}, pair{"a.str", strs},
		pair{"a.empty", []int32{}},
	)
	if nested {
		ps = append(ps, pair{"a.nested", []gguf.Value{
			gguf.NewValue([]int32{1, 2, 3}),
			gguf.NewValue([]string{"x", "yz"}),
			gguf.NewValue([]gguf.Value{gguf.NewValue([]float64{0.5})}),
			gguf.NewValue([]bool{}),
		}})
	}
	rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	return ps
}

// spec is a tensor to write: its info and data.
type spec struct {
	name  string
	typ   ggml.Type
	shape []int64
	data  []byte
}

// randomSpec returns a tensor of type typ with a random shape of 1 to 4
// dimensions (ne0 whole blocks) and random bytes.
func randomSpec(rng *rand.Rand, name string, typ ggml.Type) spec {
	shape := make([]int64, 1+rng.IntN(4))
	shape[0] = typ.BlockSize() * int64(1+rng.IntN(3))
	for i := 1; i < len(shape); i++ {
		shape[i] = int64(1 + rng.IntN(3))
	}
	return spec{name, typ, shape, randBytes(rng, specSize(typ, shape))}
}

func specSize(typ ggml.Type, shape []int64) int {
	row, err := typ.RowSize(shape[0])
	if err != nil {
		panic(err)
	}
	n := int(row)
	for _, d := range shape[1:] {
		n *= int(d)
	}
	return n
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// build returns a Builder holding pairs and specs.
func build(t testing.TB, pairs []pair, specs []spec) *gguf.Builder {
	t.Helper()
	b := gguf.NewBuilder()
	for _, p := range pairs {
		require.NoError(t, b.Set(p.key, p.val), p.key)
	}
	for _, s := range specs {
		require.NoError(t, b.AddTensor(s.name, s.typ, s.shape, gguf.FromBytes(s.data)), s.name)
	}
	return b
}

// writeTemp writes b to a file in a temporary directory and returns its
// path.
func writeTemp(t testing.TB, b *gguf.Builder) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.gguf")
	require.NoError(t, b.WriteFile(path))
	return path
}

// everyType returns one tensor of each type the linked ggml knows.
func everyType(rng *rand.Rand) []spec {
	var specs []spec
	for _, typ := range ggml.Types() {
		specs = append(specs, randomSpec(rng, fmt.Sprintf("t.%s", typ), typ))
	}
	return specs
}

// checkFile checks that f holds pairs and specs, data included.
func checkFile(t *testing.T, f *gguf.File, pairs []pair, specs []spec) {
	t.Helper()
	require.Equal(t, len(pairs), f.NumKV())
	i := 0
	for k, v := range f.KV() {
		require.Equal(t, pairs[i].key, k)
		require.Equal(t, pairs[i].val, v.Any(), k)
		i++
	}
	require.Equal(t, len(specs), f.NumTensors())
	for i, ti := range f.Tensors() {
		s := specs[i]
		require.Equal(t, s.name, ti.Name)
		require.Equal(t, s.typ, ti.Type)
		require.Equal(t, s.shape, ti.Shape)
		require.Equal(t, uint64(len(s.data)), ti.Size)
		require.Zero(t, ti.Offset%f.Alignment())
		got, err := f.TensorData(s.name)
		require.NoError(t, err)
		require.Equal(t, s.data, got, s.name)
	}
}

func readAll(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
