package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// Builder collects the metadata and tensors of a GGUF file and writes it
// (gguf_init_empty, gguf_set_val_*, gguf_add_tensor, gguf_write_to_file).
// Tensor data is read from its Source only while WriteTo runs, one chunk at
// a time: the whole file is never in memory. A Builder is used by one
// goroutine at a time.
//
// Files are written as ggml writes them: version 3, the key-value pairs in
// the order they were first set, the tensors in the order they were added,
// each tensor's data at the next multiple of the alignment (general.alignment
// if set, else 32) and padded with zeros to it.
type Builder struct {
	kvs       []kv
	keys      map[string]int
	tensors   []builderTensor
	names     map[string]int
	alignment uint64
}

type builderTensor struct {
	info TensorInfo
	src  Source
}

// NewBuilder returns an empty Builder (gguf_init_empty).
func NewBuilder() *Builder {
	return &Builder{keys: map[string]int{}, names: map[string]int{}, alignment: DefaultAlignment}
}

// Set sets key to v, a Value or one of the Data types (NewValue). A key set
// again keeps its place and takes the new value. KeyAlignment must be a
// uint32 power of two; it sets the alignment of the tensor data.
// (gguf_set_val_*, gguf_set_arr_data, gguf_set_arr_str.)
func (b *Builder) Set(key string, v any) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	val, err := ValueOf(v)
	if err != nil {
		return fmt.Errorf("gguf: key %q: %w", key, err)
	}
	if key == KeyAlignment {
		a, ok := val.v.(uint32)
		if !ok {
			return fmt.Errorf("%w: %s must be a uint32, not %v", ErrType, KeyAlignment, val.typ)
		}
		if a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("%w: %s %d is not a power of two", ErrInvalid, KeyAlignment, a)
		}
		b.alignment = uint64(a)
	}
	if i, ok := b.keys[key]; ok {
		b.kvs[i].val = val
		return nil
	}
	b.keys[key] = len(b.kvs)
	b.kvs = append(b.kvs, kv{key, val})
	return nil
}

// Source is where the data of a tensor comes from when a Builder writes it.
type Source struct {
	bytes  []byte
	open   func() (io.Reader, error)
	tensor *ggml.Tensor
}

// FromBytes takes a tensor's data from b, which must hold exactly the
// tensor's bytes and stay unchanged until WriteTo returns.
func FromBytes(b []byte) Source {
	if b == nil {
		b = []byte{}
	}
	return Source{bytes: b}
}

// FromReader takes a tensor's data from the reader that open returns when
// WriteTo reaches the tensor; it must yield exactly the tensor's bytes. A
// reader that is an io.Closer is closed afterwards.
func FromReader(open func() (io.Reader, error)) Source { return Source{open: open} }

// FromTensor takes a tensor's data from t, a contiguous allocated tensor in
// any backend buffer (or context), read in chunks while WriteTo runs
// (ggml_backend_tensor_get).
func FromTensor(t *ggml.Tensor) Source { return Source{tensor: t} }

// AddTensor adds a tensor called name of type typ and shape (ne0 first, 1
// to 4 dimensions) whose data comes from src (gguf_add_tensor). Names are
// unique, at most ggml.MaxNameLen bytes, without NUL bytes; ne0 must be a
// multiple of the type's block size.
func (b *Builder) AddTensor(name string, typ ggml.Type, shape []int64, src Source) error {
	if len(name) > ggml.MaxNameLen || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("%w: tensor name %q: at most %d bytes, no NUL", ErrInvalid, name, ggml.MaxNameLen)
	}
	if _, dup := b.names[name]; dup {
		return fmt.Errorf("%w: tensor %q added twice", ErrInvalid, name)
	}
	if why, ok := needsUpstream(typ); ok {
		return fmt.Errorf("%w (%w): tensor %q: %s", ErrInvalid, ggml.ErrUnsupported, name, why)
	}
	if !typ.Valid() {
		return fmt.Errorf("%w: tensor %q: %v is not a type of the linked ggml", ErrInvalid, name, typ)
	}
	if len(shape) < 1 || len(shape) > ggml.MaxDims {
		return fmt.Errorf("%w: tensor %q: %d dimensions, 1 to %d allowed", ErrInvalid, name, len(shape), ggml.MaxDims)
	}
	for i, n := range shape {
		if n < 0 {
			return fmt.Errorf("%w: tensor %q: dimension %d is negative", ErrInvalid, name, i)
		}
	}
	size, err := tensorSize(typ, shape)
	if err != nil {
		return fmt.Errorf("%w: tensor %q: %v", ErrInvalid, name, err)
	}
	switch {
	case src.bytes != nil:
		if uint64(len(src.bytes)) != size {
			return fmt.Errorf("%w: tensor %q has %d bytes, the data %d", ErrInvalid, name, size, len(src.bytes))
		}
	case src.open != nil:
	case src.tensor != nil:
		if err := checkSourceTensor(src.tensor, typ, shape); err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", name, err)
		}
	default:
		return fmt.Errorf("%w: tensor %q has no data source", ErrInvalid, name)
	}
	b.names[name] = len(b.tensors)
	b.tensors = append(b.tensors, builderTensor{TensorInfo{Name: name, Type: typ, Shape: clone(shape), Size: size}, src})
	return nil
}

// AddGGMLTensor adds tensor t under its own name, type and shape
// (trailing dimensions of 1 dropped, as ggml writes them), its data read
// from t when WriteTo runs.
func (b *Builder) AddGGMLTensor(t *ggml.Tensor) error {
	if err := t.Err(); err != nil {
		return err
	}
	if t.Dims() == 0 {
		return fmt.Errorf("%w: the tensor's context is closed", ggml.ErrClosed)
	}
	return b.AddTensor(t.Name(), t.Type(), t.Shape(), FromTensor(t))
}

func checkSourceTensor(t *ggml.Tensor, typ ggml.Type, shape []int64) error {
	if err := t.Err(); err != nil {
		return err
	}
	if t.Dims() == 0 {
		return fmt.Errorf("%w: the source tensor's context is closed", ggml.ErrClosed)
	}
	ne := TensorInfo{Shape: shape}.Ne()
	if t.Type() != typ || t.Ne() != ne {
		return fmt.Errorf("%w: the source tensor is %v, the file's %v%v", ErrInvalid, t, typ, shape)
	}
	if !t.IsContiguous() {
		return fmt.Errorf("%w: the source tensor %v is not contiguous", ErrInvalid, t)
	}
	return nil
}

// Tensors returns the tensor infos as the file will have them, offsets
// included.
func (b *Builder) Tensors() []TensorInfo {
	out := make([]TensorInfo, len(b.tensors))
	off := uint64(0)
	for i, t := range b.tensors {
		out[i] = t.info.clone()
		out[i].Offset = off
		off += pad(t.info.Size, b.alignment)
	}
	return out
}

func pad(n, to uint64) uint64 { return (n + to - 1) / to * to }

// openSource calls a FromReader function: a panic in it, or no reader
// and no error, is an ErrCallback error.
func openSource(open func() (io.Reader, error)) (r io.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("%w: the FromReader function panicked: %v", ErrCallback, p)
		}
	}()
	if r, err = open(); err == nil && r == nil {
		err = fmt.Errorf("%w: the FromReader function returned neither a reader nor an error", ErrCallback)
	}
	return r, err
}

// chunk is how much tensor data WriteTo holds at once.
const chunk = 4 << 20

// WriteTo writes the file to w and returns the bytes w accepted
// (gguf_write_to_file; an io.WriterTo: bytes still buffered when an error
// stops it are not counted). A source that yields the wrong number of
// bytes, or fails, stops it with an error; what was written so far is not
// a valid file.
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<20)
	e := encoder{w: bw}
	e.raw([]byte(magic))
	e.u32(Version)
	e.u64(uint64(len(b.tensors)))
	e.u64(uint64(len(b.kvs)))
	for _, p := range b.kvs {
		e.str(p.key)
		e.u32(uint32(p.val.typ))
		e.value(p.val)
	}
	for _, ti := range b.Tensors() {
		e.str(ti.Name)
		e.u32(uint32(len(ti.Shape)))
		for _, n := range ti.Shape {
			e.u64(uint64(n))
		}
		e.u32(uint32(ti.Type))
		e.u64(ti.Offset)
	}
	e.pad(b.alignment)
	if e.err != nil {
		return cw.n, e.err
	}
	var buf []byte
	for _, t := range b.tensors {
		if err := b.writeData(&e, t, &buf); err != nil {
			return cw.n, fmt.Errorf("gguf: tensor %q: %w", t.info.Name, err)
		}
		e.pad(b.alignment)
		if e.err != nil {
			return cw.n, e.err
		}
	}
	err := bw.Flush()
	return cw.n, err
}

func (b *Builder) writeData(e *encoder, t builderTensor, buf *[]byte) error {
	size := t.info.Size
	switch src := t.src; {
	case src.bytes != nil:
		e.raw(src.bytes)
	case src.open != nil:
		r, err := openSource(src.open)
		if err != nil {
			return err
		}
		if c, ok := r.(io.Closer); ok {
			defer c.Close()
		}
		n, err := io.CopyN(e.w, r, int64(size))
		e.n += uint64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: the reader gave %d bytes, the tensor has %d", ErrInvalid, n, size)
			}
			return err
		}
		var one [1]byte
		if k, _ := io.ReadFull(r, one[:]); k > 0 {
			return fmt.Errorf("%w: the reader gives more than the tensor's %d bytes", ErrInvalid, size)
		}
	case src.tensor != nil:
		if err := checkSourceTensor(src.tensor, t.info.Type, t.info.Shape); err != nil {
			return err
		}
		if *buf == nil {
			*buf = make([]byte, min(size, chunk))
		}
		for off := uint64(0); off < size; {
			n := min(size-off, uint64(len(*buf)))
			if n > uint64(cap(*buf)) {
				*buf = make([]byte, n)
			}
			p := (*buf)[:n]
			if err := backend.TensorGet(src.tensor, p, off); err != nil {
				return err
			}
			e.raw(p)
			off += n
		}
	}
	return e.err
}

// WriteFile writes the file to path (created or truncated).
func (b *Builder) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if _, err := b.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// encoder writes the format's little-endian values; the first error
// sticks.
type encoder struct {
	w   *bufio.Writer
	n   uint64 // bytes written
	err error
	tmp [8]byte
}

func (e *encoder) raw(p []byte) {
	if e.err != nil {
		return
	}
	_, e.err = e.w.Write(p)
	e.n += uint64(len(p))
}

func (e *encoder) u8(v uint8) { e.tmp[0] = v; e.raw(e.tmp[:1]) }

func (e *encoder) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.tmp[:], v)
	e.raw(e.tmp[:2])
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.tmp[:], v)
	e.raw(e.tmp[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.tmp[:], v)
	e.raw(e.tmp[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
		e.n += uint64(len(s))
	}
}

func (e *encoder) pad(to uint64) {
	var zeros [64]byte
	for e.n%to != 0 && e.err == nil {
		e.raw(zeros[:min(to-e.n%to, uint64(len(zeros)))])
	}
}

// value writes v without its type tag.
func (e *encoder) value(v Value) {
	switch x := v.v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case bool:
		if x {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case string:
		e.str(x)
	default:
		// An array: its element type, its count, its elements (an element
		// array without its type tag).
		e.u32(uint32(v.elem))
		n := v.Len()
		e.u64(uint64(n))
		if x, ok := x.([]uint8); ok {
			e.raw(x)
			return
		}
		for i := range n {
			e.value(v.Index(i))
		}
	}
}
