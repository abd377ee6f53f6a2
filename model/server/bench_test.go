package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/engine"
	"github.com/go-ggml/ggml/model/modeltest"
)

// BenchmarkServerStream measures what the server adds to a streamed
// token, as bench/table pairs: the side "go" generates through the server
// (a streamed /v1/completions on 127.0.0.1, its server-sent events read by
// a plain HTTP client), the side "c" through the library alone
// (model.Model.GenerateText on a model of its own), the same greedy 64
// tokens after the same prompt, on the small preset in q4_0
// (GOGGML_BENCH_LLAMA and GOGGML_BENCH_LLAMA_TYPE choose others) with 2
// threads (GOGGML_BENCH_LLAMA_THREADS). GOGGML_BENCH_ENGINE=1 times the
// engine's Generate in the server's place. ns/op is a token, from the
// request to the last piece; the
// table's Go/C is the server's time over the library's. Both sides reuse
// the prompt's cells from their last run, as both do by design.
func BenchmarkServerStream(b *testing.B) {
	pairs := testutil.BenchPairs(b)
	preset, typName := "small", "q4_0"
	if s := os.Getenv("GOGGML_BENCH_LLAMA"); s != "" {
		preset = s
	}
	if s := os.Getenv("GOGGML_BENCH_LLAMA_TYPE"); s != "" {
		typName = s
	}
	var typ ggml.Type = -1
	for _, t := range ggml.Types() {
		if t.String() == typName {
			typ = t
		}
	}
	cfg, ok := modeltest.Presets[preset]
	if !ok || typ < 0 {
		b.Fatalf("GOGGML_BENCH_LLAMA=%q, GOGGML_BENCH_LLAMA_TYPE=%q: want a preset and a ggml type", preset, typName)
	}
	path := filepath.Join(b.TempDir(), "bench.gguf")
	if err := modeltest.WriteRandom(path, modeltest.RandomModel{Config: cfg, Type: typ, Converted: true, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	threads := 2
	if v := os.Getenv("GOGGML_BENCH_LLAMA_THREADS"); v != "" {
		if _, err := fmt.Sscan(v, &threads); err != nil || threads < 1 {
			b.Fatalf("GOGGML_BENCH_LLAMA_THREADS=%q: want a count", v)
		}
	}
	opts := model.Options{CPUOnly: true, ContextSize: 256, Threads: threads}
	lib, err := model.Load(ctx, path, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer lib.Close()
	m, err := model.Load(ctx, path, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	e, err := engine.New(m, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	s, err := New(e, Options{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	const gen = 64
	prompt := "Once upon a time there was a model that served many users at once"
	body := fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"temperature":0,"ignore_eos":true,"stream":true}`, prompt, gen)
	viaServer := func(b *testing.B) {
		resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		done := false
		for sc.Scan() {
			if sc.Text() == "data: [DONE]" {
				done = true
			}
		}
		if !done || resp.StatusCode != http.StatusOK {
			b.Fatalf("the stream ended without [DONE] (status %d): %v", resp.StatusCode, sc.Err())
		}
	}
	viaLibrary := func(b *testing.B) {
		for _, err := range lib.GenerateText(ctx, prompt, model.GenerateOptions{MaxTokens: gen, IgnoreEOS: true}) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	side := func(run func(*testing.B)) func(*testing.B) {
		return func(b *testing.B) {
			run(b) // once before the timed runs: the caches, the prompt's cells
			var total time.Duration
			for range b.N {
				t0 := time.Now()
				run(b)
				total += time.Since(t0)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*gen), "ns/op")
		}
	}
	ids, err := lib.Tokenize(prompt)
	if err != nil {
		b.Fatal(err)
	}
	viaEngine := func(b *testing.B) {
		for _, err := range e.Generate(ctx, engine.Request{Prompt: ids, GenerateOptions: model.GenerateOptions{MaxTokens: gen, IgnoreEOS: true}}) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	name := fmt.Sprintf("stream%d-%s-%s-t%d", gen, preset, typName, threads)
	for i := range pairs {
		if os.Getenv("GOGGML_BENCH_ENGINE") == "1" {
			testutil.RunPair(b, i, "engine-"+name, side(viaEngine), side(viaLibrary))
			continue
		}
		testutil.RunPair(b, i, name, side(viaServer), side(viaLibrary))
	}
}
