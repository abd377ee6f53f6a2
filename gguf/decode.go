package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"

	"github.com/go-ggml/ggml/ggml"
)

// Format constants (gguf.h).
const (
	// Version is the GGUF version Builder writes (GGUF_VERSION). The reader
	// takes versions 2 and 3, which differ only in what version 3 allows
	// (big-endian files, which this package does not read).
	Version = 3
	// DefaultAlignment is the alignment of tensor data when a file has no
	// general.alignment (GGUF_DEFAULT_ALIGNMENT).
	DefaultAlignment = 32
	// KeyAlignment is the metadata key of the alignment, a u32 power of two
	// (GGUF_KEY_GENERAL_ALIGNMENT).
	KeyAlignment = "general.alignment"
	// KeyArchitecture is llama.cpp's key of the model architecture, a
	// string such as "llama".
	KeyArchitecture = "general.architecture"
)

const magic = "GGUF"

// The fewest bytes a key-value pair and a tensor info take: a key of one
// byte (8-byte length and the byte; ggml refuses empty keys), the 4-byte
// type and a 1-byte value; a tensor name of 0 bytes (its length), the
// dimension count, the type and the offset.
const (
	minKVSize     = 8 + 1 + 4 + 1
	minTensorSize = 8 + 4 + 4 + 8
)

// window is how much the decoder reads at once from an io.ReaderAt.
const window = 64 << 10

// decoder reads the header of a GGUF file from memory or from an
// io.ReaderAt, never past size and never allocating for a count or a length
// that the bytes left could not hold.
type decoder struct {
	mem    []byte // the whole input, when it is in memory
	ra     io.ReaderAt
	size   uint64
	off    uint64
	win    []byte // bytes [winOff, winOff+len(win)) of ra
	winOff uint64
}

func (d *decoder) fail(off uint64, format string, args ...any) error {
	return &FormatError{Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
}

func (d *decoder) remain() uint64 { return d.size - d.off }

// next returns the next n bytes, valid until the next call, and moves past
// them.
func (d *decoder) next(n uint64, what string) ([]byte, error) {
	if n > d.remain() {
		return nil, d.fail(d.off, "%s needs %d bytes, the file has %d left", what, n, d.remain())
	}
	start := d.off
	d.off += n
	if d.mem != nil {
		return d.mem[start:d.off:d.off], nil
	}
	if start >= d.winOff && d.off <= d.winOff+uint64(len(d.win)) {
		return d.win[start-d.winOff : d.off-d.winOff], nil
	}
	if n > window {
		// A long string or array: read it in pieces, so that memory grows
		// with the bytes that really arrive, not with what a size claims.
		out := make([]byte, 0, window)
		for uint64(len(out)) < n {
			k := min(n-uint64(len(out)), 1<<20)
			out = append(out, make([]byte, k)...)
			if err := d.readAt(out[uint64(len(out))-k:], start+uint64(len(out))-k); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	k := min(window, d.size-start)
	if cap(d.win) < int(k) {
		d.win = make([]byte, window)
	}
	d.winOff = start
	got, err := d.ra.ReadAt(d.win[:k], int64(start))
	d.win = d.win[:got]
	if uint64(got) < n {
		// Only the bytes asked for must be there: the window may reach
		// past what a short reader has.
		d.win = d.win[:0]
		return nil, d.readErr(start+uint64(got), err)
	}
	return d.win[:n], nil
}

func (d *decoder) readAt(p []byte, off uint64) error {
	n, err := d.ra.ReadAt(p, int64(off))
	if n == len(p) {
		return nil
	}
	return d.readErr(off+uint64(n), err)
}

// readErr is the error of a read that stopped at byte off.
func (d *decoder) readErr(off uint64, err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return d.fail(off, "the file ends here, before the %d bytes its size says", d.size)
	}
	return fmt.Errorf("gguf: reading at byte %d: %w", off, err)
}

func (d *decoder) u32(what string) (uint32, error) {
	b, err := d.next(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	b, err := d.next(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (d *decoder) str(what string) (string, error) {
	at := d.off
	n, err := d.u64(what + "'s length")
	if err != nil {
		return "", err
	}
	if n > d.remain() {
		return "", d.fail(at, "%s of %d bytes, the file has %d left", what, n, d.remain())
	}
	b, err := d.next(n, what)
	return string(b), err
}

// value reads a value of type t; depth counts the arrays around it.
func (d *decoder) value(t ValueType, depth int) (Value, error) {
	if t == TypeArray {
		return d.array(depth)
	}
	if t == TypeString {
		s, err := d.str("a string value")
		return Value{typ: t, v: s}, err
	}
	b, err := d.next(t.size(), "a "+t.String()+" value")
	if err != nil {
		return Value{}, err
	}
	var v any
	switch t {
	case TypeUint8:
		v = b[0]
	case TypeInt8:
		v = int8(b[0])
	case TypeBool:
		v = b[0] != 0 // as ggml reads it
	case TypeUint16:
		v = binary.LittleEndian.Uint16(b)
	case TypeInt16:
		v = int16(binary.LittleEndian.Uint16(b))
	case TypeUint32:
		v = binary.LittleEndian.Uint32(b)
	case TypeInt32:
		v = int32(binary.LittleEndian.Uint32(b))
	case TypeFloat32:
		v = math.Float32frombits(binary.LittleEndian.Uint32(b))
	case TypeUint64:
		v = binary.LittleEndian.Uint64(b)
	case TypeInt64:
		v = int64(binary.LittleEndian.Uint64(b))
	case TypeFloat64:
		v = math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return Value{typ: t, v: v}, nil
}

func (d *decoder) array(depth int) (Value, error) {
	at := d.off
	if depth+1 >= maxDepth {
		return Value{}, d.fail(at, "arrays nested more than %d deep", maxDepth)
	}
	et32, err := d.u32("an array's element type")
	if err != nil {
		return Value{}, err
	}
	et := ValueType(et32)
	if !et.valid() {
		return Value{}, d.fail(at, "array of unknown value type %d", et32)
	}
	n, err := d.u64("an array's length")
	if err != nil {
		return Value{}, err
	}
	if min := et.minSize(); n > d.remain()/min {
		return Value{}, d.fail(at+4, "array of %d %v values (at least %d bytes each), the file has %d bytes left", n, et, min, d.remain())
	}
	v := Value{typ: TypeArray, elem: et}
	if sz := et.size(); sz > 0 {
		b, err := d.next(n*sz, "an array")
		if err != nil {
			return Value{}, err
		}
		v.v = decodeFixed(et, b, int(n))
		return v, nil
	}
	// Strings and arrays: each takes at least 8 bytes, which the count was
	// checked against; grow the slice as they come.
	capacity := int(min(n, 1024))
	if et == TypeString {
		out := make([]string, 0, capacity)
		for range n {
			s, err := d.str("a string in an array")
			if err != nil {
				return Value{}, err
			}
			out = append(out, s)
		}
		v.v = out
		return v, nil
	}
	// An element of an array of arrays is an array without the type tag:
	// its element type, its count and its data.
	out := make([]Value, 0, capacity)
	for range n {
		e, err := d.array(depth + 1)
		if err != nil {
			return Value{}, err
		}
		out = append(out, e)
	}
	v.v = out
	return v, nil
}

// decodeFixed decodes n little-endian values of the fixed-size type t.
func decodeFixed(t ValueType, b []byte, n int) any {
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return append(make([]uint8, 0, n), b...)
	case TypeInt8:
		return decodeN(b, n, 1, func(p []byte) int8 { return int8(p[0]) })
	case TypeBool:
		return decodeN(b, n, 1, func(p []byte) bool { return p[0] != 0 })
	case TypeUint16:
		return decodeN(b, n, 2, le.Uint16)
	case TypeInt16:
		return decodeN(b, n, 2, func(p []byte) int16 { return int16(le.Uint16(p)) })
	case TypeUint32:
		return decodeN(b, n, 4, le.Uint32)
	case TypeInt32:
		return decodeN(b, n, 4, func(p []byte) int32 { return int32(le.Uint32(p)) })
	case TypeFloat32:
		return decodeN(b, n, 4, func(p []byte) float32 { return math.Float32frombits(le.Uint32(p)) })
	case TypeUint64:
		return decodeN(b, n, 8, le.Uint64)
	case TypeInt64:
		return decodeN(b, n, 8, func(p []byte) int64 { return int64(le.Uint64(p)) })
	case TypeFloat64:
		return decodeN(b, n, 8, func(p []byte) float64 { return math.Float64frombits(le.Uint64(p)) })
	}
	panic("gguf: decodeFixed of " + t.String())
}

// decodeN decodes n values of size bytes each from b with conv.
func decodeN[T any](b []byte, n, size int, conv func([]byte) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = conv(b[size*i:])
	}
	return out
}

// header is what parsing a file yields.
type header struct {
	version    uint32
	alignment  uint64
	dataOffset uint64
	kvs        []kv
	keys       map[string]int
	tensors    []TensorInfo
	names      map[string]int
}

type kv struct {
	key string
	val Value
}

// parse reads and checks the header of a file of d.size bytes.
func parse(d *decoder) (*header, error) {
	b, err := d.next(4, "the magic")
	if err != nil {
		return nil, err
	}
	if string(b) != magic {
		return nil, d.fail(0, "magic %q, not %q: not a GGUF file", b, magic)
	}
	h := &header{}
	if h.version, err = d.u32("the version"); err != nil {
		return nil, err
	}
	switch v := h.version; {
	case v == 0:
		return nil, d.fail(4, "version 0")
	case v&0xffff == 0:
		return nil, d.fail(4, "version %#x: a big-endian file? (this package reads little-endian files)", v)
	case v == 1:
		return nil, d.fail(4, "GGUF version 1 is not supported (versions 2 and 3 are)")
	case v > Version:
		return nil, d.fail(4, "version %d is newer than the %d this package reads", v, Version)
	}
	nTensors, err := d.u64("the tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := d.u64("the key-value count")
	if err != nil {
		return nil, err
	}
	if nTensors > d.remain()/minTensorSize || nKV > d.remain()/minKVSize || nTensors*minTensorSize+nKV*minKVSize > d.remain() {
		return nil, d.fail(8, "%d tensors and %d key-value pairs cannot fit in the %d bytes left", nTensors, nKV, d.remain())
	}

	// The slices and maps grow as entries are read: a count that the rest
	// of the file would fit but does not hold allocates nothing up front.
	h.kvs = make([]kv, 0, min(nKV, 1024))
	h.keys = make(map[string]int, min(nKV, 1024))
	for range nKV {
		at := d.off
		key, err := d.str("a key")
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, d.fail(at, "empty key")
		}
		if _, dup := h.keys[key]; dup {
			return nil, d.fail(at, "key %q appears twice", key)
		}
		t, err := d.u32("the type of key " + quote(key))
		if err != nil {
			return nil, err
		}
		if !ValueType(t).valid() {
			return nil, d.fail(d.off-4, "key %q has unknown value type %d", key, t)
		}
		v, err := d.value(ValueType(t), 0)
		if err != nil {
			return nil, err
		}
		h.keys[key] = len(h.kvs)
		h.kvs = append(h.kvs, kv{key, v})
	}

	h.alignment = DefaultAlignment
	if i, ok := h.keys[KeyAlignment]; ok {
		a, ok := h.kvs[i].val.v.(uint32)
		if !ok {
			return nil, d.fail(8, "%s is a %v, not a u32", KeyAlignment, h.kvs[i].val.typ)
		}
		if a == 0 || a&(a-1) != 0 {
			return nil, d.fail(8, "%s %d is not a power of two", KeyAlignment, a)
		}
		h.alignment = uint64(a)
	}

	h.tensors = make([]TensorInfo, 0, min(nTensors, 1024))
	h.names = make(map[string]int, min(nTensors, 1024))
	for range nTensors {
		ti, err := d.tensorInfo(h.alignment)
		if err != nil {
			return nil, err
		}
		if _, dup := h.names[ti.Name]; dup {
			return nil, d.fail(d.off, "tensor %q appears twice", ti.Name)
		}
		h.names[ti.Name] = len(h.tensors)
		h.tensors = append(h.tensors, ti)
	}
	h.dataOffset = (d.off + h.alignment - 1) / h.alignment * h.alignment // d.off < 2^63, alignment <= 2^31
	return h, h.checkData(d)
}

// tensorInfo reads one tensor info and checks it against ggml's rules.
func (d *decoder) tensorInfo(alignment uint64) (TensorInfo, error) {
	at := d.off
	name, err := d.str("a tensor name")
	if err != nil {
		return TensorInfo{}, err
	}
	if len(name) > ggml.MaxNameLen {
		return TensorInfo{}, d.fail(at, "tensor name of %d bytes, ggml takes at most %d", len(name), ggml.MaxNameLen)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return TensorInfo{}, d.fail(at, "tensor name %q holds a NUL byte", name)
	}
	dims, err := d.u32("tensor " + quote(name) + "'s dimension count")
	if err != nil {
		return TensorInfo{}, err
	}
	if dims > ggml.MaxDims {
		return TensorInfo{}, d.fail(d.off-4, "tensor %q has %d dimensions, ggml takes at most %d", name, dims, ggml.MaxDims)
	}
	shape := make([]int64, dims)
	for i := range shape {
		n, err := d.u64("a dimension")
		if err != nil {
			return TensorInfo{}, err
		}
		if n > math.MaxInt64 {
			return TensorInfo{}, d.fail(d.off-8, "tensor %q: dimension %d is negative (%d)", name, i, int64(n))
		}
		shape[i] = int64(n)
	}
	tt, err := d.u32("tensor " + quote(name) + "'s type")
	if err != nil {
		return TensorInfo{}, err
	}
	typ := ggml.Type(tt)
	if why, ok := needsUpstream(typ); ok && tt <= math.MaxInt32 {
		return TensorInfo{}, &FormatError{Offset: int64(d.off - 4), Reason: fmt.Sprintf("tensor %q: %s", name, why), Err: ggml.ErrUnsupported}
	}
	if tt > math.MaxInt32 || !typ.Valid() {
		return TensorInfo{}, d.fail(d.off-4, "tensor %q has type %d, which the linked ggml (%s) does not know", name, int32(tt), ggml.Provider())
	}
	size, err := tensorSize(typ, shape)
	if err != nil {
		return TensorInfo{}, d.fail(d.off-4, "tensor %q: %v", name, err)
	}
	off, err := d.u64("tensor " + quote(name) + "'s offset")
	if err != nil {
		return TensorInfo{}, err
	}
	if off%alignment != 0 {
		return TensorInfo{}, d.fail(d.off-8, "tensor %q: offset %d is not a multiple of the alignment %d", name, off, alignment)
	}
	return TensorInfo{Name: name, Type: typ, Shape: shape, Offset: off, Size: size}, nil
}

// tensorSize returns the bytes of a contiguous tensor of type t and shape
// (ggml_nbytes), checking what ggml asserts on or overflows with: a row
// that is not whole blocks, more than 2^63 elements or bytes. As in ggml
// (and ggml.Context.NewTensor), the products are taken dimension by
// dimension: a zero dimension makes a tensor without data, but the
// dimensions before it must not overflow (ggml's strides are products of
// them).
func tensorSize(t ggml.Type, shape []int64) (uint64, error) {
	ne := [ggml.MaxDims]int64{1, 1, 1, 1}
	copy(ne[:], shape)
	if ne[0]%t.BlockSize() != 0 {
		return 0, fmt.Errorf("%d elements per row is not a multiple of %v's block size %d", ne[0], t, t.BlockSize())
	}
	tooLarge := fmt.Errorf("shape %v of %v has more than 2^63 elements or bytes", shape, t)
	mul := func(a, b uint64) (uint64, bool) {
		hi, lo := bits.Mul64(a, b)
		return lo, hi == 0 && lo <= math.MaxInt64
	}
	elems := uint64(1)
	for _, n := range ne {
		var ok bool
		if elems, ok = mul(elems, uint64(n)); !ok {
			return 0, tooLarge
		}
	}
	size, ok := mul(t.Size(), uint64(ne[0]/t.BlockSize()))
	for _, n := range ne[1:] {
		if !ok {
			break
		}
		size, ok = mul(size, uint64(n))
	}
	if !ok {
		return 0, tooLarge
	}
	return size, nil
}

// checkData checks that every tensor's data lies within the file and that
// no two overlap.
func (h *header) checkData(d *decoder) error {
	if len(h.tensors) == 0 {
		return nil
	}
	if h.dataOffset > d.size {
		return d.fail(d.size, "the data section would start at byte %d, past the end of the file", h.dataOffset)
	}
	room := d.size - h.dataOffset
	order := make([]int, len(h.tensors))
	for i, ti := range h.tensors {
		if ti.Offset > room || ti.Size > room-ti.Offset {
			return d.fail(h.dataOffset, "tensor %q: bytes [%d, %d) of the data section, which has %d", ti.Name, ti.Offset, ti.Offset+ti.Size, room)
		}
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return h.tensors[order[a]].Offset < h.tensors[order[b]].Offset })
	var prev *TensorInfo
	for _, i := range order {
		ti := &h.tensors[i]
		if ti.Size == 0 {
			continue
		}
		if prev != nil && prev.Offset+prev.Size > ti.Offset {
			return d.fail(h.dataOffset, "tensors %q and %q overlap (bytes [%d, %d) and [%d, %d) of the data section)",
				prev.Name, ti.Name, prev.Offset, prev.Offset+prev.Size, ti.Offset, ti.Offset+ti.Size)
		}
		prev = ti
	}
	return nil
}

// quote quotes s for a message.
func quote(s string) string { return fmt.Sprintf("%q", s) }
