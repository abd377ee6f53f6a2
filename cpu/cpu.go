// Package cpu is ggml's CPU backend in Go: backends with a thread count,
// thread pools, buffers over caller memory, CPU features and NUMA.
//
// Backends made here are *backend.Backend values like any other: they
// compute graphs with backend.Backend.Compute, whose context cancels a long
// compute between nodes (the CPU backend's abort callback reads a flag that
// a goroutine sets when the context is done, so no Go code runs per node).
package cpu

/*
#include "goggml.h"
*/
import "C"

import (
	"fmt"
	"runtime"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	_ "github.com/go-ggml/ggml/internal/provider"
)

// New starts a CPU backend computing with threads threads; 0 means one per
// CPU (ggml_backend_cpu_init, ggml_backend_cpu_set_n_threads).
func New(threads int) (*backend.Backend, error) {
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	if threads < 1 || threads > backend.MaxThreads {
		return nil, fmt.Errorf("%w: thread count must be 1 to %d, got %d", ggml.ErrInvalid, backend.MaxThreads, threads)
	}
	be, err := backend.InitByName("CPU", "")
	if err != nil {
		return nil, err
	}
	if err := be.SetThreads(threads); err != nil {
		be.Close()
		return nil, err
	}
	return be, nil
}

// Features returns what ggml's CPU code was compiled to use, as the CPU
// backend lists it (the registry's ggml_backend_get_features), e.g.
// {"AVX2", "1"}.
func Features() ([]backend.Feature, error) {
	r, err := backend.RegByName("CPU")
	if err != nil {
		return nil, err
	}
	return r.Features()
}

// Has reports what ggml's CPU code was compiled to use (ggml_cpu_has_*).
func Has() map[string]bool { return ggml.CPUFeatures() }

// NUMAStrategy says how compute threads are placed on NUMA nodes (enum
// ggml_numa_strategy).
type NUMAStrategy int

// NUMA strategies (GGML_NUMA_STRATEGY_*).
const (
	NUMADisabled   NUMAStrategy = 0
	NUMADistribute NUMAStrategy = 1 // thread i on node i % n
	NUMAIsolate    NUMAStrategy = 2 // threads on the current node
	NUMANumactl    NUMAStrategy = 3 // the inherited cpuset
	NUMAMirror     NUMAStrategy = 4
)

// NUMAInit detects the NUMA nodes and sets the strategy, once per process,
// before creating thread pools (ggml_numa_init). It does nothing outside
// Linux. A second call is ignored (ggml says so on stderr).
func NUMAInit(s NUMAStrategy) error {
	if s < NUMADisabled || s > NUMAMirror {
		return fmt.Errorf("%w: unknown NUMA strategy %d", ggml.ErrInvalid, int(s))
	}
	C.ggml_numa_init(C.enum_ggml_numa_strategy(s))
	return nil
}

// IsNUMA reports whether NUMAInit found more than one node (ggml_is_numa).
func IsNUMA() bool { return bool(C.ggml_is_numa()) }
