package backend

// #include "goggml.h"
import "C"

// MaxThreads and the BufferUsage values are written as Go literals, so that
// go doc shows them; they are ggml's ABI and the same with every provider.
// Each line below compares one with the linked provider's header at compile
// time: where the two disagree, the line does not compile ("index out of
// bounds" or "must not be negative"), and the literal must follow the
// header. DeviceType comes from cgo: ggml renumbered it when it added
// GGML_BACKEND_DEVICE_TYPE_IGPU.
var (
	_ = [1]struct{}{}[MaxThreads-C.GGML_MAX_N_THREADS]

	_ = [1]struct{}{}[UsageAny-C.GGML_BACKEND_BUFFER_USAGE_ANY]
	_ = [1]struct{}{}[UsageWeights-C.GGML_BACKEND_BUFFER_USAGE_WEIGHTS]
	_ = [1]struct{}{}[UsageCompute-C.GGML_BACKEND_BUFFER_USAGE_COMPUTE]
)
