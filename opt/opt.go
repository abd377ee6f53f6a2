package opt

/*
#include "goggml.h"
#include "goggml/fwd-ggml-opt.h"
#include <stdlib.h>

// goggml_opt_state is C memory that the Go side writes before each
// optimizer step and ggml-opt reads through get_opt_pars: the step's
// parameters, checked in Go first.
typedef struct {
	struct ggml_opt_optimizer_params pars;
} goggml_opt_state;

static struct ggml_opt_optimizer_params goggml_opt_read_pars(void *ud) {
	return ((goggml_opt_state *)ud)->pars;
}

static ggml_opt_context_t goggml_opt_new(ggml_backend_sched_t s, struct ggml_context *ctx,
		struct ggml_tensor *in, struct ggml_tensor *out, int loss, int method, int period, bool forward,
		goggml_opt_state *st) {
	struct ggml_opt_params p = ggml_opt_default_params(s, (enum ggml_opt_loss_type)loss);
	if (forward) {
		p.build_type = GGML_OPT_BUILD_TYPE_FORWARD;
	}
	p.ctx_compute = ctx;
	p.inputs = in;
	p.outputs = out;
	p.opt_period = period;
	p.get_opt_pars = goggml_opt_read_pars;
	p.get_opt_pars_ud = st;
	p.optimizer = (enum ggml_opt_optimizer_type)method;
	return ggml_opt_init(p);
}

static struct ggml_opt_optimizer_params goggml_opt_defaults(void) {
	return ggml_opt_get_default_optimizer_params(NULL);
}

// goggml_opt_object mirrors struct ggml_object (ggml.c, private): the
// header before each object of a context's pool.
struct goggml_opt_object {
	size_t offs, size;
	struct goggml_opt_object *next;
	int type;
	char padding[4];
};

// goggml_opt_find_graphs lists in out (room for max) the graphs made in the
// context whose pool (mem bytes, go-ggml's) is pool, in the order ggml
// made them: for ggml_opt_init's ctx_compute, the forward graph, then the
// gradient and the optimizer graphs. It returns their number, or -1 where
// the pool is not laid out as the mirror above says.
static int goggml_opt_find_graphs(const char *pool, size_t mem, struct ggml_cgraph **out, int max) {
	if (sizeof(struct goggml_opt_object) + sizeof(struct ggml_tensor) != ggml_tensor_overhead()) {
		return -1;
	}
	int n = 0;
	size_t at = 0;
	for (const struct goggml_opt_object *o = (const struct goggml_opt_object *)pool; o != NULL; o = o->next) {
		size_t here = (size_t)((const char *)o - pool);
		if (here < at || here + sizeof *o > mem || o->offs != here + sizeof *o || o->size > mem - o->offs) {
			return -1;
		}
		at = o->offs + o->size;
		if (o->type == GGML_OBJECT_TYPE_GRAPH) {
			if (n == max) {
				return -1;
			}
			out[n++] = (struct ggml_cgraph *)(pool + o->offs);
		}
	}
	return n;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/bridge"
	"github.com/go-ggml/ggml/internal/life"
	"github.com/go-ggml/ggml/sched"
)

// Loss is what the optimizer minimizes (enum ggml_opt_loss_type).
type Loss int

// The losses ggml-opt builds on a model's outputs.
const (
	// LossMean is the mean of the outputs (GGML_OPT_LOSS_TYPE_MEAN): a
	// model that computes its own loss per datapoint.
	LossMean Loss = 0
	// LossSum is the sum of the outputs (GGML_OPT_LOSS_TYPE_SUM).
	LossSum Loss = 1
	// LossCrossEntropy is the cross-entropy of the softmax of each output
	// column against its label column, averaged over the batch
	// (GGML_OPT_LOSS_TYPE_CROSS_ENTROPY); results count the datapoints
	// whose largest output is the label's largest (accuracy).
	LossCrossEntropy Loss = 2
	// LossMSE is the mean squared difference of outputs and labels
	// (GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR).
	LossMSE Loss = 3
)

// String returns the loss's name.
func (l Loss) String() string {
	switch l {
	case LossMean:
		return "mean"
	case LossSum:
		return "sum"
	case LossCrossEntropy:
		return "cross-entropy"
	case LossMSE:
		return "mean squared error"
	}
	return fmt.Sprintf("Loss(%d)", int(l))
}

// needsLabels reports whether the loss compares the outputs with labels.
func (l Loss) needsLabels() bool { return l == LossCrossEntropy || l == LossMSE }

// Method is the optimizer's update rule (enum ggml_opt_optimizer_type).
type Method int

// The update rules of ggml-opt: both providers have both.
const (
	// AdamW is Adam with decoupled weight decay
	// (GGML_OPT_OPTIMIZER_TYPE_ADAMW); it keeps two moments per
	// parameter.
	AdamW Method = 0
	// SGD is stochastic gradient descent with weight decay
	// (GGML_OPT_OPTIMIZER_TYPE_SGD).
	SGD Method = 1
)

// String returns ggml's name of the method (ggml_opt_optimizer_name).
func (m Method) String() string {
	if m != AdamW && m != SGD {
		return fmt.Sprintf("Method(%d)", int(m))
	}
	return C.GoString(C.ggml_opt_optimizer_name(C.enum_ggml_opt_optimizer_type(m)))
}

// AdamWParams are one AdamW step's parameters (the adamw part of struct
// ggml_opt_optimizer_params, read by ggml_opt_step_adamw).
type AdamWParams struct {
	Alpha float32 // learning rate, > 0
	Beta1 float32 // first moment's decay, 0 to 1
	Beta2 float32 // second moment's decay, 0 to 1
	Eps   float32 // added to the second moment's root, >= 0
	WD    float32 // weight decay, 0 to 1 (0: none)
}

// SGDParams are one SGD step's parameters (the sgd part of struct
// ggml_opt_optimizer_params, read by ggml_opt_step_sgd).
type SGDParams struct {
	Alpha float32 // learning rate, > 0
	WD    float32 // weight decay, 0 to 1 (0: none)
}

// StepParams are an optimizer step's parameters
// (struct ggml_opt_optimizer_params): the method's own are used.
type StepParams struct {
	AdamW AdamWParams
	SGD   SGDParams
}

// DefaultStepParams returns ggml's defaults
// (ggml_opt_get_default_optimizer_params): AdamW with alpha 0.001, beta1
// 0.9, beta2 0.999, eps 1e-8, no weight decay; SGD with alpha 0.001, no
// weight decay.
func DefaultStepParams() StepParams {
	p := C.goggml_opt_defaults()
	return StepParams{
		AdamW: AdamWParams{Alpha: float32(p.adamw.alpha), Beta1: float32(p.adamw.beta1), Beta2: float32(p.adamw.beta2), Eps: float32(p.adamw.eps), WD: float32(p.adamw.wd)},
		SGD:   SGDParams{Alpha: float32(p.sgd.alpha), WD: float32(p.sgd.wd)},
	}
}

// check returns what ggml_opt_eval would assert on for method m, as an
// ErrInvalid error.
func (p StepParams) check(m Method) error {
	in := func(name string, v, lo, hi float32, openLo bool) error {
		if v != v || v < lo || v > hi || (openLo && v == lo) {
			op := "<="
			if openLo {
				op = "<"
			}
			return fmt.Errorf("%w: %s step parameter %s is %v; it must be %v %s %s <= %v", ggml.ErrInvalid, m, name, v, lo, op, name, hi)
		}
		return nil
	}
	inf := float32(math.Inf(1))
	switch m {
	case AdamW:
		a := p.AdamW
		return errors.Join(in("Alpha", a.Alpha, 0, inf, true), in("Beta1", a.Beta1, 0, 1, false), in("Beta2", a.Beta2, 0, 1, false),
			in("Eps", a.Eps, 0, inf, false), in("WD", a.WD, 0, 1, false))
	default:
		return errors.Join(in("Alpha", p.SGD.Alpha, 0, inf, true), in("WD", p.SGD.WD, 0, 1, false))
	}
}

// Step says which optimizer step a Params.StepParams call is for.
type Step struct {
	// Epoch counts the optimizer's epochs from 1 (Fit's, Epoch's); 0
	// before the first.
	Epoch int
	// Iter counts the optimizer steps from 1, as ggml does for AdamW's
	// bias correction (reset by Reset with optimizer).
	Iter int64
}

// Params configure an Optimizer (struct ggml_opt_params).
type Params struct {
	// Inputs is the model's input, an f32 matrix of one datapoint per
	// column ([datapoint length, batch]), allocated in a backend buffer
	// (ggml-opt's static graphs): each batch of a dataset is copied there.
	Inputs *ggml.Tensor
	// Outputs is the model's output, an f32 matrix of one column per
	// datapoint ([output length, batch]), computed from Inputs and the
	// model's parameters (ggml.Tensor.SetParam). Its context must be
	// NoAlloc: ggml-opt allocates copies of the graph's tensors, not
	// them.
	Outputs *ggml.Tensor
	// Loss is what is minimized.
	Loss Loss
	// Method is the update rule: AdamW (the zero value) or SGD.
	Method Method
	// Period is how many batches' gradients are accumulated per optimizer
	// step (opt_period); 0 means 1.
	Period int
	// StepParams, if not nil, returns the parameters of each optimizer
	// step (get_opt_pars, see the package documentation for how); nil
	// means DefaultStepParams. It runs on the goroutine that called
	// Epoch or Fit, before the step, and an invalid result stops the
	// epoch with an ErrInvalid error.
	StepParams func(Step) StepParams
	// Forward builds only the forward graph (GGML_OPT_BUILD_TYPE_FORWARD):
	// the Optimizer evaluates (Evaluate, Epoch with Split 0) and cannot
	// train, and the model needs no parameter.
	Forward bool
}

// graphSize is the node capacity of ggml-opt's graphs (GGML_DEFAULT_GRAPH_SIZE).
const graphSize = ggml.DefaultGraphSize

// Optimizer is an optimization context (ggml_opt_context_t) over a
// scheduler: it trains the parameters of a model's graph on batches of a
// Dataset. ggml-opt builds, allocates and computes its own graphs on the
// scheduler, which is lent to the Optimizer for its whole life: the
// scheduler's own methods return ErrBusy and it cannot be closed until
// the Optimizer is. The Optimizer also keeps the model's contexts and
// buffers alive: a context's Close returns ErrBusy meanwhile, and a
// buffer's Close succeeds but frees the buffer only when the Optimizer is
// closed (as for a compute in flight, backend.Buffer.Close): the weights
// stay usable until then.
//
// An Optimizer is used by one goroutine at a time (a second call while one
// runs returns ErrBusy). Close frees it; an unreachable Optimizer is freed
// by the garbage collector.
type Optimizer struct {
	_        life.NoCopy
	c        C.ggml_opt_context_t
	life     *life.Life
	state    *C.goggml_opt_state
	inputs   *ggml.Tensor
	outputs  *ggml.Tensor
	loss     Loss
	method   Method
	period   int
	pars     func(Step) StepParams
	lent     *bridge.Lent
	batch    int64 // datapoints per batch: the inputs' and outputs' columns
	inLen    int64 // the inputs' rows (a datapoint's length)
	outLen   int64 // the outputs' rows
	optI     int   // ggml's opt_i: evaluations since the last optimizer step, mod period
	iter     int64 // ggml's iter: the next optimizer step's number
	epoch    int
	accuracy bool  // the loss counts correct predictions
	forward  bool  // only the forward graph was built
	failed   error // a C call failed: ggml-opt's state is unknown
	// graphs are ggml-opt's graphs in its compute context (forward,
	// gradient, optimizer step), found there by New; allocated is the
	// one ggml_opt_alloc allocated last (-1: none).
	graphs    []*C.struct_ggml_cgraph
	allocated int
	cleanup   runtime.Cleanup
}

// optRes is what an Optimizer's free releases; no Go pointer to the
// Optimizer, so that its cleanup can run.
type optRes struct {
	c       C.ggml_opt_context_t
	compute *C.struct_ggml_context
	pool    unsafe.Pointer // compute's memory
	state   *C.goggml_opt_state
	lent    *bridge.Lent
	holds   *life.Holds
}

func (r optRes) free() {
	C.ggml_opt_free(r.c)
	C.ggml_free(r.compute)
	C.free(r.pool)
	C.free(unsafe.Pointer(r.state))
	r.lent.GiveBack()
	r.holds.Release()
}

// New creates an optimization context that trains p.Outputs' graph on
// scheduler s (ggml_opt_init with ggml_opt_default_params and static
// graphs). What ggml would assert on, or crash on later, is an error
// first: tensors of the wrong shape or type, inputs without memory, no
// parameter, a loss already marked, an op without a backward pass
// (ErrUnsupported), a graph too large for ggml-opt's graphs of
// ggml.DefaultGraphSize nodes or for the scheduler (ErrGraphFull), an op
// that none of the scheduler's backends runs, or weights in a buffer none
// of them uses (ErrUnsupported), a scheduler busy or lent to another
// Optimizer (ErrBusy), or closed (ErrClosed). The scheduler is reset
// first (what it placed is unplaced, as by its Reset), also when New then
// fails.
func New(s *sched.Scheduler, p Params) (*Optimizer, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: opt.New: nil *sched.Scheduler", ggml.ErrInvalid)
	}
	if p.Loss < LossMean || p.Loss > LossMSE {
		return nil, fmt.Errorf("%w: opt.New: unknown loss %v", ggml.ErrInvalid, p.Loss)
	}
	if p.Method != AdamW && p.Method != SGD {
		return nil, fmt.Errorf("%w: opt.New: unknown method %v", ggml.ErrInvalid, p.Method)
	}
	if p.Period < 0 || p.Period > math.MaxInt32 {
		return nil, fmt.Errorf("%w: opt.New: Period must be 0 (1) to %d, got %d", ggml.ErrInvalid, math.MaxInt32, p.Period)
	}
	period := max(p.Period, 1)
	in, out := p.Inputs, p.Outputs
	if in == nil || out == nil {
		return nil, fmt.Errorf("%w: opt.New: Params.Inputs and Params.Outputs are required", ggml.ErrInvalid)
	}
	for _, t := range []*ggml.Tensor{in, out} {
		if err := t.Err(); err != nil {
			return nil, fmt.Errorf("opt.New: %w", err)
		}
		if _, err := bridge.View[bridge.Tensor](t).Ptr(); err != nil {
			return nil, fmt.Errorf("opt.New: %w", err)
		}
		ne := t.Ne()
		if t.Type() != ggml.TypeF32 || ne[2] != 1 || ne[3] != 1 || !t.IsContiguous() {
			return nil, fmt.Errorf("%w: opt.New: %v must be a contiguous f32 matrix [length, batch]", ggml.ErrShape, t)
		}
	}
	if in.Ne()[1] != out.Ne()[1] {
		return nil, fmt.Errorf("%w: opt.New: the inputs hold %d datapoints, the outputs %d: both have one column per datapoint", ggml.ErrShape, in.Ne()[1], out.Ne()[1])
	}
	if !in.IsAllocated() {
		return nil, fmt.Errorf("%w: opt.New: the inputs must be allocated in a backend buffer (backend.AllocContextTensors): ggml-opt's static graphs copy batches there", ggml.ErrNotAllocated)
	}
	if out.IsAllocated() {
		return nil, fmt.Errorf("%w: opt.New: the outputs have memory already; build the model's graph in a NoAlloc context that nothing allocates (ggml-opt allocates copies of its tensors)", ggml.ErrInvalid)
	}
	lent, err := bridge.LendScheduler(s)
	if err != nil {
		return nil, fmt.Errorf("opt.New: the scheduler: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			lent.GiveBack()
		}
	}()
	nodes, leafs, nparams, err := dryRun(s, in, out, p.Loss, period, p.Forward)
	if err != nil {
		return nil, err
	}
	// ggml-opt's largest graph (forward, backward and optimizer steps:
	// for AdamW, two moments per parameter) must fit the scheduler.
	if total := nodes + leafs + 3*nparams + 1; total > lent.GraphSize {
		return nil, fmt.Errorf("%w: opt.New: ggml-opt's graphs take %d nodes and leafs, the scheduler %d (sched.Options.GraphSize)", ggml.ErrGraphFull, total, lent.GraphSize)
	}
	// The model's tensors must outlive the optimizer: hold their
	// contexts and memory.
	holds := &life.Holds{}
	defer func() {
		if !ok {
			holds.Release()
		}
	}()
	if err := holdModel(holds, out, lent); err != nil {
		return nil, fmt.Errorf("opt.New: %w", err)
	}
	// ggml-opt creates its graphs and backward tensors in ctx_compute: a
	// C context of the optimizer's own, sized for three graphs of
	// graphSize and the tensors the dry run counted.
	mem := 3*C.ggml_graph_overhead_custom(graphSize, true) + C.ggml_tensor_overhead()*C.size_t(4*(nodes+leafs)+8*nparams+64)
	compute, pool, err := newCContext(uint64(mem))
	if err != nil {
		return nil, fmt.Errorf("opt.New: the compute context: %w", err)
	}
	st := (*C.goggml_opt_state)(C.calloc(1, C.sizeof_goggml_opt_state))
	if st == nil {
		C.ggml_free(compute)
		C.free(pool)
		return nil, fmt.Errorf("%w: opt.New: the step parameters' memory", ggml.ErrNoMemory)
	}
	inp, _ := bridge.View[bridge.Tensor](in).Ptr()
	outp, _ := bridge.View[bridge.Tensor](out).Ptr()
	var c C.ggml_opt_context_t
	err = lent.Run(nilCtx, func() {
		c = C.goggml_opt_new(C.ggml_backend_sched_t(lent.Ptr), compute, (*C.struct_ggml_tensor)(inp), (*C.struct_ggml_tensor)(outp),
			C.int(p.Loss), C.int(p.Method), C.int(period), C.bool(p.Forward), st)
	})
	runtime.KeepAlive(in)
	runtime.KeepAlive(out)
	if err != nil {
		C.ggml_free(compute)
		C.free(pool)
		C.free(unsafe.Pointer(st))
		return nil, fmt.Errorf("opt.New: %w", err)
	}
	res := optRes{c: c, compute: compute, pool: pool, state: st, lent: lent, holds: holds}
	// Epochs reserve each of ggml-opt's graphs before ggml_opt_alloc
	// allocates it (goggml_opt_reserve, epoch.go): find them in the
	// compute context.
	want := 3
	if p.Forward {
		want = 1
	}
	found := make([]*C.struct_ggml_cgraph, 3)
	if n := C.goggml_opt_find_graphs((*C.char)(pool), C.ggml_get_mem_size(compute), &found[0], 3); int(n) != want {
		ok = true // res.free gives the scheduler back and releases the holds
		res.free()
		return nil, fmt.Errorf("%w: opt.New: ggml-opt's graphs are not where go-ggml looks for them (%d of %d found): the linked ggml-opt differs", ggml.ErrUnsupported, int(n), want)
	}
	ok = true
	o := &Optimizer{c: c, state: st, inputs: in, outputs: out, loss: p.Loss, method: p.Method, period: period, pars: p.StepParams,
		lent: lent, batch: in.Ne()[1], inLen: in.Ne()[0], outLen: out.Ne()[0], iter: 1, accuracy: p.Loss == LossCrossEntropy, forward: p.Forward,
		graphs: found[:want], allocated: -1}
	o.life = life.New(nil, fmt.Errorf("%w: the optimizer is closed", ggml.ErrClosed), res.free)
	o.cleanup = runtime.AddCleanup(o, life.CloseCollected, o.life)
	life.Leaks.Opened("Optimizer", o.life)
	return o, nil
}

// holdModel acquires into h the contexts of out's graph and the memory of
// its tensors that have some, and checks that some backend of the lent
// scheduler can use each such memory (ggml's scheduler aborts on a
// tensor in a buffer that none of its backends takes).
func holdModel(h *life.Holds, out *ggml.Tensor, lent *bridge.Lent) error {
	seen := map[*ggml.Tensor]bool{}
	stack := []*ggml.Tensor{out}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if t == nil || seen[t] {
			continue
		}
		seen[t] = true
		tv := bridge.View[bridge.Tensor](t)
		if err := tv.Hold(h); err != nil && !errors.Is(err, ggml.ErrNotAllocated) {
			return err
		}
		if buf := tv.Buffer(); buf != nil {
			buft := C.ggml_backend_buffer_get_type(C.ggml_backend_buffer_t(buf))
			usable := false
			for _, be := range lent.Backends {
				if bp, err := be.Ptr(); err == nil && bool(C.ggml_backend_supports_buft(C.ggml_backend_t(bp), buft)) {
					usable = true
					break
				}
			}
			if !usable {
				return fmt.Errorf("%w: %v lives in a %s buffer, which none of the scheduler's backends uses", ggml.ErrUnsupported, t, C.GoString(C.ggml_backend_buffer_name(C.ggml_backend_buffer_t(buf))))
			}
		}
		stack = append(stack, t.Sources()...)
		if vs := t.ViewSource(); vs != nil {
			stack = append(stack, vs)
		}
	}
	return nil
}

// dryRun builds in a scratch context what ggml-opt will build on out's
// graph (the loss, the predictions, the backward pass), so that package
// ggml's checks report what ggml would assert on. It returns the
// backward graph's node and leaf counts and the number of parameters.
func dryRun(s *sched.Scheduler, in, out *ggml.Tensor, loss Loss, period int, forward bool) (nodes, leafs, nparams int, err error) {
	scratch, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8*graphSize + 64, NoAlloc: true, Graph: true, Grads: true, GraphSize: graphSize})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("opt.New: %w", err)
	}
	defer scratch.Close()
	g, err := scratch.NewGradGraph(graphSize)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("opt.New: %w", err)
	}
	if err := g.Expand(out); err != nil {
		return 0, 0, 0, fmt.Errorf("opt.New: the model's graph: %w", err)
	}
	found := false
	for _, t := range append(g.Nodes(), g.Leafs()...) {
		switch {
		case t == in:
			found = true
		case t.IsLoss():
			return 0, 0, 0, fmt.Errorf("%w: opt.New: %v is marked as a loss; ggml-opt adds the loss itself (Params.Loss) and takes no other", ggml.ErrInvalid, t)
		}
		if t.IsParam() {
			if !t.IsAllocated() {
				return 0, 0, 0, fmt.Errorf("%w: opt.New: parameter %v has no memory: allocate the weights in a backend buffer (backend.AllocContextTensors)", ggml.ErrNotAllocated, t)
			}
			nparams++
		}
	}
	if !found {
		return 0, 0, 0, fmt.Errorf("%w: opt.New: the outputs do not depend on the inputs", ggml.ErrInvalid)
	}
	if nparams == 0 && !forward {
		return 0, 0, 0, fmt.Errorf("%w: opt.New: the outputs depend on no parameter (ggml.Tensor.SetParam)", ggml.ErrInvalid)
	}
	n := float32(out.Elements())
	var l *ggml.Tensor
	switch loss {
	case LossMean:
		l = scratch.Scale(scratch.Sum(out), 1/(float32(period)*n))
	case LossSum:
		l = scratch.Sum(out)
	case LossCrossEntropy:
		labels := scratch.NewTensor(ggml.TypeF32, out.Ne()[0], out.Ne()[1])
		l = scratch.CrossEntropyLoss(out, labels)
		if period > 1 {
			l = scratch.Scale(l, 1/float32(period))
		}
		pred := scratch.Argmax(out)
		if err := g.Expand(scratch.CountEqual(pred, scratch.Argmax(labels))); err != nil {
			return 0, 0, 0, fmt.Errorf("opt.New: the predictions: %w", err)
		}
	case LossMSE:
		labels := scratch.NewTensor(ggml.TypeF32, out.Ne()[0], out.Ne()[1])
		l = scratch.Scale(scratch.Sum(scratch.Sqr(scratch.Sub(out, labels))), 1/(float32(period)*n))
	}
	l.SetLoss()
	if err := g.Expand(l); err != nil {
		return 0, 0, 0, fmt.Errorf("opt.New: the loss: %w", err)
	}
	if forward {
		nparams = 0 // no optimizer steps
	} else if err := g.BuildBackward(scratch, period > 1); err != nil {
		return 0, 0, 0, fmt.Errorf("opt.New: %w", err)
	}
	nodes, leafs = g.NumNodes(), g.NumLeafs()
	// The optimizer steps: a node per parameter; AdamW's moments and the
	// step parameters are leafs.
	if nodes+nparams > graphSize || leafs+2*nparams+1 > graphSize {
		return 0, 0, 0, fmt.Errorf("%w: opt.New: with its backward pass and optimizer steps the model takes %d nodes and %d leafs; ggml-opt's graphs hold %d",
			ggml.ErrGraphFull, nodes+nparams, leafs+2*nparams+1, graphSize)
	}
	for _, t := range g.Nodes() {
		supported := false
		for i := range s.NumBackends() {
			if be := s.Backend(i); be != nil && be.SupportsOp(t) {
				supported = true
				break
			}
		}
		if !supported {
			return 0, 0, 0, fmt.Errorf("%w: opt.New: no backend of the scheduler computes %s (%v), which training needs", ggml.ErrUnsupported, t.Op(), t)
		}
	}
	return nodes, leafs, nparams, nil
}

// Close frees the optimization context (ggml_opt_free) and gives the
// scheduler back, reset. It is idempotent and safe on nil; while an epoch
// runs it changes nothing and returns ErrBusy.
func (o *Optimizer) Close() error {
	if o == nil || o.life == nil || o.life.Closed() {
		return nil
	}
	if err := o.life.Close("the optimizer", true); err != nil {
		return err
	}
	o.cleanup.Stop()
	life.Leaks.Closed(o.life)
	return nil
}

// enter starts work on the optimizer: ErrBusy while other work runs.
func (o *Optimizer) enter() error {
	if o == nil {
		return fmt.Errorf("%w: nil *opt.Optimizer", ggml.ErrInvalid)
	}
	if o.life == nil {
		return fmt.Errorf("%w: a zero opt.Optimizer: make one with opt.New", ggml.ErrInvalid)
	}
	return o.life.Enter("the optimizer")
}

// usable returns why o cannot run batches any more, or nil.
func (o *Optimizer) usable() error {
	if o.failed != nil {
		return fmt.Errorf("%w: the optimizer failed in ggml before (%v); close it and make another", ggml.ErrInvalid, o.failed)
	}
	return nil
}

// BatchSize returns the datapoints of one batch: the inputs' columns
// (ggml_opt_inputs' ne[1]).
func (o *Optimizer) BatchSize() int {
	if o == nil {
		return 0
	}
	return int(o.batch)
}

// Method returns the update rule (ggml_opt_context_optimizer_type).
func (o *Optimizer) Method() Method {
	if o == nil {
		return AdamW
	}
	return o.method
}

// Reset zeroes the accumulated gradients and sets the loss's gradient to
// 1 (ggml_opt_reset); with optimizer, it also zeroes AdamW's moments and
// restarts the step count, as for a new training.
func (o *Optimizer) Reset(optimizer bool) error {
	if err := o.enter(); err != nil {
		return err
	}
	defer o.life.Leave()
	if err := o.usable(); err != nil {
		return err
	}
	err := o.lent.Run(nilCtx, func() { C.ggml_opt_reset(o.c, C.bool(optimizer)) })
	runtime.KeepAlive(o)
	if err != nil {
		o.failed = err
		return fmt.Errorf("opt: Reset: %w", err)
	}
	if optimizer {
		o.iter = 1
	}
	return nil
}
