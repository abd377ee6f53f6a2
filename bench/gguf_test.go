package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
)

// ---- 7. GGUF loading ------------------------------------------------------

// ggufMiB is the size of the generated file: GOGGML_BENCH_GGUF_MIB, 1024
// (1 GiB) unless set.
func ggufMiB(tb testing.TB) int64 {
	s := os.Getenv("GOGGML_BENCH_GGUF_MIB")
	if s == "" {
		return 1024
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 16 {
		tb.Fatalf("GOGGML_BENCH_GGUF_MIB=%q: want a number of MiB >= 16", s)
	}
	return n
}

// ggufFiles are the generated files, by size in MiB; TestMain removes them.
var ggufFiles struct {
	sync.Mutex
	dir   string
	paths map[int64]string
}

// ggufFile writes, once per process and size, a GGUF file of about mib
// MiB: 16-MiB f16 tensors of random bytes.
func ggufFile(tb testing.TB, mib int64) (string, int64) {
	g := &ggufFiles
	g.Lock()
	defer g.Unlock()
	path, ok := g.paths[mib]
	if !ok {
		var err error
		if g.dir == "" {
			if g.dir, err = os.MkdirTemp("", "gguf-bench-"); err != nil {
				tb.Fatal(err)
			}
			g.paths = map[int64]string{}
		}
		path = filepath.Join(g.dir, fmt.Sprintf("model-%d.gguf", mib))
		if err := writeGGUF(path, mib); err != nil {
			tb.Fatal(err)
		}
		g.paths[mib] = path
	}
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return path, st.Size()
}

func writeGGUF(path string, mib int64) error {
	rng := rand.New(rand.NewPCG(7, 8))
	block := make([]byte, 16<<20)
	for i := range block {
		block[i] = byte(rng.Uint32())
	}
	b := gguf.NewBuilder()
	if err := b.Set(gguf.KeyArchitecture, "bench"); err != nil {
		return err
	}
	for i := range mib / 16 {
		src := gguf.FromReader(func() (io.Reader, error) { return &fixedReader{block, 0}, nil })
		if err := b.AddTensor(fmt.Sprintf("blk.%d.weight", i), ggml.TypeF16, []int64{4096, 2048}, src); err != nil {
			return err
		}
	}
	return b.WriteFile(path)
}

// removeGGUFFiles removes the generated files.
func removeGGUFFiles() {
	if ggufFiles.dir != "" {
		os.RemoveAll(ggufFiles.dir)
	}
}

type fixedReader struct {
	b   []byte
	off int
}

func (r *fixedReader) Read(p []byte) (int, error) {
	if r.off == len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

// touch reads one byte of every page of the model's buffers: what the
// first compute over a zero-copy model pays in page faults.
func touch(m *gguf.Model) int64 {
	var s int64
	for _, b := range m.Buffers() {
		base, err := b.Base()
		if err != nil {
			panic(err)
		}
		mem := unsafe.Slice((*byte)(base), b.Size())
		for i := 0; i < len(mem); i += 4096 {
			s += int64(mem[i])
		}
	}
	return s
}

// BenchmarkGGUF opens and loads a generated file (1 GiB;
// GOGGML_BENCH_GGUF_MIB) into CPU buffers, the page cache warm, against plain
// reads of the same file into fresh memory in C where the work is the same
// (one reader, every byte copied); the other ways of loading are Go rows
// without a ratio. Each Go iteration opens
// the file (header and mapping), loads it, and closes both.
func BenchmarkGGUF(b *testing.B) {
	path, size := ggufFile(b, ggufMiB(b))
	if got := cReadFile(path, size); got != size { // warms the page cache
		b.Fatalf("reading %s: %d of %d bytes", path, got, size)
	}
	name := fmt.Sprintf("%dMiB", size>>20)
	gbs := func(b *testing.B) {
		b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	}
	load := func(opts gguf.LoadOptions, touchPages bool) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetBytes(size)
			for range b.N {
				f, err := gguf.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				m, err := gguf.Load(context.Background(), f, opts)
				if err != nil {
					b.Fatal(err)
				}
				if touchPages {
					sink += touch(m)
				}
				m.Close()
				f.Close()
			}
			gbs(b)
		}
	}
	plain := func(b *testing.B) {
		b.SetBytes(size)
		for range b.N {
			if got := cReadFile(path, size); got != size {
				b.Fatalf("read %d of %d bytes", got, size)
			}
		}
		gbs(b)
	}
	for _, c := range []struct {
		fig   string
		opts  gguf.LoadOptions
		touch bool
		same  bool // the C side's work: a ratio to print
	}{
		// Several reader goroutines against one C reader: not the same
		// work, so no ratio (copy-1worker is the comparison).
		{"copy", gguf.LoadOptions{NoMmap: true}, false, false},
		{"copy-1worker", gguf.LoadOptions{NoMmap: true, Workers: 1}, false, true},
		// Zero-copy moves no data: no ratio either.
		{"mmap", gguf.LoadOptions{}, false, false},
		{"mmap-touch", gguf.LoadOptions{}, true, false},
	} {
		fig := fmt.Sprintf("load-%s-%s", c.fig, name)
		if c.same {
			pair(b, fig, load(c.opts, c.touch), plain)
		} else {
			solo(b, fig, load(c.opts, c.touch))
		}
	}
}

// Both sides read the whole file; the Go side's tensors hold its bytes.
func TestGGUFSidesReadTheSame(t *testing.T) {
	path, size := ggufFile(t, 32)
	require.Equal(t, size, cReadFile(path, size))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, 2, f.NumTensors())
	for _, opts := range []gguf.LoadOptions{{NoMmap: true}, {}} {
		m, err := gguf.Load(context.Background(), f, opts)
		require.NoError(t, err)
		total := uint64(0)
		for _, ti := range f.Tensors() {
			want, err := f.TensorData(ti.Name)
			require.NoError(t, err)
			got, err := ggml.Bytes(m.Tensor(ti.Name))
			require.NoError(t, err)
			require.Equal(t, want, got)
			total += ti.Size
		}
		require.Equal(t, total, m.MappedBytes()+m.CopiedBytes())
		require.Equal(t, uint64(size)-f.DataOffset(), total)
		require.NoError(t, m.Close())
	}
}
