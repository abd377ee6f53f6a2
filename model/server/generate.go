package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/chat"
	"github.com/go-ggml/ggml/model/engine"
	"github.com/go-ggml/ggml/model/sample"
)

// maxStops is the most stop strings a request may give, maxStopLen the
// longest.
const maxStops, maxStopLen = 16, 256

// params are the generation settings the completion endpoints share;
// absent ones are nil and take llama-server's defaults (sample.Defaults).
type params struct {
	Model               string          `json:"model"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	MinP                *float64        `json:"min_p"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	RepeatPenalty       *float64        `json:"repeat_penalty"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"`

	// OpenAI's fields this server does not implement: a request that
	// asks for what they do is refused (unsupported), not answered as if
	// it had not asked.
	LogitBias      map[string]json.RawMessage `json:"logit_bias"`
	Logprobs       json.RawMessage            `json:"logprobs"`
	TopLogprobs    *int                       `json:"top_logprobs"`
	Echo           bool                       `json:"echo"`
	BestOf         *int                       `json:"best_of"`
	Suffix         *string                    `json:"suffix"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Functions  []json.RawMessage `json:"functions"`
	ToolChoice json.RawMessage   `json:"tool_choice"`
}

// unsupported returns the error of p's first field that asks for what
// the server does not do, or nil.
func (p *params) unsupported() error {
	switch lp := strings.TrimSpace(string(p.Logprobs)); {
	case len(p.LogitBias) > 0:
		return badRequest("logit_bias is not supported")
	case lp != "" && lp != "null" && lp != "false" && lp != "0":
		return badRequest("logprobs are not supported")
	case p.TopLogprobs != nil && *p.TopLogprobs != 0:
		return badRequest("top_logprobs are not supported")
	case p.Echo:
		return badRequest("echo is not supported")
	case p.BestOf != nil && *p.BestOf != 1:
		return badRequest("best_of is %d: one completion per request", *p.BestOf)
	case p.Suffix != nil && *p.Suffix != "":
		return badRequest("suffix is not supported")
	case p.ResponseFormat != nil && p.ResponseFormat.Type != "" && p.ResponseFormat.Type != "text":
		return badRequest("response_format %q is not supported (text only)", p.ResponseFormat.Type)
	case len(p.Functions) > 0:
		return badRequest("functions are not supported")
	}
	switch tc := strings.TrimSpace(string(p.ToolChoice)); tc {
	case "", "null", `"none"`, `"auto"`:
		return nil
	default:
		return badRequest("tool_choice %.40s: tools are not supported", tc)
	}
}

// finite32 checks that a request's number is finite and within float32's
// range, and returns it as one.
func finite32(name string, v float64) (float32, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32 {
		return 0, badRequest("%s is %v, want a finite number", name, v)
	}
	return float32(v), nil
}

// options turns p into the engine's settings; defMax is the endpoint's
// max_tokens where p has none (0: until the model ends or the context
// fills).
func (s *Server) options(p *params, defMax int) (model.GenerateOptions, []string, error) {
	o := model.GenerateOptions{Sampling: sample.Defaults(), IgnoreEOS: p.IgnoreEOS}
	o.Sampling.Seed = randomSeed()
	if err := p.unsupported(); err != nil {
		return o, nil, err
	}
	if p.N != nil && *p.N != 1 {
		return o, nil, badRequest("n is %d: one completion per request", *p.N)
	}
	maxTok := p.MaxTokens
	if p.MaxCompletionTokens != nil {
		maxTok = p.MaxCompletionTokens
	}
	o.MaxTokens = defMax
	if maxTok != nil {
		if *maxTok < 1 {
			return o, nil, badRequest("max_tokens is %d, want at least 1", *maxTok)
		}
		o.MaxTokens = *maxTok
	}
	if o.MaxTokens == 0 || o.MaxTokens > s.opts.MaxTokens {
		o.MaxTokens = s.opts.MaxTokens
	}
	var err error
	f32 := func(name string, v *float64, dst *float32) {
		if v != nil && err == nil {
			*dst, err = finite32(name, *v)
		}
	}
	f32("temperature", p.Temperature, &o.Sampling.Temperature)
	f32("top_p", p.TopP, &o.Sampling.TopP)
	f32("min_p", p.MinP, &o.Sampling.MinP)
	f32("frequency_penalty", p.FrequencyPenalty, &o.Sampling.FrequencyPenalty)
	f32("presence_penalty", p.PresencePenalty, &o.Sampling.PresencePenalty)
	f32("repeat_penalty", p.RepeatPenalty, &o.Sampling.RepeatPenalty)
	if err != nil {
		return o, nil, err
	}
	if p.TopK != nil {
		o.Sampling.TopK = *p.TopK
	}
	if p.Seed != nil {
		o.Sampling.Seed = uint64(*p.Seed)
	}
	if err := o.Sampling.Validate(); err != nil {
		return o, nil, err
	}
	stops, err := parseStops(p.Stop)
	return o, stops, err
}

// parseStops reads stop: null, a string, or an array of strings.
func parseStops(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	var stops []string
	if err := json.Unmarshal(raw, &one); err == nil {
		stops = []string{one}
	} else if err := json.Unmarshal(raw, &stops); err != nil {
		return nil, badRequest("stop is not a string or an array of strings")
	}
	if len(stops) > maxStops {
		return nil, badRequest("%d stop strings, at most %d", len(stops), maxStops)
	}
	out := stops[:0]
	for _, st := range stops {
		if len(st) > maxStopLen {
			return nil, badRequest("a stop string of %d bytes, at most %d", len(st), maxStopLen)
		}
		if st != "" {
			out = append(out, st)
		}
	}
	return out, nil
}

// stopper cuts generated text at the stop string that ends first (the
// shortest text that holds one), holding back the text that may be the
// beginning of one until it is known not to be.
type stopper struct {
	stops   []string
	pending string // text not sent yet
}

// add takes piece and returns the text that can go to the client, and
// whether a stop string ended the generation.
func (s *stopper) add(piece string) (string, bool) {
	s.pending += piece
	// The stop string that ends first in the text (the earlier start of
	// two that end together): where generation stops as the text grows.
	best, bestEnd := -1, 0
	for _, st := range s.stops {
		if i := strings.Index(s.pending, st); i >= 0 && (best < 0 || i+len(st) < bestEnd || i+len(st) == bestEnd && i < best) {
			best, bestEnd = i, i+len(st)
		}
	}
	if best >= 0 {
		out := s.pending[:best]
		s.pending = ""
		return out, true
	}
	hold := 0
	for _, st := range s.stops {
		for k := min(len(st)-1, len(s.pending)); k > hold; k-- {
			if strings.HasSuffix(s.pending, st[:k]) {
				hold = k
				break
			}
		}
	}
	out := s.pending[:len(s.pending)-hold]
	s.pending = s.pending[len(s.pending)-hold:]
	return out, false
}

// flush returns the text held back.
func (s *stopper) flush() string {
	out := s.pending
	s.pending = ""
	return out
}

// run generates after prompt and hands each piece of text to emit (false
// stops); it returns the finish reason ("stop": the model ended or a stop
// string; "length": max_tokens or the context), the number of tokens
// generated, and an error that ended the request otherwise.
func (s *Server) run(ctx context.Context, prompt []int32, o model.GenerateOptions, stops []string, emit func(string) bool) (reason string, n int, err error) {
	tok, err := s.m.Tokenizer()
	if err != nil {
		return "", 0, err
	}
	dec := tok.NewDecoder(false)
	st := &stopper{stops: stops}
	reason = "stop"
	for id, err := range s.e.Generate(ctx, engine.Request{Prompt: prompt, GenerateOptions: o}) {
		if err != nil {
			if errors.Is(err, model.ErrContextFull) && n > 0 {
				return "length", n, nil
			}
			return "", n, err
		}
		n++
		piece, err := dec.Add(id)
		if err != nil {
			return "", n, err
		}
		text, stopped := st.add(piece)
		if text != "" && !emit(text) {
			return "", n, ctx.Err()
		}
		if stopped {
			return "stop", n, nil
		}
		if n == o.MaxTokens && !tok.IsEOG(id) {
			reason = "length"
		}
	}
	text, stopped := st.add(dec.Flush())
	if !stopped {
		text += st.flush()
	}
	if text != "" && !emit(text) {
		return "", n, ctx.Err()
	}
	if stopped {
		reason = "stop"
	}
	return reason, n, nil
}

// sse writes server-sent events, each write bounded by the server's
// WriteTimeout.
type sse struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	s        *Server
	err      error
	buf      []byte    // the event being written, reused
	deadline time.Time // the write deadline last set
	tmpl     [2][]byte // a text chunk's JSON before and after its text (setPiece)
}

// pieceMark stands for a chunk's text in the JSON setPiece cuts.
const pieceMark = `\u0000piece\u0000`

// setPiece makes v, a chunk whose text is "\x00piece\x00", the template
// of piece: each token's event is the chunk's JSON with its text in
// place, written without marshaling the chunk again (a streamed token's
// cost in the server is mostly CPU that the model's threads wait for).
func (e *sse) setPiece(v any) {
	data, err := json.Marshal(v)
	i := bytes.Index(data, []byte(pieceMark))
	if err != nil || i < 0 {
		e.tmpl = [2][]byte{}
		return
	}
	e.tmpl = [2][]byte{data[:i], data[i+len(pieceMark):]}
}

// piece writes the template's chunk with text.
func (e *sse) piece(text string) bool {
	if e.err != nil {
		return false
	}
	q, err := json.Marshal(text)
	if err != nil || e.tmpl[0] == nil {
		e.err = fmt.Errorf("server: no chunk template: %v", err)
		return false
	}
	e.buf = append(append(append(append(e.buf[:0], "data: "...), e.tmpl[0]...), q[1:len(q)-1]...), e.tmpl[1]...)
	e.buf = append(e.buf, "\n\n"...)
	return e.write()
}

// write writes buf as one event and flushes it.
func (e *sse) write() bool {
	if now := e.s.now(); now.Sub(e.deadline) > -e.s.opts.WriteTimeout*3/4 {
		e.deadline = now.Add(e.s.opts.WriteTimeout)
		_ = e.rc.SetWriteDeadline(e.deadline)
	}
	if _, e.err = e.w.Write(e.buf); e.err == nil {
		e.err = e.rc.Flush()
	}
	return e.err == nil
}

func (s *Server) newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w), s: s}
}

// send writes one event of v's JSON (or the literal [DONE] for a nil v),
// and reports whether the client took it.
func (e *sse) send(v any) bool {
	if e.err != nil {
		return false
	}
	e.buf = append(e.buf[:0], "data: "...)
	if v == nil {
		e.buf = append(e.buf, "[DONE]"...)
	} else {
		data, err := json.Marshal(v)
		if err != nil {
			e.err = err
			return false
		}
		e.buf = append(e.buf, data...)
	}
	e.buf = append(e.buf, "\n\n"...)
	return e.write()
}

// usage is OpenAI's token counts.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func newUsage(prompt, completion int) *usage {
	return &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

// completionRequest is /v1/completions' body.
type completionRequest struct {
	params
	Prompt json.RawMessage `json:"prompt"`
}

// prompt reads a completion's prompt: a string, an array of one string,
// an array of token IDs, or an array of one array of them. A null where
// a string or an ID belongs is an error, not "" or token 0.
func (s *Server) prompt(raw json.RawMessage) ([]int32, error) {
	if isNull(raw) {
		return nil, badRequest("no prompt")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return s.tokenize("prompt", text)
	}
	var texts []*string
	if err := json.Unmarshal(raw, &texts); err == nil {
		if len(texts) != 1 {
			return nil, badRequest("%d prompts: one per request", len(texts))
		}
		if texts[0] == nil {
			return nil, badRequest("prompt [null]: want a string")
		}
		return s.tokenize("prompt", *texts[0])
	}
	var ids []*int32
	if err := json.Unmarshal(raw, &ids); err == nil {
		return tokenIDs("prompt", ids)
	}
	var idss [][]*int32
	if err := json.Unmarshal(raw, &idss); err == nil {
		if len(idss) != 1 {
			return nil, badRequest("%d prompts: one per request", len(idss))
		}
		return tokenIDs("prompt", idss[0])
	}
	return nil, badRequest("prompt is not a string or an array of token IDs")
}

// isNull reports whether raw is absent or JSON's null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// tokenIDs returns ids, read where a null is no ID (and a null array, nil,
// no array).
func tokenIDs(what string, ids []*int32) ([]int32, error) {
	if ids == nil {
		return nil, badRequest("%s is null, want an array of token IDs", what)
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		if id == nil {
			return nil, badRequest("%s: token %d is null, want an integer", what, i)
		}
		out[i] = *id
	}
	return out, nil
}

// tokenize tokenizes text, what of a request, if it is no longer than
// MaxPromptBytes.
func (s *Server) tokenize(what, text string) ([]int32, error) {
	if err := s.checkText(what, len(text)); err != nil {
		return nil, err
	}
	return s.m.Tokenize(text)
}

// checkText refuses a text of n bytes longer than MaxPromptBytes.
func (s *Server) checkText(what string, n int) error {
	if n > s.opts.MaxPromptBytes {
		return fmt.Errorf("%w: server: the %s is %d bytes, more than the %d-token context holds (at most %d bytes: Options.MaxPromptBytes)",
			model.ErrContextFull, what, n, s.m.ContextSize(), s.opts.MaxPromptBytes)
	}
	return nil
}

type completionChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if err := s.decode(w, r, &req); err != nil {
		fail(w, err)
		return
	}
	o, stops, err := s.options(&req.params, 16)
	if err != nil {
		fail(w, err)
		return
	}
	prompt, err := s.prompt(req.Prompt)
	if err != nil {
		fail(w, err)
		return
	}
	answer(s, w, r, prompt, o, stops, &req.params, shape[completionChoice]{
		id: "cmpl-", object: "text_completion", chunkObject: "text_completion",
		whole: func(text string, reason *string) completionChoice {
			return completionChoice{Text: text, FinishReason: reason}
		},
		piece: func(text string) completionChoice { return completionChoice{Text: text} },
		end:   func(reason *string) completionChoice { return completionChoice{FinishReason: reason} },
	})
}

// response is an answer of the completion endpoints, whole or a chunk of
// a stream, with the endpoint's choices.
type response[C any] struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []C    `json:"choices"`
	Usage   *usage `json:"usage,omitempty"`
}

// shape is how an endpoint's answers look: the id's prefix, the objects
// of a whole answer and of a chunk, and its choice for the whole text,
// for a streamed piece and for a stream's end; head, if set, is a
// stream's first chunk.
type shape[C any] struct {
	id, object, chunkObject string
	whole                   func(text string, reason *string) C
	head                    func() C
	piece                   func(text string) C
	end                     func(reason *string) C
}

// answer generates after prompt and writes the answer in sh's shape:
// whole, or streamed as server-sent events where p asks for it. A
// request's error before the first piece is a JSON error; after it, an
// error event.
func answer[C any](s *Server, w http.ResponseWriter, r *http.Request, prompt []int32, o model.GenerateOptions, stops []string, p *params, sh shape[C]) {
	resp := response[C]{ID: newID(sh.id), Object: sh.object, Created: s.now().Unix(), Model: s.opts.Name}
	if !p.Stream {
		var text strings.Builder
		reason, n, err := s.run(r.Context(), prompt, o, stops, func(t string) bool { text.WriteString(t); return true })
		if err != nil {
			fail(w, err)
			return
		}
		resp.Choices = []C{sh.whole(text.String(), &reason)}
		resp.Usage = newUsage(len(prompt), n)
		writeJSON(w, http.StatusOK, resp)
		return
	}
	resp.Object = sh.chunkObject
	var out *sse
	start := func() bool {
		if out != nil {
			return true
		}
		out = s.newSSE(w)
		if sh.head != nil {
			resp.Choices = []C{sh.head()}
			if !out.send(resp) {
				return false
			}
		}
		resp.Choices = []C{sh.piece("\x00piece\x00")}
		out.setPiece(resp)
		return true
	}
	reason, n, err := s.run(r.Context(), prompt, o, stops, func(t string) bool { return start() && out.piece(t) })
	if err != nil {
		if out == nil {
			fail(w, err)
		} else {
			s.streamError(out, err)
		}
		return
	}
	start()
	resp.Choices = []C{sh.end(&reason)}
	out.send(resp)
	if p.StreamOptions != nil && p.StreamOptions.IncludeUsage {
		resp.Choices, resp.Usage = []C{}, newUsage(len(prompt), n)
		out.send(resp)
	}
	out.send(nil)
}

// streamError ends a stream with an error event.
func (s *Server) streamError(out *sse, err error) {
	_, typ := statusOf(err)
	var e apiError
	e.Error.Message, e.Error.Type = err.Error(), typ
	out.send(e)
}

// chatRequest is /v1/chat/completions' body.
type chatRequest struct {
	params
	Messages []chatMessage `json:"messages"`
	Tools    []any         `json:"tools"`
}

// chatMessage is a message of a chat request: its content a string or
// an array of text parts.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (m chatMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", badRequest("a message's content is not a string or an array of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", badRequest("a content part of type %q: only text", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatChoice struct {
	Index        int        `json:"index"`
	Message      *chatDelta `json:"message,omitempty"`
	Delta        *chatDelta `json:"delta,omitempty"`
	Logprobs     any        `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := s.decode(w, r, &req); err != nil {
		fail(w, err)
		return
	}
	o, stops, err := s.options(&req.params, 0)
	if err != nil {
		fail(w, err)
		return
	}
	if len(req.Tools) > 0 {
		fail(w, badRequest("tools are not supported"))
		return
	}
	if len(req.Messages) == 0 {
		fail(w, badRequest("no messages"))
		return
	}
	// Each message takes a token of the context at least; the texts are
	// bounded before the template renders them, the rendered text before
	// it is tokenized.
	if n := len(req.Messages); n > s.m.ContextSize() {
		fail(w, fmt.Errorf("%w: server: %d messages, more than the %d-token context holds", model.ErrContextFull, n, s.m.ContextSize()))
		return
	}
	msgs := make([]chat.Message, len(req.Messages))
	size := 0
	for i, m := range req.Messages {
		if m.Role == "" {
			fail(w, badRequest("message %d has no role", i))
			return
		}
		text, err := m.text()
		if err != nil {
			fail(w, err)
			return
		}
		size += len(m.Role) + len(text)
		msgs[i] = chat.Message{Role: m.Role, Content: text}
	}
	if err := s.checkText("messages' text", size); err != nil {
		fail(w, err)
		return
	}
	text, err := s.m.ChatText(msgs)
	if err != nil {
		fail(w, err)
		return
	}
	prompt, err := s.tokenize("rendered chat", text)
	if err != nil {
		fail(w, err)
		return
	}
	answer(s, w, r, prompt, o, stops, &req.params, shape[chatChoice]{
		id: "chatcmpl-", object: "chat.completion", chunkObject: "chat.completion.chunk",
		whole: func(text string, reason *string) chatChoice {
			return chatChoice{Message: &chatDelta{Role: "assistant", Content: &text}, FinishReason: reason}
		},
		head: func() chatChoice {
			empty := ""
			return chatChoice{Delta: &chatDelta{Role: "assistant", Content: &empty}}
		},
		piece: func(text string) chatChoice { return chatChoice{Delta: &chatDelta{Content: &text}} },
		end:   func(reason *string) chatChoice { return chatChoice{Delta: &chatDelta{}, FinishReason: reason} },
	})
}
