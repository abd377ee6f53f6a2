// Package mnist is ggml's MNIST example (examples/mnist of ggml) in Go: a
// fully connected network (784-500-10) and a small convolutional network,
// trained with package opt on the MNIST digits, saved as GGUF files in the
// layout of ggml's example (tensors fc1.weight, fc1.bias, ...; the key
// general.architecture "mnist-fc" or "mnist-cnn"), so that ggml's own
// mnist-eval reads go-ggml's models and the other way round.
//
// The architectures, the initialization (normal, standard deviation
// 0.01), the batch sizes (logical 1000, physical 500), the optimizer
// (AdamW with ggml's default parameters), the validation split and the
// epochs are those of ggml's example.
package mnist

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/opt"
	"github.com/go-ggml/ggml/sched"
)

// The sizes of ggml's example (mnist-common.h).
const (
	HW            = 28      // an image's width and height
	NInput        = HW * HW // values per image
	NClasses      = 10
	NHidden       = 500 // the FC network's hidden layer
	NCB           = 8   // the CNN's base number of channels
	NTrain        = 60000
	NTest         = 10000
	BatchLogical  = 1000 // datapoints per optimizer step
	BatchPhysical = 500  // datapoints per compute
	TrainShard    = 10   // mnist-train's shard size
	Epochs        = 30   // mnist-train's epochs
	ValSplit      = 0.05 // mnist-train's validation fraction
	ArchFC        = "mnist-fc"
	ArchCNN       = "mnist-cnn"
	keyArch       = "general.architecture"
	initStd       = 0.01
)

// shapes are each architecture's tensors, in the order ggml's example
// writes them, with their shapes (ne0 first).
var shapes = map[string][]struct {
	name  string
	shape []int64
}{
	ArchFC: {
		{"fc1.weight", []int64{NInput, NHidden}},
		{"fc1.bias", []int64{NHidden}},
		{"fc2.weight", []int64{NHidden, NClasses}},
		{"fc2.bias", []int64{NClasses}},
	},
	ArchCNN: {
		{"conv1.kernel", []int64{3, 3, 1, NCB}},
		{"conv1.bias", []int64{1, 1, NCB}},
		{"conv2.kernel", []int64{3, 3, NCB, 2 * NCB}},
		{"conv2.bias", []int64{1, 1, 2 * NCB}},
		{"dense.weight", []int64{(HW / 4) * (HW / 4) * 2 * NCB, NClasses}},
		{"dense.bias", []int64{NClasses}},
	},
}

// Model is one of the two networks: its weights in a backend buffer, the
// images input (a batch of columns of NInput values) in another, and the
// graph from the images to the logits (NClasses per image) in a NoAlloc
// context, as ggml's example builds them.
type Model struct {
	// Arch is ArchFC or ArchCNN.
	Arch string
	// Images is the input, [NInput, batch]; Logits the output,
	// [NClasses, batch].
	Images, Logits *ggml.Tensor
	weights        []*ggml.Tensor // in shapes' order
	closers        []func() error // last first
}

// Close frees the model's contexts and buffers.
func (m *Model) Close() error {
	var first error
	for i := len(m.closers) - 1; i >= 0; i-- {
		if err := m.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	m.closers = nil
	return first
}

// Weights returns the model's weights in the order of ggml's example.
func (m *Model) Weights() []*ggml.Tensor { return m.weights }

// NewRandom makes a model of arch with weights drawn from a normal
// distribution of standard deviation 0.01 (as ggml's example), for
// batches of batch images, on be.
func NewRandom(arch string, batch int, rng *rand.Rand, be *backend.Backend) (*Model, error) {
	specs, ok := shapes[arch]
	if !ok {
		return nil, fmt.Errorf("mnist: unknown architecture %q (%s or %s)", arch, ArchFC, ArchCNN)
	}
	m := &Model{Arch: arch}
	wctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: len(specs), NoAlloc: true})
	if err != nil {
		return nil, err
	}
	m.closers = append(m.closers, wctx.Close)
	for _, s := range specs {
		m.weights = append(m.weights, wctx.NewTensor(ggml.TypeF32, s.shape...).SetName(s.name))
	}
	if err := wctx.Err(); err != nil {
		m.Close()
		return nil, err
	}
	buf, err := backend.AllocContextTensors(wctx, be)
	if err != nil {
		m.Close()
		return nil, err
	}
	m.closers = append(m.closers, buf.Close)
	for _, w := range m.weights {
		v := make([]float32, w.Elements())
		for i := range v {
			v[i] = float32(rng.NormFloat64() * initStd)
		}
		if err := ggml.SetData(w, v); err != nil {
			m.Close()
			return nil, err
		}
	}
	if err := m.build(batch, be); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Load reads a model that ggml's mnist-train or Save wrote, for batches
// of batch images, on the CPU.
func Load(path string, batch int, be *backend.Backend) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	arch, err := f.String(keyArch)
	if err != nil {
		return nil, fmt.Errorf("mnist: %s: %w", path, err)
	}
	specs, ok := shapes[arch]
	if !ok {
		return nil, fmt.Errorf("mnist: %s: unknown architecture %q", path, arch)
	}
	gm, err := gguf.Load(context.Background(), f, gguf.LoadOptions{NoMmap: true})
	if err != nil {
		return nil, err
	}
	m := &Model{Arch: arch}
	m.closers = append(m.closers, gm.Close)
	for _, s := range specs {
		t := gm.Tensor(s.name)
		want := [ggml.MaxDims]int64{1, 1, 1, 1}
		copy(want[:], s.shape)
		if t == nil || t.Type() != ggml.TypeF32 || t.Ne() != want {
			m.Close()
			return nil, fmt.Errorf("mnist: %s: tensor %s must be f32 of shape %v, is %v", path, s.name, s.shape, t)
		}
		m.weights = append(m.weights, t)
	}
	if err := m.build(batch, be); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// build makes the images input and the graph to the logits
// (mnist_model_build), marking the weights as parameters.
func (m *Model) build(batch int, be *backend.Backend) error {
	sctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 1, NoAlloc: true})
	if err != nil {
		return err
	}
	m.closers = append(m.closers, sctx.Close)
	m.Images = sctx.NewTensor(ggml.TypeF32, NInput, int64(batch)).SetName("images").SetInput()
	sbuf, err := backend.AllocContextTensors(sctx, be)
	if err != nil {
		return err
	}
	m.closers = append(m.closers, sbuf.Close)
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 64, NoAlloc: true})
	if err != nil {
		return err
	}
	m.closers = append(m.closers, c.Close)
	for _, w := range m.weights {
		w.SetParam()
	}
	w := m.weights
	nb := int64(batch)
	switch m.Arch {
	case ArchFC:
		fc1 := c.Relu(c.Add(c.MulMat(w[0], m.Images), w[1]))
		m.Logits = c.Add(c.MulMat(w[2], fc1), w[3])
	case ArchCNN:
		img := c.Reshape(m.Images, HW, HW, 1, nb)
		conv1 := c.Relu(c.Add(c.Conv2D(w[0], img, 1, 1, 1, 1, 1, 1), w[1]))
		pool1 := c.Pool2D(conv1, ggml.PoolMax, 2, 2, 2, 2, 0, 0)
		conv2 := c.Relu(c.Add(c.Conv2D(w[2], pool1, 1, 1, 1, 1, 1, 1), w[3]))
		pool2 := c.Pool2D(conv2, ggml.PoolMax, 2, 2, 2, 2, 0, 0)
		dense := c.Reshape(c.Cont(c.Permute(pool2, 1, 2, 0, 3)), (HW/4)*(HW/4)*2*NCB, nb)
		m.Logits = c.Add(c.MulMat(w[4], dense), w[5])
	}
	m.Logits.SetName("logits").SetOutput()
	if err := c.Err(); err != nil {
		return err
	}
	if ne := m.Logits.Ne(); ne != [ggml.MaxDims]int64{NClasses, nb, 1, 1} {
		return fmt.Errorf("mnist: the logits are %v, not [%d %d]", ne, NClasses, nb)
	}
	return nil
}

// Save writes the model's weights as a GGUF file in the layout of ggml's
// example (mnist_model_save): the key general.architecture and the
// tensors by name, f32.
func (m *Model) Save(path string) error {
	b := gguf.NewBuilder()
	if err := b.Set(keyArch, m.Arch); err != nil {
		return err
	}
	for _, w := range m.weights {
		if err := b.AddGGMLTensor(w); err != nil {
			return err
		}
	}
	return b.WriteFile(path)
}

// NewScheduler makes the scheduler of ggml's example over be (a CPU
// backend): ggml's default graph size, with op offload.
func NewScheduler(be *backend.Backend) (*sched.Scheduler, error) {
	return sched.New([]*backend.Backend{be}, sched.Options{OpOffload: true})
}

// Train fits the model to ds with cross-entropy and AdamW at ggml's
// default parameters, in logical batches of BatchLogical (gradient
// accumulation over physical batches of the model's batch size), for
// epochs epochs, the last valSplit of the data for validation
// (mnist_model_train, ggml_opt_fit).
func Train(ctx context.Context, s *sched.Scheduler, m *Model, ds *opt.Dataset, epochs int, valSplit float32, seed uint64, progress bool) (opt.FitResult, error) {
	batch := int(m.Images.Ne()[1])
	if BatchLogical%batch != 0 {
		return opt.FitResult{}, fmt.Errorf("mnist: a batch of %d does not divide the logical batch of %d", batch, BatchLogical)
	}
	o, err := opt.New(s, opt.Params{Inputs: m.Images, Outputs: m.Logits, Loss: opt.LossCrossEntropy, Method: opt.AdamW, Period: BatchLogical / batch})
	if err != nil {
		return opt.FitResult{}, err
	}
	defer o.Close()
	return o.Fit(ctx, ds, opt.FitParams{Epochs: epochs, ValSplit: valSplit, Seed: seed, ProgressBar: progress})
}

// Eval evaluates the model on ds (mnist_model_eval): the loss and accuracy
// with their uncertainties, and the predicted digit of each image in the
// dataset's order.
func Eval(ctx context.Context, s *sched.Scheduler, m *Model, ds *opt.Dataset) (opt.Stats, []int32, error) {
	o, err := opt.New(s, opt.Params{Inputs: m.Images, Outputs: m.Logits, Loss: opt.LossCrossEntropy, Forward: true})
	if err != nil {
		return opt.Stats{}, nil, err
	}
	defer o.Close()
	r := opt.NewResult()
	defer r.Close()
	if err := o.Evaluate(ctx, ds, r); err != nil {
		return opt.Stats{}, nil, err
	}
	st, err := r.Stats()
	if err != nil {
		return opt.Stats{}, nil, err
	}
	pred, err := r.Predictions()
	return st, pred, err
}
