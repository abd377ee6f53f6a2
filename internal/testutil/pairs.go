package testutil

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// BenchPairs returns the number of pairs a benchmark of two sides (go-ggml
// and the same work from C, or from another program) runs:
// GOGGML_BENCH_PAIRS, 1 when unset. It fails tb on a bad value, and under go
// test's -count above 1, which repeats each side in a row (go, go, go, c,
// c, c) and so makes no pairs: bench/table divides each Go sample by the C
// sample taken beside it.
func BenchPairs(tb testing.TB) int {
	if f := flag.Lookup("test.count"); f != nil && f.Value.String() != "1" {
		tb.Fatalf("-count %s repeats each side in a row, which makes no pairs; set GOGGML_BENCH_PAIRS=%s instead", f.Value, f.Value)
	}
	v := os.Getenv("GOGGML_BENCH_PAIRS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		tb.Fatalf("GOGGML_BENCH_PAIRS=%q: want a count of pairs, 1 or more", v)
	}
	return n
}

// RunPair runs pair i of a figure: the sub-benchmarks name/go and name/c
// (go and c when name is ""), one right after the other, the C side first
// when i is odd, so that neither side always gets the warm caches or the
// boosted clock. A nil side is left out. Run again, the sub-benchmarks
// are named go#01, c#01 and so on; bench/table reads them as the same
// sides.
func RunPair(b *testing.B, i int, name string, goSide, cSide func(*testing.B)) {
	prefix := ""
	if name != "" {
		prefix = name + "/"
	}
	first, second, fn, sn := goSide, cSide, "go", "c"
	if i%2 == 1 {
		first, second, fn, sn = cSide, goSide, "c", "go"
	}
	if first != nil {
		b.Run(prefix+fn, first)
	}
	if second != nil {
		b.Run(prefix+sn, second)
	}
}
