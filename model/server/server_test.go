package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/engine"
	_ "github.com/go-ggml/ggml/model/llama"
	"github.com/go-ggml/ggml/model/modeltest"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunLeakChecked(m)) }

// TestStopper: text cut in random pieces and passed through a stopper
// comes out as the text up to where the stop string that ends first
// begins, whatever the pieces, and nothing that may begin a stop string
// goes out before it is known not to.
func TestStopper(t *testing.T) {
	rng := testutil.NewRNG(t)
	alphabet := []rune("abcé ")
	word := func(n int) string {
		r := make([]rune, n)
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(r)
	}
	for range 2000 {
		text := word(rng.IntN(40))
		var stops []string
		for range rng.IntN(4) {
			stops = append(stops, word(1+rng.IntN(4)))
		}
		// The shortest prefix of text that holds a stop string, cut
		// where that stop string begins (the longest, of those that end
		// there).
		want, wantStop := text, false
		for end := 1; end <= len(text) && !wantStop; end++ {
			for _, st := range stops {
				if strings.HasSuffix(text[:end], st) && (!wantStop || end-len(st) < len(want)) {
					want, wantStop = text[:end-len(st)], true
				}
			}
		}
		s := &stopper{stops: stops}
		var got strings.Builder
		stopped := false
		for rest := text; rest != "" && !stopped; {
			k := min(len(rest), 1+rng.IntN(5))
			var out string
			out, stopped = s.add(rest[:k])
			got.WriteString(out)
			rest = rest[k:]
			if !stopped {
				// What went out is followed by no stop string's start.
				require.True(t, strings.HasPrefix(want, got.String()), "%q, stops %q: sent %q", text, stops, got.String())
			}
		}
		if !stopped {
			got.WriteString(s.flush())
		}
		require.Equal(t, want, got.String(), "%q, stops %q", text, stops)
		require.Equal(t, wantStop, stopped, "%q, stops %q", text, stops)
	}
}

// TestHostileRequests: bodies a client may send that the server cannot
// take are JSON errors in OpenAI's shape with their status, and the
// server goes on serving.
func TestHostileRequests(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: modeltest.Presets["tiny"], Converted: true, Seed: rng.Uint64()}))
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 64, Sequences: 2})
	e, err := engine.New(m, engine.Options{})
	require.NoError(t, err)
	defer e.Close()
	s, err := New(e, Options{MaxBodyBytes: 1 << 16, APIKey: "k"})
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	defer srv.Close()
	do := func(method, path, key, body string) (int, apiError) {
		req, err := http.NewRequestWithContext(context.Background(), method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var e apiError
		if resp.StatusCode != http.StatusOK {
			require.NoError(t, json.Unmarshal(data, &e), "%s", data)
			require.NotEmpty(t, e.Error.Message)
			require.NotEmpty(t, e.Error.Type)
		}
		return resp.StatusCode, e
	}
	for _, tc := range []struct {
		path, key, body string
		status          int
	}{
		{"/v1/completions", "", `{"prompt":"x"}`, 401},
		{"/v1/completions", "K", `{"prompt":"x"}`, 401},
		{"/v1/completions", "k", `{"prompt":"x"`, 400},
		{"/v1/completions", "k", `[]`, 400},
		{"/v1/completions", "k", `{}`, 400},
		{"/v1/completions", "k", `{"prompt":"x","temperature":1e400}`, 400},
		{"/v1/completions", "k", `{"prompt":"x","temperature":1e39}`, 400},
		{"/v1/completions", "k", `{"prompt":"x","temperature":-1}`, 400},
		{"/v1/completions", "k", `{"prompt":"x","top_k":-3}`, 400},
		{"/v1/completions", "k", `{"prompt":"x","max_tokens":-5}`, 400},
		{"/v1/completions", "k", `{"prompt":"x","n":2}`, 400},
		{"/v1/completions", "k", `{"prompt":"x","stop":[1,2]}`, 400},
		{"/v1/completions", "k", `{"prompt":"x","stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}`, 400},
		{"/v1/completions", "k", `{"prompt":["x","y"]}`, 400},
		{"/v1/completions", "k", `{"prompt":[[1],[2]]}`, 400},
		{"/v1/completions", "k", `{"prompt":[-1]}`, 400},
		{"/v1/completions", "k", `{"prompt":{"a":1}}`, 400},
		{"/v1/completions", "k", `{"prompt":"` + strings.Repeat("x ", 40000) + `"}`, 413},
		{"/v1/chat/completions", "k", `{"messages":[]}`, 400},
		{"/v1/chat/completions", "k", `{"messages":[{"content":"x"}]}`, 400},
		{"/v1/chat/completions", "k", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400},
		{"/v1/chat/completions", "k", `{"messages":[{"role":"user","content":7}]}`, 400},
		{"/v1/chat/completions", "k", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, 400},
		{"/v1/embeddings", "k", `{"input":"x"}`, 400},
		{"/v1/nothing", "k", `{}`, 404},
	} {
		status, _ := do("POST", tc.path, tc.key, tc.body)
		assert.Equal(t, tc.status, status, "%s %.80s", tc.path, tc.body)
	}
	status, _ := do("GET", "/v1/chat/completions", "k", "")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	status, _ = do("GET", "/health", "", "")
	assert.Equal(t, http.StatusOK, status)
	status, _ = do("POST", "/v1/completions", "k", `{"prompt":"x","max_tokens":2,"stop":"","seed":-7}`)
	assert.Equal(t, http.StatusOK, status, "still serving")
}

// TestStreamMatchesWhole: a streamed completion's and chat's pieces add
// up to the text of the same request answered whole (greedy), with
// characters that JSON escapes in them.
func TestStreamMatchesWhole(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: modeltest.Presets["tiny"], Converted: true, Seed: rng.Uint64()}))
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 128, Sequences: 2})
	e, err := engine.New(m, engine.Options{})
	require.NoError(t, err)
	defer e.Close()
	s, err := New(e, Options{})
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	defer srv.Close()
	post := func(path, body string) string {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(data)
	}
	type chunk struct {
		Choices []struct {
			Text    string `json:"text"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	for _, tc := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt":"a \"quoted\" \\ line\n","max_tokens":24,"temperature":0,"ignore_eos":true`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"<tab>\t"}],"max_tokens":24,"temperature":0,"ignore_eos":true`},
	} {
		var whole chunk
		require.NoError(t, json.Unmarshal([]byte(post(tc.path, tc.body+"}")), &whole))
		want := whole.Choices[0].Text + whole.Choices[0].Message.Content
		require.NotEmpty(t, want)
		var got strings.Builder
		events := 0
		for _, line := range strings.Split(post(tc.path, tc.body+`,"stream":true}`), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var c chunk
			require.NoError(t, json.Unmarshal([]byte(data), &c), data)
			for _, ch := range c.Choices {
				got.WriteString(ch.Text + ch.Delta.Content)
			}
			events++
		}
		assert.Equal(t, want, got.String(), tc.path)
		assert.Greater(t, events, 3, tc.path)
	}
}
