package gguf_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
)

// seeds adds the hand-made files and a few valid ones to f's corpus.
func seeds(f *testing.F) {
	for _, c := range append(malformed(), hostile()...) {
		f.Add(c.data)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3 {
		var specs []spec
		for i, typ := range ggml.Types() {
			if i%5 == rng.IntN(5) {
				specs = append(specs, randomSpec(rng, typ.String(), typ))
			}
		}
		b := build(f, randomPairs(rng, true), specs)
		f.Add(bytesOf(f, b))
	}
}

// FuzzParse feeds lying bytes to the reader: it must return an ErrFormat
// error or a File that holds what a rewrite of it holds; Parse and Read
// must agree.
func FuzzParse(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fp, err := gguf.Parse(data)
		fr, errR := gguf.Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			require.ErrorIs(t, err, gguf.ErrFormat)
			var fe *gguf.FormatError
			require.ErrorAs(t, err, &fe)
			require.LessOrEqual(t, fe.Offset, int64(len(data)))
			require.Error(t, errR)
			require.Equal(t, err.Error(), errR.Error())
			return
		}
		require.NoError(t, errR)
		require.Equal(t, fp.Tensors(), fr.Tensors())
		require.Equal(t, fp.DataOffset(), fr.DataOffset())

		// Write the file again and read it back: the same metadata and
		// tensors (laid out anew). Not with a huge general.alignment: the
		// header alone would be padded to it (up to 2 GiB).
		if fp.Alignment() > 1<<16 {
			return
		}
		b := gguf.NewBuilder()
		for k, v := range fp.KV() {
			require.NoError(t, b.Set(k, v), k)
		}
		for _, ti := range fp.Tensors() {
			d, err := fp.TensorData(ti.Name)
			require.NoError(t, err)
			shape := ti.Shape
			if len(shape) == 0 {
				shape = []int64{1}
			}
			require.NoError(t, b.AddTensor(ti.Name, ti.Type, shape, gguf.FromBytes(d)))
		}
		var out bytes.Buffer
		_, err = b.WriteTo(&out)
		require.NoError(t, err)
		f2, err := gguf.Parse(out.Bytes())
		require.NoError(t, err)
		require.Equal(t, fp.NumKV(), f2.NumKV())
		require.Equal(t, fp.Alignment(), f2.Alignment())
		var keys []string
		var vals []string
		for k, v := range fp.KV() {
			keys, vals = append(keys, k), append(vals, v.String())
		}
		i := 0
		for k, v := range f2.KV() {
			require.Equal(t, keys[i], k)
			require.Equal(t, vals[i], v.String())
			i++
		}
		for i, ti := range f2.Tensors() {
			want := fp.Tensors()[i]
			require.Equal(t, want.Name, ti.Name)
			require.Equal(t, want.Type, ti.Type)
			require.Equal(t, want.Ne(), ti.Ne())
			require.Equal(t, want.Size, ti.Size)
			d1, err := fp.TensorData(ti.Name)
			require.NoError(t, err)
			d2, err := f2.TensorData(ti.Name)
			require.NoError(t, err)
			require.Equal(t, d1, d2)
		}
	})
}

// FuzzLoad loads what the reader accepts, from memory and from a mapped
// file: every tensor must come out with the file's bytes, and validation
// may only fail with ggml.ErrInvalid.
func FuzzLoad(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fp, err := gguf.Parse(data)
		if err != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "f.gguf")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		fo, err := gguf.Open(path)
		require.NoError(t, err)
		defer fo.Close()
		for _, file := range []*gguf.File{fp, fo} {
			m, err := gguf.Load(context.Background(), file, gguf.LoadOptions{Workers: 2})
			require.NoError(t, err)
			for _, ti := range file.Tensors() {
				want, err := file.TensorData(ti.Name)
				require.NoError(t, err)
				got, err := ggml.Bytes(m.Tensor(ti.Name))
				require.NoError(t, err)
				require.Equal(t, want, got, ti.Name)
			}
			require.NoError(t, m.Close())
			m, err = gguf.Load(context.Background(), file, gguf.LoadOptions{Validate: true})
			if err != nil {
				require.ErrorIs(t, err, ggml.ErrInvalid)
			} else {
				require.NoError(t, m.Close())
			}
		}
	})
}
