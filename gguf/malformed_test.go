package gguf_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
)

var writeCorpus = flag.Bool("gguf.corpus", false, "write the hand-made files to testdata/fuzz as the fuzz targets' seed corpus")

// fb builds GGUF bytes by hand.
type fb struct{ bytes.Buffer }

func (b *fb) u32(v uint32) *fb { binary.Write(b, binary.LittleEndian, v); return b }
func (b *fb) u64(v uint64) *fb { binary.Write(b, binary.LittleEndian, v); return b }
func (b *fb) i64(v int64) *fb  { return b.u64(uint64(v)) }
func (b *fb) str(s string) *fb { b.u64(uint64(len(s))); b.WriteString(s); return b }
func (b *fb) raw(p ...byte) *fb {
	b.Write(p)
	return b
}
func (b *fb) pad(to int) *fb {
	for b.Len()%to != 0 {
		b.WriteByte(0)
	}
	return b
}

// head starts a file: magic, version 3, the counts.
func head(nTensors, nKV uint64) *fb {
	b := &fb{}
	b.WriteString("GGUF")
	return b.u32(3).u64(nTensors).u64(nKV)
}

// kvU32 appends a u32 key-value pair.
func (b *fb) kvU32(key string, v uint32) *fb { return b.str(key).u32(uint32(gguf.TypeUint32)).u32(v) }

// tensor appends a tensor info.
func (b *fb) tensor(name string, typ ggml.Type, off uint64, ne ...int64) *fb {
	b.str(name).u32(uint32(len(ne)))
	for _, n := range ne {
		b.i64(n)
	}
	return b.u32(uint32(typ)).u64(off)
}

// data pads to 32 and appends n bytes of tensor data.
func (b *fb) data(n int) []byte {
	b.pad(32)
	b.Write(make([]byte, n))
	return b.Bytes()
}

type badFile struct {
	name   string
	data   []byte
	reason string // part of the error message
}

// malformed returns hand-made files that lie, each with what the reader
// must say about it. Several are what the embedded provider's C reader
// asserts on, divides by zero with, or allocates gigabytes for.
func malformed() []badFile {
	f32, q4 := ggml.TypeF32, ggml.TypeQ4_0
	nested := head(0, 1).str("deep").u32(uint32(gguf.TypeArray))
	for range 20 {
		nested.u32(uint32(gguf.TypeArray)).u64(1)
	}
	return []badFile{
		{"empty", nil, "the magic needs 4 bytes"},
		{"short-magic", []byte("GGU"), "the magic"},
		{"bad-magic", append([]byte("GGML"), make([]byte, 20)...), "not a GGUF file"},
		{"version-0", (&fb{}).raw('G', 'G', 'U', 'F').u32(0).u64(0).u64(0).Bytes(), "version 0"},
		{"version-1", (&fb{}).raw('G', 'G', 'U', 'F').u32(1).u64(0).u64(0).Bytes(), "version 1"},
		{"version-4", (&fb{}).raw('G', 'G', 'U', 'F').u32(4).u64(0).u64(0).Bytes(), "newer"},
		{"big-endian", (&fb{}).raw('G', 'G', 'U', 'F').u32(3 << 24).u64(0).u64(0).Bytes(), "big-endian"},
		{"truncated-header", (&fb{}).raw('G', 'G', 'U', 'F').u32(3).u64(0).Bytes(), "key-value count"},
		{"kv-count-huge", head(0, 1<<62).Bytes(), "cannot fit"},
		{"kv-count-negative", head(0, 1<<63+1).Bytes(), "cannot fit"},
		{"tensor-count-huge", head(1<<40, 0).Bytes(), "cannot fit"},
		{"key-length-huge", head(0, 1).u64(1 << 40).raw(make([]byte, 16)...).Bytes(), "a key of"},
		{"key-length-past-end", head(0, 1).u64(14).raw('a', 'b').u32(0).raw(1, 2, 3, 4, 5, 6).Bytes(), "a key of 14 bytes"},
		{"empty-key", head(0, 1).str("").u32(uint32(gguf.TypeUint8)).raw(1, 0).Bytes(), "empty key"},
		{"duplicate-key", head(0, 2).kvU32("k", 1).kvU32("k", 2).Bytes(), "appears twice"},
		{"value-type-13", head(0, 1).str("k").u32(13).raw(0, 0, 0, 0).Bytes(), "unknown value type 13"},
		{"value-type-negative", head(0, 1).str("k").u32(math.MaxUint32).raw(0, 0, 0, 0).Bytes(), "unknown value type"},
		{"array-elem-type", head(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(77).u64(0).Bytes(), "unknown value type 77"},
		{"array-count-huge", head(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeUint32)).u64(1<<60).raw(0, 0, 0, 0).Bytes(), "array of"},
		{"string-array-count-huge", head(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeString)).u64(1 << 40).u64(0).Bytes(), "array of"},
		{"string-in-array-past-end", head(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeString)).u64(1).u64(1 << 30).Bytes(), "string in an array of"},
		{"arrays-nested-deep", nested.Bytes(), "nested more than"},
		{"alignment-u64", head(0, 1).str(gguf.KeyAlignment).u32(uint32(gguf.TypeUint64)).u64(64).Bytes(), "not a u32"},
		{"alignment-string", head(0, 1).str(gguf.KeyAlignment).u32(uint32(gguf.TypeString)).str("32").Bytes(), "not a u32"},
		{"alignment-0", head(0, 1).kvU32(gguf.KeyAlignment, 0).Bytes(), "not a power of two"},
		{"alignment-48", head(0, 1).kvU32(gguf.KeyAlignment, 48).Bytes(), "not a power of two"},
		{"tensor-name-64", head(1, 0).tensor(strings.Repeat("n", 64), f32, 0, 4).data(16), "at most 63"},
		{"tensor-name-nul", head(1, 0).tensor("a\x00b", f32, 0, 4).data(16), "NUL"},
		{"duplicate-tensor", head(2, 0).tensor("w", f32, 0, 4).tensor("w", f32, 32, 4).data(64), "appears twice"},
		{"dims-5", head(1, 0).tensor("w", f32, 0, 1, 1, 1, 1, 1).data(4), "5 dimensions"},
		{"dim-negative", head(1, 0).tensor("w", f32, 0, 4, -1).data(16), "negative"},
		{"type-unknown", head(1, 0).tensor("w", ggml.Type(1000), 0, 4).data(16), "does not know"},
		{"type-negative", head(1, 0).tensor("w", ggml.Type(-1), 0, 4).data(16), "does not know"},
		{"type-removed", head(1, 0).tensor("w", ggml.Type(4), 0, 32).data(64), "does not know"}, // Q4_2, gone from ggml
		{"row-not-blocks", head(1, 0).tensor("w", q4, 0, 33).data(64), "block size"},
		{"elements-overflow", head(1, 0).tensor("w", f32, 0, 1<<62, 4).data(16), "2^63"},
		{"bytes-overflow", head(1, 0).tensor("w", f32, 0, 1<<62).data(16), "2^63"},
		{"overflow-before-zero-dim", head(1, 0).tensor("w", f32, 0, 1<<40, 1<<40, 1<<40, 0).data(0), "2^63"},
		{"offset-unaligned", head(1, 0).tensor("w", f32, 4, 4).data(32), "not a multiple of the alignment"},
		{"data-past-end", head(1, 0).tensor("w", f32, 0, 64).data(255), "of the data section, which has 255"},
		{"offset-past-end", head(1, 0).tensor("w", f32, 1<<40, 4).data(16), "of the data section"},
		{"offset-overflow", head(1, 0).tensor("w", f32, math.MaxUint64-31, 16).data(64), "of the data section"},
		{"overlap", head(2, 0).tensor("a", f32, 0, 16).tensor("b", f32, 32, 16).data(96), "overlap"},
		{"overlap-contained", head(2, 0).tensor("a", f32, 0, 64).tensor("b", f32, 64, 4).data(256), "overlap"},
		{"truncated-tensor-info", head(1, 0).str("w").u32(2).i64(4).raw(1, 2, 3, 4, 5, 6, 7).Bytes(), "a dimension needs 8 bytes"},
		{"data-section-past-end", head(1, 0).tensor("w", f32, 0, 0).Bytes(), "past the end"},
		{"dims-count-huge", head(1, 0).str("w").u32(math.MaxUint32).raw(make([]byte, 16)...).Bytes(), "4294967295 dimensions"},
	}
}

// hostile returns files that are odd but valid: the reader takes them.
// Some are what the embedded provider's C reader divides by zero with.
func hostile() []badFile {
	f32 := ggml.TypeF32
	return []badFile{
		{"zero-dim-ne1", head(1, 0).tensor("w", f32, 0, 4, 0).data(0), ""},
		{"zero-dim-ne3", head(1, 0).tensor("w", f32, 0, 4, 2, 3, 0).data(0), ""},
		{"zero-dims-huge-other", head(1, 0).tensor("w", f32, 0, 0, 1<<62, 1<<62).data(0), ""},
		{"no-dims", head(1, 0).tensor("scalar", f32, 0).data(4), ""},
		{"empty-name", head(1, 0).tensor("", f32, 0, 4).data(16), ""},
		{"gap-and-reorder", head(2, 0).tensor("b", f32, 64, 4).tensor("a", f32, 0, 4).data(96), ""},
		{"trailing-bytes", append(head(1, 0).tensor("w", f32, 0, 4).data(16), 1, 2, 3), ""},
		{"alignment-1", head(1, 1).kvU32(gguf.KeyAlignment, 1).tensor("w", ggml.TypeI8, 1, 3).data(8), ""},
		{"version-2", func() []byte {
			b := head(0, 1).kvU32("k", 7).Bytes()
			b[4] = 2
			return b
		}(), ""},
		{"bool-2", head(0, 1).str("b").u32(uint32(gguf.TypeBool)).raw(2).Bytes(), ""},
		{"no-tensors-no-padding", head(0, 1).kvU32("k", 1).Bytes(), ""},
		{"nested-arrays", head(0, 1).str("n").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeArray)).u64(2).
			u32(uint32(gguf.TypeUint8)).u64(1).raw(9).u32(uint32(gguf.TypeString)).u64(1).str("s").Bytes(), ""},
	}
}

func TestMalformed(t *testing.T) {
	dir := t.TempDir()
	for _, c := range malformed() {
		t.Run(c.name, func(t *testing.T) {
			_, err := gguf.Parse(c.data)
			require.ErrorIs(t, err, gguf.ErrFormat)
			assert.Contains(t, err.Error(), c.reason)
			var fe *gguf.FormatError
			require.ErrorAs(t, err, &fe)
			assert.LessOrEqual(t, fe.Offset, int64(len(c.data)))

			_, err = gguf.Read(bytes.NewReader(c.data), int64(len(c.data)))
			require.ErrorIs(t, err, gguf.ErrFormat)
			assert.Contains(t, err.Error(), c.reason)

			path := filepath.Join(dir, c.name)
			require.NoError(t, os.WriteFile(path, c.data, 0o644))
			_, err = gguf.Open(path)
			require.ErrorIs(t, err, gguf.ErrFormat)
			assert.Contains(t, err.Error(), path)
		})
	}
}

// The first type number past the linked ggml's types and upstream's (40
// with the embedded provider, but that is upstream's nvfp4; 43 with
// upstream v0.21.0) is not a type.
func TestTypeCountIsUnknown(t *testing.T) {
	past := max(ggml.TypeCount, ggml.TypeQ2_0+1)
	_, err := gguf.Parse(head(1, 0).tensor("w", past, 0, 4).data(16))
	require.ErrorIs(t, err, gguf.ErrFormat)
	assert.Contains(t, err.Error(), fmt.Sprintf("type %d, which the linked ggml (%s) does not know", past, ggml.Provider()))
}

// A tensor of a type only upstream ggml has is read with the system
// provider; the embedded one says ErrUnsupported naming -tags ggml_system,
// not that the file is invalid.
func TestUpstreamTypeTensor(t *testing.T) {
	for _, ty := range []ggml.Type{ggml.TypeNVFP4, ggml.TypeQ1_0, ggml.TypeQ2_0} {
		// 128 values: whole blocks of each (64 or 128), 36 bytes at most per 64.
		f, err := gguf.Parse(head(1, 0).tensor("w", ty, 0, 128).data(96))
		if ty.Valid() { // the system provider
			require.NoError(t, err, "%d", ty)
			ti, ok := f.Tensor("w")
			require.True(t, ok)
			require.Equal(t, ty, ti.Type)
			continue
		}
		require.ErrorIs(t, err, ggml.ErrUnsupported, "%d", ty)
		require.NotErrorIs(t, err, gguf.ErrFormat, "%d", ty)
		require.ErrorContains(t, err, "-tags ggml_system")
	}
}

func TestHostileButValid(t *testing.T) {
	dir := t.TempDir()
	for _, c := range hostile() {
		t.Run(c.name, func(t *testing.T) {
			f, err := gguf.Parse(c.data)
			require.NoError(t, err)
			path := filepath.Join(dir, c.name)
			require.NoError(t, os.WriteFile(path, c.data, 0o644))
			fo, err := gguf.Open(path)
			require.NoError(t, err)
			defer fo.Close()
			for _, f := range []*gguf.File{f, fo} {
				m, err := gguf.Load(context.Background(), f, gguf.LoadOptions{})
				require.NoError(t, err)
				for _, ti := range f.Tensors() {
					x := m.Tensor(ti.Name)
					require.NotNil(t, x)
					assert.Equal(t, ti.Size, x.Bytes())
					assert.Equal(t, ti.Ne(), x.Ne())
					want, err := f.TensorData(ti.Name)
					require.NoError(t, err)
					got, err := ggml.Bytes(x)
					require.NoError(t, err)
					assert.Equal(t, want, got)
				}
				require.NoError(t, m.Close())
			}
		})
	}
	f, err := gguf.Parse(hostile()[len(hostile())-1].data)
	require.NoError(t, err)
	v, err := f.Array("n")
	require.NoError(t, err)
	assert.Equal(t, `[[9], ["s"]]`, v.String())
}

// TestSeedCorpus keeps testdata/fuzz in step with the tables above: run
// with -gguf.corpus to rewrite it.
func TestSeedCorpus(t *testing.T) {
	files := append(malformed(), hostile()...)
	for _, target := range []string{"FuzzParse", "FuzzLoad"} {
		dir := filepath.Join("testdata", "fuzz", target)
		for _, c := range files {
			path := filepath.Join(dir, c.name)
			want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", c.data)
			if *writeCorpus {
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
				continue
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./gguf -run TestSeedCorpus -gguf.corpus")
			assert.Equal(t, want, string(got), path)
		}
	}
}

// A reader whose size is a lie, under a header whose counts fit that size:
// the parse fails at the real end, having allocated little.
func TestReadLyingSizeAllocatesLittle(t *testing.T) {
	for _, data := range [][]byte{
		head(1<<28, 0).Bytes(),
		head(0, 1<<28).Bytes(),
		head(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeString)).u64(1 << 28).Bytes(),
		head(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeArray)).u64(1 << 28).Bytes(),
		head(0, 1).str("k").u32(uint32(gguf.TypeArray)).u32(uint32(gguf.TypeUint64)).u64(1 << 28).Bytes(),
		head(0, 1).str("k").u32(uint32(gguf.TypeString)).u64(1 << 32).Bytes(),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := gguf.Read(bytes.NewReader(data), 1<<40)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, gguf.ErrFormat)
		assert.Contains(t, err.Error(), "the file ends here")
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20))
	}
}
