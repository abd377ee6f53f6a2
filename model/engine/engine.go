// Package engine serves one model to many goroutines at once by
// continuous batching, as llama.cpp's server and ollama's runner do: an
// Engine owns a model.Model whose KV cache holds several sequences, takes
// requests from any number of goroutines, and in each step runs one
// model.Model.Decode of the waiting prompts' chunks and one token of every
// sequence that is generating, so that one read of each weight serves
// them all. It admits requests between steps and gives a prompt the cells
// of the longest prefix it shares with what the cache holds (a system
// prompt shared by many requests is evaluated once); a finished request's
// cells stay for such a prompt until they are needed, a cancelled one's
// are freed at the next step. Where the cache is short of cells, prompts
// wait for room, and if no request can go on, the newest gives its cells
// back to decode its tokens again later. Its queue is bounded: a full one
// is an ErrQueueFull error, never unbounded memory.
//
// The engine is the model's one user while it runs: the model's own
// methods are ggml.ErrBusy errors during a step. Nothing here depends on
// the ggml provider.
package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/sample"
	"github.com/go-ggml/ggml/tokenizer"
)

// ErrQueueFull is the error of a request that finds the engine's queue of
// waiting requests full (Options.Queue): the caller may try again later
// (an HTTP server answers 503).
var ErrQueueFull = errors.New("engine: the queue of waiting requests is full")

// Options say how an Engine serves its model.
type Options struct {
	// Queue is the most requests that wait for a sequence of the model's
	// cache; a request beyond them is an ErrQueueFull error. 0 means 64.
	Queue int
	// Buffer is how many tokens a request's stream holds that its reader
	// has not taken: a request whose reader falls that far behind sits
	// out the steps until it reads, and the others go on. 0 means 32.
	Buffer int
}

// Request is one generation: a prompt's tokens and how to go on from
// them (model.GenerateOptions: the most tokens, the sampler, whether to
// stop at a token that ends generation).
type Request struct {
	Prompt []int32
	model.GenerateOptions
}

// Stats are an engine's counts since New.
type Stats struct {
	// Steps is the number of Decodes run; Tokens the tokens they took,
	// of which Prompt were prompts' and Generated generated ones.
	Steps, Tokens, Prompt, Generated int
	// Reused is the number of prompt tokens not evaluated because the
	// cache held them (a shared prefix).
	Reused int
	// Preempted counts the times a request gave its cells back to let
	// the others go on, to decode its tokens again later.
	Preempted int
	// Requests counts the requests admitted to a sequence; Active and
	// Waiting are those running and queued now.
	Requests, Active, Waiting int
}

// Engine serves a model to many goroutines (see the package doc). Its
// methods are safe for concurrent use.
type Engine struct {
	m     *model.Model
	tok   *tokenizer.Tokenizer // nil: no end-of-generation tokens known
	opts  Options
	queue chan *request
	wake  chan struct{}
	jobs  chan func()
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu    sync.Mutex // guards stats
	stats Stats

	closed atomic.Bool
}

// event is one item of a request's stream: a token, or the error that
// ends it.
type event struct {
	tok int32
	err error
}

// request is a request in the engine: its settings, its stream, and once
// admitted its sequence and progress.
type request struct {
	Request
	ctx      context.Context
	cancel   context.CancelFunc
	stopWake func() bool
	out      chan event // Options.Buffer tokens and the final error
	sampler  *sample.Sampler

	slot    *slot
	fed     int   // prompt tokens in the sequence (reused or decoded)
	started bool  // its prompt's decoding began
	last    int32 // the last sampled token, to decode next; -1 before the first
	emitted int
}

// slot is one sequence of the model's cache: the tokens in it and the
// request using it, if any.
type slot struct {
	seq  int
	toks []int32 // the tokens decoded into the sequence, in order
	req  *request
	used uint64 // the step it was last used at, for eviction
}

// New starts an engine over m, which it uses from its own goroutine from
// now until Close: m's cache holds the sequences the engine serves at once
// (model.Options.Sequences), its BatchSize is the most tokens of a step.
// Closing the engine does not close m.
func New(m *model.Model, o Options) (*Engine, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: engine: New of a nil model", ggml.ErrInvalid)
	}
	if o.Queue < 0 || o.Buffer < 0 {
		return nil, fmt.Errorf("%w: engine: Options %+v", ggml.ErrInvalid, o)
	}
	if o.Queue == 0 {
		o.Queue = 64
	}
	if o.Buffer == 0 {
		o.Buffer = 32
	}
	tok, _ := m.Tokenizer()
	e := &Engine{m: m, tok: tok, opts: o,
		queue: make(chan *request, o.Queue), wake: make(chan struct{}, 1), jobs: make(chan func()),
		stop: make(chan struct{}), done: make(chan struct{})}
	go e.loop()
	return e, nil
}

// Model returns the engine's model: its Config, tokenizer and chat
// template are safe to use; calls that use its cache are the engine's.
func (e *Engine) Model() *model.Model { return e.m }

// Stats returns the engine's counts.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.stats
	s.Waiting = len(e.queue)
	return s
}

// Close stops the engine: the requests running or waiting end with a
// ggml.ErrClosed error, later ones are ggml.ErrClosed errors. It waits for
// the step that runs to end, and returns nil, also when called again.
func (e *Engine) Close() error {
	e.once.Do(func() {
		e.closed.Store(true)
		close(e.stop)
	})
	<-e.done
	return nil
}

// poke wakes the loop where it waits for work.
func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Generate submits r and yields the tokens generated after its prompt one
// by one, as model.Model.Generate does: each sampled from the logits of
// the one before (r.Sampling; the sequence's tokens are the penalties'
// history). It stops after r.MaxTokens tokens, after a token that ends
// generation (unless r.IgnoreEOS), when the sequence reaches the model's
// ContextSize (an model.ErrContextFull error where r.MaxTokens was not
// reached), when ctx is done (its error), or when the loop breaks, which
// frees the request's sequence at the next step. An error is yielded once,
// with token -1, and ends the sequence: ErrQueueFull where the queue is
// full; for a request that cannot run, ggml.ErrInvalid (no prompt, a
// negative MaxTokens), model.ErrToken (a token outside the vocabulary),
// sample.ErrParams (bad sampling settings), model.ErrContextFull (a
// prompt as long as the context), model.ErrModel (an encoder).
func (e *Engine) Generate(ctx context.Context, r Request) iter.Seq2[int32, error] {
	return func(yield func(int32, error) bool) {
		req, err := e.submit(ctx, r)
		if err != nil {
			yield(-1, err)
			return
		}
		defer req.cancel() // the loop frees its sequence at the next step
		// handle passes one item of the stream on; false ends the loop.
		handle := func(ev event, ok bool) bool {
			if !ok {
				return false
			}
			e.poke() // room in the stream: the request may run again
			if ev.err != nil {
				yield(-1, ev.err)
				return false
			}
			return yield(ev.tok, nil)
		}
		for {
			select {
			case ev, ok := <-req.out:
				if !handle(ev, ok) {
					return
				}
			case <-req.ctx.Done():
				yield(-1, context.Cause(req.ctx))
				return
			case <-e.done:
				// The loop is gone: what it sent is in the stream; a
				// request queued as it closed has nothing.
				for {
					select {
					case ev, ok := <-req.out:
						if !handle(ev, ok) {
							return
						}
					default:
						yield(-1, errClosed)
						return
					}
				}
			}
		}
	}
}

// submit checks r and queues it; the request's context ends when ctx does
// or the caller's loop stops.
func (e *Engine) submit(ctx context.Context, r Request) (*request, error) {
	if e.closed.Load() {
		return nil, fmt.Errorf("%w: engine: closed", ggml.ErrClosed)
	}
	c := e.m.Config
	if len(r.Prompt) == 0 {
		return nil, fmt.Errorf("%w: engine: a request with no prompt", ggml.ErrInvalid)
	}
	if len(r.Prompt) >= e.m.ContextSize() {
		return nil, fmt.Errorf("%w: engine: a prompt of %d tokens in a context of %d", model.ErrContextFull, len(r.Prompt), e.m.ContextSize())
	}
	for i, id := range r.Prompt {
		if id < 0 || int(id) >= c.VocabSize {
			return nil, fmt.Errorf("%w: engine: token %d (at %d) outside the vocabulary of %d", model.ErrToken, id, i, c.VocabSize)
		}
	}
	if r.MaxTokens < 0 {
		return nil, fmt.Errorf("%w: engine: MaxTokens %d", ggml.ErrInvalid, r.MaxTokens)
	}
	if e.m.Encoder() {
		return nil, fmt.Errorf("%w: engine: the %s architecture is an encoder: it embeds (Embed), it does not generate", model.ErrModel, c.Arch)
	}
	s, err := sample.New(r.Sampling)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	req := &request{Request: r, ctx: rctx, cancel: cancel, out: make(chan event, e.opts.Buffer+1), sampler: s, last: -1}
	req.Prompt = slices.Clone(r.Prompt)
	// A request cancelled while the loop waits (its reader gone, its
	// stream full) wakes the loop, which frees its sequence.
	req.stopWake = context.AfterFunc(rctx, e.poke)
	select {
	case e.queue <- req:
		e.poke()
		return req, nil
	default:
		req.stopWake()
		cancel()
		return nil, fmt.Errorf("%w (%d waiting)", ErrQueueFull, e.opts.Queue)
	}
}

// Embed runs an encoder model (model.Model.Embed) on ids, between the
// engine's steps.
func (e *Engine) Embed(ctx context.Context, ids []int32, pool model.Pooling) ([]float32, error) {
	var out []float32
	err := e.do(ctx, func() error {
		var err error
		out, err = e.m.Embed(ctx, ids, pool)
		return err
	})
	return out, err
}

// do runs f on the engine's goroutine between steps.
func (e *Engine) do(ctx context.Context, f func() error) error {
	if e.closed.Load() {
		return fmt.Errorf("%w: engine: closed", ggml.ErrClosed)
	}
	errc := make(chan error, 1)
	select {
	case e.jobs <- func() { errc <- f() }:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-e.done:
		return fmt.Errorf("%w: engine: closed", ggml.ErrClosed)
	}
	return <-errc
}
