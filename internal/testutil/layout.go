package testutil

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// SameLayout fails tb unless the struct handle (a handle type such as
// ggml.Tensor) begins with the fields of view (its bridge view, such as
// bridge.Tensor): the same number of leading fields at the same offsets,
// of the same sizes and of matching types. Types match when they are the
// same type; when both are pointers to the same C type of two cgo packages
// (cgo types are per package: the names match); when both are pointers to
// (or slices of pointers to) structs that begin with the same kind field
// (the handle and its view); or when both are unnamed and their elements
// match. A mismatch would make a view read the wrong memory: the garbage
// collector and the race detector would not see it.
func SameLayout(tb testing.TB, handle, view reflect.Type) {
	tb.Helper()
	if handle.Kind() != reflect.Struct || view.Kind() != reflect.Struct {
		tb.Fatalf("SameLayout(%v, %v): both must be structs", handle, view)
	}
	if view.Size() > handle.Size() {
		tb.Fatalf("view %v (%d bytes) is larger than %v (%d bytes)", view, view.Size(), handle, handle.Size())
	}
	if view.NumField() > handle.NumField() {
		tb.Fatalf("view %v has %d fields, %v only %d", view, view.NumField(), handle, handle.NumField())
	}
	for i := range view.NumField() {
		vf, hf := view.Field(i), handle.Field(i)
		if vf.Offset != hf.Offset || vf.Type.Size() != hf.Type.Size() {
			tb.Fatalf("%v.%s (offset %d, %d bytes) does not sit where %v.%s does (offset %d, %d bytes)",
				handle, hf.Name, hf.Offset, hf.Type.Size(), view, vf.Name, vf.Offset, vf.Type.Size())
		}
		if err := sameType(hf.Type, vf.Type); err != nil {
			tb.Fatalf("%v.%s and %v.%s: %v", handle, hf.Name, view, vf.Name, err)
		}
	}
}

func sameType(h, v reflect.Type) error {
	if h == v {
		return nil
	}
	if h.Kind() != v.Kind() {
		return fmt.Errorf("%v is a %v, %v a %v", h, h.Kind(), v, v.Kind())
	}
	if isC(h) || isC(v) {
		if h.Name() != v.Name() {
			return fmt.Errorf("the C types %v and %v differ", h, v)
		}
		return nil
	}
	switch h.Kind() {
	case reflect.Pointer:
		if h.Name() == "" && v.Name() == "" && h.Elem().Kind() == reflect.Struct && v.Elem().Kind() == reflect.Struct &&
			h.Elem().NumField() > 0 && v.Elem().NumField() > 0 && isKind(v.Elem().Field(0)) {
			if h.Elem().Field(0).Type != v.Elem().Field(0).Type {
				return fmt.Errorf("%v does not point to the handle of view %v", h, v)
			}
			return nil
		}
		if h.Name() == "" && v.Name() == "" {
			return sameType(h.Elem(), v.Elem())
		}
	case reflect.Slice:
		if h.Name() == "" && v.Name() == "" {
			return sameType(h.Elem(), v.Elem())
		}
	}
	return fmt.Errorf("types %v and %v differ", h, v)
}

// isC reports whether t is a type cgo made (_Ctype_...).
func isC(t reflect.Type) bool { return strings.HasPrefix(t.Name(), "_Ctype_") }

// isKind reports whether f is a view's kind field (bridge.Kind[bridge.Tensor], ...).
func isKind(f reflect.StructField) bool {
	return f.Anonymous && f.Type.Size() == 0 && strings.HasPrefix(f.Type.Name(), "Kind[") &&
		strings.HasSuffix(f.Type.PkgPath(), "internal/bridge")
}
