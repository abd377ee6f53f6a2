// Command gguf-dump prints what a GGUF file holds: its version, alignment
// and data offset, the key-value metadata (long arrays cut short) and the
// table of tensors, with their types, shapes, offsets and sizes. It reads
// only the header, of a regular file only (a FIFO or a device is refused,
// not waited on). Keys, string values and tensor names that hold control
// characters, quotes or bytes that are not UTF-8 are printed quoted, with
// those escaped as Go writes them ("\x1b[31m"), so a file cannot write
// escape sequences to the terminal.
//
//	gguf-dump [-n 8] [-kv=true] [-tensors=true] model.gguf
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/go-ggml/ggml/gguf"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gguf-dump:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New(`usage: gguf-dump [-n elements] [-kv=false] [-tensors=false] file.gguf

gguf-dump prints a GGUF file's header, its key-value metadata (arrays cut
short) and its tensor table (name, type, shape, offset, size). It reads the
header only, checked as go-ggml's gguf package reads it.

flags:
  -n int       print at most this many elements of an array (default 8)
  -kv          print the key-value metadata (default true; -kv=false: not)
  -tensors     print the tensor table (default true; -tensors=false: not)`)

// run dumps the file named in args to w.
func run(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("gguf-dump", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 8, "print at most this many elements of an array")
	kv := fs.Bool("kv", true, "print the key-value metadata")
	tensors := fs.Bool("tensors", true, "print the tensor table")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(w, errUsage)
		return nil
	} else if err != nil || fs.NArg() != 1 || *n < 0 {
		return errUsage
	}
	path := fs.Arg(0)
	f, err := open(path)
	if err != nil {
		return err
	}
	return dump(w, path, f, *n, *kv, *tensors)
}

// open reads the header of the regular file at path. It opens the file
// without blocking (a FIFO without a writer would block the open itself),
// and refuses anything but a regular file before reading a byte.
func open(path string) (*gguf.File, error) {
	osf, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer osf.Close()
	st, err := osf.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file (%s)", gguf.ErrInvalid, quote(path), st.Mode().Type())
	}
	f, err := gguf.Read(osf, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", quote(path), err)
	}
	return f, nil
}

// quote returns s as it is when it is UTF-8 made of printable characters
// other than the double quote and the backslash, else quoted with strconv.Quote: a key or tensor
// name that holds escape sequences, other control characters or bytes
// that are not UTF-8 does not reach the terminal raw.
func quote(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) || r == '"' || r == '\\' {
			return strconv.Quote(s)
		}
	}
	return s
}

func dump(w io.Writer, path string, f *gguf.File, n int, kv, tensors bool) error {
	var data uint64
	for _, ti := range f.Tensors() {
		data += ti.Size
	}
	fmt.Fprintf(w, "%s: GGUF version %d, %s\n", quote(path), f.Version(), human(f.Size()))
	fmt.Fprintf(w, "alignment %d, data at byte %d, %d tensors of %s, %d key-value pairs\n",
		f.Alignment(), f.DataOffset(), f.NumTensors(), human(data), f.NumKV())
	if kv {
		fmt.Fprintf(w, "\n* %d key-value pairs\n", f.NumKV())
		tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
		i := 0
		for key, v := range f.KV() {
			i++
			typ := v.Type().String()
			if v.Type() == gguf.TypeArray {
				typ = fmt.Sprintf("[%d]%s", v.Len(), arrayType(v))
			}
			fmt.Fprintf(tw, "%5d:\t%s\t%s = %s\n", i, typ, quote(key), v.Abbrev(n))
		}
		tw.Flush()
	}
	if tensors {
		fmt.Fprintf(w, "\n* %d tensors\n", f.NumTensors())
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "#\telements\ttype\tshape\toffset\tbytes\t name")
		for i, ti := range f.Tensors() {
			shape := make([]string, len(ti.Shape))
			for j, d := range ti.Shape {
				shape[j] = fmt.Sprint(d)
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%d\t %s\n", i+1, ti.Elements(), ti.Type, strings.Join(shape, " x "),
				f.DataOffset()+ti.Offset, ti.Size, quote(ti.Name))
		}
		tw.Flush()
	}
	return nil
}

// arrayType spells an array's element type, nested arrays included:
// "str", "arr" -> "[]u8" when all elements agree, else "arr".
func arrayType(v gguf.Value) string {
	if v.ElemType() != gguf.TypeArray || v.Len() == 0 {
		return v.ElemType().String()
	}
	first := "[]" + arrayType(v.Index(0))
	for i := 1; i < v.Len(); i++ {
		if "[]"+arrayType(v.Index(i)) != first {
			return "arr"
		}
	}
	return first
}

// human formats a size for people: "512 B", "3.2 MiB".
func human(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
