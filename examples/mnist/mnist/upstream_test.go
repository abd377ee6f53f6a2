package mnist_test

import (
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/examples/mnist/mnist"
	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
)

// upstreamMNIST returns the folder of upstream's mnist-train and
// mnist-eval (GOGGML_UPSTREAM_MNIST; make test-upstream-mnist builds them
// and sets it), or skips the test: fails it with
// GOGGML_REQUIRE_UPSTREAM_MNIST=1.
func upstreamMNIST(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GOGGML_UPSTREAM_MNIST")
	why := ""
	switch {
	case dir == "":
		why = "GOGGML_UPSTREAM_MNIST is not set (make test-upstream-mnist builds upstream's mnist programs and sets it)"
	default:
		for _, p := range []string{"mnist-train", "mnist-eval"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
				why = "no upstream " + p + ": " + err.Error()
			}
		}
	}
	if why != "" {
		if os.Getenv("GOGGML_REQUIRE_UPSTREAM_MNIST") == "1" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return dir
}

// rawFiles gunzips GoMNIST's files into a folder of the test: upstream's
// programs read the uncompressed IDX files.
func rawFiles(t testing.TB) string {
	t.Helper()
	return rawFilesIn(t, t.TempDir())
}

// rawFilesIn gunzips them into dst.
func rawFilesIn(t testing.TB, dst string) string {
	t.Helper()
	src, err := mnist.DataDir()
	require.NoError(t, err)
	for _, name := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		in, err := os.Open(filepath.Join(src, name+".gz"))
		require.NoError(t, err)
		z, err := gzip.NewReader(in)
		require.NoError(t, err)
		out, err := os.Create(filepath.Join(dst, name))
		require.NoError(t, err)
		_, err = io.Copy(out, z)
		require.NoError(t, err)
		require.NoError(t, out.Close())
		require.NoError(t, in.Close())
	}
	return dst
}

var (
	upstreamAcc  = regexp.MustCompile(`test_acc=([0-9.]+)\+-([0-9.]+)%`)
	upstreamLoss = regexp.MustCompile(`test_loss=([0-9.]+)\+-([0-9.]+)`)
)

// upstreamEval runs upstream's mnist-eval on model and returns the test
// accuracy and its uncertainty (in %) and the loss it prints.
func upstreamEval(t *testing.T, bin, raw, model string) (acc, accUnc, loss float64) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "mnist-eval"), model,
		filepath.Join(raw, "t10k-images-idx3-ubyte"), filepath.Join(raw, "t10k-labels-idx1-ubyte"), "CPU")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	a := upstreamAcc.FindSubmatch(out)
	l := upstreamLoss.FindSubmatch(out)
	require.NotNil(t, a, "%s", out)
	require.NotNil(t, l, "%s", out)
	acc, err = strconv.ParseFloat(string(a[1]), 64)
	require.NoError(t, err)
	accUnc, err = strconv.ParseFloat(string(a[2]), 64)
	require.NoError(t, err)
	loss, err = strconv.ParseFloat(string(l[1]), 64)
	require.NoError(t, err)
	return acc, accUnc, loss
}

// A model go-ggml trained and wrote evaluates in upstream's mnist-eval to
// the accuracy and loss go-ggml's evaluation reports (to the digits
// mnist-eval prints).
func TestUpstreamEvalOfGoModel(t *testing.T) {
	bin := upstreamMNIST(t)
	raw := rawFiles(t)
	fc := fcEpoch(t)
	s, m, tds := fc.s, fc.m, fc.tds
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mnist-fc-f32.gguf")
	require.NoError(t, m.Save(path))
	st, _, err := mnist.Eval(ctx, s, m, tds)
	require.NoError(t, err)
	acc, _, loss := upstreamEval(t, bin, raw, path)
	t.Logf("go-ggml: %.2f%%, loss %.6f; upstream's mnist-eval: %.2f%%, loss %.6f", 100*st.Accuracy, st.Loss, acc, loss)
	assert.InDelta(t, 100*st.Accuracy, acc, 0.005+1e-9)
	assert.InDelta(t, st.Loss, loss, 1e-5)
}

// upstreamFC is one run of upstream's mnist-train on the FC network (its
// 30 epochs), shared by the tests below: its std::random_device, which
// seeds its initial weights, gives seed (testdata/fixed_seed.c, preloaded),
// and normalInit is the program that draws the same initial weights from
// the seed (testdata/normal_init.cpp).
var upstreamFC struct {
	once       sync.Once
	dir        string // removed by TestMain
	raw        string // the uncompressed MNIST files
	model      string // the model it wrote
	normalInit string
	seed       uint32
	err        error
}

// trainUpstreamFC runs upstream's mnist-train once per process, with the
// seed drawn from the test's replayable RNG, and builds normal_init.
func trainUpstreamFC(t *testing.T) (bin string) {
	t.Helper()
	bin = upstreamMNIST(t)
	u := &upstreamFC
	u.once.Do(func() {
		u.err = fmt.Errorf("the first test to run mnist-train (%s) stopped before it finished", t.Name())
		rng := testutil.NewRNG(t)
		u.seed = rng.Uint32()
		var err error
		if u.dir, err = os.MkdirTemp("", "mnist-upstream-"); err != nil {
			u.err = err
			return
		}
		u.raw = rawFilesIn(t, u.dir)
		shim := filepath.Join(u.dir, "fixed_seed.so")
		u.normalInit = filepath.Join(u.dir, "normal_init")
		// normal_init as upstream's example is built (CMake's Release
		// flags, no -march): the same libstdc++ templates, the same floats.
		u.err = nil
		for _, c := range [][]string{
			{"gcc", "-shared", "-fPIC", "-O2", "-o", shim, "testdata/fixed_seed.c"},
			{"g++", "-O3", "-DNDEBUG", "-std=c++17", "-o", u.normalInit, "testdata/normal_init.cpp"},
		} {
			if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				u.err = fmt.Errorf("%v: %w\n%s", c, err, out)
				return
			}
		}
		u.model = filepath.Join(u.dir, "mnist-fc-f32.gguf")
		cmd := exec.Command(filepath.Join(bin, "mnist-train"), mnist.ArchFC, u.model,
			filepath.Join(u.raw, "train-images-idx3-ubyte"), filepath.Join(u.raw, "train-labels-idx1-ubyte"), "CPU")
		cmd.Env = append(os.Environ(), "LD_PRELOAD="+shim, "GOGGML_MNIST_SEED="+strconv.FormatUint(uint64(u.seed), 10))
		out, err := cmd.CombinedOutput()
		if err != nil {
			u.err = fmt.Errorf("mnist-train: %w\n%s", err, out)
			return
		}
		if want := fmt.Sprintf("fixed_seed: std::random_device gives %d\n", u.seed); !strings.Contains(string(out), want) {
			u.err = fmt.Errorf("mnist-train did not take its seed from fixed_seed.so (no %q in its output):\n%s", want, out)
		}
	})
	require.NoError(t, u.err)
	return bin
}

// A model upstream's mnist-train wrote (its 30 FC epochs) evaluates in
// go-ggml as in upstream's mnist-eval.
func TestUpstreamTrainedModelInGo(t *testing.T) {
	bin := trainUpstreamFC(t)
	u := &upstreamFC
	_, test := sets(t)
	cpu, s := setup(t)
	acc, _, loss := upstreamEval(t, bin, u.raw, u.model)

	m, err := mnist.Load(u.model, mnist.BatchPhysical, cpu)
	require.NoError(t, err)
	defer m.Close()
	tds, err := test.Dataset(mnist.BatchPhysical)
	require.NoError(t, err)
	defer tds.Close()
	st, _, err := mnist.Eval(context.Background(), s, m, tds)
	require.NoError(t, err)
	t.Logf("upstream's mnist-eval: %.2f%%, loss %.6f; go-ggml: %.2f±%.2f%%, loss %.6f", acc, loss, 100*st.Accuracy, 100*st.AccuracyUnc, st.Loss)
	assert.InDelta(t, acc, 100*st.Accuracy, 0.005+1e-9)
	assert.InDelta(t, loss, st.Loss, 1e-5)
	assert.False(t, math.IsNaN(st.AccuracyUnc))
}

// From the same initial weights, go-ggml's training of the FC network (30
// epochs, ggml's example's settings) reaches the test accuracy of
// upstream's mnist-train within their uncertainties (three standard
// deviations of the difference; the two shuffle the data differently, so
// they do not take the same steps). The initial weights are those
// upstream drew: normal_init draws them from the seed upstream's
// random_device was given, with the same libstdc++ code (checked once by
// hand: the tensors mnist-train set, read with gdb at each
// ggml_backend_tensor_set, were byte for byte normal_init's).
func TestUpstreamSameInitialWeights(t *testing.T) {
	if testing.Short() {
		t.Skip("30 epochs of the FC network")
	}
	bin := trainUpstreamFC(t)
	u := &upstreamFC
	upAcc, upUnc, _ := upstreamEval(t, bin, u.raw, u.model)

	rng := testutil.NewRNG(t)
	train, test := sets(t)
	cpu, s := setup(t)
	m, err := mnist.NewRandom(mnist.ArchFC, mnist.BatchPhysical, rng, cpu)
	require.NoError(t, err)
	defer m.Close()
	var n int64
	for _, w := range m.Weights() {
		n += w.Elements()
	}
	raw, err := exec.Command(u.normalInit, strconv.FormatUint(uint64(u.seed), 10), strconv.FormatInt(n, 10)).Output()
	require.NoError(t, err)
	require.Len(t, raw, int(4*n))
	at := 0
	for _, w := range m.Weights() {
		v := make([]float32, w.Elements())
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[at:]))
			at += 4
		}
		require.NoError(t, ggml.SetData(w, v))
	}

	ds, err := train.Dataset(mnist.TrainShard)
	require.NoError(t, err)
	defer ds.Close()
	tds, err := test.Dataset(mnist.BatchPhysical)
	require.NoError(t, err)
	defer tds.Close()
	ctx := context.Background()
	_, err = mnist.Train(ctx, s, m, ds, mnist.Epochs, mnist.ValSplit, rng.Uint64(), false)
	require.NoError(t, err)
	st, _, err := mnist.Eval(ctx, s, m, tds)
	require.NoError(t, err)
	goAcc, goUnc := 100*st.Accuracy, 100*st.AccuracyUnc
	t.Logf("seed %d: upstream's mnist-train %.2f±%.2f%%, go-ggml %.2f±%.2f%%", u.seed, upAcc, upUnc, goAcc, goUnc)
	assert.InDelta(t, upAcc, goAcc, 3*math.Hypot(upUnc, goUnc))
}
