package sched

/*
#include "goggml.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// This file lends a scheduler to package opt (bridge.LendScheduler):
// ggml-opt drives the C scheduler itself, so for as long as an
// optimization context lives the scheduler is its alone.

func init() { bridge.LendScheduler = lend }

func lend(v any) (*bridge.Lent, error) {
	s, ok := v.(*Scheduler)
	if !ok || s == nil {
		return nil, fmt.Errorf("%w: nil *Scheduler", ggml.ErrInvalid)
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	done, err := s.change(nil)
	if err != nil {
		s.leave()
		return nil, err
	}
	s.release()
	clear(s.touched)
	C.ggml_backend_sched_reset(s.c)
	// No Go eval callback while lent: it would read the state of a graph
	// of the scheduler's own, and ggml-opt's graphs are not.
	C.ggml_backend_sched_set_eval_callback(s.c, nil, nil)
	done()
	runtime.KeepAlive(s)
	var once sync.Once
	l := &bridge.Lent{Ptr: unsafe.Pointer(s.c), GraphSize: s.graphSize, Backends: s.views}
	l.Run = func(ctx context.Context, f func()) (err error) {
		for i, be := range s.views {
			if err := be.Enter(); err != nil {
				return fmt.Errorf("scheduler backend %d: %w", i, err)
			}
			defer be.Leave()
			// Clears an abort flag a cancelled compute left set; ggml-opt
			// would take an aborted compute's results for whole ones, so
			// the loan's computes are not cancelled midway (ctx only stops
			// the wait for the thread pools).
			defer be.Watch(context.Background())()
		}
		end, isolate, err := bridge.BeginPools(ctx, s.views)
		if err != nil {
			return err
		}
		defer end()
		defer runtime.KeepAlive(s)
		return life.OnThread(isolate, func() (err error) {
			defer life.Catch(&err)
			f()
			return nil
		})
	}
	l.GiveBack = func() {
		once.Do(func() {
			C.ggml_backend_sched_reset(s.c)
			s.failed = false
			s.leave()
			runtime.KeepAlive(s)
		})
	}
	return l, nil
}
