package mnist_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/backend/backendtest"
	"github.com/go-ggml/ggml/examples/mnist/mnist"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/opt"
	"github.com/go-ggml/ggml/sched"
)

func TestMain(m *testing.M) {
	code := testutil.RunLeakChecked(m)
	if upstreamFC.dir != "" {
		os.RemoveAll(upstreamFC.dir)
	}
	os.Exit(code)
}

var data struct {
	once        sync.Once
	train, test *mnist.Set
	err         error
}

// sets reads GoMNIST's files once for all tests.
func sets(t testing.TB) (train, test *mnist.Set) {
	t.Helper()
	data.once.Do(func() {
		dir, err := mnist.DataDir()
		if err != nil {
			data.err = err
			return
		}
		data.train, data.test, data.err = mnist.LoadData(dir)
	})
	require.NoError(t, data.err)
	return data.train, data.test
}

func setup(t testing.TB) (*backend.Backend, *sched.Scheduler) {
	t.Helper()
	cpu := backendtest.CPU(t)
	s, err := mnist.NewScheduler(cpu)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return cpu, s
}

// The files are MNIST: 60000 training and 10000 test images of 28×28
// values in [0, 1], digits 0 to 9.
func TestData(t *testing.T) {
	train, test := sets(t)
	require.Equal(t, mnist.NTrain, train.Len())
	require.Equal(t, mnist.NTest, test.Len())
	for _, s := range []*mnist.Set{train, test} {
		assert.Len(t, s.Images, s.Len()*mnist.NInput)
		count := map[uint8]int{}
		for _, l := range s.Labels {
			count[l]++
		}
		assert.Len(t, count, 10)
		lo, hi := float32(1), float32(0)
		for _, v := range s.Images {
			lo, hi = min(lo, v), max(hi, v)
		}
		assert.Equal(t, float32(0), lo)
		assert.Equal(t, float32(1), hi)
	}
}

// trainedFC is an FC network trained for one epoch (fcEpoch) and what it
// was trained and is tested with.
type trainedFC struct {
	cpu  *backend.Backend
	s    *sched.Scheduler
	m    *mnist.Model
	test *mnist.Set
	tds  *opt.Dataset // the test set's
	res  opt.FitResult
}

// fcEpoch trains a fresh FC network (initial weights and shuffles from the
// test's seed) for one epoch on the training set; everything it returns is
// closed when the test ends.
func fcEpoch(t *testing.T) trainedFC {
	t.Helper()
	rng := testutil.NewRNG(t)
	train, test := sets(t)
	cpu, s := setup(t)
	ds, err := train.Dataset(mnist.TrainShard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ds.Close()) })
	tds, err := test.Dataset(mnist.BatchPhysical)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tds.Close()) })
	m, err := mnist.NewRandom(mnist.ArchFC, mnist.BatchPhysical, rng, cpu)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	res, err := mnist.Train(context.Background(), s, m, ds, 1, mnist.ValSplit, rng.Uint64(), false)
	require.NoError(t, err)
	return trainedFC{cpu: cpu, s: s, m: m, test: test, tds: tds, res: res}
}

// One epoch of the FC network reaches a clear accuracy on the test set,
// and the model written as GGUF and read back predicts the same digits
// with the same loss.
func TestTrainFCAndRoundTrip(t *testing.T) {
	fc := fcEpoch(t)
	cpu, s, m, test, tds, res := fc.cpu, fc.s, fc.m, fc.test, fc.tds, fc.res
	ctx := context.Background()
	assert.Equal(t, int64(mnist.NTrain*95/100), res.Train.N)
	assert.Equal(t, int64(mnist.NTrain*5/100), res.Val.N)
	t.Logf("validation: loss %.4f, accuracy %.4f", res.Val.Loss, res.Val.Accuracy)

	st, pred, err := mnist.Eval(ctx, s, m, tds)
	require.NoError(t, err)
	t.Logf("test: loss %.4f±%.4f, accuracy %.4f±%.4f", st.Loss, st.LossUnc, st.Accuracy, st.AccuracyUnc)
	assert.Greater(t, st.Accuracy, 0.85)
	require.Len(t, pred, mnist.NTest)
	right := 0
	for i, p := range pred {
		if int(p) == int(test.Labels[i]) {
			right++
		}
	}
	assert.InDelta(t, float64(right)/mnist.NTest, st.Accuracy, 1e-12)

	checkRoundTrip(t, cpu, s, m, tds, st, pred)
}

// The CNN trains: on a part of the training set (10000 images, 5 epochs of
// 20 optimizer steps of 500 images), with a larger learning rate than
// ggml's default (which needs the whole set and many epochs from the
// example's small initial weights) take its loss well below chance (ln 10)
// and its accuracy far above it; the GGUF round trip predicts the same.
func TestTrainCNN(t *testing.T) {
	if testing.Short() {
		t.Skip("the CNN takes seconds per epoch even on a part of the data")
	}
	rng := testutil.NewRNG(t)
	train, test := sets(t)
	cpu, s := setup(t)
	ds, err := train.Head(10000).Dataset(mnist.TrainShard)
	require.NoError(t, err)
	defer ds.Close()
	tds, err := test.Head(1000).Dataset(mnist.BatchPhysical)
	require.NoError(t, err)
	defer tds.Close()
	m, err := mnist.NewRandom(mnist.ArchCNN, mnist.BatchPhysical, rng, cpu)
	require.NoError(t, err)
	defer m.Close()
	ctx := context.Background()
	o, err := opt.New(s, opt.Params{Inputs: m.Images, Outputs: m.Logits, Loss: opt.LossCrossEntropy,
		StepParams: func(opt.Step) opt.StepParams {
			p := opt.DefaultStepParams()
			// 100 steps need more than upstream's 0.001. At 0.005 a
			// seed's first steps overshot and it ended at loss 1.60
			// (2.06 with the system provider; CI, seed
			// 1795827793120428213), and 0.01 diverged for others. At
			// 0.002, that seed and seven more end at 0.35–0.43
			// (accuracy 0.87–0.90), against the bound's 1.15.
			p.AdamW.Alpha = 0.002
			return p
		}})
	require.NoError(t, err)
	_, err = o.Fit(ctx, ds, opt.FitParams{Epochs: 5, Seed: rng.Uint64()})
	require.NoError(t, err)
	require.NoError(t, o.Close())
	st, pred, err := mnist.Eval(ctx, s, m, tds)
	require.NoError(t, err)
	t.Logf("test: loss %.4f±%.4f, accuracy %.4f±%.4f", st.Loss, st.LossUnc, st.Accuracy, st.AccuracyUnc)
	assert.Less(t, st.Loss, math.Log(10)/2)
	assert.Greater(t, st.Accuracy, 0.5)

	checkRoundTrip(t, cpu, s, m, tds, st, pred)
}

// checkRoundTrip writes m as GGUF, reads it back, and checks that the copy
// evaluates on tds to the same predictions, loss and accuracy as m did
// (st, pred).
func checkRoundTrip(t *testing.T, cpu *backend.Backend, s *sched.Scheduler, m *mnist.Model, tds *opt.Dataset, st opt.Stats, pred []int32) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mnist-"+m.Arch+"-f32.gguf")
	require.NoError(t, m.Save(path))
	back, err := mnist.Load(path, mnist.BatchPhysical, cpu)
	require.NoError(t, err)
	defer back.Close()
	assert.Equal(t, m.Arch, back.Arch)
	st2, pred2, err := mnist.Eval(context.Background(), s, back, tds)
	require.NoError(t, err)
	assert.Equal(t, pred, pred2)
	assert.Equal(t, st.Loss, st2.Loss)
	assert.Equal(t, st.Accuracy, st2.Accuracy)
}
