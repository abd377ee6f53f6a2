package opt_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/opt"
	"github.com/go-ggml/ggml/sched"
)

// The tests leave no handle alive: each is closed or collected.
func TestMain(m *testing.M) {
	os.Exit(testutil.RunLeakChecked(m))
}

// linear is the model y = W·x + b: x [in, batch] and the parameters W
// [in, out] (a row of in per output) and b [out] in a CPU buffer, y in a
// NoAlloc context.
type linear struct {
	x, w, b, y  *ggml.Tensor
	in, out, nb int
}

func newLinear(t *testing.T, cpu *backend.Backend, in, out, batch int) *linear {
	t.Helper()
	wctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 3, NoAlloc: true})
	require.NoError(t, err)
	x := wctx.NewTensor(ggml.TypeF32, int64(in), int64(batch)).SetName("x")
	w := wctx.NewTensor(ggml.TypeF32, int64(in), int64(out)).SetName("w").SetParam()
	b := wctx.NewTensor(ggml.TypeF32, int64(out)).SetName("b").SetParam()
	buf, err := backend.AllocContextTensors(wctx, cpu)
	require.NoError(t, err)
	cctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 8, NoAlloc: true})
	require.NoError(t, err)
	y := cctx.Add(cctx.MulMat(w, x), b).SetName("y")
	require.NoError(t, cctx.Err())
	// Closed after the optimizer (cleanups run last-in first-out).
	t.Cleanup(func() {
		require.NoError(t, cctx.Close())
		require.NoError(t, buf.Close())
		require.NoError(t, wctx.Close())
	})
	return &linear{x: x, w: w, b: b, y: y, in: in, out: out, nb: batch}
}

// set writes the parameters.
func (m *linear) set(t *testing.T, w, b []float64) {
	t.Helper()
	require.NoError(t, ggml.SetData(m.w, f32(w)))
	require.NoError(t, ggml.SetData(m.b, f32(b)))
}

// params reads the parameters back.
func (m *linear) params(t *testing.T) (w, b []float64) {
	t.Helper()
	w32, err := ggml.Data[float32](m.w)
	require.NoError(t, err)
	b32, err := ggml.Data[float32](m.b)
	require.NoError(t, err)
	return f64(w32), f64(b32)
}

// forward returns W·x + b for each datapoint of xs (in values each), in
// float64.
func forward(w, b, xs []float64, in, out int) []float64 {
	n := len(xs) / in
	y := make([]float64, n*out)
	for j := range n {
		for o := range out {
			s := b[o]
			for i := range in {
				s += w[o*in+i] * xs[j*in+i]
			}
			y[j*out+o] = s
		}
	}
	return y
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func randn(rng *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = rng.NormFloat64() * scale
	}
	return out
}

func newSched(t *testing.T, cpu *backend.Backend) *sched.Scheduler {
	t.Helper()
	s, err := sched.New([]*backend.Backend{cpu}, sched.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func newDataset(t *testing.T, data []float64, dataLen int, labels []float64, labelLen int) *opt.Dataset {
	t.Helper()
	ds, err := opt.NewDatasetFrom(f32(data), dataLen, f32(labels), labelLen)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ds.Close()) })
	return ds
}

func newOptimizer(t *testing.T, s *sched.Scheduler, p opt.Params) *opt.Optimizer {
	t.Helper()
	o, err := opt.New(s, p)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, o.Close()) })
	return o
}

// mseGrad returns the mean squared error of the model on (xs, ls) and its
// gradient with respect to W and b, in float64.
func mseGrad(w, b, xs, ls []float64, in, out int) (loss float64, gw, gb []float64) {
	y := forward(w, b, xs, in, out)
	n := len(xs) / in
	gw, gb = make([]float64, len(w)), make([]float64, len(b))
	scale := 1 / float64(n*out)
	for j := range n {
		for o := range out {
			d := y[j*out+o] - ls[j*out+o]
			loss += d * d * scale
			g := 2 * d * scale
			gb[o] += g
			for i := range in {
				gw[o*in+i] += g * xs[j*in+i]
			}
		}
	}
	return loss, gw, gb
}

// One training batch is one forward pass, one backward pass and one
// optimizer step: the parameters after it are those of the same step in
// float64, for AdamW and SGD, with weight decay, the loss reported is the
// float64 loss of the parameters before it.
func TestOneStep(t *testing.T) {
	for _, method := range []opt.Method{opt.AdamW, opt.SGD} {
		t.Run(method.String(), func(t *testing.T) {
			rng := testutil.NewRNG(t)
			cpu := backendtest.CPU(t)
			s := newSched(t, cpu)
			const in, out, n = 5, 3, 8
			m := newLinear(t, cpu, in, out, n)
			w0, b0 := randn(rng, in*out, 1), randn(rng, out, 1)
			m.set(t, w0, b0)
			xs, ls := randn(rng, n*in, 1), randn(rng, n*out, 1)
			ds := newDataset(t, xs, in, ls, out)
			sp := opt.StepParams{
				AdamW: opt.AdamWParams{Alpha: float32(0.01 + 0.05*rng.Float64()), Beta1: 0.8, Beta2: 0.95, Eps: 1e-8, WD: 0.1},
				SGD:   opt.SGDParams{Alpha: float32(0.01 + 0.05*rng.Float64()), WD: 0.2},
			}
			var steps []opt.Step
			o := newOptimizer(t, s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossMSE, Method: method,
				StepParams: func(st opt.Step) opt.StepParams { steps = append(steps, st); return sp }})
			assert.Equal(t, method, o.Method())
			train := opt.NewResult()
			defer train.Close()
			require.NoError(t, o.Epoch(context.Background(), ds, opt.EpochParams{Split: -1, Train: train}))
			assert.Equal(t, []opt.Step{{Epoch: 1, Iter: 1}}, steps)

			loss, gw, gb := mseGrad(w0, b0, xs, ls, in, out)
			step := func(p, g []float64) []float64 {
				out := make([]float64, len(p))
				for i := range p {
					if method == opt.SGD {
						a, wd := float64(sp.SGD.Alpha), float64(sp.SGD.WD)
						out[i] = p[i]*(1-a*wd) - a*g[i]
						continue
					}
					a := sp.AdamW
					alpha, b1, b2, eps, wd := float64(a.Alpha), float64(a.Beta1), float64(a.Beta2), float64(a.Eps), float64(a.WD)
					mo := (1 - b1) * g[i]
					v := (1 - b2) * g[i] * g[i]
					mh := mo / (1 - b1)
					vh := math.Sqrt(v/(1-b2)) + eps
					out[i] = p[i]*(1-alpha*wd) - alpha*mh/vh
				}
				return out
			}
			w1, b1 := m.params(t)
			assert.InDeltaSlice(t, step(w0, gw), w1, 1e-5)
			assert.InDeltaSlice(t, step(b0, gb), b1, 1e-5)
			st, err := train.Stats()
			require.NoError(t, err)
			assert.Equal(t, int64(n), st.N)
			assert.InEpsilon(t, loss, st.Loss, 1e-5)
			assert.True(t, math.IsNaN(st.LossUnc), "one batch has no uncertainty")
			assert.True(t, math.IsNaN(st.Accuracy), "MSE has no accuracy")
		})
	}
}

// solve returns x with a·x = y for the n×n matrix a (rows), by Gaussian
// elimination with partial pivoting.
func solve(a [][]float64, y []float64) []float64 {
	n := len(y)
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		a[c], a[p] = a[p], a[c]
		y[c], y[p] = y[p], y[c]
		for r := c + 1; r < n; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k < n; k++ {
				a[r][k] -= f * a[c][k]
			}
			y[r] -= f * y[c]
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := y[r]
		for k := r + 1; k < n; k++ {
			s -= a[r][k] * x[k]
		}
		x[r] = s / a[r][r]
	}
	return x
}

// Fitting a linear model by MSE with SGD and gradient accumulation over
// the whole dataset (Period batches per step) reaches the float64
// least-squares solution.
func TestFitLeastSquares(t *testing.T) {
	rng := testutil.NewRNG(t)
	cpu := backendtest.CPU(t)
	s := newSched(t, cpu)
	const in, batch, period = 3, 16, 4
	const n = batch * period
	m := newLinear(t, cpu, in, 1, batch)
	m.set(t, make([]float64, in), []float64{0})
	wTrue, bTrue := randn(rng, in, 1), rng.NormFloat64()
	xs := randn(rng, n*in, 1)
	ls := forward(wTrue, []float64{bTrue}, xs, in, 1)
	for i := range ls {
		ls[i] += 0.1 * rng.NormFloat64()
	}
	ds := newDataset(t, xs, in, ls, 1)

	// The least-squares solution of [x 1]·[w b] = l: normal equations.
	ata := make([][]float64, in+1)
	aty := make([]float64, in+1)
	for r := range ata {
		ata[r] = make([]float64, in+1)
	}
	for j := range n {
		row := append(append([]float64(nil), xs[j*in:(j+1)*in]...), 1)
		for r := range row {
			aty[r] += row[r] * ls[j]
			for c := range row {
				ata[r][c] += row[r] * row[c]
			}
		}
	}
	want := solve(ata, aty)

	var last opt.Step
	o := newOptimizer(t, s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossMSE, Method: opt.SGD, Period: period,
		StepParams: func(st opt.Step) opt.StepParams {
			last = st
			return opt.StepParams{SGD: opt.SGDParams{Alpha: 0.2}}
		}})
	var batches int
	const epochs = 300
	res, err := o.Fit(context.Background(), ds, opt.FitParams{Epochs: epochs, Seed: rng.Uint64(),
		Progress: func(p opt.Progress) error { batches++; return nil }})
	require.NoError(t, err)
	assert.Equal(t, epochs*period, batches)
	assert.Equal(t, opt.Step{Epoch: epochs, Iter: epochs}, last, "one optimizer step per Period batches")
	w, b := m.params(t)
	assert.InDeltaSlice(t, want, append(w, b...), 1e-4)
	assert.Equal(t, int64(n), res.Train.N)
	assert.Equal(t, int64(0), res.Val.N)

	// The loss reported is the mean squared error of the final fit.
	r := opt.NewResult()
	defer r.Close()
	require.NoError(t, o.Evaluate(context.Background(), ds, r))
	loss, _, _ := mseGrad(w, b, xs, ls, in, 1)
	st, err := r.Stats()
	require.NoError(t, err)
	assert.InEpsilon(t, loss, st.Loss, 1e-4)
}

// blobs returns n points of dim values in k well-separated Gaussian
// classes, with one-hot labels, and the classes. The classes' centers are
// drawn again until every two are at least 6 apart, twelve times the
// points' spread. Centers drawn once could land close: seed
// 1795844775956136325 put two 2.7 apart, and TestFitClassifier's training
// reached 0.97 accuracy and its validation 0.95, not above the 0.95
// asked; in 1000 runs, the first ten below 1.0 each had two centers 1.4
// to 5 apart. With the centers 6 apart, 1000 runs all ended at 1.0.
func blobs(rng *rand.Rand, n, dim, k int) (xs, ls []float64, class []int) {
	var centers []float64
	for apart := false; !apart; {
		centers, apart = randn(rng, k*dim, 4), true
		for a := range k {
			for b := range a {
				d := 0.0
				for i := range dim {
					d += (centers[a*dim+i] - centers[b*dim+i]) * (centers[a*dim+i] - centers[b*dim+i])
				}
				apart = apart && d >= 6*6
			}
		}
	}
	for range n {
		c := rng.IntN(k)
		class = append(class, c)
		for i := range dim {
			xs = append(xs, centers[c*dim+i]+0.5*rng.NormFloat64())
		}
		for o := range k {
			v := 0.0
			if o == c {
				v = 1
			}
			ls = append(ls, v)
		}
	}
	return xs, ls, class
}

// A linear classifier trained with cross-entropy separates Gaussian blobs;
// the predictions and accuracy the results report are those of the
// trained weights computed in float64.
func TestFitClassifier(t *testing.T) {
	rng := testutil.NewRNG(t)
	cpu := backendtest.CPU(t)
	s := newSched(t, cpu)
	const dim, k, batch, n = 4, 3, 20, 400
	m := newLinear(t, cpu, dim, k, batch)
	m.set(t, randn(rng, dim*k, 0.1), make([]float64, k))
	xs, ls, class := blobs(rng, n, dim, k)
	ds := newDataset(t, xs, dim, ls, k)
	o := newOptimizer(t, s, opt.Params{Inputs: m.x, Outputs: m.y, Loss: opt.LossCrossEntropy,
		StepParams: func(opt.Step) opt.StepParams {
			p := opt.DefaultStepParams()
			p.AdamW.Alpha = 0.02
			return p
		}})
	res, err := o.Fit(context.Background(), ds, opt.FitParams{Epochs: 20, ValSplit: 0.2, Seed: rng.Uint64()})
	require.NoError(t, err)
	assert.Equal(t, int64(n*4/5), res.Train.N)
	assert.Equal(t, int64(n/5), res.Val.N)
	assert.Greater(t, res.Val.Accuracy, 0.95)

	r := opt.NewResult()
	defer r.Close()
	require.NoError(t, o.Evaluate(context.Background(), ds, r))
	pred, err := r.Predictions()
	require.NoError(t, err)
	order, err := ds.Order()
	require.NoError(t, err)
	w, b := m.params(t)
	y := forward(w, b, xs, dim, k)
	right := 0
	require.Len(t, pred, n)
	for pos, j := range order {
		best := 0
		for c := range k {
			if y[j*k+c] > y[j*k+best] {
				best = c
			}
		}
		assert.Equal(t, int32(best), pred[pos], "datapoint %d", j)
		if best == class[j] {
			right++
		}
	}
	st, err := r.Stats()
	require.NoError(t, err)
	acc := float64(right) / n
	assert.InDelta(t, acc, st.Accuracy, 1e-12)
	assert.InDelta(t, math.Sqrt(acc*(1-acc)/(n-1)), st.AccuracyUnc, 1e-12)
	assert.Greater(t, acc, 0.95)
}

// Shuffle draws a permutation of whole shards from its seed: the same
// seed gives the same order; datapoints past n keep their place.
func TestShuffle(t *testing.T) {
	rng := testutil.NewRNG(t)
	ds, err := opt.NewDataset(24, 2, 0, 3)
	require.NoError(t, err)
	defer ds.Close()
	seed := rng.Uint64()
	require.NoError(t, ds.Shuffle(seed, 18))
	a, err := ds.Order()
	require.NoError(t, err)
	for i := 18; i < 24; i++ {
		assert.Equal(t, i, a[i])
	}
	seen := map[int]bool{}
	for i, v := range a {
		seen[v] = true
		if i%3 != 0 {
			assert.Equal(t, a[i-1]+1, v, "shards stay whole")
		}
	}
	assert.Len(t, seen, 24)
	ds2, err := opt.NewDataset(24, 2, 0, 3)
	require.NoError(t, err)
	defer ds2.Close()
	require.NoError(t, ds2.Shuffle(seed, 18))
	b, err := ds2.Order()
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.ErrorIs(t, ds.Shuffle(seed, 4), ggml.ErrInvalid)
	assert.ErrorIs(t, ds.Shuffle(seed, 27), ggml.ErrInvalid)
}

// Fill writes each datapoint from a function; Data reads them back.
func TestDatasetFill(t *testing.T) {
	rng := testutil.NewRNG(t)
	ds, err := opt.NewDataset(6, 3, 2, 2)
	require.NoError(t, err)
	defer ds.Close()
	want := f32(randn(rng, 18, 1))
	require.NoError(t, ds.Fill(func(i int, data, label []float32) error {
		copy(data, want[i*3:])
		label[0], label[1] = float32(i), -float32(i)
		return nil
	}))
	got, err := ds.Data()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	labels, err := ds.Labels()
	require.NoError(t, err)
	assert.Equal(t, []float32{0, 0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5}, labels)
	stop := errors.New("stop")
	assert.ErrorIs(t, ds.Fill(func(int, []float32, []float32) error { return stop }), stop)
	assert.ErrorIs(t, ds.SetData(make([]float32, 17)), ggml.ErrShape)
}
