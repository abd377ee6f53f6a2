package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/life"
)

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name string
	Type ggml.Type
	// Shape is the size of each dimension, ne0 (the innermost, contiguous
	// one) first, as many as the file stores (ggml writes trailing
	// dimensions of 1 as absent).
	Shape []int64
	// Offset is where the data starts, in bytes from the start of the data
	// section (File.DataOffset).
	Offset uint64
	// Size is the data's size in bytes (ggml_nbytes).
	Size uint64
}

// Ne returns the shape as ggml's four dimensions, the absent ones 1.
func (ti TensorInfo) Ne() [ggml.MaxDims]int64 {
	ne := [ggml.MaxDims]int64{1, 1, 1, 1}
	copy(ne[:], ti.Shape)
	return ne
}

// Elements returns the number of elements (ggml_nelements).
func (ti TensorInfo) Elements() int64 {
	ne := ti.Ne()
	return ne[0] * ne[1] * ne[2] * ne[3] // checked against overflow when read
}

func (ti TensorInfo) clone() TensorInfo {
	ti.Shape = clone(ti.Shape)
	return ti
}

// File is a parsed GGUF file: its version, metadata and tensor infos, and
// access to the tensor data. The metadata lives in Go memory; the data is
// read from the file (or the bytes) when asked for. Files from Open map the
// file into memory too, which Load uses for zero-copy loading.
//
// A File may be used by several goroutines at once. Close releases the
// file; afterwards the metadata and tensor infos are still there, and what
// reads data reports ErrClosed.
type File struct {
	h       *header
	size    uint64
	src     io.ReaderAt // the bytes
	name    string      // the path, for messages ("" for bytes)
	osf     *os.File    // Open: the open file
	m       *mapping    // Open: the file mapped into memory; nil if it could not be
	closed  atomic.Bool
	cleanup runtime.Cleanup
}

// Open opens and parses the GGUF file at path, reading only its header,
// and maps the whole file into memory (read-only for the file: pages
// written through the mapping are private to this process). Close the File
// when done. A file that is not valid GGUF is an error of kind ErrFormat.
//
// The mapping is what Load makes zero-copy buffers over; they keep it
// alive past Close. A file truncated by another process while mapped loses
// pages whose reads fault (SIGBUS): Load checks the file's size before it
// uses the mapping, and reads every mapped page it validates or copies in
// Go first (runtime/debug.SetPanicOnFault), so that a lost page is an
// ErrFormat error; ggml's own reads afterwards (computes over zero-copy
// tensors, Data) are C code, where a lost page still ends the process.
func Open(path string) (*File, error) {
	osf, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	st, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if !st.Mode().IsRegular() {
		osf.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrInvalid, path)
	}
	size := uint64(st.Size())
	h, err := parse(&decoder{ra: osf, size: size})
	if err != nil {
		osf.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f := &File{h: h, size: size, name: path, osf: osf}
	f.src = fileReader{f}
	if size <= math.MaxInt {
		f.m = mapFile(osf, int(size)) // nil where mapping fails: Load copies
	}
	f.cleanup = runtime.AddCleanup(f, collectFile, fileRes{osf, f.m})
	life.Leaks.Opened("gguf.File", osf)
	return f, nil
}

// Parse parses a GGUF file held in memory. The File reads tensor data from
// b, which must not change while the File is in use; it is never mapped:
// Load copies from it.
func Parse(b []byte) (*File, error) {
	h, err := parse(&decoder{mem: b, size: uint64(len(b))})
	if err != nil {
		return nil, err
	}
	return &File{h: h, size: uint64(len(b)), src: bytes.NewReader(b)}, nil
}

// Read parses a GGUF file of size bytes read from r, which the File keeps
// for reading tensor data; Load copies from it. The header is read in
// pieces, and memory grows only with the bytes that really arrive: a size
// larger than r's data is an ErrFormat error once the end is reached.
func Read(r io.ReaderAt, size int64) (*File, error) {
	if r == nil || size < 0 {
		return nil, fmt.Errorf("%w: Read needs a reader and a size >= 0", ErrInvalid)
	}
	h, err := parse(&decoder{ra: r, size: uint64(size)})
	if err != nil {
		return nil, err
	}
	return &File{h: h, size: uint64(size), src: r}, nil
}

type fileRes struct {
	osf *os.File
	m   *mapping
}

// collectFile is the cleanup of a File never closed.
func collectFile(r fileRes) {
	life.Leaks.Collected(r.osf)
	closeFile(r)
}

func closeFile(r fileRes) {
	r.osf.Close()
	if r.m != nil {
		r.m.release()
	}
}

// Close closes the file and drops its mapping (buffers that Load made over
// it keep the mapping until they are freed). It is idempotent and safe on
// nil; a File from Parse or Read holds nothing to release.
func (f *File) Close() error {
	if f == nil || !f.closed.CompareAndSwap(false, true) {
		return nil
	}
	if f.osf == nil {
		return nil
	}
	f.cleanup.Stop()
	life.Leaks.Closed(f.osf)
	err := f.osf.Close()
	if f.m != nil {
		f.m.release()
	}
	return err
}

// fileReader reads an open File's file, reporting ErrClosed once it is
// closed.
type fileReader struct{ f *File }

func (r fileReader) ReadAt(p []byte, off int64) (int, error) {
	if r.f.closed.Load() {
		return 0, fmt.Errorf("%w: the GGUF file is closed", ErrClosed)
	}
	n, err := r.f.osf.ReadAt(p, off)
	if errors.Is(err, os.ErrClosed) {
		err = fmt.Errorf("%w: the GGUF file is closed", ErrClosed)
	}
	return n, err
}

func (f *File) usable() error {
	if f == nil {
		return fmt.Errorf("%w: nil *File", ErrInvalid)
	}
	if f.closed.Load() {
		return fmt.Errorf("%w: the GGUF file is closed", ErrClosed)
	}
	return nil
}

// Version returns the file's GGUF version, 2 or 3 (gguf_get_version).
func (f *File) Version() uint32 { return f.h.version }

// Alignment returns the alignment of tensor data in the file:
// general.alignment, or DefaultAlignment (gguf_get_alignment).
func (f *File) Alignment() uint64 { return f.h.alignment }

// DataOffset returns where the data section starts, in bytes from the start
// of the file: the end of the header rounded up to the alignment
// (gguf_get_data_offset).
func (f *File) DataOffset() uint64 { return f.h.dataOffset }

// Size returns the size of the file in bytes.
func (f *File) Size() uint64 { return f.size }

// NumKV returns the number of metadata key-value pairs (gguf_get_n_kv).
func (f *File) NumKV() int { return len(f.h.kvs) }

// KV returns the metadata key-value pairs in file order.
func (f *File) KV() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		for _, p := range f.h.kvs {
			if !yield(p.key, p.val) {
				return
			}
		}
	}
}

// Value returns the value of key, or false when the file has no such key
// (gguf_find_key).
func (f *File) Value(key string) (Value, bool) {
	i, ok := f.h.keys[key]
	if !ok {
		return Value{}, false
	}
	return f.h.kvs[i].val, true
}

// Get returns the value of key as a T (see Data: uint32 for a u32, []string
// for an array of strings, ...). A missing key is a *KeyError of kind
// ErrNotFound; a value of another type one of kind ErrType: there is no
// conversion between widths.
func Get[T Data](f *File, key string) (T, error) {
	var zero T
	v, ok := f.Value(key)
	if !ok {
		return zero, &KeyError{Key: key, Want: typeName[T](), Err: ErrNotFound}
	}
	x, ok := As[T](v)
	if !ok {
		got := v.typ.String()
		if v.typ == TypeArray {
			got = "[]" + v.elem.String()
		}
		return zero, &KeyError{Key: key, Want: typeName[T](), Got: got, Err: ErrType}
	}
	return x, nil
}

// typeName returns the GGUF name of T, "[]name" for an array.
func typeName[T Data]() string {
	var z T
	if v, ok := valueOf(z); ok {
		if v.typ == TypeArray {
			return "[]" + v.elem.String()
		}
		return v.typ.String()
	}
	return fmt.Sprintf("%T", z)
}

// String returns the string value of key (gguf_get_val_str).
func (f *File) String(key string) (string, error) { return Get[string](f, key) }

// Bool returns the bool value of key (gguf_get_val_bool).
func (f *File) Bool(key string) (bool, error) { return Get[bool](f, key) }

// Uint8 returns the u8 value of key (gguf_get_val_u8).
func (f *File) Uint8(key string) (uint8, error) { return Get[uint8](f, key) }

// Int8 returns the i8 value of key (gguf_get_val_i8).
func (f *File) Int8(key string) (int8, error) { return Get[int8](f, key) }

// Uint16 returns the u16 value of key (gguf_get_val_u16).
func (f *File) Uint16(key string) (uint16, error) { return Get[uint16](f, key) }

// Int16 returns the i16 value of key (gguf_get_val_i16).
func (f *File) Int16(key string) (int16, error) { return Get[int16](f, key) }

// Uint32 returns the u32 value of key (gguf_get_val_u32).
func (f *File) Uint32(key string) (uint32, error) { return Get[uint32](f, key) }

// Int32 returns the i32 value of key (gguf_get_val_i32).
func (f *File) Int32(key string) (int32, error) { return Get[int32](f, key) }

// Uint64 returns the u64 value of key (gguf_get_val_u64).
func (f *File) Uint64(key string) (uint64, error) { return Get[uint64](f, key) }

// Int64 returns the i64 value of key (gguf_get_val_i64).
func (f *File) Int64(key string) (int64, error) { return Get[int64](f, key) }

// Float32 returns the f32 value of key (gguf_get_val_f32).
func (f *File) Float32(key string) (float32, error) { return Get[float32](f, key) }

// Float64 returns the f64 value of key (gguf_get_val_f64).
func (f *File) Float64(key string) (float64, error) { return Get[float64](f, key) }

// Strings returns the array of strings of key (gguf_get_arr_str for each).
func (f *File) Strings(key string) ([]string, error) { return Get[[]string](f, key) }

// Array returns the array value of key, whatever its element type
// (gguf_get_arr_type, gguf_get_arr_n, gguf_get_arr_data): use As, Len and
// Index on it. A value that is not an array is an ErrType *KeyError.
func (f *File) Array(key string) (Value, error) {
	v, ok := f.Value(key)
	if !ok {
		return Value{}, &KeyError{Key: key, Want: "arr", Err: ErrNotFound}
	}
	if v.typ != TypeArray {
		return Value{}, &KeyError{Key: key, Want: "arr", Got: v.typ.String(), Err: ErrType}
	}
	return v, nil
}

// NumTensors returns the number of tensors (gguf_get_n_tensors).
func (f *File) NumTensors() int { return len(f.h.tensors) }

// Tensors returns the tensor infos in file order.
func (f *File) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(f.h.tensors))
	for i, ti := range f.h.tensors {
		out[i] = ti.clone()
	}
	return out
}

// Tensor returns the info of the tensor called name, or false
// (gguf_find_tensor).
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.h.names[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.h.tensors[i].clone(), true
}

func (f *File) tensor(name string) (TensorInfo, error) {
	if err := f.usable(); err != nil {
		return TensorInfo{}, err
	}
	ti, ok := f.Tensor(name)
	if !ok {
		return TensorInfo{}, fmt.Errorf("%w: no tensor %q", ErrNotFound, name)
	}
	return ti, nil
}

// TensorReader returns a reader of the data of the tensor called name.
func (f *File) TensorReader(name string) (*io.SectionReader, error) {
	ti, err := f.tensor(name)
	if err != nil {
		return nil, err
	}
	return io.NewSectionReader(f.src, int64(f.h.dataOffset+ti.Offset), int64(ti.Size)), nil
}

// TensorData returns a copy of the data of the tensor called name, as ggml
// lays it out (rows of blocks, little-endian).
func (f *File) TensorData(name string) ([]byte, error) {
	ti, err := f.tensor(name)
	if err != nil {
		return nil, err
	}
	out := make([]byte, ti.Size)
	if err := readFull(f.src, out, f.h.dataOffset+ti.Offset); err != nil {
		return nil, fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	return out, nil
}

// readFull reads len(p) bytes at off: a short read is an ErrFormat error
// (the file is shorter than it said).
func readFull(r io.ReaderAt, p []byte, off uint64) error {
	n, err := r.ReadAt(p, int64(off))
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return &FormatError{Offset: int64(off) + int64(n), Reason: "the file ends here, before the end of the tensor data"}
	}
	return err
}

// mapping is a file mapped into memory, shared by the File and the buffers
// that Load makes over it; it is unmapped when the last of them lets go.
type mapping struct {
	mu    sync.Mutex
	data  []byte
	refs  int
	unmap func([]byte)
	// lent: the byte ranges of the tensors that live over the mapping
	// (zero-copy, in a buffer over it: a write copies their pages into
	// this process's private memory); drop leaves them alone.
	lent [][2]uint64
}

// lend records that bytes [lo, hi) live in a buffer over the mapping.
func (m *mapping) lend(lo, hi uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lent = append(m.lent, [2]uint64{lo, hi})
}

// drop gives back to the system the whole pages of bytes [lo, hi) that the
// process has read, where nothing else of it uses them: a tensor copied out
// of the mapping (re-laid into an extra buffer type) then no longer counts
// twice in the resident memory. Pages of a lent range are kept (a write
// there made them private); the file's pages stay in the page cache.
func (m *mapping) drop(lo, hi uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refs == 0 {
		return
	}
	page := uint64(os.Getpagesize())
	lo, hi = (lo+page-1)/page*page, hi/page*page
	for _, r := range m.lent {
		if lo < r[1] && r[0] < hi {
			return
		}
	}
	if lo < hi && hi <= uint64(len(m.data)) {
		dropPages(m.data[lo:hi])
	}
}

func newMapping(data []byte, unmap func([]byte)) *mapping {
	return &mapping{data: data, refs: 1, unmap: unmap}
}

// acquire adds a reference and returns the mapped bytes, or returns false
// once the mapping is gone.
func (m *mapping) acquire() ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refs == 0 {
		return nil, false
	}
	m.refs++
	return m.data, true
}

func (m *mapping) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refs--; m.refs == 0 {
		m.unmap(m.data)
		m.data = nil
	}
}
