package mnist_test

import (
	"compress/gzip"
	"context"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/examples/mnist/mnist"
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
	src, err := mnist.DataDir()
	require.NoError(t, err)
	dst := t.TempDir()
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
// accuracy (in %) and loss it prints.
func upstreamEval(t *testing.T, bin, raw, model string) (acc, loss float64) {
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
	loss, err = strconv.ParseFloat(string(l[1]), 64)
	require.NoError(t, err)
	return acc, loss
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
	acc, loss := upstreamEval(t, bin, raw, path)
	t.Logf("go-ggml: %.2f%%, loss %.6f; upstream's mnist-eval: %.2f%%, loss %.6f", 100*st.Accuracy, st.Loss, acc, loss)
	assert.InDelta(t, 100*st.Accuracy, acc, 0.005+1e-9)
	assert.InDelta(t, st.Loss, loss, 1e-5)
}

// A model upstream's mnist-train wrote (its 30 FC epochs) evaluates in
// go-ggml as in upstream's mnist-eval.
func TestUpstreamTrainedModelInGo(t *testing.T) {
	bin := upstreamMNIST(t)
	raw := rawFiles(t)
	_, test := sets(t)
	cpu, s := setup(t)
	path := filepath.Join(t.TempDir(), "mnist-fc-f32.gguf")
	cmd := exec.Command(filepath.Join(bin, "mnist-train"), mnist.ArchFC, path,
		filepath.Join(raw, "train-images-idx3-ubyte"), filepath.Join(raw, "train-labels-idx1-ubyte"), "CPU")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	acc, loss := upstreamEval(t, bin, raw, path)

	m, err := mnist.Load(path, mnist.BatchPhysical, cpu)
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
