// Package server is an OpenAI-compatible HTTP API over an engine.Engine:
// /v1/completions, /v1/chat/completions (the model file's chat template),
// /v1/embeddings (for embedding models), /v1/models and /health, with
// streaming as server-sent events, as llama.cpp's llama-server serves
// them. A client that disconnects cancels its request's sequence. Bodies
// (their size and the time they take to arrive), prompts (before they are
// tokenized), messages, max_tokens and stop strings are bounded; every bad
// request gets a JSON error in OpenAI's shape and its HTTP status, and so
// does one that asks for what the server does not implement (logit_bias,
// logprobs, echo, response_format, tools, ...); an optional API key is
// checked in constant time. cmd/llama-server runs it.
//
// Nothing here depends on the ggml provider.
package server

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/chat"
	"github.com/go-ggml/ggml/model/engine"
	"github.com/go-ggml/ggml/model/sample"
)

// Options say how a Server answers.
type Options struct {
	// Name is the model's id in /v1/models and in responses; requests
	// may name any model (there is one). Empty means "model".
	Name string
	// APIKey, if set, is the key every request but /health must carry
	// as "Authorization: Bearer KEY".
	APIKey string
	// MaxBodyBytes is the largest request body; larger is a 413 error.
	// 0 means 8 MiB.
	MaxBodyBytes int64
	// MaxTokens caps max_tokens (and the tokens of a request that asks
	// for none); 0 means the model's ContextSize.
	MaxTokens int
	// WriteTimeout bounds each write of a response: a client that does
	// not read for that long loses its connection (and its request's
	// sequence). 0 means 60 s.
	WriteTimeout time.Duration
	// BodyTimeout bounds the reading of a request's body: a client that
	// sends it slower loses its connection. 0 means 60 s.
	BodyTimeout time.Duration
	// MaxPromptBytes is the longest text the server tokenizes for one
	// request: a completion's prompt, a chat's rendered messages, each
	// embedding input; longer is a 400 error before any tokenizing, whose
	// memory and time grow with the text. 0 means PromptBytesPerToken
	// bytes for each token of the model's context.
	MaxPromptBytes int
}

// PromptBytesPerToken is the default MaxPromptBytes per token of the
// model's context: text runs 3 to 6 bytes a token (a run of spaces up to
// 16 or so), so a text of more bytes than this allows does not fit the
// context.
const PromptBytesPerToken = 32

// Server answers the OpenAI API with an engine's model. It is an
// http.Handler, safe for concurrent use.
type Server struct {
	e    *engine.Engine
	m    *model.Model
	opts Options
	mux  *http.ServeMux
	now  func() time.Time
}

// endpoints are the server's paths and their methods.
var endpoints = map[string]string{
	"/health": "GET", "/v1/models": "GET",
	"/v1/completions": "POST", "/v1/chat/completions": "POST", "/v1/embeddings": "POST",
}

// New returns a Server over e.
func New(e *engine.Engine, o Options) (*Server, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: server: New of a nil engine", ggml.ErrInvalid)
	}
	if o.MaxBodyBytes < 0 || o.MaxTokens < 0 || o.WriteTimeout < 0 || o.BodyTimeout < 0 || o.MaxPromptBytes < 0 {
		return nil, fmt.Errorf("%w: server: Options with a negative limit", ggml.ErrInvalid)
	}
	if o.Name == "" {
		o.Name = "model"
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 8 << 20
	}
	m := e.Model()
	if o.MaxTokens == 0 || o.MaxTokens > m.ContextSize() {
		o.MaxTokens = m.ContextSize()
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 60 * time.Second
	}
	if o.BodyTimeout == 0 {
		o.BodyTimeout = 60 * time.Second
	}
	if o.MaxPromptBytes == 0 {
		o.MaxPromptBytes = PromptBytesPerToken * m.ContextSize()
	}
	s := &Server{e: e, m: m, opts: o, mux: http.NewServeMux(), now: time.Now}
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	s.mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if method, ok := endpoints[r.URL.Path]; ok {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", fmt.Sprintf("%s %s: the endpoint takes %s", r.Method, r.URL.Path, method))
			return
		}
		writeError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	return s, nil
}

// ServeHTTP checks the API key and the body's size and answers r.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.APIKey != "" && r.URL.Path != "/health" {
		// The scheme is case-insensitive (RFC 9110, 11.1).
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.APIKey)) != 1 {
			writeError(w, http.StatusUnauthorized, "authentication_error", "a valid API key is required (Authorization: Bearer KEY)")
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	s.mux.ServeHTTP(w, r)
}

// apiError is OpenAI's error body.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	var e apiError
	e.Error.Message, e.Error.Type = msg, typ
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// statusOf maps an error of the engine or the model to an HTTP status and
// OpenAI error type.
func statusOf(err error) (int, string) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "invalid_request_error"
	case errors.Is(err, engine.ErrQueueFull):
		return http.StatusServiceUnavailable, "server_busy"
	case errors.Is(err, ggml.ErrClosed):
		return http.StatusServiceUnavailable, "server_error"
	case errors.Is(err, ggml.ErrInvalid), errors.Is(err, model.ErrToken), errors.Is(err, model.ErrContextFull),
		errors.Is(err, sample.ErrParams), errors.Is(err, model.ErrModel), errors.Is(err, errRequest),
		// The template's rejection of the messages (raise_exception) or
		// of their size.
		errors.Is(err, chat.ErrTemplate):
		return http.StatusBadRequest, "invalid_request_error"
	}
	return http.StatusInternalServerError, "server_error"
}

// errRequest marks a request the server cannot take.
var errRequest = errors.New("server: bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errRequest, fmt.Sprintf(format, args...))
}

func fail(w http.ResponseWriter, err error) {
	status, typ := statusOf(err)
	writeError(w, status, typ, err.Error())
}

// decode reads r's JSON body into v: one JSON value, read within the
// server's BodyTimeout.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	// The read deadline covers the body only: a connection's deadline
	// would also cut the background read that notices a client leaving
	// while a long answer streams.
	// A body that failed keeps the deadline: net/http reads what is left
	// of it after the handler, which a stalled client would make wait.
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout)) == nil
	d := json.NewDecoder(r.Body)
	err := d.Decode(v)
	if err == nil {
		if _, err = d.Token(); errors.Is(err, io.EOF) {
			if deadline {
				_ = rc.SetReadDeadline(time.Time{})
			}
			return nil
		} else if err == nil {
			err = errors.New("more than one JSON value")
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return badRequest("the body is not the JSON of a request: %v", err)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": s.opts.Name, "object": "model", "created": s.now().Unix(), "owned_by": "go-ggml",
		}},
	})
}

// newID returns an id for a response: prefix and 24 random hex digits.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// randomSeed is a sampler's seed where the request gives none.
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}
