package backend

// #include "goggml.h"
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
)

// ExtraBufferTypes returns the device's extra buffer types, in ggml's order
// of preference (the registry's "ggml_backend_dev_get_extra_bufts"
// function). The CPU device offers the layouts its fastest kernels read:
// "AMX" (Intel AMX tiles, where the CPU has AMX-INT8 and the OS grants the
// tile state) and "CPU_REPACK" (quantized weights interleaved for the
// AVX2, AVX-512 or NEON matrix kernels), each for the weight types and
// shapes that its kernels take.
//
// A tensor in a buffer of an extra type is re-laid as it is set: it is
// written whole (TensorSet of all its bytes at offset 0, or ggml.SetData),
// only when the type has a layout for it (WeightBufferType says which), and
// it cannot be read back (ErrUnsupported). Such buffers hold weights; the
// ops that read them run on the device that owns the type.
//
// With the system provider the list leaves out upstream's AMX type unless
// the environment variable GOGGML_UPSTREAM_AMX=1 asks for it: upstream
// v0.21.0 compiled by gcc 12 (Debian 12's) loads an all-zero AMX tile
// configuration (gcc drops the stores to the configuration before
// ldtilecfg, which it does not see read them), and its first AMX product
// ends the process with SIGILL. Set it for a ggml known to be built
// otherwise. The embedded provider's AMX code keeps its configuration in
// thread-local memory, which gcc 12 compiles right.
//
// The result is empty for a device whose registry offers the function but
// no types; an ErrUnsupported error says the registry has no such function
// (GPU backends, and CPU modules loaded at run time, mostly do not).
func (d *Device) ExtraBufferTypes() ([]*BufferType, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	release, err := d.link().Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	fn := d.procAddress("ggml_backend_dev_get_extra_bufts")
	if fn == nil {
		return nil, fmt.Errorf("%w: device %s has no extra buffer types (its registry has no ggml_backend_dev_get_extra_bufts)", ErrUnsupported, d.Name())
	}
	l := C.goggml_call_extra_bufts(fn, d.c)
	var out []*BufferType
	for p := l; p != nil && *p != nil; p = (*C.ggml_backend_buffer_type_t)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		bt := bufferTypeFromC(*p)
		if haveUpstream && bt.Name() == "AMX" && os.Getenv("GOGGML_UPSTREAM_AMX") != "1" {
			continue // see upstreamAMX
		}
		// Its transfers are checked as the re-laying buffer asserts.
		bridge.RegisterTransferCheck(unsafe.Pointer(bt.c), checkExtraTransfer)
		out = append(out, bt)
	}
	if len(out) > 0 {
		anyExtra.Store(true)
	}
	return out, nil
}

// IsCPUExtra reports whether bt is one of the CPU device's extra buffer
// types (see Device.ExtraBufferTypes): tensors in its buffers are written
// whole and cannot be read back.
func (bt *BufferType) IsCPUExtra() bool {
	if bt.usable() != nil {
		return false
	}
	return bool(C.goggml_buft_is_cpu_extra(bt.c))
}

// SupportsWeightIn reports whether the device computes op with op's source
// src (a weight, such as a MulMat's first operand) placed in a buffer of
// type bt: the question llama.cpp's loader asks of each buffer type before
// it places a weight there (weight_buft_supported; ggml_backend_dev_supports_op
// with the source in an empty buffer of type bt, marked as weights). op's
// shapes and types decide, not its data: op may belong to a NoAlloc
// context made only to ask. Neither op nor its sources are changed.
func (d *Device) SupportsWeightIn(op *ggml.Tensor, src int, bt *BufferType) (bool, error) {
	if err := d.usable(); err != nil {
		return false, err
	}
	if err := bt.usable(); err != nil {
		return false, err
	}
	// Neither may belong to a module unloaded since, or a broken RPC
	// connection: the question runs their code.
	release, err := d.link().Hold()
	if err != nil {
		return false, err
	}
	defer release()
	releaseBT, err := bt.link().Hold()
	if err != nil {
		return false, err
	}
	defer releaseBT()
	oc, err := tensorPtr(op)
	if err != nil {
		return false, err
	}
	defer runtime.KeepAlive(op)
	if src < 0 || src >= C.GGML_MAX_SRC || oc.src[src] == nil {
		return false, fmt.Errorf("%w: SupportsWeightIn: op %q has no source %d", ggml.ErrInvalid, C.GoString(&oc.name[0]), src)
	}
	if !bool(C.ggml_backend_dev_supports_buft(d.c, bt.c)) {
		return false, nil
	}
	return bool(C.goggml_supports_op_in_buft(d.c, bt.c, oc, C.int(src))), nil
}

// WeightBufferType returns the buffer type a weight used as source src of
// each of ops should live in on this device, as llama.cpp's loader chooses
// (select_weight_buft): the first of the device's extra buffer types in
// which the device computes every one of ops, else the device's own
// buffer type. ops must all read the same weight as their source src.
func (d *Device) WeightBufferType(src int, ops ...*ggml.Tensor) (*BufferType, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("%w: WeightBufferType: no ops", ggml.ErrInvalid)
	}
	srcOf := func(op *ggml.Tensor) *ggml.Tensor {
		if s := op.Sources(); src >= 0 && src < len(s) {
			return s[src]
		}
		return nil
	}
	for i, op := range ops[1:] {
		if a, b := srcOf(ops[0]), srcOf(op); op != nil && ops[0] != nil && a != nil && b != nil && a != b {
			return nil, fmt.Errorf("%w: WeightBufferType: op %d reads %v as source %d, op 0 reads %v: the ops must read one weight", ggml.ErrInvalid, i+1, b, src, a)
		}
	}
	extra, err := d.ExtraBufferTypes()
	if err != nil && len(extra) == 0 {
		extra = nil // a device without extra types: its own
	}
next:
	for _, bt := range extra {
		for _, op := range ops {
			ok, err := d.SupportsWeightIn(op, src, bt)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue next
			}
		}
		return bt, nil
	}
	return d.BufferType(), nil
}

// anyExtra is set once a caller could hold an extra buffer type (the
// first ExtraBufferTypes that returned one): until then transfers skip
// checkExtraTransfer's cgo call.
var anyExtra atomic.Bool

// checkExtraTransfer checks a read (write false) or write of size bytes at
// offset of tensor t, in a buffer of one of the CPU's extra buffer types,
// as ggml's repack and AMX buffers would fail: they have no get_tensor
// (a read calls a NULL function), set_tensor asserts that the whole tensor
// is written, and the repack buffer's set_tensor follows the tensor's
// layout, which is NULL for a type it has none for.
func checkExtraTransfer(tp unsafe.Pointer, offset, size uint64, write bool) error {
	t := (*C.struct_ggml_tensor)(tp)
	if t == nil {
		return nil
	}
	buf := t.buffer
	if t.view_src != nil {
		buf = t.view_src.buffer
	}
	if buf == nil {
		return nil
	}
	buft := C.goggml_buffer_cpu_extra(buf)
	if buft == nil {
		return nil
	}
	name, kind := C.GoString(&t.name[0]), C.GoString(C.ggml_backend_buft_name(buft))
	n := uint64(C.ggml_nbytes(t))
	switch {
	case t.view_src != nil:
		return fmt.Errorf("%w: tensor %q is a view of %q, which is in a %s buffer (re-laid for the CPU's kernels): a view of it cannot be read or written; write the whole tensor",
			ErrUnsupported, name, C.GoString(&t.view_src.name[0]), kind)
	case !write:
		return fmt.Errorf("%w: tensor %q is in a %s buffer, which holds it re-laid for the CPU's kernels: ggml cannot read it back", ErrUnsupported, name, kind)
	case offset != 0 || size != n:
		return fmt.Errorf("%w: tensor %q is in a %s buffer, which re-lays a tensor as it is written: write all %d bytes at offset 0 (not %d at %d)", ErrUnsupported, name, kind, n, size, offset)
	case t.extra == nil:
		return fmt.Errorf("%w: a %s buffer has no layout for tensor %q (%s, %d x %d): place it in the device's own buffer type (Device.WeightBufferType chooses)",
			ErrUnsupported, kind, name, C.GoString(C.ggml_type_name(t._type)), int64(t.ne[0]), int64(t.ne[1]))
	}
	return nil
}

// checkExtraPlacement refuses to place tensor t (not a view) in a buffer of
// type buft when buft is one of the CPU's extra types that does not compute
// the matrix products reading t whole (goggml_extra_takes_tensor): such a
// buffer would store t in part, or write past its allocation (the AMX type
// sizes a tensor by its first two dimensions).
func checkExtraPlacement(op string, buft C.ggml_backend_buffer_type_t, t *C.struct_ggml_tensor) error {
	if !anyExtra.Load() || t == nil || t.view_src != nil || !bool(C.goggml_buft_is_cpu_extra(buft)) {
		return nil
	}
	if bool(C.goggml_extra_takes_tensor(buft, t)) {
		return nil
	}
	return fmt.Errorf("%w: %s: a %s buffer holds only weights whose matrix products it computes: tensor %q (%s, %d x %d x %d x %d) is not one; place it in the device's own buffer type (Device.WeightBufferType chooses)",
		ErrUnsupported, op, C.GoString(C.ggml_backend_buft_name(buft)), C.GoString(&t.name[0]), C.GoString(C.ggml_type_name(t._type)),
		int64(t.ne[0]), int64(t.ne[1]), int64(t.ne[2]), int64(t.ne[3]))
}

// errExtraCompute is the error of a compute buffer of one of the CPU's
// extra types (a scheduler's or graph allocator's): they hold weights,
// re-laid as they are written, not the tensors a graph computes.
func errExtraCompute(op string, bt *BufferType) error {
	return fmt.Errorf("%w: %s: buffer type %s is one of the CPU's extra types, which hold weights re-laid for its kernels, not computed tensors; give the device's own buffer type", ErrUnsupported, op, bt.Name())
}
