package ggml

// #include "goggml.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/go-ggml/ggml/internal/bridge"
)

func init() {
	bridge.TensorPtr = func(v any) (unsafe.Pointer, error) {
		t, _ := v.(*Tensor)
		if err := t.usable(); err != nil {
			return nil, err
		}
		return unsafe.Pointer(t.c), nil
	}
	bridge.ContextPtr = func(v any) (unsafe.Pointer, error) {
		c, _ := v.(*Context)
		switch {
		case c == nil:
			return nil, fmt.Errorf("%w: nil *Context", ErrInvalid)
		case c.c == nil:
			return nil, fmt.Errorf("%w: the context is closed", ErrClosed)
		case c.err != nil:
			return nil, c.err
		}
		return unsafe.Pointer(c.c), nil
	}
	bridge.SetLease = func(v any, l bridge.Lease) {
		t := v.(*Tensor)
		if t.live() && t.c.view_src == nil && t.c.data != nil {
			t.lease = l
		}
	}
	bridge.GraphForCompute = graphForCompute
}

func graphForCompute(v any, visit func(t unsafe.Pointer, isNode bool) error) (unsafe.Pointer, error) {
	g, _ := v.(*Graph)
	if err := g.usable(); err != nil {
		return nil, err
	}
	for _, t := range g.leafs {
		if err := t.storageErr(); err != nil {
			return nil, fmt.Errorf("ggml: graph input %s: %w", t.describe(), err)
		}
		if visit != nil {
			if err := visit(unsafe.Pointer(t.c), false); err != nil {
				return nil, err
			}
		}
	}
	for _, t := range g.nodes {
		if err := t.storageErr(); err != nil {
			return nil, fmt.Errorf("ggml: graph node %s: %w", t.describe(), err)
		}
		if visit != nil {
			if err := visit(unsafe.Pointer(t.c), true); err != nil {
				return nil, err
			}
		}
	}
	return unsafe.Pointer(g.c), nil
}
