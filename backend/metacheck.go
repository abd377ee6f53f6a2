package backend

/*
#include "goggml.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
)

// The checks of what ggml's meta backend (src/ggml-backend-meta.cpp of
// upstream ggml v0.21.0) asserts, done in Go before C sees a graph or a
// transfer. The meta backend derives the split of each computed tensor
// from the splits of its sources and its op, and asserts where it cannot;
// splitOf below derives them the same way, written for go-ggml from that
// file's rules, for the ops it knows; a graph with another op on a meta
// device is refused (ErrUnsupported) rather than risked.

// metaHandler is how a node's split follows from its sources'.
type metaHandler int

const (
	mhUnsupported   metaHandler = iota
	mhMirrored                  // the op makes a leaf: MIRRORED
	mhGeneric                   // all sources alike
	mhGenericScalar             // all sources alike, not split along an axis
	mhPerRow                    // per-row ops: not split along axis 0
	mhBinBcast                  // add, sub, mul, div, add_id
	mhMulMat
	mhReshape
	mhCpy
	mhView
	mhPermute
	mhTranspose
	mhGetRows
	mhSetRows
	mhRope
	mhPad
	mhConcat
)

var (
	metaOpsOnce sync.Once
	metaOps     map[int]metaHandler
)

// metaHandlers maps op numbers to handlers by op name (the op numbers
// differ between providers).
func metaHandlers() map[int]metaHandler {
	metaOpsOnce.Do(func() {
		byName := map[string]metaHandler{
			"NONE": mhMirrored,
			"DUP":  mhGenericScalar, "ADD1": mhGenericScalar, "ACC": mhGenericScalar, "SUM": mhGenericScalar,
			"OUT_PROD": mhGenericScalar, "SET": mhGenericScalar, "GET_ROWS_BACK": mhGenericScalar,
			"DIAG": mhGenericScalar, "DIAG_MASK_INF": mhGenericScalar, "DIAG_MASK_ZERO": mhGenericScalar,
			"ROPE_BACK": mhGenericScalar, "TRI": mhGenericScalar, "ARANGE": mhGenericScalar,
			"MAP_CUSTOM1": mhGenericScalar, "MAP_CUSTOM2": mhGenericScalar, "MAP_CUSTOM3": mhGenericScalar, "CUSTOM": mhGenericScalar,
			"ADD": mhBinBcast, "ADD_ID": mhBinBcast, "SUB": mhBinBcast, "MUL": mhBinBcast, "DIV": mhBinBcast,
			"SQR": mhGeneric, "SQRT": mhGeneric, "LOG": mhGeneric, "SIN": mhGeneric, "COS": mhGeneric,
			"REPEAT": mhGeneric, "SILU_BACK": mhGeneric, "SCALE": mhGeneric, "SOFT_MAX": mhGeneric,
			"CLAMP": mhGeneric, "LEAKY_RELU": mhGeneric, "FILL": mhGeneric, "UNARY": mhGeneric, "GLU": mhGeneric,
			"SUM_ROWS": mhPerRow, "CUMSUM": mhPerRow, "MEAN": mhPerRow, "ARGMAX": mhPerRow, "COUNT_EQUAL": mhPerRow,
			"NORM": mhPerRow, "RMS_NORM": mhPerRow, "GROUP_NORM": mhPerRow, "L2_NORM": mhPerRow,
			"ARGSORT": mhPerRow, "TOP_K": mhPerRow,
			"MUL_MAT": mhMulMat, "MUL_MAT_ID": mhMulMat,
			"CONT": mhReshape, "RESHAPE": mhReshape, "CPY": mhCpy, "VIEW": mhView,
			"PERMUTE": mhPermute, "TRANSPOSE": mhTranspose,
			"GET_ROWS": mhGetRows, "SET_ROWS": mhSetRows, "ROPE": mhRope, "PAD": mhPad, "CONCAT": mhConcat,
		}
		metaOps = map[int]metaHandler{}
		for op := 0; op < int(C.GGML_OP_COUNT); op++ {
			if h, ok := byName[C.GoString(C.ggml_op_name(C.enum_ggml_op(op)))]; ok {
				metaOps[op] = h
			}
		}
	})
	return metaOps
}

// metaCheck derives splits over one graph or transfer, memoized. m is the
// meta device that computes the nodes not allocated yet (a check before a
// scheduler or graph allocator places them), or nil.
type metaCheck struct {
	memo map[metaKey]splitState
	m    *metaState
}

type metaKey struct {
	t    *C.struct_ggml_tensor
	sync bool
}

func newMetaCheck(m *metaState) *metaCheck {
	return &metaCheck{memo: map[metaKey]splitState{}, m: m}
}

// refuse is the error of an op the meta backend would assert on.
func refuseMeta(t *C.struct_ggml_tensor, format string, args ...any) error {
	return fmt.Errorf("%w: meta device: node %q (%s): %s", ggml.ErrInvalid, C.GoString(&t.name[0]), C.GoString(C.ggml_op_name(t.op)), fmt.Sprintf(format, args...))
}

func isAxis(a SplitAxis) bool { return a >= 0 && a < 4 }

// equalSplits reports whether a and b put the same extent on each device.
func equalSplits(a, b *splitState, n int) bool {
	if a.axis != b.axis {
		return false
	}
	for j := 0; j < n; j++ {
		if a.share(j, n) != b.share(j, n) {
			return false
		}
	}
	return true
}

// splitOf returns the split ggml's meta backend gives tensor t (in a meta
// buffer of m) with assumeSync (true: as a source of another op, once
// partial sums are summed), or why it would assert.
func (c *metaCheck) splitOf(t *C.struct_ggml_tensor, assumeSync bool) (splitState, error) {
	k := metaKey{t, assumeSync}
	if s, ok := c.memo[k]; ok {
		return s, nil
	}
	s, err := c.derive(t, assumeSync)
	if err != nil {
		return s, err
	}
	if s.axis == splitNone {
		return s, refuseMeta(t, "no split")
	}
	c.memo[k] = s
	return s, nil
}

func (c *metaCheck) derive(t *C.struct_ggml_tensor, assumeSync bool) (splitState, error) {
	m := metaOfBuffer(t.buffer)
	if m == nil {
		if t.buffer != nil || t.op == C.GGML_OP_NONE || c.m == nil {
			// Outside a meta buffer: an input the scheduler copies into
			// a compute buffer of the meta device, where it is a leaf.
			return simpleState(SplitMirrored), nil
		}
		m = c.m // a node the meta device will compute
	}
	n := len(m.simple)
	if C.ggml_nelements(t) == 0 {
		return simpleState(splitUnknown), nil
	}
	if t.buffer != nil && m == metaOfBuffer(t.buffer) && C.ggml_backend_buffer_get_usage(t.buffer) != C.GGML_BACKEND_BUFFER_USAGE_COMPUTE && t.view_src == nil {
		m.mu.Lock()
		s, ok := m.known[t]
		m.mu.Unlock()
		if !ok {
			return splitState{}, refuseMeta(t, "a tensor of a meta buffer that go-ggml did not place (use AllocContextTensors)")
		}
		return s, nil
	}
	var src [C.GGML_MAX_SRC]splitState
	for i := range src {
		s := t.src[i]
		if s == nil || s == t {
			src[i] = simpleState(splitUnknown)
			continue
		}
		ss, err := c.splitOf(s, true)
		if err != nil {
			return ss, err
		}
		if ss.axis == splitUnknown {
			return ss, refuseMeta(t, "source %d has no split (it is empty)", i)
		}
		src[i] = ss
	}
	opName := C.GoString(C.ggml_op_name(t.op))
	for i := range src {
		if t.src[i] != nil && t.src[i] != t && src[i].axis == SplitPartial && !linearOps[opName] {
			return splitState{}, refuseMeta(t, "source %d is PARTIAL (each device holds a partial sum) and %s is not linear: the devices' results would not add up to the result of the sum", i, opName)
		}
	}
	if opName == "SCALE" && src[0].axis == SplitPartial {
		if bias := *(*C.float)(unsafe.Pointer(&t.op_params[1])); bias != 0 {
			return splitState{}, refuseMeta(t, "a scale with a bias of a PARTIAL source adds the bias on every device")
		}
	}
	h, ok := metaHandlers()[int(t.op)]
	if !ok || h == mhUnsupported {
		return splitState{}, fmt.Errorf("%w: meta device: go-ggml does not check how ggml's meta backend splits op %s (node %q): compute it on another backend",
			ErrUnsupported, C.GoString(C.ggml_op_name(t.op)), C.GoString(&t.name[0]))
	}
	var out splitState
	var err error
	switch h {
	case mhMirrored:
		out = simpleState(SplitMirrored)
	case mhGeneric:
		out, err = c.generic(t, &src, n, false)
	case mhGenericScalar:
		out, err = c.generic(t, &src, n, true)
	case mhPerRow:
		if src[0].axis == SplitAxis0 {
			return out, refuseMeta(t, "a per-row op of a tensor split along axis 0 (each device would see part of each row)")
		}
		out = src[0]
	case mhBinBcast:
		out, err = c.binBcast(t, &src, n)
	case mhMulMat:
		out, err = mulMatSplit(t, &src, n, assumeSync)
	case mhReshape:
		out, err = reshapeSplit(t, &src)
	case mhCpy:
		if isAxis(src[0].axis) {
			out, err = reshapeSplit(t, &src)
		} else {
			out, err = c.generic(t, &src, n, false)
		}
	case mhView:
		out, err = viewSplit(t, &src)
	case mhPermute:
		switch {
		case isAxis(src[0].axis):
			if src[0].nseg != 1 && src[0].nr[0] != 1 {
				return out, refuseMeta(t, "a permute of a segmented, repeated split")
			}
			perm := (*[C.GGML_MAX_OP_PARAMS / 4]C.int32_t)(unsafe.Pointer(&t.op_params[0]))
			out = simpleState(SplitAxis(perm[src[0].axis]))
			out.nr[0] = src[0].nr[0]
		case src[0].axis == SplitMirrored || src[0].axis == SplitPartial:
			out = src[0]
		default:
			return out, refuseMeta(t, "a permute of a %v split", src[0].axis)
		}
	case mhTranspose:
		switch src[0].axis {
		case SplitAxis0, SplitAxis1:
			if src[0].nseg != 1 && src[0].nr[0] != 1 {
				return out, refuseMeta(t, "a transpose of a segmented, repeated split")
			}
			out = simpleState(src[0].axis ^ 1)
			out.nr[0] = src[0].nr[0]
		case SplitAxis2, SplitAxis3, SplitMirrored, SplitPartial:
			out = src[0]
		default:
			return out, refuseMeta(t, "a transpose of a %v split", src[0].axis)
		}
	case mhGetRows:
		if src[0].axis == SplitAxis0 && src[1].axis == SplitMirrored {
			out = src[0]
		} else {
			out, err = c.generic(t, &src, n, true)
		}
	case mhSetRows:
		if src[0].axis == SplitAxis1 || src[1].axis != SplitMirrored || !equalSplits(&src[0], &src[2], n) {
			return out, refuseMeta(t, "set_rows needs a destination not split along axis 1, MIRRORED indices, and a destination split like the rows")
		}
		out = src[0]
	case mhRope:
		if src[1].axis != SplitMirrored {
			return out, refuseMeta(t, "rope needs MIRRORED positions, not %v", src[1].axis)
		}
		out = src[0]
	case mhPad:
		if isAxis(src[0].axis) {
			p := (*[C.GGML_MAX_OP_PARAMS / 4]C.int32_t)(unsafe.Pointer(&t.op_params[0]))
			if p[2*src[0].axis] != 0 || p[2*src[0].axis+1] != 0 {
				return out, refuseMeta(t, "pad along the split axis %d", int(src[0].axis))
			}
		}
		out = src[0]
	case mhConcat:
		axis := SplitAxis(*(*C.int32_t)(unsafe.Pointer(&t.op_params[0])))
		switch {
		case src[0].axis == SplitMirrored && isAxis(src[1].axis):
			if axis == src[1].axis {
				return out, refuseMeta(t, "concat along the split axis")
			}
			out = src[1]
		case src[1].axis == SplitMirrored && isAxis(src[0].axis):
			if axis == src[0].axis {
				return out, refuseMeta(t, "concat along the split axis")
			}
			out = src[0]
		case src[0].axis == src[1].axis && src[0].axis != axis:
			out = src[0]
		default:
			out, err = c.generic(t, &src, n, true)
		}
	}
	if err != nil {
		return out, err
	}
	if isAxis(out.axis) {
		if err := ratioSplit(t, &src, &out, n); err != nil {
			return out, err
		}
	}
	// Segments ggml's rules dropped (its ratio step keeps one segment):
	// the devices' slices stay right, the order of their parts not.
	reshapeLike := h == mhReshape || h == mhCpy || h == mhView || h == mhPermute || h == mhTranspose
	for i := range src {
		if t.src[i] == nil || t.src[i] == t || !isAxis(src[i].axis) || !isAxis(out.axis) {
			continue
		}
		if src[i].lossy || src[i].nseg != 1 || (src[i].nr[0] != out.nr[0] && !reshapeLike) {
			out.lossy = true
		}
	}
	return out, nil
}

// linearOps are the ops whose result over a PARTIAL source (a sum over
// the devices) is the sum of the devices' results.
var linearOps = map[string]bool{
	"SCALE": true, "ADD": true, "SUB": true, "ADD_ID": true, "CPY": true, "CONT": true, "DUP": true,
	"RESHAPE": true, "VIEW": true, "PERMUTE": true, "TRANSPOSE": true, "SUM": true, "SUM_ROWS": true,
	"MEAN": true, "GET_ROWS": true, "CONCAT": true, "PAD": true, "REPEAT": true,
}

// generic: every source split alike (else ggml asserts).
func (c *metaCheck) generic(t *C.struct_ggml_tensor, src *[C.GGML_MAX_SRC]splitState, n int, scalarOnly bool) (splitState, error) {
	ret := simpleState(splitNone)
	for i := range src {
		if t.src[i] == nil || t.src[i] == t {
			continue
		}
		if ret.axis == splitNone {
			ret = src[i]
		} else if !equalSplits(&src[i], &ret, n) {
			return ret, refuseMeta(t, "its sources are split differently (%v and %v): ggml's meta backend cannot combine them for this op", ret.axis, src[i].axis)
		}
	}
	if ret.axis == splitNone {
		return ret, refuseMeta(t, "no source to take a split from")
	}
	if scalarOnly && isAxis(ret.axis) {
		return ret, refuseMeta(t, "this op's sources must not be split along an axis (they are along %d)", int(ret.axis))
	}
	return ret, nil
}

func (c *metaCheck) binBcast(t *C.struct_ggml_tensor, src *[C.GGML_MAX_SRC]splitState, n int) (splitState, error) {
	if isAxis(src[0].axis) && t.src[1].ne[src[0].axis] == 1 && src[1].axis == SplitMirrored {
		return src[0], nil
	}
	if src[2].axis == SplitMirrored && (src[0].axis == src[1].axis || (src[0].axis == SplitMirrored && src[1].axis == SplitPartial)) {
		return src[0], nil
	}
	if t.src[2] != nil && src[2].axis != SplitMirrored {
		return splitState{}, refuseMeta(t, "its third source must be MIRRORED")
	}
	return c.generic(t, src, n, false)
}

func mulMatSplit(t *C.struct_ggml_tensor, src *[C.GGML_MAX_SRC]splitState, n int, assumeSync bool) (splitState, error) {
	a, b := src[0], src[1]
	switch {
	case a.axis == SplitMirrored && b.axis == SplitMirrored:
		return simpleState(SplitMirrored), nil
	case a.axis == SplitAxis1 && b.axis == SplitMirrored:
		ret := a
		ret.axis = SplitAxis0
		ret.nr[0] = 1
		ret.nseg = 1
		return ret, nil
	case b.axis == SplitAxis1 && a.axis == SplitMirrored:
		return b, nil
	case a.axis == SplitAxis0 && b.axis == SplitAxis0:
		if !equalSplits(&a, &b, n) {
			return splitState{}, refuseMeta(t, "mul_mat of sources split along axis 0 with different shares")
		}
		if assumeSync {
			return simpleState(SplitMirrored), nil
		}
		return simpleState(SplitPartial), nil
	}
	return splitState{}, refuseMeta(t, "mul_mat of a %v-split and a %v-split source: ggml's meta backend takes MIRRORED×MIRRORED, 1×MIRRORED, MIRRORED×1 and 0×0 (equal shares)", a.axis, b.axis)
}

func nDims(t *C.struct_ggml_tensor) int { return int(C.ggml_n_dims(t)) }

func reshapeSplit(t *C.struct_ggml_tensor, src *[C.GGML_MAX_SRC]splitState) (splitState, error) {
	s := src[0]
	switch {
	case s.axis == SplitMirrored || s.axis == SplitPartial:
		return s, nil
	case !isAxis(s.axis):
		return s, refuseMeta(t, "a reshape of a %v split", s.axis)
	}
	if s.nseg != 1 {
		return s, refuseMeta(t, "a reshape of a segmented split")
	}
	s0 := t.src[0]
	if int(s.axis) == nDims(s0)-1 && s.nr[0] == 1 {
		return simpleState(SplitAxis(nDims(t) - 1)), nil
	}
	baseIn := int64(s0.ne[0])
	for d := 1; d <= int(s.axis); d++ {
		baseIn *= int64(s0.ne[d])
	}
	baseIn /= int64(s.nr[0])
	baseOut := int64(1)
	for d := 0; d < 4; d++ {
		baseOut *= int64(t.ne[d])
		if baseIn != 0 && baseOut%baseIn == 0 {
			out := simpleState(SplitAxis(d))
			out.nr[0] = uint32(baseOut / baseIn)
			return out, nil
		}
		if baseOut > baseIn {
			if s.nr[0] != 1 {
				return s, refuseMeta(t, "a reshape of a repeated split that cuts its segments")
			}
			return simpleState(SplitAxis(d)), nil
		}
	}
	return s, refuseMeta(t, "shape mismatch for the reshape of a split tensor")
}

func contiguous(t *C.struct_ggml_tensor) bool { return bool(C.ggml_is_contiguous(t)) }

func viewSplit(t *C.struct_ggml_tensor, src *[C.GGML_MAX_SRC]splitState) (splitState, error) {
	s0 := t.src[0]
	if contiguous(t) && contiguous(s0) {
		return reshapeSplit(t, src)
	}
	same := true
	for d := 0; d < 4; d++ {
		if t.ne[d] == 1 && s0.ne[d] == 1 {
			continue
		}
		if t.nb[d] != s0.nb[d] {
			same = false
			break
		}
	}
	if same {
		return src[0], nil
	}
	axis := src[0].axis
	if !bool(C.ggml_is_permuted(t)) && !bool(C.ggml_is_permuted(s0)) && axis >= 0 && axis < 3 {
		for d := 0; d < 3; d++ {
			if t.nb[d+1] == s0.nb[axis+1] {
				return simpleState(SplitAxis(d)), nil
			}
		}
		return src[0], refuseMeta(t, "a view whose strides do not keep the split axis")
	}
	if axis == SplitMirrored || axis == SplitPartial {
		return src[0], nil
	}
	return src[0], refuseMeta(t, "a view of a permuted split tensor")
}

// ratioSplit gives a node split along an axis its per-device extents from
// its sources, as ggml does, and checks they are consistent.
func ratioSplit(t *C.struct_ggml_tensor, src *[C.GGML_MAX_SRC]splitState, out *splitState, n int) error {
	first := true
	for i := range src {
		if t.src[i] == nil || !isAxis(src[i].axis) {
			continue
		}
		s := t.src[i]
		srcExt := int64(s.ne[src[i].axis])
		if first {
			for j := 0; j < n; j++ {
				for k := 0; k < int(src[i].nseg); k++ {
					out.ne[k*n+j] = 0
				}
				v := src[i].share(j, n) * int64(t.ne[out.axis])
				if v != 0 || srcExt != 0 {
					div := srcExt * int64(out.nr[0])
					if div == 0 || v%div != 0 {
						return refuseMeta(t, "device %d's share of source %d does not divide evenly into this node's split", j, i)
					}
					v /= div
				}
				out.ne[j] = v
			}
		} else {
			if out.nseg != 1 {
				return refuseMeta(t, "a segmented split meets another split source")
			}
			for j := 0; j < n; j++ {
				if out.ne[j]*int64(out.nr[0])*srcExt != src[i].share(j, n)*int64(t.ne[out.axis]) {
					return refuseMeta(t, "its sources give device %d inconsistent shares", j)
				}
			}
		}
		first = false
	}
	if first {
		return refuseMeta(t, "split along axis %d with no source split along an axis", int(out.axis))
	}
	return nil
}

// checkMetaTensorRead checks a read or write of size bytes at offset of
// tensor t, in a meta buffer, as ggml's meta buffer asserts (set_tensor,
// get_tensor).
func checkMetaTransfer(tp unsafe.Pointer, offset, size uint64, write bool) error {
	t := (*C.struct_ggml_tensor)(tp)
	if t == nil || metaOfBuffer(t.buffer) == nil {
		return nil
	}
	what := map[bool]string{true: "write", false: "read"}[write]
	s, err := newMetaCheck(nil).splitOf(t, false)
	if err != nil {
		return err
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: meta device: cannot %s tensor %q split %v: %s", ErrUnsupported, what, C.GoString(&t.name[0]), s.axis, fmt.Sprintf(format, args...))
	}
	if !contiguous(t) && s.axis != SplitMirrored {
		return refuse("it is not contiguous")
	}
	if s.lossy && !write {
		return refuse("its split comes from a segmented source whose segments ggml's meta backend dropped: it would read the devices' slices in device order, not in the tensor's")
	}
	nbytes := uint64(C.ggml_nbytes(t))
	if s.nseg != 1 || s.nr[0] != 1 {
		if s.axis != SplitAxis0 && s.axis != SplitAxis1 {
			return refuse("a segmented split is written along axis 0 or 1 only")
		}
		stride := uint64(t.nb[s.axis+1])
		if stride == 0 || offset%stride != 0 || size%stride != 0 {
			return refuse("the range must be whole rows of %d bytes", stride)
		}
		return nil
	}
	switch s.axis {
	case SplitAxis0, SplitAxis1, SplitAxis2:
		chunk := uint64(t.nb[s.axis+1])
		if chunk == 0 || offset%chunk != 0 || size%chunk != 0 {
			return refuse("the range must be whole slices of %d bytes", chunk)
		}
	case SplitMirrored:
	case SplitPartial:
		if !write {
			return refuse("each device holds a partial sum; ggml reads no partial sum (compute an op that sums them, or read a source)")
		}
		if t._type != C.GGML_TYPE_F32 || offset != 0 || size != nbytes {
			return refuse("a PARTIAL tensor is written whole and in f32")
		}
	default:
		return refuse("ggml's meta buffer transfers no tensor split along axis %d", int(s.axis))
	}
	return nil
}

// checkMetaGraph checks the nodes of a graph that meta device m computes,
// or will once a scheduler or graph allocator places them (nodes in meta
// buffers, or not placed yet), as ggml's meta buffer and backend assert
// when they place and compute them. With placed set (after allocation,
// before a scheduler's compute), it also refuses a node placed outside the
// meta device that reads a tensor of a meta buffer of host devices: ggml
// v0.21.0 would copy from that buffer's placeholder address.
func checkMetaGraph(m *metaState, nodes []*C.struct_ggml_tensor, placed bool) error {
	c := newMetaCheck(m)
	for _, t := range nodes {
		if t.buffer != nil && metaOfBuffer(t.buffer) == nil {
			if !placed {
				continue
			}
			for i := range t.src {
				if s := t.src[i]; s != nil {
					if sm := metaOfBuffer(s.buffer); sm != nil && sm.host {
						return fmt.Errorf("%w: meta device: node %q is computed outside the meta device but reads %q from a meta buffer of host devices: upstream ggml would copy it from the meta buffer's placeholder address; compute it on the meta device too",
							ErrUnsupported, C.GoString(&t.name[0]), C.GoString(&s.name[0]))
					}
				}
			}
			continue
		}
		if t.view_src != nil && t.view_src.op == C.GGML_OP_NONE && t.view_src.buffer != nil &&
			bool(C.ggml_backend_buffer_is_host(t.view_src.buffer)) && metaOfBuffer(t.view_src.buffer) == nil {
			continue // ggml skips these
		}
		if _, err := c.splitOf(t, true); err != nil {
			return err
		}
		if _, err := c.splitOf(t, false); err != nil {
			return err
		}
	}
	return nil
}

// checkMetaAsync checks an asynchronous write or read of a meta backend
// (set_tensor_async, get_tensor_async), which ggml's meta backend takes
// only whole from offset 0, contiguous, one segment, along axis 0 to 2 or
// MIRRORED.
func checkMetaAsync(t *C.struct_ggml_tensor, offset, size uint64, write bool) error {
	if err := checkMetaTransfer(unsafe.Pointer(t), offset, size, write); err != nil {
		return err
	}
	if metaOfBuffer(t.buffer) == nil {
		return nil
	}
	s, err := newMetaCheck(nil).splitOf(t, false)
	if err != nil {
		return err
	}
	if offset != 0 || !contiguous(t) || s.nseg != 1 || s.nr[0] != 1 || !(s.axis == SplitMirrored || (isAxis(s.axis) && s.axis != SplitAxis3)) {
		return fmt.Errorf("%w: meta backend: an asynchronous transfer of tensor %q (split %v) must start at 0, be contiguous and of one segment, split along axis 0 to 2 or MIRRORED; use ggml.SetData or ggml.Data",
			ErrUnsupported, C.GoString(&t.name[0]), s.axis)
	}
	return nil
}
