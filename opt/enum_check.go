package opt

/*
#include "goggml.h"
#include "goggml/fwd-ggml-opt.h"
*/
import "C"

// Each constant below is ggml's number for it (the constants are written
// as Go numbers, so that go doc shows them): an index out of range here, a
// compile error, means the linked ggml numbers one otherwise.
func _() {
	_ = [1]struct{}{}[LossMean-C.GGML_OPT_LOSS_TYPE_MEAN]
	_ = [1]struct{}{}[C.GGML_OPT_LOSS_TYPE_MEAN-LossMean]
	_ = [1]struct{}{}[LossSum-C.GGML_OPT_LOSS_TYPE_SUM]
	_ = [1]struct{}{}[C.GGML_OPT_LOSS_TYPE_SUM-LossSum]
	_ = [1]struct{}{}[LossCrossEntropy-C.GGML_OPT_LOSS_TYPE_CROSS_ENTROPY]
	_ = [1]struct{}{}[C.GGML_OPT_LOSS_TYPE_CROSS_ENTROPY-LossCrossEntropy]
	_ = [1]struct{}{}[LossMSE-C.GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR]
	_ = [1]struct{}{}[C.GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR-LossMSE]
	_ = [1]struct{}{}[AdamW-C.GGML_OPT_OPTIMIZER_TYPE_ADAMW]
	_ = [1]struct{}{}[C.GGML_OPT_OPTIMIZER_TYPE_ADAMW-AdamW]
	_ = [1]struct{}{}[SGD-C.GGML_OPT_OPTIMIZER_TYPE_SGD]
	_ = [1]struct{}{}[C.GGML_OPT_OPTIMIZER_TYPE_SGD-SGD]
}
