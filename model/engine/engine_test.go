package engine_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/engine"
	_ "github.com/go-ggml/ggml/model/llama"
	"github.com/go-ggml/ggml/model/modeltest"
	"github.com/go-ggml/ggml/model/sample"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunLeakChecked(m)) }

// tiny writes the tiny preset with f32 weights (whose greedy tokens do
// not depend on the batch they run in, but at exact ties) and returns
// its path.
func tiny(t *testing.T, seed uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: modeltest.Presets["tiny"], Type: ggml.TypeF32, Seed: seed}))
	return path
}

// alone is what model.Model.Generate gives for r on a model of its own.
func alone(t *testing.T, m *model.Model, r engine.Request) []int32 {
	t.Helper()
	require.NoError(t, m.Rewind(0))
	var out []int32
	for id, err := range m.Generate(context.Background(), r.Prompt, r.GenerateOptions) {
		require.NoError(t, err)
		out = append(out, id)
	}
	return out
}

// collect runs r through e and returns its tokens and the error that
// ended it.
func collect(ctx context.Context, e *engine.Engine, r engine.Request) ([]int32, error) {
	var out []int32
	for id, err := range e.Generate(ctx, r) {
		if err != nil {
			return out, err
		}
		out = append(out, id)
	}
	return out, nil
}

// TestEngineMatchesAlone: requests from many goroutines at once, more
// than the cache's sequences, with prompts of 1 to 60 tokens (some
// sharing a prefix), greedy and sampled, each generate what they
// generate alone with model.Model.Generate, for 1, 4 and 16 sequences.
func TestEngineMatchesAlone(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tiny(t, rng.Uint64())
	vocab := modeltest.Presets["tiny"].VocabSize
	ref := modeltest.LoadModel(t, path, model.Options{ContextSize: 128})
	system := modeltest.RandomTokens(rng, 24, vocab)
	for _, seqs := range []int{1, 4, 16} {
		m := modeltest.LoadModel(t, path, model.Options{ContextSize: 512, BatchSize: 32, Sequences: seqs})
		e, err := engine.New(m, engine.Options{})
		require.NoError(t, err)
		var reqs []engine.Request
		var wants [][]int32
		for i := range 3 * seqs {
			p := modeltest.RandomTokens(rng, 1+rng.IntN(36), vocab)
			if i%3 == 0 {
				p = append(append([]int32(nil), system...), p...)
			}
			r := engine.Request{Prompt: p, GenerateOptions: model.GenerateOptions{MaxTokens: 1 + rng.IntN(16), IgnoreEOS: true}}
			if i%2 == 1 {
				r.Sampling = sample.Defaults()
				r.Sampling.Seed = rng.Uint64()
			}
			reqs = append(reqs, r)
			wants = append(wants, alone(t, ref, r))
		}
		got := make([][]int32, len(reqs))
		errs := make([]error, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = collect(context.Background(), e, r)
			}()
		}
		wg.Wait()
		for i := range reqs {
			require.NoError(t, errs[i], "request %d", i)
			assert.Equal(t, wants[i], got[i], "%d sequences, request %d", seqs, i)
		}
		st := e.Stats()
		assert.Equal(t, len(reqs), st.Requests)
		assert.Zero(t, st.Active)
		if seqs > 1 {
			assert.Less(t, st.Steps, st.Tokens, "steps that ran several sequences' tokens")
		}
		t.Logf("%d sequences: %+v", seqs, st)
		require.NoError(t, e.Close())
	}
}

// TestEngineSharesPrefix: a thousand requests with one system prompt
// evaluate it once: every later one reuses its cells.
func TestEngineSharesPrefix(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tiny(t, rng.Uint64())
	vocab := modeltest.Presets["tiny"].VocabSize
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 256, Sequences: 8})
	e, err := engine.New(m, engine.Options{Queue: 1000})
	require.NoError(t, err)
	defer e.Close()
	system := modeltest.RandomTokens(rng, 40, vocab)
	const n = 1000
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		q := modeltest.RandomTokens(rng, 1+rng.IntN(4), vocab)
		r := engine.Request{Prompt: append(append([]int32(nil), system...), q...), GenerateOptions: model.GenerateOptions{MaxTokens: 2, IgnoreEOS: true}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = collect(context.Background(), e, r)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "request %d", i)
	}
	st := e.Stats()
	t.Logf("%+v", st)
	// The first request evaluates the prompt; a request admitted while
	// none holds it yet may too, one per sequence at most.
	assert.LessOrEqual(t, st.Prompt, 8*len(system)+n*5)
	assert.GreaterOrEqual(t, st.Reused, (n-8)*len(system))
}

// TestEngineCancel: requests whose loop breaks, or whose context ends,
// mid-stream free their sequences; a reader that never reads holds its
// own sequence and nothing else; the others go on and generate what they
// would alone.
func TestEngineCancel(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tiny(t, rng.Uint64())
	vocab := modeltest.Presets["tiny"].VocabSize
	ref := modeltest.LoadModel(t, path, model.Options{ContextSize: 128})
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 512, Sequences: 4})
	e, err := engine.New(m, engine.Options{Buffer: 2})
	require.NoError(t, err)
	defer e.Close()

	// The stuck reader: takes one token and then nothing.
	stuckCtx, unstick := context.WithCancel(context.Background())
	stuck := make(chan error, 1)
	first := make(chan struct{})
	go func() {
		for _, err := range e.Generate(stuckCtx, engine.Request{Prompt: []int32{1, 2, 3}, GenerateOptions: model.GenerateOptions{IgnoreEOS: true}}) {
			if err != nil {
				stuck <- err
				return
			}
			select {
			case <-first:
			default:
				close(first)
			}
			<-stuckCtx.Done()
		}
		stuck <- nil
	}()
	<-first

	var wg sync.WaitGroup
	for i := range 12 {
		r := engine.Request{Prompt: modeltest.RandomTokens(rng, 1+rng.IntN(20), vocab), GenerateOptions: model.GenerateOptions{MaxTokens: 12, IgnoreEOS: true}}
		want := alone(t, ref, r)
		wg.Add(1)
		go func() {
			defer wg.Done()

			switch i % 3 {
			case 0: // breaks after 3 tokens
				n := 0
				for _, err := range e.Generate(context.Background(), r) {
					assert.NoError(t, err)
					if n++; n == 3 {
						break
					}
				}
			case 1: // its context ends after 2 tokens
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				n := 0
				var last error
				for _, err := range e.Generate(ctx, r) {
					if err != nil {
						last = err
						break
					}
					if n++; n == 2 {
						cancel()
					}
				}
				assert.ErrorIs(t, last, context.Canceled)
			default:
				got, err := collect(context.Background(), e, r)
				assert.NoError(t, err)
				assert.Equal(t, want, got)
			}
		}()
	}
	wg.Wait()
	unstick()
	require.ErrorIs(t, <-stuck, context.Canceled)
	require.Eventually(t, func() bool { return e.Stats().Active == 0 }, 10*time.Second, time.Millisecond)
}

// TestEngineQueue: with one sequence held by a reader that does not
// read, a queue of 2 takes two requests and refuses the third with
// ErrQueueFull; ten thousand requests at once each complete or are
// refused, none lost; after Close, running and waiting requests end with
// ggml.ErrClosed and new ones are refused.
func TestEngineQueue(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tiny(t, rng.Uint64())
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 256, Sequences: 1})
	e, err := engine.New(m, engine.Options{Queue: 2, Buffer: 1})
	require.NoError(t, err)
	hold := engine.Request{Prompt: []int32{5, 6}, GenerateOptions: model.GenerateOptions{IgnoreEOS: true}}
	holding, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		n := 0
		for _, err := range e.Generate(context.Background(), hold) {
			if err != nil {
				held <- err
				return
			}
			if n++; n == 1 {
				close(holding)
				<-release // reads nothing until the engine is closed
			}
		}
		held <- nil
	}()
	<-holding
	waiting := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := collect(context.Background(), e, engine.Request{Prompt: []int32{7}, GenerateOptions: model.GenerateOptions{MaxTokens: 1}})
			waiting <- err
		}()
	}
	require.Eventually(t, func() bool { return e.Stats().Waiting == 2 }, 10*time.Second, time.Millisecond)
	_, err = collect(context.Background(), e, engine.Request{Prompt: []int32{7}})
	require.ErrorIs(t, err, engine.ErrQueueFull)
	require.NoError(t, e.Close())
	for range 2 {
		require.ErrorIs(t, <-waiting, ggml.ErrClosed)
	}
	close(release)
	require.ErrorIs(t, <-held, ggml.ErrClosed, "the tokens it had, then the engine's end")
	_, err = collect(context.Background(), e, engine.Request{Prompt: []int32{7}})
	require.ErrorIs(t, err, ggml.ErrClosed)
	require.NoError(t, e.Close(), "Close again")

	// Ten thousand at once.
	m2 := modeltest.LoadModel(t, path, model.Options{ContextSize: 256, Sequences: 4})
	e2, err := engine.New(m2, engine.Options{Queue: 100})
	require.NoError(t, err)
	defer e2.Close()
	const n = 10000
	errs := make([]error, n)
	lens := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()

			var got []int32
			got, errs[i] = collect(context.Background(), e2, engine.Request{Prompt: []int32{int32(i % 50), 3}, GenerateOptions: model.GenerateOptions{MaxTokens: 3, IgnoreEOS: true}})
			lens[i] = len(got)
		}()
	}
	wg.Wait()
	done, refused := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			require.Equal(t, 3, lens[i])
			done++
		case errors.Is(err, engine.ErrQueueFull):
			refused++
		default:
			t.Fatalf("request %d: %v", i, err)
		}
	}
	t.Logf("%d done, %d refused: %+v", done, refused, e2.Stats())
	assert.Equal(t, n, done+refused)
	assert.Equal(t, done, e2.Stats().Requests)
	assert.Positive(t, done)
}

// TestEngineRefuses: a request that cannot run is an error of its kind
// before it is queued: no prompt, a token outside the vocabulary, a
// prompt as long as the context, NaN sampling settings, a negative
// MaxTokens; an encoder does not generate.
func TestEngineRefuses(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tiny(t, rng.Uint64())
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 32, Sequences: 2})
	e, err := engine.New(m, engine.Options{})
	require.NoError(t, err)
	defer e.Close()
	for _, tc := range []struct {
		r   engine.Request
		err error
	}{
		{engine.Request{}, ggml.ErrInvalid},
		{engine.Request{Prompt: []int32{-1}}, model.ErrToken},
		{engine.Request{Prompt: []int32{int32(m.Config.VocabSize)}}, model.ErrToken},
		{engine.Request{Prompt: make([]int32, 32)}, model.ErrContextFull},
		{engine.Request{Prompt: []int32{1}, GenerateOptions: model.GenerateOptions{Sampling: sample.Params{Temperature: float32(math.NaN())}}}, sample.ErrParams},
		{engine.Request{Prompt: []int32{1}, GenerateOptions: model.GenerateOptions{MaxTokens: -1}}, ggml.ErrInvalid},
	} {
		_, err := collect(context.Background(), e, tc.r)
		require.ErrorIs(t, err, tc.err, "%+v", tc.r)
	}
	// A sequence that reaches the context: the tokens up to it, then
	// ErrContextFull where MaxTokens asked for more.
	got, err := collect(context.Background(), e, engine.Request{Prompt: make([]int32, 30), GenerateOptions: model.GenerateOptions{MaxTokens: 5, IgnoreEOS: true}})
	require.ErrorIs(t, err, model.ErrContextFull)
	require.Len(t, got, 3)
	got, err = collect(context.Background(), e, engine.Request{Prompt: make([]int32, 30), GenerateOptions: model.GenerateOptions{IgnoreEOS: true}})
	require.NoError(t, err)
	require.Len(t, got, 3)

	_, err = engine.New(nil, engine.Options{})
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = engine.New(m, engine.Options{Queue: -1})
	require.ErrorIs(t, err, ggml.ErrInvalid)
}

// TestEngineCachePressure: requests whose prompts and replies together
// need three times the cache's cells, each fitting alone, all complete
// with their alone tokens: a prompt starts when the cache can hold it,
// the others wait for cells that finished requests give back.
func TestEngineCachePressure(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tiny(t, rng.Uint64())
	vocab := modeltest.Presets["tiny"].VocabSize
	ref := modeltest.LoadModel(t, path, model.Options{ContextSize: 128})
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 128, BatchSize: 16, Sequences: 8})
	e, err := engine.New(m, engine.Options{})
	require.NoError(t, err)
	defer e.Close()
	const n = 8
	reqs := make([]engine.Request, n)
	wants := make([][]int32, n)
	for i := range reqs {
		reqs[i] = engine.Request{Prompt: modeltest.RandomTokens(rng, 40, vocab), GenerateOptions: model.GenerateOptions{MaxTokens: 8, IgnoreEOS: true}}
		wants[i] = alone(t, ref, reqs[i])
	}
	got := make([][]int32, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = collect(context.Background(), e, reqs[i])
		}()
	}
	wg.Wait()
	for i := range reqs {
		require.NoError(t, errs[i], "request %d", i)
		assert.Equal(t, wants[i], got[i], "request %d", i)
	}
	t.Logf("%+v", e.Stats())
}
