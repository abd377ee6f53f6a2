// Command llama-server serves a GGUF model over an OpenAI-compatible HTTP
// API (package model/server), to many clients at once by continuous
// batching (package model/engine), as llama.cpp's llama-server does:
//
//	go run ./cmd/llama-server -model tiny.gguf -np 4
//	curl http://127.0.0.1:8080/v1/chat/completions -d '{"messages":[{"role":"user","content":"Hi"}]}'
//
// It listens on 127.0.0.1:8080 by default (-addr HOST:PORT, or
// llama-server's --host and --port) and takes llama-server's flags for
// the model (-m), the number of parallel sequences (-np), the context
// (-c: the KV cache's cells, shared by the sequences; each sequence may
// have up to that many positions), the cache's type (-ctk, -ctv), the batch
// (-b) and the threads (-t), and --api-key. Ctrl-C stops it: it stops taking connections and ends
// the requests that run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-ggml/ggml/model"
	_ "github.com/go-ggml/ggml/model/bert"
	"github.com/go-ggml/ggml/model/engine"
	_ "github.com/go-ggml/ggml/model/gemma"
	_ "github.com/go-ggml/ggml/model/llama"
	_ "github.com/go-ggml/ggml/model/phi3"
	_ "github.com/go-ggml/ggml/model/qwen2"
	_ "github.com/go-ggml/ggml/model/qwen3"
	"github.com/go-ggml/ggml/model/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], nil, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "llama-server:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. ready, if not nil, gets the address the
// server listens on once it does.
func run(ctx context.Context, args []string, ready chan<- string, stderr io.Writer) error {
	fs := flag.NewFlagSet("llama-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var path string
	fs.StringVar(&path, "model", "", "the GGUF file to serve")
	fs.StringVar(&path, "m", "", "the GGUF file to serve (as -model)")
	addr := fs.String("addr", "", "the address to listen on, HOST:PORT (default 127.0.0.1:8080; overrides --host and --port)")
	host := fs.String("host", "127.0.0.1", "the host to listen on")
	port := fs.Int("port", 8080, "the port to listen on (0: any free one)")
	np := fs.Int("np", 4, "the number of sequences served at once (parallel)")
	nCtx := fs.Int("c", 0, "the KV cache's cells, shared by the sequences (0: the model's training context, at most 4096)")
	batch := fs.Int("b", 0, "the most tokens in one compute (0: 512)")
	threads := fs.Int("t", 0, "CPU threads (0: one per core)")
	gpuLayers := fs.Int("ngl", 0, "blocks on the GPU, if there is one (0: all)")
	cpuOnly := fs.Bool("cpu", false, "run on the CPU only")
	apiKey := fs.String("api-key", "", "the API key requests must carry (Authorization: Bearer KEY); also $LLAMA_API_KEY")
	name := fs.String("alias", "", "the model's name in the API (default: the file's name)")
	queue := fs.Int("queue", 64, "the most requests waiting for a sequence; more get 503")
	maxTokens := fs.Int("n", 0, "the most tokens a request may generate (0: the context)")
	ctk := fs.String("ctk", "f16", "the KV cache's type: f16, f32, q8_0 or q4_0 (q8_0 and q4_0 need flash attention)")
	ctv := fs.String("ctv", "", "the V cache's type: as -ctk (go-ggml's keys and values have one type)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if path == "" {
		fs.Usage()
		return errors.New("-model (or -m) is required")
	}
	listen := *addr
	if listen == "" {
		listen = net.JoinHostPort(*host, strconv.Itoa(*port))
	}
	key := *apiKey
	if key == "" {
		key = os.Getenv("LLAMA_API_KEY")
	}
	if *ctv != "" && *ctv != *ctk {
		return fmt.Errorf("-ctk %s and -ctv %s: go-ggml's cache keeps keys and values in one type", *ctk, *ctv)
	}
	cacheType, err := model.ParseCacheType(*ctk)
	if err != nil {
		return err
	}
	if *name == "" {
		*name = strings.TrimSuffix(filepath.Base(path), ".gguf")
	}

	m, err := model.Load(ctx, path, model.Options{ContextSize: *nCtx, BatchSize: *batch, Sequences: *np,
		Threads: *threads, GPULayers: *gpuLayers, CPUOnly: *cpuOnly, CacheType: cacheType})
	if err != nil {
		return err
	}
	defer m.Close()
	e, err := engine.New(m, engine.Options{Queue: *queue})
	if err != nil {
		return err
	}
	defer e.Close()
	h, err := server.New(e, server.Options{Name: *name, APIKey: key, MaxTokens: *maxTokens})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(stderr, "llama-server: %s (%s, %d sequences, %d cells) on http://%s\n", *name, m.Config.Arch, m.Sequences(), m.ContextSize(), ln.Addr())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Stop taking connections; the engine's Close (deferred) ends the
	// requests that run, whose handlers then return.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.Close()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return nil
}
