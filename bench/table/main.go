// Command table reads `go test -bench` output of the bench package and
// prints one row per figure: the median of each side over the repeated
// runs, the ratio Go/C as the median of the pair ratios (each Go sample
// over the C sample measured beside it) with their range, flagged NOISY
// when too wide to trust, and the figure's own unit (GFLOPS, GB/s,
// ns/node) where the benchmark reports one.
//
//	GOGGML_BENCH_PAIRS=5 go test -run '^$' -bench . ./bench | go run ./bench/table
//
// The k-th sample of one side is paired with the k-th of the other. A pair
// whose two samples were not measured one right after the other (among
// the figure's samples, in the order they were printed) flags the row
// UNPAIRED: its ratios compare samples taken apart, as go test's -count
// gives them (each side repeated in a row).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var line = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

type side struct {
	ns    []float64
	seq   []int // the position of each sample among its figure's samples
	extra map[string][]float64
}

// repeat is the suffix go test gives a sub-benchmark run again under the
// same name (go#01): the same side.
var repeat = regexp.MustCompile(`#\d+$`)

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// noisy is the spread of a row's pair ratios (largest less smallest,
// relative to their median) above which the row is flagged: its ratio is
// not to be trusted. From 5 pairs on, the largest and the smallest ratio
// are left out of the spread that is judged (the printed range keeps
// them): one pair hit by a burst of load moves the median little, and
// should not flag a row that more pairs would make steadier, not noisier.
const noisy = 0.15

// pairRatios divides each Go sample by the C sample measured beside it
// (the i-th of each side: bench runs the two sides of a figure back to
// back, see pair in bench_test.go) and returns the median of these ratios
// and their range, flagged NOISY when wider than noisy.
func pairRatios(gs, cs *side) (ratio, spread string) {
	g, c := gs.ns, cs.ns
	n := min(len(g), len(c))
	var r []float64
	adjacent := len(g) == len(c)
	for i := range n {
		if c[i] > 0 {
			r = append(r, g[i]/c[i])
		}
		if d := gs.seq[i] - cs.seq[i]; d != 1 && d != -1 {
			adjacent = false
		}
	}
	if len(r) == 0 {
		return "-", ""
	}
	m := median(r)
	sorted := append([]float64(nil), r...)
	sort.Float64s(sorted)
	spread = fmt.Sprintf("%.2f-%.2f", sorted[0], sorted[len(sorted)-1])
	judged := sorted
	if len(judged) >= 5 {
		judged = judged[1 : len(judged)-1]
	}
	switch {
	case !adjacent:
		spread += " UNPAIRED"
	case len(r) < 3:
		spread += " few"
	case (judged[len(judged)-1]-judged[0])/m > noisy:
		spread += " NOISY"
	}
	return fmt.Sprintf("%.3f", m), spread
}

func main() {
	sides := flag.String("sides", "go,c", "the two sides of each figure: the last element of the benchmark names, numerator first")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `usage: go test -run '^$' -bench . ./bench | go run ./bench/table [-sides A,B]

table reads go test -bench output on standard input (the bench package's,
the model bench, examples/mnist's epochs: make bench*) and prints one row per figure: each side's
median over the repeated runs, the ratio A/B as the median of the pair
ratios with their range, flagged NOISY when too wide to trust or UNPAIRED
when the pairs were not measured one right after the other.

flags:
`)
		flag.PrintDefaults()
	}
	flag.Parse()
	names := strings.SplitN(*sides, ",", 2)
	if len(names) != 2 {
		fmt.Fprintln(os.Stderr, "table: -sides wants two names, e.g. go,c")
		os.Exit(2)
	}
	num, den := names[0], names[1]
	rows := map[string]map[string]*side{} // figure -> side name -> values
	seen := map[string]int{}              // figure -> samples read
	var order []string
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		text := sc.Text()
		fmt.Fprintln(os.Stderr, text)
		m := line.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		name := m[1]
		i := strings.LastIndex(name, "/")
		if i < 0 {
			continue
		}
		fig, who := name[:i], repeat.ReplaceAllString(name[i+1:], "")
		if rows[fig] == nil {
			rows[fig] = map[string]*side{}
			order = append(order, fig)
		}
		s := rows[fig][who]
		if s == nil {
			s = &side{extra: map[string][]float64{}}
			rows[fig][who] = s
		}
		if who == num || who == den { // the order among the two sides compared
			s.seq = append(s.seq, seen[fig])
			seen[fig]++
		}
		f := strings.Fields(m[2])
		for j := 0; j+1 < len(f); j += 2 {
			v, err := strconv.ParseFloat(f[j], 64)
			if err != nil {
				continue
			}
			switch unit := f[j+1]; unit {
			case "ns/op":
				s.ns = append(s.ns, v)
			case "GFLOPS", "GB/s", "MB/s", "ns/node", "lanes", "ns-after-cancel", "tokens/s", "go-%":
				s.extra[unit] = append(s.extra[unit], v)
			}
		}
	}
	fmt.Printf("%-32s %14s %14s %8s  %-13s %s\n", "figure", num, den, num+"/"+den, "pairs", "unit (medians)")
	for _, fig := range order {
		g, c := rows[fig][num], rows[fig][den]
		col := func(s *side) string {
			if s == nil {
				return "-"
			}
			return fmt.Sprintf("%.4g", median(s.ns))
		}
		ratio, spread := "-", ""
		if g != nil && c != nil {
			ratio, spread = pairRatios(g, c)
		}
		var units []string
		for _, u := range []string{"GFLOPS", "GB/s", "MB/s", "ns/node", "lanes", "ns-after-cancel", "tokens/s", "go-%"} {
			var parts []string
			for _, p := range []struct {
				who string
				s   *side
			}{{num, g}, {den, c}} {
				if p.s != nil && len(p.s.extra[u]) > 0 {
					parts = append(parts, fmt.Sprintf("%s %.4g", p.who, median(p.s.extra[u])))
				}
			}
			if len(parts) > 0 {
				units = append(units, u+": "+strings.Join(parts, ", "))
			}
		}
		fmt.Printf("%-32s %14s %14s %8s  %-13s ns/op; %s\n", fig, col(g), col(c), ratio, spread, strings.Join(units, "; "))
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(1)
	}
}
