package mnist_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/examples/mnist/mnist"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/sched"
)

// BenchmarkMNIST times go-ggml's training against upstream's mnist-train
// on the same data, threads (the count mnist-train picks, min(cores,
// (cores+4)/2), on both sides) and batch sizes, in interleaved pairs
// (GOGGML_BENCH_PAIRS, the side that goes first alternating): a sample is
// one whole training of mnist-train's fixed 30 epochs, go-ggml's side the
// same Fit, with the model's initialization and save, but not the reading
// of the files, which the C side does (a fraction of a second). The
// s/epoch metric is the sample over 30. GOGGML_BENCH_MNIST_ARCH picks the
// network: fc (the default, about 35 s a side on 2 cores) or cnn (about 14
// minutes a side). GOGGML_BENCH_MNIST_EPOCHS=1 times one epoch instead (the
// only other value): go-ggml's side one epoch's Fit (the model made
// outside the timer), upstream's the time between mnist-train's lines
// "epoch 0001/0030" and "epoch 0002/0030" (ggml_opt_fit prints each as
// its epoch starts), after which the process is killed. Needs
// GOGGML_UPSTREAM_MNIST (build/upstream-mnist.sh); run with -benchtime 1x:
//
//	GOGGML_UPSTREAM_MNIST=$(bash build/upstream-mnist.sh) GOGGML_BENCH_PAIRS=3 \
//	  go test -run '^$' -bench MNIST -benchtime 1x -timeout 2h ./examples/mnist/mnist | go run ./bench/table
func BenchmarkMNIST(b *testing.B) {
	bin := os.Getenv("GOGGML_UPSTREAM_MNIST")
	if bin == "" {
		b.Skip("GOGGML_UPSTREAM_MNIST is not set (build/upstream-mnist.sh prints the folder of upstream's programs)")
	}
	arch := map[string]string{"": mnist.ArchFC, "fc": mnist.ArchFC, "cnn": mnist.ArchCNN}[os.Getenv("GOGGML_BENCH_MNIST_ARCH")]
	require.NotEmpty(b, arch, "GOGGML_BENCH_MNIST_ARCH is fc or cnn")
	pairs := testutil.BenchPairs(b)
	raw := rawFiles(b)
	train, _ := sets(b)
	cpu, s := setup(b)
	threads := min(runtime.NumCPU(), (runtime.NumCPU()+4)/2) // mnist-train's count
	require.NoError(b, cpu.SetThreads(threads))
	out := filepath.Join(b.TempDir(), "model.gguf")
	const epochs = mnist.Epochs
	if os.Getenv("GOGGML_BENCH_MNIST_EPOCHS") == "1" {
		oneEpoch(b, arch, bin, raw, train, cpu, s, pairs)
		return
	}
	goSide := func(b *testing.B) {
		for range b.N {
			ds, err := train.Dataset(mnist.TrainShard)
			require.NoError(b, err)
			m, err := mnist.NewRandom(arch, mnist.BatchPhysical, testutil.NewRNG(b), cpu)
			require.NoError(b, err)
			_, err = mnist.Train(context.Background(), s, m, ds, epochs, mnist.ValSplit, 1, false)
			require.NoError(b, err)
			require.NoError(b, m.Save(out))
			require.NoError(b, m.Close())
			require.NoError(b, ds.Close())
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/epochs, "s/epoch")
	}
	cSide := func(b *testing.B) {
		for range b.N {
			cmd := exec.Command(filepath.Join(bin, "mnist-train"), arch, out,
				filepath.Join(raw, "train-images-idx3-ubyte"), filepath.Join(raw, "train-labels-idx1-ubyte"), "CPU")
			o, err := cmd.CombinedOutput()
			require.NoError(b, err, "%s", o)
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/epochs, "s/epoch")
	}
	b.Logf("%s, %d threads a side", arch, threads)
	runPairs(b, arch[len("mnist-"):]+"-"+strconv.Itoa(epochs)+"epochs", pairs, goSide, cSide)
}

// oneEpoch is BenchmarkMNIST's pairs of single epochs
// (GOGGML_BENCH_MNIST_EPOCHS=1).
func oneEpoch(b *testing.B, arch, bin, raw string, train *mnist.Set, cpu *backend.Backend, s *sched.Scheduler, pairs int) {
	goSide := func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			ds, err := train.Dataset(mnist.TrainShard)
			require.NoError(b, err)
			m, err := mnist.NewRandom(arch, mnist.BatchPhysical, testutil.NewRNG(b), cpu)
			require.NoError(b, err)
			b.StartTimer()
			_, err = mnist.Train(context.Background(), s, m, ds, 1, mnist.ValSplit, 1, false)
			b.StopTimer()
			require.NoError(b, err)
			require.NoError(b, m.Close())
			require.NoError(b, ds.Close())
			b.StartTimer()
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/epoch")
	}
	cSide := func(b *testing.B) {
		var total time.Duration
		for range b.N {
			total += upstreamEpoch(b, bin, arch, raw)
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
		b.ReportMetric(total.Seconds()/float64(b.N), "s/epoch")
	}
	runPairs(b, arch[len("mnist-"):]+"-1epoch", pairs, goSide, cSide)
}

// runPairs runs the two sides as pairs of sub-benchmarks name/go and
// name/c, the side that goes first alternating.
func runPairs(b *testing.B, name string, pairs int, goSide, cSide func(*testing.B)) {
	for i := range pairs {
		testutil.RunPair(b, i, name, goSide, cSide)
	}
}

// upstreamEpoch runs mnist-train and returns the time from the start of
// its first epoch to the start of its second, then kills it.
func upstreamEpoch(b *testing.B, bin, arch, raw string) time.Duration {
	cmd := exec.Command(filepath.Join(bin, "mnist-train"), arch, filepath.Join(b.TempDir(), "model.gguf"),
		filepath.Join(raw, "train-images-idx3-ubyte"), filepath.Join(raw, "train-labels-idx1-ubyte"), "CPU")
	stderr, err := cmd.StderrPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var start time.Time
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "epoch 0001/"):
			start = time.Now()
		case strings.Contains(line, "epoch 0002/"):
			require.False(b, start.IsZero(), "mnist-train printed its second epoch before its first")
			return time.Since(start)
		}
	}
	b.Fatalf("mnist-train ended before its second epoch (%v)", sc.Err())
	return 0
}
