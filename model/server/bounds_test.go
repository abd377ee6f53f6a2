package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	_ "github.com/go-ggml/ggml/model/bert"
	"github.com/go-ggml/ggml/model/chat"
	"github.com/go-ggml/ggml/model/engine"
	"github.com/go-ggml/ggml/model/modeltest"
)

// boundsServer starts a Server with options o over a tiny random model of
// architecture arch ("" for llama) with a 64-token context.
func boundsServer(t *testing.T, arch string, o Options) (*Server, *httptest.Server) {
	t.Helper()
	rng := testutil.NewRNG(t)
	c := modeltest.Presets["tiny"]
	if arch == "bert" {
		c.Arch, c.ContextLength, c.RopeCtxOrig, c.NormEps, c.RMSEps = "bert", 64, 64, 1e-12, 0
		c.HeadCountKV = c.HeadCount
	}
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: c, Converted: true, Seed: rng.Uint64()}))
	m := modeltest.LoadModel(t, path, model.Options{ContextSize: 64, Sequences: 2})
	e, err := engine.New(m, engine.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	s, err := New(e, o)
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// post sends body to path with the Authorization header auth ("" for
// none) and returns the status and the error's message.
func post(t *testing.T, srv *httptest.Server, path, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "POST", srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var e apiError
	if resp.StatusCode != http.StatusOK {
		require.NoError(t, json.Unmarshal(data, &e), "%s", data)
	}
	return resp.StatusCode, e.Error.Message
}

// TestRequestsRefusedNotIgnored: a null where a prompt, an input or a
// token ID belongs, OpenAI fields the server does not implement, a body
// with more than one JSON value and more messages than the context holds
// are 400 errors that say why, where they were read as "", token 0 or
// nothing; the same fields asking for nothing are accepted; the bearer
// scheme is case-insensitive.
func TestRequestsRefusedNotIgnored(t *testing.T) {
	_, srv := boundsServer(t, "", Options{APIKey: "k"})
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/completions", `{"prompt":null}`, "no prompt"},
		{"/v1/completions", `{"prompt":[null]}`, "null"},
		{"/v1/completions", `{"prompt":[[null]]}`, "null"},
		{"/v1/completions", `{"prompt":[1,null,3]}`, "token 1 is null"},
		{"/v1/completions", `{"prompt":"x","logit_bias":{"5":-100}}`, "logit_bias"},
		{"/v1/completions", `{"prompt":"x","logprobs":5}`, "logprobs"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"logprobs":true}`, "logprobs"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_logprobs":3}`, "top_logprobs"},
		{"/v1/completions", `{"prompt":"x","echo":true}`, "echo"},
		{"/v1/completions", `{"prompt":"x","best_of":3}`, "best_of"},
		{"/v1/completions", `{"prompt":"x","suffix":"y"}`, "suffix"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"a"}}}`, "response_format"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"functions":[{"name":"f"}]}`, "functions"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"tool_choice":"required","tools":[]}`, "tool_choice"},
		{"/v1/completions", `{"prompt":"x","max_tokens":2} trailing`, "not the JSON of a request"},
		{"/v1/completions", `{"prompt":"x","max_tokens":2}{}`, "more than one JSON value"},
		{"/v1/chat/completions", `{"messages":[` + strings.TrimSuffix(strings.Repeat(`{"role":"u"},`, 65), ",") + `]}`, "65 messages"},
	} {
		status, msg := post(t, srv, tc.path, "Bearer k", tc.body)
		assert.Equal(t, http.StatusBadRequest, status, "%s %.100s: %s", tc.path, tc.body, msg)
		assert.Contains(t, msg, tc.want, "%s %.100s", tc.path, tc.body)
	}
	for _, body := range []string{
		`{"prompt":"x","max_tokens":2,"logprobs":null,"logit_bias":{},"echo":false,"best_of":1,"suffix":"","tool_choice":"none"}`,
		`{"prompt":[1,2,3],"max_tokens":2,"logprobs":0}` + " \n\t ",
	} {
		status, msg := post(t, srv, "/v1/completions", "bearer k", body)
		assert.Equal(t, http.StatusOK, status, "%s: %s", body, msg)
	}
	status, msg := post(t, srv, "/v1/chat/completions", "BEARER k",
		`{"messages":[{"role":"user","content":"x"}],"max_tokens":2,"response_format":{"type":"text"},"tool_choice":"auto","logprobs":false}`)
	assert.Equal(t, http.StatusOK, status, msg)
	status, _ = post(t, srv, "/v1/completions", "Basic k", `{"prompt":"x","max_tokens":2}`)
	assert.Equal(t, http.StatusUnauthorized, status)

	_, bert := boundsServer(t, "bert", Options{})
	for _, tc := range []struct{ body, want string }{
		{`{"input":null}`, "no input"},
		{`{"input":[]}`, "no input"},
		{`{"input":[null]}`, "input 0 is null"},
		{`{"input":["a",null]}`, "input 1 is null"},
		{`{"input":[[1,null]]}`, "token 1 is null"},
		{`{"input":[null,[1]]}`, "input 0 is null"},
	} {
		status, msg := post(t, bert, "/v1/embeddings", "", tc.body)
		assert.Equal(t, http.StatusBadRequest, status, "%s: %s", tc.body, msg)
		assert.Contains(t, msg, tc.want, tc.body)
	}
	status, msg = post(t, bert, "/v1/embeddings", "", `{"input":["a b","c"]}`)
	assert.Equal(t, http.StatusOK, status, msg)
}

// TestTemplateRejectionIs400: a chat template's raise_exception and its
// limits are the request's fault, a 400, not a server error.
func TestTemplateRejectionIs400(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("model: %w", fmt.Errorf("%w: %w", chat.ErrTemplate, &chat.RaiseError{Message: "roles must alternate"})),
		fmt.Errorf("model: %w", fmt.Errorf("%w: %w: more than 5000000 steps", chat.ErrTemplate, chat.ErrLimit)),
	} {
		status, typ := statusOf(err)
		assert.Equal(t, http.StatusBadRequest, status, err.Error())
		assert.Equal(t, "invalid_request_error", typ)
	}
}

// TestLongPromptsRefusedBeforeTokenizing: a prompt, a chat and an
// embedding input longer than MaxPromptBytes are 400 errors (the context
// is full) that cost about their body's memory, where tokenizing them
// cost some 200 bytes a byte; the default bound is PromptBytesPerToken a
// token of the context, and a prompt under it that does not fit is
// still refused by the context's own check.
func TestLongPromptsRefusedBeforeTokenizing(t *testing.T) {
	s, srv := boundsServer(t, "", Options{})
	require.Equal(t, PromptBytesPerToken*64, s.opts.MaxPromptBytes)
	long := strings.Repeat("<|eot_id|>a", 4<<20/11)
	for _, tc := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt":"` + long + `"}`},
		{"/v1/completions", `{"prompt":["` + long + `"]}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long + `"}]}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long[:s.opts.MaxPromptBytes-20] + `"},{"role":"user","content":"` + long[:30] + `"}]}`},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("POST", tc.path, strings.NewReader(tc.body)))
		runtime.ReadMemStats(&after)
		assert.Equal(t, http.StatusBadRequest, rec.Code, "%s %.60s: %s", tc.path, tc.body, rec.Body)
		assert.Contains(t, rec.Body.String(), "MaxPromptBytes", tc.path)
		// The body is read, decoded and copied a few times: well under
		// 16 bytes a byte of it.
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16*len(tc.body)), "%s %.60s", tc.path, tc.body)
	}
	// Under the bound but over the context: the context's check.
	status, msg := post(t, srv, "/v1/completions", "", `{"prompt":"`+strings.Repeat("a b ", 500)+`"}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.NotContains(t, msg, "MaxPromptBytes")
	assert.Contains(t, msg, "context")

	_, bert := boundsServer(t, "bert", Options{MaxPromptBytes: 100})
	status, msg = post(t, bert, "/v1/embeddings", "", `{"input":["short","`+strings.Repeat("x", 101)+`"]}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, msg, "input 1 is 101 bytes")
	status, msg = post(t, bert, "/v1/embeddings", "", `{"input":["short","`+strings.Repeat("x ", 50)+`"]}`)
	assert.Equal(t, http.StatusOK, status, msg)
}

// TestChatTextIsChatPrompt: the chat endpoint tokenizes ChatText's text,
// which must give ChatPrompt's tokens, for messages of random roles and
// texts with special tokens in them.
func TestChatTextIsChatPrompt(t *testing.T) {
	s, _ := boundsServer(t, "", Options{})
	rng := testutil.NewRNG(t)
	words := []string{"a", "b c", "<|eot_id|>", "é", "\n", "<|start_header_id|>", "xyz"}
	for range 20 {
		msgs := make([]chat.Message, 1+rng.IntN(4))
		for i := range msgs {
			var b strings.Builder
			for range rng.IntN(6) {
				b.WriteString(words[rng.IntN(len(words))])
			}
			msgs[i] = chat.Message{Role: []string{"system", "user", "assistant"}[rng.IntN(3)], Content: b.String()}
		}
		want, err := s.m.ChatPrompt(msgs)
		require.NoError(t, err)
		text, err := s.m.ChatText(msgs)
		require.NoError(t, err)
		require.Contains(t, text, msgs[len(msgs)-1].Content)
		got, err := s.m.Tokenize(text)
		require.NoError(t, err)
		require.Equal(t, want, got, "%q", text)
	}
}

// TestSlowBodyTimesOut: a client that stops sending its body gets a 400
// once BodyTimeout has passed, rather than holding the handler forever;
// the deadline covers the body only, so the server then serves the next
// request, a streamed one included.
func TestSlowBodyTimesOut(t *testing.T) {
	_, srv := boundsServer(t, "", Options{BodyTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"prompt\":")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "no answer to a stalled body")
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(data), "timeout")
	status, msg := post(t, srv, "/v1/completions", "", `{"prompt":"x","max_tokens":4,"stream":true}`)
	assert.Equal(t, http.StatusOK, status, msg)
}
