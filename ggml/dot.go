package ggml

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DotOptions configure Graph.WriteDot.
type DotOptions struct {
	// Placement, if set, names the backend that computes node t (a
	// scheduler's sched.Scheduler.TensorBackend, say), "" where none: each
	// backend gets a colour of its own, and edges between nodes on
	// different backends (where a scheduler splits the graph and copies
	// tensors) are drawn bold and red.
	Placement func(t *Tensor) string
}

// WriteDot writes the graph in Graphviz's dot language to w: one box per
// node with its name, op, type and shape, one ellipse per leaf, an edge from
// each source to the node that reads it; parameters are drawn with a double
// border, the loss bold, and, after BuildBackward, each parameter's gradient
// is joined to it by a dotted edge. Render it with `dot -Tsvg`. It is
// written by go-ggml, in the spirit of ggml_graph_dump_dot (which writes to
// a file path only).
//
// Any tensor name or placement string gives a valid dot file: one that
// holds control characters (NUL, newlines, escape sequences) or bytes
// that are not UTF-8 is shown quoted, with those escaped as Go writes them
// ("a\x00b"), and dot's own special characters (quotes, backslashes, '&'
// of its entities) are escaped.
func (g *Graph) WriteDot(w io.Writer, opts *DotOptions) error {
	if err := g.usable(); err != nil {
		return err
	}
	if opts == nil {
		opts = &DotOptions{}
	}
	bw := bufio.NewWriter(w)
	ids := map[*Tensor]string{}
	id := func(t *Tensor) string {
		if s, ok := ids[t]; ok {
			return s
		}
		s := fmt.Sprintf("t%d", len(ids))
		ids[t] = s
		return s
	}
	place := map[*Tensor]string{}
	colours := map[string]string{}
	palette := []string{"lightblue", "palegreen", "lightsalmon", "plum", "khaki", "lightgray"}
	colour := func(b string) string {
		if b == "" {
			return "white"
		}
		c, ok := colours[b]
		if !ok {
			c = palette[len(colours)%len(palette)]
			colours[b] = c
		}
		return c
	}
	fmt.Fprintf(bw, "digraph G {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n")
	for _, t := range g.leafs {
		fmt.Fprintf(bw, "  %s [shape=ellipse, label=%s];\n", id(t), dotQuote(dotLabel(t, "")))
	}
	for _, t := range g.nodes {
		b := ""
		if opts.Placement != nil {
			b = opts.Placement(t)
			place[t] = b
		}
		attrs := []string{"shape=box", "style=filled", "fillcolor=" + colour(b)}
		if t.IsParam() {
			attrs = append(attrs, "peripheries=2")
		}
		if t.IsLoss() {
			attrs = append(attrs, "penwidth=3")
		}
		fmt.Fprintf(bw, "  %s [%s, label=%s];\n", id(t), strings.Join(attrs, ", "), dotQuote(dotLabel(t, b)))
	}
	for _, t := range g.nodes {
		for i, s := range t.Sources() {
			if s == nil {
				continue
			}
			if _, ok := ids[s]; !ok {
				// A source outside the graph's lists (a view's source
				// kept by a partial graph): drawn as a leaf.
				fmt.Fprintf(bw, "  %s [shape=ellipse, style=dashed, label=%s];\n", id(s), dotQuote(dotLabel(s, "")))
			}
			style := ""
			if opts.Placement != nil && place[t] != "" && place[s] != "" && place[s] != place[t] {
				style = ", color=red, penwidth=2"
			}
			fmt.Fprintf(bw, "  %s -> %s [label=\"%d\"%s];\n", id(s), id(t), i, style)
		}
	}
	if g.backward {
		for _, t := range g.nodes {
			if gr := g.Grad(t); gr != nil && t.IsParam() {
				fmt.Fprintf(bw, "  %s -> %s [style=dotted, arrowhead=none, label=\"grad\"];\n", id(t), id(gr))
			}
		}
	}
	if len(colours) > 0 {
		fmt.Fprintf(bw, "  subgraph cluster_legend { label=\"backends\";\n")
		names := make([]string, 0, len(colours))
		for b := range colours {
			names = append(names, b)
		}
		sort.Strings(names)
		for i, b := range names {
			fmt.Fprintf(bw, "    legend%d [shape=box, style=filled, fillcolor=%s, label=%s];\n", i, colours[b], dotQuote(printable(b)))
		}
		fmt.Fprintf(bw, "  }\n")
	}
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}

// dotLabel is a tensor's label: name, op, type and shape (and backend).
func dotLabel(t *Tensor, backend string) string {
	name := printable(t.Name())
	if name == "" {
		name = "(unnamed)"
	}
	op := strings.ToLower(t.Op())
	l := fmt.Sprintf("%s\n%s %v %v", name, op, t.Type(), t.Shape())
	if backend != "" {
		l += "\non " + printable(backend)
	}
	return l
}

// printable returns s as it is when it is UTF-8 made of printable
// characters, else Go's quoted form of it (strconv.Quote): no control
// character or invalid byte of a user's string reaches dot, which rejects
// a NUL and passes the others on into SVG that is no valid XML.
func printable(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// dotEscaper escapes text for a dot quoted string: its quote and escape
// character, '&' (dot reads "&#27;" and the like as the characters they
// name), and the line breaks of labels.
var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "&", "&amp;", "\n", `\n`)

// dotQuote quotes s as a dot string. Its line breaks are the label's
// own; a user's string goes through printable first.
func dotQuote(s string) string {
	return `"` + dotEscaper.Replace(s) + `"`
}
