package ggml

// #include "goggml.h"
import "C"

import "fmt"

// The types each op takes, derived in one place from what ggml's CPU
// backend can run: its type traits (a type's to-float conversion, its
// from-float conversion, its dot product and the type mul_mat converts b
// to), and, where a kernel's switch on the type decides (ggml-cpu/ops.cpp
// and binary-ops.cpp), the rule that switch follows. A type the rules
// refuse is one whose kernel aborts, or calls a NULL conversion and
// crashes; the ops record it as an ErrType error on their context.

// cpuType is what ggml's CPU backend can do with one type.
type cpuType struct {
	toFloat    bool // its rows convert to f32 (f32 itself, or ggml_get_type_traits(t)->to_float)
	fromFloat  bool // f32 rows convert to it (ggml_get_type_traits_cpu(t)->from_float)
	vecDot     bool // mul_mat has a dot product for a of this type (->vec_dot)
	vecDotType Type // the type mul_mat converts b to for a of this type (->vec_dot_type)
}

// cpuTypes is read once from ggml's type traits.
var cpuTypes [TypeCount]cpuType

func init() {
	for t := range TypeCount {
		ct := C.enum_ggml_type(t)
		if C.ggml_blck_size(ct) <= 0 { // removed from ggml (t.Valid needs type.go's init, which runs later)
			continue
		}
		cpu := C.ggml_get_type_traits_cpu(ct)
		cpuTypes[t] = cpuType{
			toFloat:    t == TypeF32 || C.ggml_get_type_traits(ct).to_float != nil,
			fromFloat:  cpu.from_float != nil,
			vecDot:     cpu.vec_dot != nil,
			vecDotType: Type(cpu.vec_dot_type),
		}
	}
}

// The capabilities the kernels' switches rely on.

// isFloat: f32, f16 or bf16, the types ggml's element-wise kernels are
// instantiated for (binary_op, unary_op, dup_flt).
func isFloat(t Type) bool { return t == TypeF32 || t == TypeF16 || t == TypeBF16 }

// readsRows: a row of t converts to f32 (to_float, or f32 itself).
func readsRows(t Type) bool { return t.Valid() && cpuTypes[t].toFloat }

// writesRows: f32 rows convert to t (from_float).
func writesRows(t Type) bool { return t.Valid() && cpuTypes[t].fromFloat }

// dequantizes: a block-quantized type whose rows convert to f32. The
// quantized cases of the add, add1, get_rows and out_prod switches list
// exactly these types (q8_1 and q8_K, the CPU's internal formats for b,
// have no to_float and are missing there or crash there).
func dequantizes(t Type) bool { return t.IsQuantized() && readsRows(t) }

// plainElement reports whether t is one value per element of size bytes
// (block size 1), the kernels that move elements without reading them.
func plainElement(t Type, sizes ...uint64) bool {
	if !t.Valid() || t.BlockSize() != 1 {
		return false
	}
	for _, s := range sizes {
		if t.Size() == s {
			return true
		}
	}
	return len(sizes) == 0
}

// typeRule reports why ggml's CPU kernel of an op cannot run on inputs of
// types in (the op's typed inputs in order) with a result of type out, or
// "" when it can.
type typeRule func(out Type, in typeArgs) string

// typeArgs are the types of an op's first inputs, by value: a slice passed
// to a rule (a function value) would escape, one allocation per op.
type typeArgs [4]Type

// elementwise is binary_op's rule (sub, mul, div, and add of float a): a,
// b and the result f32, f16 or bf16, b of a's type or f32, the result of
// a's type, or f32 when b is.
func elementwise(out Type, a, b Type) string {
	if isFloat(a) && (b == a || b == TypeF32) && (out == a || (out == TypeF32 && b == TypeF32)) {
		return ""
	}
	return fmt.Sprintf("ggml's element-wise kernels take a of f32, f16 or bf16 with b of a's type or f32 (a result of a's type, or f32 when b is f32), not a %v with b %v giving %v", a, b, out)
}

// addRule is ggml_compute_forward_add's: float a as elementwise; a
// quantized a is dequantized a row at a time (to_float), b (f32) added, and
// the sum converted to the result's type (from_float: without it ggml
// copies floats over the blocks, out of bounds).
func addRule(out Type, in typeArgs) string {
	a, b := in[0], in[1]
	if !a.IsQuantized() {
		return elementwise(out, a, b)
	}
	switch {
	case !readsRows(a):
		return fmt.Sprintf("ggml's CPU cannot convert %v to f32 (no to_float)", a)
	case b != TypeF32:
		return fmt.Sprintf("with a quantized a, b must be f32, not %v", b)
	case !writesRows(out):
		return fmt.Sprintf("ggml's CPU cannot convert the f32 sum back to %v (no from_float)", out)
	}
	return ""
}

// copyRule is ggml_compute_forward_dup's (cpy, dup, cont, cast): a type to
// itself (bytes), between f32, f16 and bf16, f32 to and from i32, f32, f16
// or bf16 to a quantized type with from_float, a quantized type with
// to_float to f32. Any other float destination also goes through
// from_float (dup_to_q), in a work buffer that ggml_graph_plan sizes only
// for quantized destinations: f16 or bf16 to i32 overflows it (a
// segfault).
func copyRule(to Type, in typeArgs) string {
	from := in[0]
	switch {
	case from == to, isFloat(from) && isFloat(to),
		from == TypeF32 && to == TypeI32, from == TypeI32 && to == TypeF32:
		return ""
	case isFloat(from) && to.IsQuantized():
		if writesRows(to) {
			return ""
		}
		return fmt.Sprintf("ggml's CPU cannot convert f32 rows to %v (no from_float)", to)
	case from.IsQuantized() && to == TypeF32:
		if readsRows(from) {
			return ""
		}
		return fmt.Sprintf("ggml's CPU cannot convert %v to f32 (no to_float)", from)
	}
	return fmt.Sprintf("ggml's copy kernels convert a type to itself, among f32, f16 and bf16, f32 to and from i32, floats to quantized types with from_float and quantized types to f32, not %v to %v", from, to)
}

// cpyRule is copyRule for GGML_OP_CPY (cpy, cast), where the CPU backend
// also refuses a destination of a quantized type without from_float, even
// of a's type (ggml_backend_cpu_device_supports_op).
func cpyRule(to Type, in typeArgs) string {
	if to.IsQuantized() && !writesRows(to) {
		return fmt.Sprintf("ggml's CPU backend refuses copies into %v, which it cannot convert f32 to (no from_float)", to)
	}
	return copyRule(to, in)
}

// mulMatRule is mul_mat's and mul_mat_id's: a needs a dot product; b is of
// the type that dot product takes, or f32 converted to it (from_float).
func mulMatRule(_ Type, in typeArgs) string {
	a, b := in[0], in[1]
	if !a.Valid() || !cpuTypes[a].vecDot {
		return fmt.Sprintf("ggml's CPU has no dot product for a of type %v", a)
	}
	vdt := cpuTypes[a].vecDotType
	switch {
	case b == vdt:
		return ""
	case b != TypeF32:
		if vdt == TypeF32 {
			return fmt.Sprintf("b must be f32, not %v", b)
		}
		return fmt.Sprintf("b must be f32 or %v (the type ggml converts b to for a of %v), not %v", vdt, a, b)
	case !writesRows(vdt):
		return fmt.Sprintf("ggml cannot convert an f32 b to %v for a of %v", vdt, a)
	}
	return ""
}

// opTypes holds the rule of each op that takes more than f32 (ops whose
// kernels take f32 only check that themselves).
var opTypes = map[string]typeRule{
	"add":      addRule,
	"add_cast": addRule,
	"sub":      func(out Type, in typeArgs) string { return elementwise(out, in[0], in[1]) },
	"mul":      func(out Type, in typeArgs) string { return elementwise(out, in[0], in[1]) },
	"div":      func(out Type, in typeArgs) string { return elementwise(out, in[0], in[1]) },
	// add1: f32 a with f32 b, f16 and bf16 a with b of a's type or f32;
	// a quantized a is dequantized, b added and requantized into a's type.
	"add1": func(_ Type, in typeArgs) string {
		a, b := in[0], in[1]
		switch {
		case a == TypeF32 && b == TypeF32, (a == TypeF16 || a == TypeBF16) && (b == a || b == TypeF32):
			return ""
		case a.IsQuantized() && b == TypeF32 && readsRows(a) && writesRows(a):
			return ""
		case a.IsQuantized() && b == TypeF32:
			return fmt.Sprintf("ggml's CPU cannot convert %v to f32 and back (to_float and from_float)", a)
		}
		return fmt.Sprintf("ggml's kernels take a of f32 with b f32, a of f16 or bf16 with b of a's type or f32, or a quantized a with b f32, not a %v with b %v", a, b)
	},
	// get_rows converts rows to f32: float and quantized types with
	// to_float; i32 rows are copied as they are.
	"get_rows": func(_ Type, in typeArgs) string {
		if a := in[0]; !readsRows(a) && a != TypeI32 {
			return fmt.Sprintf("ggml's CPU cannot convert rows of %v to f32 (no to_float)", a)
		}
		if in[1] != TypeI32 {
			return fmt.Sprintf("b holds row indices and must be i32, not %v", in[1])
		}
		return ""
	},
	// set_rows converts f32 rows of b into a's type.
	"set_rows": func(_ Type, in typeArgs) string {
		a, b, idx := in[0], in[1], in[2]
		switch {
		case !writesRows(a):
			return fmt.Sprintf("ggml's CPU cannot convert f32 to %v (no from_float)", a)
		case b != TypeF32:
			return fmt.Sprintf("b must be f32, not %v", b)
		case idx != TypeI32 && idx != TypeI64:
			return fmt.Sprintf("idx must be i32 or i64, not %v", idx)
		}
		return ""
	},
	"cpy":        cpyRule,
	"cast":       cpyRule,
	"mul_mat":    mulMatRule,
	"mul_mat_id": mulMatRule,
	// out_prod: f32 a, or a quantized a dequantized a row at a time; b f32
	// (f16 a aborts: "todo").
	"out_prod": func(_ Type, in typeArgs) string {
		a, b := in[0], in[1]
		if a != TypeF32 && !dequantizes(a) {
			return fmt.Sprintf("ggml's kernel takes a of f32 or a quantized type with to_float, not %v", a)
		}
		if b != TypeF32 {
			return fmt.Sprintf("b must be f32, not %v", b)
		}
		return ""
	},
	// concat copies elements of 1, 2 or 4 bytes, or any type's by its
	// size (concat_any), which is wrong for blocks.
	"concat": func(_ Type, in typeArgs) string {
		a, b := in[0], in[1]
		if a != b {
			return fmt.Sprintf("a is %v, b %v: they must be the same type", a, b)
		}
		if !plainElement(a) {
			return fmt.Sprintf("ggml's kernel copies single elements and cannot concatenate blocks of %v", a)
		}
		return ""
	},
	// flash_attn_ext converts q (f32) to the type k's dot product takes
	// (from_float of vec_dot_type, asserted on a worker thread) and reads v
	// as f16, f32 or through to_float.
	"flash_attn_ext": func(_ Type, in typeArgs) string {
		q, k, v := in[0], in[1], in[2]
		switch {
		case q != TypeF32:
			return fmt.Sprintf("q must be f32, not %v", q)
		case !k.Valid() || !cpuTypes[k].vecDot || !writesRows(cpuTypes[k].vecDotType):
			return fmt.Sprintf("ggml's CPU kernel has no dot product for k of type %v with a type it converts q to", k)
		case !readsRows(v):
			return fmt.Sprintf("ggml's CPU kernel cannot convert v of type %v to f32 (no to_float)", v)
		}
		return ""
	},
	// col2im_1d has kernels for f32, f16 and bf16 (the result of a's type).
	"col2im_1d": func(_ Type, in typeArgs) string {
		if !isFloat(in[0]) {
			return fmt.Sprintf("ggml's kernel takes a of f32, f16 or bf16, not %v", in[0])
		}
		return ""
	},
	// lightning_indexer: q, weights f32, mask f16; k f32 or any type
	// whose rows convert to f32 (to_float).
	"lightning_indexer": func(_ Type, in typeArgs) string {
		q, k, w, m := in[0], in[1], in[2], in[3]
		switch {
		case q != TypeF32 || w != TypeF32:
			return fmt.Sprintf("q and weights must be f32, not %v and %v", q, w)
		case m != TypeF16:
			return fmt.Sprintf("mask must be f16, not %v", m)
		case !readsRows(k):
			return fmt.Sprintf("ggml's CPU kernel cannot convert k of type %v to f32 (no to_float)", k)
		}
		return ""
	},
	// repeat has kernels for elements of 2 and 4 bytes.
	"repeat": func(_ Type, in typeArgs) string {
		if !plainElement(in[0], 2, 4) {
			return fmt.Sprintf("ggml's kernel repeats elements of 2 or 4 bytes (f32, f16, bf16, i16, i32), not %v", in[0])
		}
		return ""
	},
}

func init() {
	opTypes["repeat_4d"] = opTypes["repeat"]
}

// checkTypes applies op's type rule to the types of inputs and the result
// type out, and records an ErrType error when it is broken.
func (c *Context) checkTypes(op string, out Type, inputs ...*Tensor) *Tensor {
	var in typeArgs
	for i, t := range inputs[:min(len(inputs), len(in))] {
		in[i] = t.Type()
	}
	return c.checkRule(op, out, in, inputs...)
}

// checkTypeList is checkTypes with the types given: in are the types the
// rule judges, inputs what the error describes.
func (c *Context) checkTypeList(op string, out Type, in []Type, inputs ...*Tensor) *Tensor {
	var args typeArgs
	copy(args[:], in)
	return c.checkRule(op, out, args, inputs...)
}

// checkRule is checkTypes with the types given.
func (c *Context) checkRule(op string, out Type, in typeArgs, inputs ...*Tensor) *Tensor {
	rule, ok := opTypes[op]
	if !ok {
		panic("ggml: no type rule for " + op) // a missing table entry is a bug here
	}
	if why := rule(out, in); why != "" {
		return c.fail(op, ErrType, why, inputs...)
	}
	return nil
}
