package ggml_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
)

// TestWriteDot: the dot text of a graph with a backward pass and a
// placement renders with Graphviz (CI installs it), and the picture names
// every node and leaf; parameters, the loss, gradients and the edges
// between backends are marked.
func TestWriteDot(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 64, NoAlloc: true, Graph: true, Grads: true, GraphSize: 64})
	require.NoError(t, err)
	defer c.Close()
	w := c.NewTensor(ggml.TypeF32, 4, 3).SetName("w").SetParam()
	x := c.NewTensor(ggml.TypeF32, 4, 2).SetName("x")
	h := c.MulMat(w, x).SetName("h \"quoted\"")
	loss := c.Sum(c.Sqr(h)).SetName("loss").SetLoss()
	g, err := c.NewGradGraph(64)
	require.NoError(t, err)
	require.NoError(t, g.Expand(loss))
	require.NoError(t, g.BuildBackward(c, false))

	var buf bytes.Buffer
	place := func(t *ggml.Tensor) string {
		if t.Op() == "MUL_MAT" {
			return "GPU0"
		}
		return "CPU"
	}
	require.NoError(t, g.WriteDot(&buf, &ggml.DotOptions{Placement: place}))
	src := buf.String()
	assert.Contains(t, src, "peripheries=2", "the parameter")
	assert.Contains(t, src, "penwidth=3", "the loss")
	assert.Contains(t, src, `label="grad"`, "the parameter's gradient")
	assert.Contains(t, src, "color=red", "an edge between backends")
	assert.Contains(t, src, `h \"quoted\"`, "names are quoted")

	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("Graphviz's dot is not installed (CI installs it: apt-get install graphviz)")
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = strings.NewReader(src)
	var svg, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &svg, &stderr
	require.NoError(t, cmd.Run(), "dot: %s\n%s", stderr.String(), src)
	for _, n := range append(g.Nodes(), g.Leafs()...) {
		name := n.Name()
		if name == "" {
			continue
		}
		name = strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;", ">", "&gt;").Replace(name)
		assert.Contains(t, svg.String(), name, "the picture names %s", n.Name())
	}
}

// renderDot runs dot -Tsvg on src and returns the picture, failing the
// test when dot fails or warns, or when the SVG is no well-formed XML; it
// skips without Graphviz, except in CI (CI=true), which installs it.
func renderDot(t *testing.T, src string) []byte {
	t.Helper()
	dot, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("Graphviz's dot is not installed, and CI installs it (apt-get install graphviz)")
		}
		t.Skip("Graphviz's dot is not installed (CI installs it: apt-get install graphviz)")
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = strings.NewReader(src)
	var svg, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &svg, &stderr
	require.NoError(t, cmd.Run(), "dot: %s\n%q", stderr.String(), src)
	assert.Empty(t, stderr.String(), "dot's warnings on\n%q", src)
	d := xml.NewDecoder(bytes.NewReader(svg.Bytes()))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the SVG is no valid XML:\n%s", svg.String())
	}
	return svg.Bytes()
}

// svgText returns the text of the picture's <text> elements, one line
// each.
func svgText(t *testing.T, svg []byte) string {
	t.Helper()
	var b strings.Builder
	d := xml.NewDecoder(bytes.NewReader(svg))
	in := false
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return b.String()
		}
		require.NoError(t, err)
		switch x := tok.(type) {
		case xml.StartElement:
			in = x.Name.Local == "text"
		case xml.EndElement:
			if in {
				b.WriteByte('\n')
			}
			in = false
		case xml.CharData:
			if in {
				b.Write(x)
			}
		}
	}
}

// TestWriteDotHostileNames: tensor names and placement strings with NUL,
// control characters, dot's and XML's special characters and bytes that
// are not UTF-8 give a dot file that dot renders, without a warning, into
// well-formed SVG, which shows each name (quoted where it must be).
func TestWriteDotHostileNames(t *testing.T) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 64, NoAlloc: true, Graph: true, GraphSize: 64})
	require.NoError(t, err)
	defer c.Close()
	names := []string{
		"new\nline\r\ttab", `quote " and \ backslash \`, "<lt> &amp; &#0; &#27; gt>", "{brace}|pipe\\N\\G",
		"esc\x1b[31m\x07\x7f", "bad\xff\xfeutf8\xc3", "bidi\u202eevil\u200b", "é ü 你好", "\\", "\"",
	}
	x := c.NewTensor(ggml.TypeF32, 4).SetName(names[0])
	y := x
	for _, n := range names[1:] {
		y = c.Add(y, x).SetName(n)
	}
	g, err := c.NewGraph(64)
	require.NoError(t, err)
	require.NoError(t, g.Expand(y))
	places := []string{"CPU\x00NUL", "GPU\n\"0\"\\", "<&>\xff", "{|}\x1b]0;t\x07"}
	i := 0
	place := func(*ggml.Tensor) string {
		i++
		return places[i%len(places)]
	}
	var buf bytes.Buffer
	require.NoError(t, g.WriteDot(&buf, &ggml.DotOptions{Placement: place}))
	src := buf.String()
	assert.True(t, utf8.ValidString(src), "the dot file is UTF-8")
	for j, r := range src {
		if r < 0x20 && r != '\n' || r == 0x7f {
			t.Fatalf("control character %q at byte %d of the dot file:\n%q", r, j, src)
		}
	}
	text := svgText(t, renderDot(t, src))
	for _, n := range append(names, places...) {
		want := n
		if !utf8.ValidString(n) || strings.ContainsFunc(n, func(r rune) bool { return !strconv.IsPrint(r) }) {
			want = strconv.Quote(n)
		}
		assert.Contains(t, text, want, "the picture shows %q", n)
	}
}
