package cpu

// #include "goggml.h"
import "C"

// The NUMAStrategy and Priority values are written as Go literals, so that
// go doc shows them; they are ggml's ABI and the same with every provider.
// Each line below compares one with the linked provider's header at compile
// time: where the two disagree, the line does not compile ("index out of
// bounds" or "must not be negative"), and the literal must follow the
// header.
var (
	_ = [1]struct{}{}[NUMADisabled-C.GGML_NUMA_STRATEGY_DISABLED]
	_ = [1]struct{}{}[NUMADistribute-C.GGML_NUMA_STRATEGY_DISTRIBUTE]
	_ = [1]struct{}{}[NUMAIsolate-C.GGML_NUMA_STRATEGY_ISOLATE]
	_ = [1]struct{}{}[NUMANumactl-C.GGML_NUMA_STRATEGY_NUMACTL]
	_ = [1]struct{}{}[NUMAMirror-C.GGML_NUMA_STRATEGY_MIRROR]

	_ = [1]struct{}{}[PriorityLow-C.GGML_SCHED_PRIO_LOW]
	_ = [1]struct{}{}[PriorityNormal-C.GGML_SCHED_PRIO_NORMAL]
	_ = [1]struct{}{}[PriorityMedium-C.GGML_SCHED_PRIO_MEDIUM]
	_ = [1]struct{}{}[PriorityHigh-C.GGML_SCHED_PRIO_HIGH]
	_ = [1]struct{}{}[PriorityRealtime-C.GGML_SCHED_PRIO_REALTIME]
)
