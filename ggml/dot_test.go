package ggml_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

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
