// Command table reads `go test -bench` output of the bench package and
// prints one row per figure: the median of each side over the repeated
// runs, the ratio Go/C, and the figure's own unit (GFLOPS, GB/s, ns/node)
// where the benchmark reports one.
//
//	go test -run '^$' -bench . -count 5 ./bench | go run ./bench/table
package main

import (
	"bufio"
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
	extra map[string][]float64
}

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

func main() {
	rows := map[string]map[string]*side{} // figure -> "go"/"c" -> values
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
		fig, who := name[:i], name[i+1:]
		if rows[fig] == nil {
			rows[fig] = map[string]*side{}
			order = append(order, fig)
		}
		s := rows[fig][who]
		if s == nil {
			s = &side{extra: map[string][]float64{}}
			rows[fig][who] = s
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
			case "GFLOPS", "GB/s", "ns/node", "lanes", "ns-after-cancel":
				s.extra[unit] = append(s.extra[unit], v)
			}
		}
	}
	fmt.Printf("%-32s %14s %14s %8s  %s\n", "figure", "Go", "C", "Go/C", "unit (medians)")
	for _, fig := range order {
		g, c := rows[fig]["go"], rows[fig]["c"]
		col := func(s *side) string {
			if s == nil {
				return "-"
			}
			return fmt.Sprintf("%.4g", median(s.ns))
		}
		ratio := "-"
		if g != nil && c != nil && median(c.ns) > 0 {
			ratio = fmt.Sprintf("%.3f", median(g.ns)/median(c.ns))
		}
		var units []string
		for _, u := range []string{"GFLOPS", "GB/s", "ns/node", "lanes", "ns-after-cancel"} {
			var parts []string
			for _, p := range []struct {
				who string
				s   *side
			}{{"go", g}, {"c", c}} {
				if p.s != nil && len(p.s.extra[u]) > 0 {
					parts = append(parts, fmt.Sprintf("%s %.4g", p.who, median(p.s.extra[u])))
				}
			}
			if len(parts) > 0 {
				units = append(units, u+": "+strings.Join(parts, ", "))
			}
		}
		fmt.Printf("%-32s %14s %14s %8s  ns/op; %s\n", fig, col(g), col(c), ratio, strings.Join(units, "; "))
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(1)
	}
}
