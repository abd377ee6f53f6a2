package gguf_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/gguf/internal/cgguf"
)

func TestFormatConstantsMatchGGUFH(t *testing.T) {
	require.Len(t, cgguf.ValueTypes, 13)
	for name, n := range cgguf.ValueTypes {
		assert.Equal(t, name, gguf.ValueType(n).String())
		assert.Equal(t, cgguf.TypeName(n), gguf.ValueType(n).String())
	}
	assert.Equal(t, cgguf.Version, gguf.Version)
	assert.Equal(t, cgguf.DefaultAlignment, gguf.DefaultAlignment)
	assert.Equal(t, cgguf.KeyAlignment, gguf.KeyAlignment)
}

// Files this package writes, ggml's reader (gguf_init_from_file) reads
// the same: version, alignment, data offset, every key-value pair, every
// tensor's info and data; for every tensor type, and for several
// alignments.
func TestGGMLReadsWhatWeWrite(t *testing.T) {
	for _, align := range []uint32{0, 8, 64, 4096} {
		rng := newRNG(t)
		pairs := randomPairs(rng, false)
		if align != 0 {
			pairs = append(pairs, pair{gguf.KeyAlignment, align})
		}
		specs := everyType(rng)
		specs = append(specs, spec{"empty", ggml.TypeF32, []int64{0, 3}, []byte{}}) // a zero dimension
		path := writeTemp(t, build(t, pairs, specs))
		f, err := gguf.Open(path)
		require.NoError(t, err)
		defer f.Close()

		c, err := cgguf.Read(path)
		require.NoError(t, err, "alignment %d", align)
		assert.Equal(t, f.Version(), c.Version)
		assert.Equal(t, f.Alignment(), c.Alignment)
		assert.Equal(t, f.DataOffset(), c.DataOffset)
		checkAgainstC(t, f, c)
		require.Len(t, c.Tensors, len(specs))
		for i, s := range specs {
			assert.Equal(t, s.data, c.Tensors[i].Data, s.name)
		}
	}
}

// Files ggml's writer (gguf_write_to_file) makes, this package reads the
// same, and loads every byte of. (Only with the default alignment: ggml's
// writer lays the data out with 32 whatever general.alignment says, and its
// own reader then refuses the file.)
func TestWeReadWhatGGMLWrites(t *testing.T) {
	for range 3 {
		rng := newRNG(t)
		pairs := randomPairs(rng, false)
		specs := everyType(rng)
		in := &cgguf.Contents{}
		for _, p := range pairs {
			in.KVs = append(in.KVs, cgguf.KV{Key: p.key, Value: p.val})
		}
		for _, s := range specs {
			ne := [4]int64{1, 1, 1, 1}
			copy(ne[:], s.shape)
			in.Tensors = append(in.Tensors, cgguf.Tensor{Name: s.name, Type: int32(s.typ), Ne: ne, Data: s.data})
		}
		path := filepath.Join(t.TempDir(), "c.gguf")
		require.NoError(t, cgguf.Write(path, in))

		c, err := cgguf.Read(path)
		require.NoError(t, err)
		f, err := gguf.Open(path)
		require.NoError(t, err)
		defer f.Close()
		assert.Equal(t, c.Version, f.Version())
		assert.Equal(t, c.Alignment, f.Alignment())
		assert.Equal(t, c.DataOffset, f.DataOffset())
		checkAgainstC(t, f, c)

		// ggml writes trailing dimensions of 1 as absent: compare ne.
		for i, s := range specs {
			ti := f.Tensors()[i]
			assert.Equal(t, in.Tensors[i].Ne, ti.Ne(), s.name)
			got, err := f.TensorData(s.name)
			require.NoError(t, err)
			assert.Equal(t, s.data, got, s.name)
		}
		for _, opts := range []gguf.LoadOptions{{}, {NoMmap: true}} {
			m, err := gguf.Load(t.Context(), f, opts)
			require.NoError(t, err)
			for _, s := range specs {
				got, err := ggml.Bytes(m.Tensor(s.name))
				require.NoError(t, err)
				require.Equal(t, s.data, got, s.name)
			}
			require.NoError(t, m.Close())
		}
	}
}

// checkAgainstC compares what f and ggml read of the same file.
func checkAgainstC(t *testing.T, f *gguf.File, c *cgguf.Contents) {
	t.Helper()
	require.Equal(t, len(c.KVs), f.NumKV())
	i := 0
	for k, v := range f.KV() {
		ckv := c.KVs[i]
		assert.Equal(t, ckv.Key, k)
		assert.Equal(t, ckv.Type, uint32(v.Type()), k)
		if v.Type() == gguf.TypeArray {
			assert.Equal(t, ckv.Elem, uint32(v.ElemType()), k)
		}
		assert.Equal(t, ckv.Value, v.Any(), k)
		i++
	}
	require.Equal(t, len(c.Tensors), f.NumTensors())
	for i, ti := range f.Tensors() {
		ct := c.Tensors[i]
		assert.Equal(t, ct.Name, ti.Name)
		assert.Equal(t, ct.Type, int32(ti.Type), ti.Name)
		assert.Equal(t, ct.Ne, ti.Ne(), ti.Name)
		assert.Equal(t, ct.Offset, ti.Offset, ti.Name)
		assert.Equal(t, ct.Size, ti.Size, ti.Name)
		got, err := f.TensorData(ti.Name)
		require.NoError(t, err)
		assert.Equal(t, ct.Data, got, ti.Name)
	}
}
