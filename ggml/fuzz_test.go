package ggml_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// FuzzOps builds random graphs from the op table (opTable): random ops,
// types, shapes, views and parameters, from bytes. Whatever the ops accept
// is allocated and computed on the CPU. The property: no input ends the
// process (a ggml assert or a crash); invalid inputs are errors. Each step
// reads its inputs, then one byte that picks the op by its table id, then
// the op's parameters.
//
//	go test ./ggml -run '^$' -fuzz '^FuzzOps$' -fuzztime 3m
func FuzzOps(f *testing.F) {
	// The inline seeds and those in testdata/fuzz/FuzzOps were written
	// for FuzzOps and FuzzOpsMore, whose op pickers the table replaced:
	// re-encoded for the table, each still builds the ops it built.
	f.Add([]byte{0x0, 0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x51, 0x9, 0xa, 0xb, 0xc, 0xd, 0xe, 0x6e})
	f.Add([]byte{0x7, 0x3, 0x3, 0x1, 0x9, 0xc8, 0x11, 0x4, 0x54})
	f.Add([]byte{0xff, 0xfe, 0x0, 0x0, 0x80, 0x40, 0x20, 0x10, 0x8, 0x4, 0x2, 0x1, 0x0, 0x0})
	f.Add([]byte{0x0, 0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x61, 0xa, 0xb, 0xc, 0xd, 0xe, 0x2d})
	f.Add([]byte{0xc, 0x3, 0x3, 0x1, 0x9, 0xc8, 0x11, 0x4, 0x4, 0x4, 0x1e, 0x1, 0x2, 0x63, 0x5, 0x64, 0x8, 0x1, 0x1, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0, 0x2d})
	f.Add([]byte{0x27, 0x2, 0x1, 0x1, 0x0, 0x0, 0x1, 0x3, 0x46, 0x1})
	be, err := backend.InitByName("CPU", "")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { be.Close() })
	ops := make([]opBuilder, len(opTable))
	for _, o := range opTable {
		ops[o.id] = o.build // TestOpTable checks that the ids are 0..n-1
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzGraph(t, be, data, ops) })
}

// fuzzGraph builds up to 12 ops from data, each picked among ops by one
// byte, then builds, allocates and computes the graph of the last one that
// succeeded.
func fuzzGraph(t *testing.T, be *backend.Backend, data []byte, ops []opBuilder) {
	c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 64, NoAlloc: true, Graph: true, GraphSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pool := fuzzBuild(c, data, ops)
	var ae *ggml.AssertError
	if errors.As(c.Err(), &ae) {
		t.Fatalf("an op reached a ggml assert (a check is missing): %v", c.Err())
	}
	if c.Err() != nil || len(pool) == 0 {
		return // the errors are the point: the process lives
	}
	g, err := c.BuildGraph(pool[len(pool)-1])
	if err != nil {
		return
	}
	if g.NumNodes() == 0 {
		return
	}
	buf, err := backend.AllocContextTensors(c, be)
	if err != nil {
		return
	}
	defer buf.Close()
	for _, t := range pool { // indices must be valid rows: zero is
		if t.Type() == ggml.TypeI32 && t.IsContiguous() && t.ViewSource() == nil {
			_ = ggml.SetData(t, make([]int32, t.Elements()))
		}
	}
	if debugFuzz {
		for _, n := range g.Nodes() {
			t.Logf("node %s %v %v nb %v src %v", n.Op(), n.Type(), n.Ne(), n.Nb(), n.Sources())
		}
		for _, n := range g.Leafs() {
			t.Logf("leaf %v %v nb %v", n.Type(), n.Ne(), n.Nb())
		}
	}
	if err := be.Compute(context.Background(), g); errors.As(err, &ae) {
		// Recovered on this thread, but ggml's worker threads may be
		// left waiting: a check is missing.
		t.Fatalf("compute reached a ggml assert (a check is missing): %v", err)
	}
}

// TestFuzzSeedsReachUpstreamOps: the seeds named upstream-* in
// testdata/fuzz/FuzzOps build the op or type of upstream ggml their name
// says, last, on the system provider (the fuzzer starts from them: a
// change to the op table or to fuzzBuild that breaks one is caught here);
// with the embedded provider they stop at an ErrUnsupported error.
func TestFuzzSeedsReachUpstreamOps(t *testing.T) {
	want := map[string]string{ // seed name, less its upstream- prefix: the last op, its result's type
		"ssm-scan-k": "SSM_SCAN f32", "gated-delta-net": "GATED_DELTA_NET f32", "gated-delta-net-kda": "GATED_DELTA_NET f32",
		"col2im-1d": "COL2IM_1D f32", "col2im-1d-f16": "COL2IM_1D f16",
		"lightning-indexer": "LIGHTNING_INDEXER f32", "lightning-indexer-f16-k": "LIGHTNING_INDEXER f32",
		"hc-combine": "DSV4_HC_COMB f32", "hc-pre": "DSV4_HC_PRE f32", "hc-post": "DSV4_HC_POST f32",
	}
	for _, ty := range []string{"nvfp4", "q1_0", "q2_0"} {
		want["type-"+ty+"-mul-mat"] = "MUL_MAT f32 of " + ty
		want["type-"+ty+"-get-rows"] = "GET_ROWS f32 of " + ty
		want["type-"+ty+"-cpy"] = "CPY f32 of " + ty
	}
	ops := make([]opBuilder, len(opTable))
	for _, o := range opTable {
		ops[o.id] = o.build
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzOps", "upstream-"+name))
			require.NoError(t, err)
			lines := strings.Split(string(raw), "\n")
			require.Equal(t, "go test fuzz v1", lines[0])
			q, ok := strings.CutPrefix(lines[1], "[]byte(")
			require.True(t, ok)
			q, ok = strings.CutSuffix(q, ")")
			require.True(t, ok)
			data, err := strconv.Unquote(q)
			require.NoError(t, err)
			c, err := ggml.NewContext(ggml.ContextParams{MaxTensors: 64, NoAlloc: true, Graph: true, GraphSize: 256})
			require.NoError(t, err)
			defer c.Close()
			pool := fuzzBuild(c, []byte(data), ops)
			if !ggml.HaveUpstream {
				require.ErrorIs(t, c.Err(), ggml.ErrUnsupported)
				return
			}
			require.NoError(t, c.Err())
			last := pool[len(pool)-1]
			got := fmt.Sprintf("%s %v", last.Op(), last.Type())
			if srcs := last.Sources(); strings.Contains(w, " of ") && len(srcs) > 0 {
				got += fmt.Sprintf(" of %v", srcs[0].Type())
			}
			require.Equal(t, w, got)
		})
	}
}

// fuzzBuild builds up to 12 ops on c from data, each picked among ops by
// one byte, and returns the tensors made: the inputs, then the result of
// each op that succeeded.
func fuzzBuild(c *ggml.Context, data []byte, ops []opBuilder) []*ggml.Tensor {
	r := &byteReader{b: data}
	types := []ggml.Type{ggml.TypeF32, ggml.TypeF32, ggml.TypeF16, ggml.TypeI32, ggml.TypeQ8_0, ggml.TypeBF16, ggml.TypeQ4_0, ggml.TypeI8}
	var pool []*ggml.Tensor
	newT := func() *ggml.Tensor {
		ty := types[r.n(len(types))]
		ne := []int64{int64(r.n(9)), int64(1 + r.n(4)), int64(1 + r.n(3)), int64(1 + r.n(2))}
		if ty.BlockSize() > 1 {
			ne[0] = ty.BlockSize() * int64(r.n(3))
		}
		return c.NewTensor(ty, ne[:1+r.n(4)]...)
	}
	pick := func() *ggml.Tensor {
		if len(pool) == 0 || r.n(4) == 0 {
			t := newT()
			pool = append(pool, t)
			return t
		}
		return pool[r.n(len(pool))]
	}
	for step := 0; step < 12 && !r.done(); step++ {
		a, b := pick(), pick()
		out := ops[r.n(len(ops))](opIn{r, c, a, b, pick})
		if out.Err() == nil {
			pool = append(pool, out)
		}
		if c.Err() != nil {
			break
		}
	}
	return pool
}

type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) done() bool { return r.i >= len(r.b) }

// n returns a number in [0, k) from the next byte (0 once the bytes run out).
func (r *byteReader) n(k int) int {
	if r.i >= len(r.b) || k <= 0 {
		return 0
	}
	v := int(r.b[r.i]) % k
	r.i++
	return v
}

// signed returns a number in [-k/2, k-k/2) from the next byte.
func (r *byteReader) signed(k int) float32 { return float32(r.n(k)) - float32(k/2) }

var debugFuzz = os.Getenv("GOGGML_FUZZ_DEBUG") != ""
