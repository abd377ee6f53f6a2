package bridge

import (
	"context"
	"unsafe"
)

// Hooks not yet replaced by views (this file goes away).

var BeginPools func(ctx context.Context, bes []any) (end func(), isolate bool, err error)

var AttachThreadPool func(be any, pool unsafe.Pointer, ref PoolRef, isolate bool) error

var (
	BackendPtr     func(be any) (unsafe.Pointer, error)
	BufferTypePtr  func(bt any) (unsafe.Pointer, error)
	WrapBufferType func(p unsafe.Pointer) any
	HostMemoryPtr  func(m any) (unsafe.Pointer, uint64, error)
	AcquireBackend func(be any) (release func(), err error)
	EnterBackend   func(be any) (leave func(), err error)
	Watch          func(be any, ctx context.Context) (stop func())
	RefuseNode     func(be, t unsafe.Pointer) error
)
