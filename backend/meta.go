package backend

/*
#include "goggml.h"

static inline int goggml_split_get_axis(const goggml_split_state * s) { return (int)s->axis; }
static inline void goggml_split_set_axis(goggml_split_state * s, int axis) { s->axis = axis; }
static inline ggml_backend_dev_t goggml_meta_device_h(ggml_backend_dev_t * devs, size_t n, uintptr_t h) {
	return goggml_meta_device(devs, n, (void *)h);
}
*/
import "C"

import (
	"fmt"
	"math/bits"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// haveMetaC is what goggml.h says of the meta device; HaveMeta
// (have_embedded.go, have_system.go) must agree (TestHaveAgreesWithC).
var haveMetaC = C.GOGGML_HAVE_META != 0

// MaxMetaDevices is the most devices a meta device spans
// (GGML_BACKEND_META_MAX_DEVICES).
const MaxMetaDevices = int(C.GOGGML_META_MAX_DEVICES)

// maxSegments is the most segments of a split (the size of nr in struct
// ggml_backend_meta_split_state).
const maxSegments = 16

// SplitAxis is how a meta device spreads a tensor over its devices (enum
// ggml_backend_meta_split_axis).
type SplitAxis int

// Split axes.
const (
	// SplitAxis0 .. SplitAxis3: each device holds a slice of the tensor
	// along that dimension.
	SplitAxis0 SplitAxis = 0 // along ne0, the contiguous dimension (rows cut into columns)
	SplitAxis1 SplitAxis = 1 // along ne1 (whole rows)
	SplitAxis2 SplitAxis = 2 // along ne2
	SplitAxis3 SplitAxis = 3 // along ne3 (ggml's meta buffer neither writes nor reads such a tensor)
	// SplitMirrored: every device holds the whole tensor.
	SplitMirrored SplitAxis = 10
	// SplitPartial: every device holds a partial sum; the tensor is their
	// sum. A PARTIAL weight is written as value/n on each of the n devices;
	// it cannot be read back (ggml has no read of a partial sum), and it
	// must be f32.
	SplitPartial SplitAxis = 11
)

const (
	splitNone    = 98 // GGML_BACKEND_SPLIT_AXIS_NONE: internal
	splitUnknown = 99 // GGML_BACKEND_SPLIT_AXIS_UNKNOWN: internal
)

// String returns "0" .. "3", "MIRRORED" or "PARTIAL".
func (a SplitAxis) String() string {
	switch a {
	case SplitAxis0, SplitAxis1, SplitAxis2, SplitAxis3:
		return fmt.Sprint(int(a))
	case SplitMirrored:
		return "MIRRORED"
	case SplitPartial:
		return "PARTIAL"
	case splitNone:
		return "NONE"
	case splitUnknown:
		return "UNKNOWN"
	}
	return fmt.Sprintf("SplitAxis(%d)", int(a))
}

// Segment is one segment of a tensor split along an axis: Sizes[j] is
// device j's share of the segment along the axis, and the segment repeats
// Repeat times (0 means once). A fused QKV weight is three segments, so
// that each device gets a slice of Q, of K and of V.
type Segment struct {
	Sizes  []int64
	Repeat int
}

// Split is how a meta device spreads one tensor (struct
// ggml_backend_meta_split_state). For an axis 0..3, the segments' shares,
// times their repeats, add up to the tensor's size along the axis; on
// axis 0 every share is a multiple of the type's block size. MIRRORED and
// PARTIAL have no segments.
type Split struct {
	Axis     SplitAxis
	Segments []Segment
}

// Mirrored is the split that puts the whole tensor on every device.
func Mirrored() Split { return Split{Axis: SplitMirrored} }

// Partial is the split that makes each device hold a partial sum.
func Partial() Split { return Split{Axis: SplitPartial} }

// SplitSizes is a one-segment split along axis: device j holds sizes[j].
func SplitSizes(axis SplitAxis, sizes ...int64) Split {
	return Split{Axis: axis, Segments: []Segment{{Sizes: append([]int64(nil), sizes...)}}}
}

// EvenSplit splits t along axis over n devices as evenly as the type's
// block size allows (on axis 0), the first devices taking the remainder.
func EvenSplit(t *ggml.Tensor, axis SplitAxis, n int) Split {
	if n < 1 || axis < 0 || axis > 3 {
		return Split{Axis: axis}
	}
	g := int64(1)
	if axis == SplitAxis0 {
		g = max(t.Type().BlockSize(), 1)
	}
	return SplitSizes(axis, EvenSizes(t.Ne()[axis], n, g)...)
}

// EvenSizes divides extent into n shares, multiples of granularity, as
// evenly as possible, the first shares taking the remainder (a remainder
// of less than granularity is not shared: the split then does not add
// up).
func EvenSizes(extent int64, n int, granularity int64) []int64 {
	if n < 1 {
		return nil
	}
	g := max(granularity, 1)
	blocks := extent / g
	sizes := make([]int64, n)
	for j := range sizes {
		sizes[j] = blocks / int64(n) * g
		if int64(j) < blocks%int64(n) {
			sizes[j] += g
		}
	}
	return sizes
}

// SplitFunc says how a meta device spreads tensor t over its devices. It
// is called for every tensor that a buffer of the meta device holds
// statically (AllocContextTensors: weights, inputs), when they are
// allocated; the splits of computed tensors follow from their ops. An
// error, a panic or a split that does not add up fails the allocation.
type SplitFunc func(t *ggml.Tensor) (Split, error)

// metaState is what go-ggml keeps of a meta device.
type metaState struct {
	dev    C.ggml_backend_dev_t
	simple []*Device
	split  SplitFunc
	handle cgo.Handle
	links  linkSet
	host   bool // every device's buffer type is in host memory

	mu sync.Mutex
	// known are the splits of the static tensors of its buffers, by C
	// tensor, checked when they were allocated.
	known map[*C.struct_ggml_tensor]splitState
	// failed is set when ggml asked for the split of a tensor go-ggml did
	// not check; the Go call that reached C reports it.
	failed error
}

// anyMeta is set once a meta device exists: until then the check of a
// graph costs one atomic load (transfers are checked through the meta
// buffer type's registered check, bridge.CheckTransfer).
var anyMeta atomic.Bool

func init() {
	bridge.MetaGraph = func(bes []*bridge.Backend, g *bridge.Graph, placed bool) error {
		if !anyMeta.Load() {
			return nil
		}
		for _, v := range bes {
			if b := bridge.Handle[Backend](v); b != nil && b.meta != nil {
				return b.meta.checkGraph(g, placed)
			}
		}
		return nil
	}
	bridge.WrapDevice = func(p unsafe.Pointer) *bridge.Device {
		return bridge.View[bridge.Device](deviceFromC(C.ggml_backend_dev_t(p)))
	}
}

// checkGraph checks graph g for the meta device: see checkMetaGraph.
func (m *metaState) checkGraph(g *bridge.Graph, placed bool) error {
	ts := g.Tensors()
	nodes := make([]*C.struct_ggml_tensor, 0, len(ts))
	for _, v := range ts {
		if t := (*C.struct_ggml_tensor)(v.C()); t != nil && (t.op != C.GGML_OP_NONE || t.view_src != nil) {
			nodes = append(nodes, t)
		}
	}
	return checkMetaGraph(m, nodes, placed)
}

var (
	// metaMu serializes the creation of meta devices against readers of
	// ggml's maps of them (see bridge.MetaMu).
	metaMu = &bridge.MetaMu
	metas  sync.Map // C.ggml_backend_dev_t -> *metaState
)

// metaOf returns the meta state of device d, or nil.
func metaOf(d C.ggml_backend_dev_t) *metaState {
	if !HaveMeta || d == nil {
		return nil
	}
	if v, ok := metas.Load(d); ok {
		return v.(*metaState)
	}
	return nil
}

func metaOfBufferType(c C.ggml_backend_buffer_type_t) *metaState {
	if !HaveMeta || c == nil || !bool(C.goggml_buft_is_meta(c)) {
		return nil
	}
	return metaOf(C.ggml_backend_buft_get_device(c))
}

func metaOfBuffer(c C.ggml_backend_buffer_t) *metaState {
	if c == nil || !bool(C.goggml_buffer_is_meta(c)) {
		return nil
	}
	return metaOfBufferType(C.ggml_backend_buffer_get_type(c))
}

// metaOnly is the error of the meta calls on a binary without them.
func metaOnly(call string) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, bridge.NeedsUpstream(call+" (the meta device)"))
}

// NewMetaDevice returns a meta device over devs (1 to MaxMetaDevices; a
// device may repeat), for tensor parallelism: its buffers spread each
// tensor over the devices as split says, and its backends compute a graph
// on every device at once, summing partial results where an op needs it
// (ggml_backend_meta_device). It gives buffer types, buffers and backends
// like any device; under a scheduler it comes before the CPU backend
// ({meta, cpu}). The meta device is ggml's for the process's life: make
// each one once. It is not in the registry.
//
// What ggml's meta backend asserts is checked in Go first: the splits
// split returns (they add up to the tensor's shape, and the meta buffer can
// write them), the splits of the ops of a graph before it is computed (an
// op whose sources are split in ways ggml cannot combine, an op go-ggml
// does not know the split of), and reads of tensors that are PARTIAL or
// split in ways ggml cannot read. Only upstream ggml has the meta device:
// with the embedded provider NewMetaDevice returns an ErrUnsupported error.
func NewMetaDevice(devs []*Device, split SplitFunc) (*Device, error) {
	if !HaveMeta {
		return nil, metaOnly("NewMetaDevice")
	}
	if len(devs) == 0 || len(devs) > MaxMetaDevices {
		return nil, fmt.Errorf("%w: a meta device spans 1 to %d devices, got %d", ggml.ErrInvalid, MaxMetaDevices, len(devs))
	}
	if split == nil {
		return nil, fmt.Errorf("%w: NewMetaDevice: nil split function", ggml.ErrInvalid)
	}
	arr := (*C.ggml_backend_dev_t)(C.malloc(C.size_t(len(devs)) * C.size_t(unsafe.Sizeof(C.ggml_backend_dev_t(nil)))))
	defer C.free(unsafe.Pointer(arr))
	cs := unsafe.Slice(arr, len(devs))
	st := &metaState{split: split, known: map[*C.struct_ggml_tensor]splitState{}, host: true}
	for i, d := range devs {
		if err := d.usable(); err != nil {
			return nil, fmt.Errorf("NewMetaDevice: device %d: %w", i, err)
		}
		if err := d.link().Err(); err != nil {
			return nil, fmt.Errorf("NewMetaDevice: device %d: %w", i, err)
		}
		if metaOf(d.c) != nil || d.Type() == DeviceMeta {
			return nil, fmt.Errorf("%w: NewMetaDevice: device %d (%s) is a meta device itself", ggml.ErrInvalid, i, d.Name())
		}
		bt := d.BufferType()
		if bt == nil {
			return nil, fmt.Errorf("%w: NewMetaDevice: device %d (%s) has no buffer type", ErrUnsupported, i, d.Name())
		}
		st.host = st.host && bt.IsHost()
		cs[i] = d.c
		st.simple = append(st.simple, d)
		for _, k := range d.link() {
			if !containsLink(st.links, k) {
				st.links = append(st.links, k)
			}
		}
	}
	st.handle = cgo.NewHandle(st) // never deleted: the C device lives on
	metaMu.Lock()
	defer metaMu.Unlock()
	var c C.ggml_backend_dev_t
	if err := catchC(func() {
		c = C.goggml_meta_device_h(arr, C.size_t(len(devs)), C.uintptr_t(st.handle))
		if c != nil {
			// Made now, under metaMu: later lookups only read ggml's map.
			// Its transfers are checked as ggml's meta buffer asserts.
			bridge.RegisterTransferCheck(unsafe.Pointer(C.ggml_backend_dev_buffer_type(c)), checkMetaTransfer)
		}
	}); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w: ggml_backend_meta_device", ggml.ErrNoMemory)
	}
	st.dev = c
	metas.Store(c, st)
	anyMeta.Store(true)
	return deviceFromC(c), nil
}

func containsLink(ls linkSet, k *life.Link) bool {
	for _, l := range ls {
		if l == k {
			return true
		}
	}
	return false
}

// readMeta holds metaMu for reading while C may read ggml's maps of meta
// devices and buffer types (a scheduler's creation asks each backend for
// its buffer type).
func readMeta() (done func()) {
	bridge.MetaMu.RLock()
	return bridge.MetaMu.RUnlock
}

// catchC runs f, a C call, and returns an abort in it as an error.
func catchC(f func()) (err error) {
	defer life.Catch(&err)
	f()
	return nil
}

// MetaDevices returns the devices a meta device spans, in order, or nil
// when d is not a meta device.
func (d *Device) MetaDevices() []*Device {
	if d == nil {
		return nil
	}
	if m := metaOf(d.c); m != nil {
		return append([]*Device(nil), m.simple...)
	}
	return nil
}

// splitState mirrors struct ggml_backend_meta_split_state.
type splitState struct {
	axis SplitAxis
	ne   [maxSegments * MaxMetaDevices]int64
	nr   [maxSegments]uint32
	nseg uint32
	// lossy (Go only): the split came from a segmented source whose
	// segments ggml dropped: each device's slice is right, but ggml
	// would read them in device order, not the tensor's.
	lossy bool
}

func simpleState(axis SplitAxis) splitState {
	s := splitState{axis: axis, nseg: 1}
	s.nr[0] = 1
	return s
}

func (s *splitState) toC() C.goggml_split_state {
	var c C.goggml_split_state
	C.goggml_split_set_axis(&c, C.int(s.axis))
	for i := range s.ne {
		c.ne[i] = C.int64_t(s.ne[i])
	}
	for i := range s.nr {
		c.nr[i] = C.uint32_t(s.nr[i])
	}
	c.n_segments = C.uint32_t(s.nseg)
	return c
}

// share returns device j's extent along the split axis.
func (s *splitState) share(j, n int) int64 {
	var sum int64
	for k := 0; k < int(s.nseg); k++ {
		sum += s.ne[k*n+j] * int64(s.nr[k])
	}
	return sum
}

// checkSplit checks split sp of tensor t (C tensor tc) for a meta device of
// n devices, as ggml's meta buffer asserts when it places t and when it
// writes it, and returns it in ggml's form.
func checkSplit(t *ggml.Tensor, tc *C.struct_ggml_tensor, sp Split, n int) (splitState, error) {
	bad := func(format string, args ...any) (splitState, error) {
		return splitState{}, fmt.Errorf("%w: meta split of %v: %s", ggml.ErrInvalid, t, fmt.Sprintf(format, args...))
	}
	switch sp.Axis {
	case SplitMirrored, SplitPartial:
		if len(sp.Segments) != 0 {
			return bad("a %v split has no segments", sp.Axis)
		}
		if sp.Axis == SplitPartial && tc._type != C.GGML_TYPE_F32 {
			return bad("a PARTIAL tensor must be f32 (ggml writes value/n to each device), not %v", t.Type())
		}
		return simpleState(sp.Axis), nil
	case SplitAxis0, SplitAxis1, SplitAxis2, SplitAxis3:
	default:
		return bad("unknown axis %d", int(sp.Axis))
	}
	if len(sp.Segments) == 0 || len(sp.Segments) > maxSegments {
		return bad("%d segments; a split along an axis has 1 to %d", len(sp.Segments), maxSegments)
	}
	s := splitState{axis: sp.Axis, nseg: uint32(len(sp.Segments))}
	g := int64(1)
	if sp.Axis == SplitAxis0 {
		g = int64(C.ggml_blck_size(tc._type))
	}
	var sum uint64
	for k, seg := range sp.Segments {
		if len(seg.Sizes) != n {
			return bad("segment %d has %d sizes for %d devices", k, len(seg.Sizes), n)
		}
		r := seg.Repeat
		if r == 0 {
			r = 1
		}
		if r < 0 || r > 1<<30 {
			return bad("segment %d repeats %d times", k, seg.Repeat)
		}
		s.nr[k] = uint32(r)
		for j, v := range seg.Sizes {
			if v < 0 {
				return bad("segment %d gives device %d a negative size %d", k, j, v)
			}
			if v%g != 0 {
				return bad("segment %d gives device %d %d elements along axis 0, not a multiple of %v's block size %d", k, j, v, t.Type(), g)
			}
			s.ne[k*n+j] = v
			hi, lo := bits.Mul64(uint64(v), uint64(r))
			var carry uint64
			sum, carry = bits.Add64(sum, lo, 0)
			if hi != 0 || carry != 0 || sum > 1<<62 {
				return bad("the sizes overflow")
			}
		}
	}
	ne := int64(tc.ne[sp.Axis])
	if sum != uint64(ne) {
		return bad("the sizes times their repeats add up to %d along axis %d; the tensor has %d", sum, int(sp.Axis), ne)
	}
	if s.nseg != 1 || s.nr[0] != 1 {
		// The meta buffer writes and reads a segmented tensor row by row
		// along axis 0 or 1, of a 3-D (axis 1) or 2-D (axis 0) tensor.
		if sp.Axis != SplitAxis0 && sp.Axis != SplitAxis1 {
			return bad("a segmented or repeated split must be along axis 0 or 1 (ggml's meta buffer writes no other), not %d", int(sp.Axis))
		}
		if tc.ne[3] != 1 || (sp.Axis == SplitAxis0 && tc.ne[2] != 1) {
			return bad("a segmented split along axis %d needs ne3 = 1%s", int(sp.Axis), map[bool]string{true: " and ne2 = 1", false: ""}[sp.Axis == SplitAxis0])
		}
	}
	return s, nil
}

// callSplit runs the user's split function on t, a panic an error.
func (m *metaState) callSplit(t *ggml.Tensor) (sp Split, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: the meta device's split function panicked on %v: %v", ggml.ErrInvalid, t, r)
		}
	}()
	sp, err = m.split(t)
	if err != nil {
		err = fmt.Errorf("meta split of %v: %w", t, err)
	}
	return sp, err
}

// prepare checks the splits of the tensors ctx will place in a buffer of
// the meta device and records them for ggml's callback; forget undoes it.
func (m *metaState) prepare(ctx *ggml.Context) (tcs []*C.struct_ggml_tensor, err error) {
	type one struct {
		tc *C.struct_ggml_tensor
		s  splitState
	}
	var list []one
	for _, t := range ctx.Tensors() {
		tc, err := tensorPtr(t)
		if err != nil {
			return nil, err
		}
		if t.ViewSource() != nil || tc.view_src != nil {
			return nil, fmt.Errorf("%w: %v is a view: a context placed on a meta device holds no views (ggml would split them by their op); make views in a compute context", ggml.ErrInvalid, t)
		}
		if tc.data != nil || tc.buffer != nil {
			return nil, fmt.Errorf("%w: %v is allocated already: ggml's meta buffer places every tensor of the context", ggml.ErrInvalid, t)
		}
		if C.ggml_nelements(tc) == 0 {
			continue // ggml does not ask
		}
		sp, err := m.callSplit(t)
		if err != nil {
			return nil, err
		}
		s, err := checkSplit(t, tc, sp, len(m.simple))
		if err != nil {
			return nil, err
		}
		list = append(list, one{tc, s})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range list {
		m.known[o.tc] = o.s
		tcs = append(tcs, o.tc)
	}
	return tcs, nil
}

func (m *metaState) forget(tcs []*C.struct_ggml_tensor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, tc := range tcs {
		delete(m.known, tc)
	}
}

// takeFailed returns and clears the failure of a callback.
func (m *metaState) takeFailed() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.failed
	m.failed = nil
	return err
}

//export goggmlMetaSplit
func goggmlMetaSplit(t *C.struct_ggml_tensor, ud C.uintptr_t, out *C.goggml_split_state) {
	m := cgo.Handle(ud).Value().(*metaState)
	m.mu.Lock()
	s, ok := m.known[t]
	if !ok {
		// Never expected: a tensor placed in a meta buffer other than by
		// AllocContextTensors. MIRRORED asserts nothing in ggml; the Go
		// call that reached here reports the failure.
		s = simpleState(SplitMirrored)
		if m.failed == nil {
			m.failed = fmt.Errorf("%w: ggml asked for the meta split of tensor %q, which go-ggml did not place (place tensors on a meta device with AllocContextTensors)",
				ggml.ErrInvalid, C.GoString(&t.name[0]))
		}
	}
	m.mu.Unlock()
	*out = s.toC()
}

// errMetaPlacement refuses the ways of placing a tensor in a meta buffer
// other than AllocContextTensors.
func errMetaPlacement(op string) error {
	return fmt.Errorf("%w: %s: a meta buffer places the tensors of a context at once: use AllocContextTensors", ErrUnsupported, op)
}

// checkPlaced checks a graph a meta backend computes by itself
// (Backend.Compute): every tensor in a meta buffer (ggml's meta backend
// asserts it), and the splits of its nodes.
func (m *metaState) checkPlaced(g *ggml.Graph) error {
	gv := bridge.View[bridge.Graph](g)
	for _, v := range gv.Tensors() {
		if t := (*C.struct_ggml_tensor)(v.C()); t != nil && metaOfBuffer(t.buffer) == nil {
			return fmt.Errorf("%w: meta backend: tensor %q is not in a meta buffer: allocate the graph over the meta device's buffer type (AllocContextTensors, NewGallocr) or compute it with a scheduler",
				ggml.ErrInvalid, C.GoString(&t.name[0]))
		}
	}
	return m.checkGraph(gv, true)
}
