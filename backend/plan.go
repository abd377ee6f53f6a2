package backend

// #include "goggml.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
)

// planSet holds a backend's live plans, so that whichever of Plan.Close,
// Backend.Close and the cleanups comes first frees each plan once, while its
// backend still exists.
type planSet struct {
	mu sync.Mutex
	m  map[C.ggml_backend_graph_plan_t]life.PoolRef // the thread pool each captured, if any
}

func (s *planSet) free(be C.ggml_backend_t, p C.ggml_backend_graph_plan_t) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pool, ok := s.m[p]; ok {
		delete(s.m, p)
		C.ggml_backend_graph_plan_free(be, p)
		if pool != nil {
			pool.Release()
		}
	}
}

func (s *planSet) freeAll(be C.ggml_backend_t) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, pool := range s.m {
		C.ggml_backend_graph_plan_free(be, p)
		if pool != nil {
			pool.Release()
		}
	}
	clear(s.m)
}

// Plan is a graph prepared for repeated computing on one backend
// (ggml_backend_graph_plan_t). It keeps its backend and graph alive; closing
// the backend frees the plan too. A Plan is used by one goroutine at a time.
type Plan struct {
	_       life.NoCopy
	c       C.ggml_backend_graph_plan_t
	be      *Backend
	g       *ggml.Graph
	pool    life.PoolRef // the thread pool it captured, if any
	isolate bool         // its captured thread pool needs a thread of its own
	version uint64       // of the graph when planned
	cleanup runtime.Cleanup
}

type planRes struct {
	be   C.ggml_backend_t
	p    C.ggml_backend_graph_plan_t
	plan *planSet
}

// NewPlan prepares graph g for computing on the backend
// (ggml_backend_graph_plan_create). The graph is checked as Compute checks
// it; ErrUnsupported when the backend has no plans (only the CPU has).
func (b *Backend) NewPlan(g *ggml.Graph) (p *Plan, err error) {
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.leave()
	gp, err := b.checkGraph(g, nil)
	if err != nil {
		return nil, err
	}
	if !b.IsCPU() {
		return nil, fmt.Errorf("%w: backend %s has no graph plans", ErrUnsupported, b.Name())
	}
	defer runtime.KeepAlive(b)
	// The plan captures the backend's thread pool: it stays in use.
	if err := b.ensurePool(); err != nil {
		return nil, err
	}
	pool := b.pool.ref
	if pool != nil {
		if err := pool.Acquire(); err != nil {
			return nil, err
		}
	}
	c, err := func() (c C.ggml_backend_graph_plan_t, err error) {
		defer life.Catch(&err)
		return C.ggml_backend_graph_plan_create(b.c, gp), nil
	}()
	if c == nil || err != nil {
		if pool != nil {
			pool.Release()
		}
		if err == nil {
			err = fmt.Errorf("%w: could not create a plan", ggml.ErrNoMemory)
		}
		return nil, err
	}
	b.plans.mu.Lock()
	b.plans.m[c] = pool
	b.plans.mu.Unlock()
	p = &Plan{c: c, be: b, g: g, pool: pool, isolate: b.pool.isolate, version: bridge.View[bridge.Graph](g).Version()}
	p.cleanup = runtime.AddCleanup(p, func(r planRes) { life.Leaks.Collected(r.p); r.plan.free(r.be, r.p) }, planRes{be: b.c, p: c, plan: b.plans})
	life.Leaks.Opened("Plan", c)
	return p, nil
}

func (p *Plan) usable() error {
	if p == nil {
		return fmt.Errorf("%w: nil *Plan", ggml.ErrInvalid)
	}
	if p.c == nil {
		return fmt.Errorf("%w: the plan is closed", ggml.ErrClosed)
	}
	if err := p.be.usable(); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	return nil
}

// Compute runs the planned graph (ggml_backend_graph_plan_compute). The
// graph is checked again (its tensors may have lost their memory); a
// cancelled ctx stops the compute between nodes, as in Backend.Compute.
func (p *Plan) Compute(ctx context.Context) (err error) {
	if err := p.usable(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b := p.be
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	if bridge.View[bridge.Graph](p.g).Version() != p.version {
		return fmt.Errorf("%w: the graph changed since the plan was made (its work memory fits the old one); make a new plan", ggml.ErrInvalid)
	}
	var h life.Holds
	defer h.Release()
	if _, err := b.checkGraph(p.g, &h); err != nil {
		return err
	}
	defer runtime.KeepAlive(p)
	end, err := beginPool(ctx, p.pool)
	if err != nil {
		return err
	}
	defer end()
	stop := bridge.View[bridge.Backend](b).Watch(ctx)
	defer stop()
	bridge.ArmCustom(bridge.View[bridge.Graph](p.g), unsafe.Pointer(b.abort))
	err = life.OnThread(p.isolate, func() (err error) {
		defer life.Catch(&err)
		st := C.ggml_backend_graph_plan_compute(b.c, p.c)
		if st == C.GGML_STATUS_ABORTED && ctx.Err() != nil {
			return ctx.Err()
		}
		return statusErr(st)
	})
	if err == nil {
		err = p.g.CustomError()
	}
	return err
}

// Close frees the plan (ggml_backend_graph_plan_free). It is idempotent
// and safe on nil. While the plan's backend computes (this plan or another
// graph) it changes nothing and returns ggml.ErrBusy.
func (p *Plan) Close() error {
	if p == nil || p.c == nil {
		return nil
	}
	if err := p.be.enter(); err != nil {
		if !errors.Is(err, ggml.ErrClosed) {
			return err
		}
		// The backend is closed: it freed its plans, this one too.
		p.cleanup.Stop()
		life.Leaks.Closed(p.c)
		p.c = nil
		return nil
	}
	defer p.be.leave()
	p.cleanup.Stop()
	life.Leaks.Closed(p.c)
	p.be.plans.free(p.be.c, p.c)
	p.c = nil
	return nil
}
