package openaitest

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	_ "github.com/go-ggml/ggml/model/bert"
	"github.com/go-ggml/ggml/model/chat"
	"github.com/go-ggml/ggml/model/engine"
	_ "github.com/go-ggml/ggml/model/llama"
	"github.com/go-ggml/ggml/model/modeltest"
	"github.com/go-ggml/ggml/model/server"
)

// fixture is a server of a random model on 127.0.0.1, the model alone
// (the reference), and an OpenAI client of the server.
type fixture struct {
	alone  *model.Model
	engine *engine.Engine
	url    string
	client openai.Client
}

// start writes a random model of r, serves it with seqs sequences, and
// returns the fixture; key is the server's API key and the client's.
func start(t *testing.T, r modeltest.RandomModel, seqs int, key string) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.gguf")
	require.NoError(t, modeltest.WriteRandom(path, r))
	alone := modeltest.LoadModel(t, path, model.Options{ContextSize: 256})
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 1024, Sequences: seqs})
	e, err := engine.New(m, engine.Options{Queue: 256})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	h, err := server.New(e, server.Options{Name: "tiny", APIKey: key})
	require.NoError(t, err)
	srv := httptest.NewServer(h) // 127.0.0.1
	t.Cleanup(srv.Close)
	opts := []option.RequestOption{option.WithBaseURL(srv.URL + "/v1/"), option.WithMaxRetries(0), option.WithRequestTimeout(2 * time.Minute)}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	return &fixture{alone: alone, engine: e, url: srv.URL, client: openai.NewClient(opts...)}
}

func tinyLlama(seed uint64) modeltest.RandomModel {
	return modeltest.RandomModel{Config: modeltest.Presets["tiny"], Type: ggml.TypeF32, Converted: true, Seed: seed}
}

// greedy is the model alone's greedy text of n tokens after prompt.
func (f *fixture) greedy(t *testing.T, prompt string, n int) string {
	t.Helper()
	require.NoError(t, f.alone.Rewind(0))
	var b strings.Builder
	for s, err := range f.alone.GenerateText(context.Background(), prompt, model.GenerateOptions{MaxTokens: n, IgnoreEOS: true}) {
		require.NoError(t, err)
		b.WriteString(s)
	}
	return b.String()
}

// greedyChat is the model alone's greedy reply of n tokens to msgs.
func (f *fixture) greedyChat(t *testing.T, msgs []chat.Message, n int) string {
	t.Helper()
	require.NoError(t, f.alone.Rewind(0))
	var b strings.Builder
	for s, err := range f.alone.Chat(context.Background(), msgs, model.GenerateOptions{MaxTokens: n, IgnoreEOS: true}) {
		require.NoError(t, err)
		b.WriteString(s)
	}
	return b.String()
}

// ignoreEOS asks the server to go on after a token that ends generation
// (llama-server's ignore_eos), so that a random model's reply has its
// max_tokens.
var ignoreEOS = option.WithJSONSet("ignore_eos", true)

// randomText is words of the tiny model's made-up vocabulary.
func randomText(t *testing.T, f *fixture, seed uint64, n int) string {
	tok, err := f.alone.Tokenizer()
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 0))
	ids := modeltest.RandomTokens(rng, n, f.alone.Config.VocabSize)
	var b strings.Builder
	for _, id := range ids {
		if id >= 3 { // not BOS, EOS, unknown
			b.WriteString(tok.Token(id))
		}
	}
	return strings.ReplaceAll(b.String(), "\u2581", " ")
}

// TestCompletions: /v1/completions through the official client, whole and
// streamed, greedy, is the model's own greedy text; a stop string cuts it
// where it first occurs, finish_reason "stop"; usage counts the tokens.
func TestCompletions(t *testing.T) {
	rng := testutil.NewRNG(t)
	f := start(t, tinyLlama(rng.Uint64()), 4, "")
	ctx := context.Background()
	prompt := randomText(t, f, rng.Uint64(), 12)
	want := f.greedy(t, prompt, 24)
	params := openai.CompletionNewParams{
		Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(24), Temperature: openai.Float(0),
	}
	resp, err := f.client.Completions.New(ctx, params, ignoreEOS)
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, want, resp.Choices[0].Text)
	assert.Equal(t, openai.CompletionChoiceFinishReasonLength, resp.Choices[0].FinishReason)
	assert.EqualValues(t, 24, resp.Usage.CompletionTokens)
	ids, err := f.alone.Tokenize(prompt)
	require.NoError(t, err)
	assert.EqualValues(t, len(ids), resp.Usage.PromptTokens)

	stream := f.client.Completions.NewStreaming(ctx, params, ignoreEOS)
	var got strings.Builder
	chunks := 0
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) > 0 {
			got.WriteString(c.Choices[0].Text)
			chunks++
		}
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, want, got.String())
	assert.Greater(t, chunks, 2, "streamed in pieces")

	// A stop string from the middle of the text.
	runes := []rune(want)
	require.Greater(t, len(runes), 8)
	stop := string(runes[len(runes)/2 : len(runes)/2+3])
	cut := want[:strings.Index(want, stop)]
	params.Stop = openai.CompletionNewParamsStopUnion{OfString: openai.String(stop)}
	resp, err = f.client.Completions.New(ctx, params, ignoreEOS)
	require.NoError(t, err)
	assert.Equal(t, cut, resp.Choices[0].Text)
	assert.Equal(t, openai.CompletionChoiceFinishReasonStop, resp.Choices[0].FinishReason)
	stream = f.client.Completions.NewStreaming(ctx, params, ignoreEOS)
	got.Reset()
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			got.WriteString(c.Choices[0].Text)
		}
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, cut, got.String())
}

// TestChatCompletions: /v1/chat/completions, whole and streamed, greedy,
// is model.Model.Chat's reply (the file's chat template), and the usage
// chunk comes when asked for.
func TestChatCompletions(t *testing.T) {
	rng := testutil.NewRNG(t)
	f := start(t, tinyLlama(rng.Uint64()), 4, "")
	ctx := context.Background()
	msgs := []chat.Message{{Role: "system", Content: randomText(t, f, rng.Uint64(), 6)}, {Role: "user", Content: randomText(t, f, rng.Uint64(), 8)}}
	want := f.greedyChat(t, msgs, 20)
	params := openai.ChatCompletionNewParams{
		Model:       "tiny",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(msgs[0].Content), openai.UserMessage(msgs[1].Content)},
		MaxTokens:   openai.Int(20),
		Temperature: openai.Float(0),
	}
	resp, err := f.client.Chat.Completions.New(ctx, params, ignoreEOS)
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, want, resp.Choices[0].Message.Content)
	assert.Equal(t, "length", resp.Choices[0].FinishReason)
	assert.EqualValues(t, 20, resp.Usage.CompletionTokens)

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := f.client.Chat.Completions.NewStreaming(ctx, params, ignoreEOS)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	require.Len(t, acc.Choices, 1)
	assert.Equal(t, want, acc.Choices[0].Message.Content)
	assert.EqualValues(t, 20, acc.Usage.CompletionTokens)
}

// TestEmbeddings: /v1/embeddings of a BERT model is model.Model.Embed's
// embedding of the text, for one input and several, as floats and as
// base64; a generating model refuses it with a 400.
func TestEmbeddings(t *testing.T) {
	rng := testutil.NewRNG(t)
	c := modeltest.Presets["tiny"]
	c.Arch, c.ContextLength, c.RopeCtxOrig, c.NormEps, c.RMSEps = "bert", 64, 64, 1e-12, 0
	c.HeadCountKV = c.HeadCount
	f := start(t, modeltest.RandomModel{Config: c, Converted: true, Seed: rng.Uint64()}, 1, "")
	ctx := context.Background()
	texts := []string{randomText(t, f, rng.Uint64(), 5), randomText(t, f, rng.Uint64(), 9)}
	var wants [][]float32
	for _, text := range texts {
		ids, err := f.alone.Tokenize(text)
		require.NoError(t, err)
		v, err := f.alone.Embed(ctx, ids, model.PoolDefault)
		require.NoError(t, err)
		wants = append(wants, v)
	}
	for _, format := range []openai.EmbeddingNewParamsEncodingFormat{openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
		resp, err := f.client.Embeddings.New(ctx, openai.EmbeddingNewParams{
			Model: "tiny", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}, EncodingFormat: format,
		})
		require.NoError(t, err, format)
		require.Len(t, resp.Data, 2)
		for i, d := range resp.Data {
			require.Len(t, d.Embedding, len(wants[i]))
			for j, v := range d.Embedding {
				require.InDelta(t, wants[i][j], v, 1e-6, "%s: input %d, value %d", format, i, j)
			}
		}
	}

	g := start(t, tinyLlama(rng.Uint64()), 1, "")
	_, err := g.client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "tiny", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
}

// TestModelsAndKey: /v1/models lists the model; with an API key set, a
// request without it (or with another) is a 401 and /health needs none.
func TestModelsAndKey(t *testing.T) {
	rng := testutil.NewRNG(t)
	f := start(t, tinyLlama(rng.Uint64()), 1, "sesame")
	ctx := context.Background()
	page, err := f.client.Models.List(ctx)
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, "tiny", page.Data[0].ID)

	for _, key := range []string{"", "open"} {
		c := openai.NewClient(option.WithBaseURL(f.url+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
		_, err := c.Models.List(ctx)
		var apiErr *openai.Error
		require.ErrorAs(t, err, &apiErr, "key %q", key)
		assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
	}
	resp, err := http.Get(f.url + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// TestDisconnect: a client that goes away mid-stream frees its sequence.
func TestDisconnect(t *testing.T) {
	rng := testutil.NewRNG(t)
	f := start(t, tinyLlama(rng.Uint64()), 2, "")
	ctx, cancel := context.WithCancel(context.Background())
	stream := f.client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "tiny", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}, MaxTokens: openai.Int(900),
	}, ignoreEOS)
	require.True(t, stream.Next())
	require.True(t, stream.Next())
	assert.Equal(t, 1, f.engine.Stats().Active)
	cancel()
	stream.Close()
	require.Eventually(t, func() bool { return f.engine.Stats().Active == 0 }, 10*time.Second, time.Millisecond)
	assert.Less(t, f.engine.Stats().Generated, 900)
}

// TestLoad: 32 clients at once, 4 requests each (completions and chats,
// whole and streamed, greedy), through 8 sequences: every request
// completes with its own text, the one the model alone gives, none lost
// or mixed with another's; a second round leaves the heap where the first
// left it.
func TestLoad(t *testing.T) {
	rng := testutil.NewRNG(t)
	f := start(t, tinyLlama(rng.Uint64()), 8, "")
	const clients, each = 32, 4
	type job struct {
		prompt string
		chat   bool
		stream bool
		n      int
		want   string
	}
	jobs := make([]job, clients*each)
	for i := range jobs {
		j := job{prompt: randomText(t, f, rng.Uint64(), 1+rng.IntN(20)), chat: i%2 == 0, stream: i%3 == 0, n: 1 + rng.IntN(12)}
		if j.chat {
			j.want = f.greedyChat(t, []chat.Message{{Role: "user", Content: j.prompt}}, j.n)
		} else {
			j.want = f.greedy(t, j.prompt, j.n)
		}
		jobs[i] = j
	}
	run := func(ctx context.Context, j job) (string, error) {
		if j.chat {
			p := openai.ChatCompletionNewParams{Model: "tiny", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(j.prompt)},
				MaxTokens: openai.Int(int64(j.n)), Temperature: openai.Float(0)}
			if !j.stream {
				r, err := f.client.Chat.Completions.New(ctx, p, ignoreEOS)
				if err != nil {
					return "", err
				}
				return r.Choices[0].Message.Content, nil
			}
			s := f.client.Chat.Completions.NewStreaming(ctx, p, ignoreEOS)
			var b strings.Builder
			for s.Next() {
				if c := s.Current(); len(c.Choices) > 0 {
					b.WriteString(c.Choices[0].Delta.Content)
				}
			}
			return b.String(), s.Err()
		}
		p := openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(j.prompt)},
			MaxTokens: openai.Int(int64(j.n)), Temperature: openai.Float(0)}
		if !j.stream {
			r, err := f.client.Completions.New(ctx, p, ignoreEOS)
			if err != nil {
				return "", err
			}
			return r.Choices[0].Text, nil
		}
		s := f.client.Completions.NewStreaming(ctx, p, ignoreEOS)
		var b strings.Builder
		for s.Next() {
			if c := s.Current(); len(c.Choices) > 0 {
				b.WriteString(c.Choices[0].Text)
			}
		}
		return b.String(), s.Err()
	}
	round := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		got := make([]string, len(jobs))
		errs := make([]error, len(jobs))
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range each {
					i := c*each + k
					got[i], errs[i] = run(ctx, jobs[i])
				}
			}()
		}
		wg.Wait()
		for i := range jobs {
			require.NoError(t, errs[i], "request %d", i)
			require.Equal(t, jobs[i].want, got[i], "request %d (chat %v, stream %v)", i, jobs[i].chat, jobs[i].stream)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	round()
	h1 := heap()
	round()
	h2 := heap()
	t.Logf("heap after round 1: %d KiB, after round 2: %d KiB; %+v", h1>>10, h2>>10, f.engine.Stats())
	assert.Less(t, int64(h2)-int64(h1), int64(8<<20), "the heap grew by %d KiB", (int64(h2)-int64(h1))>>10)
	assert.Zero(t, f.engine.Stats().Active)
}

// TestBadRequests: requests the server cannot take are JSON errors with
// their status, through the client.
func TestBadRequests(t *testing.T) {
	rng := testutil.NewRNG(t)
	f := start(t, tinyLlama(rng.Uint64()), 1, "")
	ctx := context.Background()
	status := func(err error) int {
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			return 0
		}
		return apiErr.StatusCode
	}
	_, err := f.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny"})
	assert.Equal(t, http.StatusBadRequest, status(err), "no messages: %v", err)
	_, err = f.client.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(strings.Repeat("long ", 2000))}})
	assert.Equal(t, http.StatusBadRequest, status(err), "a prompt longer than the context: %v", err)
	_, err = f.client.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}, MaxTokens: openai.Int(0)})
	assert.Equal(t, http.StatusBadRequest, status(err), "max_tokens 0: %v", err)
	_, err = f.client.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}, TopP: openai.Float(2)})
	assert.Equal(t, http.StatusBadRequest, status(err), "top_p 2: %v", err)
	_, err = f.client.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}}, option.WithJSONSet("temperature", "hot"))
	assert.Equal(t, http.StatusBadRequest, status(err), "a temperature that is no number: %v", err)
	_, err = f.client.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{1, 1 << 40}}})
	assert.Equal(t, http.StatusBadRequest, status(err), "a token that is no int32: %v", err)
	_, err = f.client.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{1, 99999}}})
	assert.Equal(t, http.StatusBadRequest, status(err), "a token outside the vocabulary: %v", err)
	_, err = f.client.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}}, option.WithJSONSet("pad", strings.Repeat("x", 9<<20)))
	assert.Equal(t, http.StatusRequestEntityTooLarge, status(err), "a body over 8 MiB: %v", err)
	resp, err := http.Post(f.url+"/v1/nothing", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = http.Get(f.url + "/v1/completions")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}
