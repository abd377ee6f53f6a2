package model

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/model/chat"
	"github.com/go-ggml/ggml/model/sample"
	"github.com/go-ggml/ggml/tokenizer"
)

// GenerateOptions say how Generate, GenerateText and Chat go on from a
// prompt. The zero value generates greedily until a token that ends
// generation or a full context.
type GenerateOptions struct {
	// MaxTokens is the most tokens to generate; 0 means until a token
	// that ends generation (EOS, end of turn) or a full context.
	MaxTokens int
	// Sampling is the sampler's settings (package sample): the zero value
	// is greedy; sample.Defaults() is llama.cpp's default chain (top-k
	// 40, top-p 0.95, min-p 0.05, temperature 0.8).
	Sampling sample.Params
	// IgnoreEOS goes on after a token that ends generation.
	IgnoreEOS bool
}

// Generate evaluates prompt after the tokens in the KV cache, in batches
// of BatchSize, and yields the tokens it generates one by one, each
// sampled (o.Sampling; the prompt's tokens are the penalties' history)
// from the logits of the one before and evaluated before the next is
// sampled. It stops after o.MaxTokens tokens, after a token that ends
// generation (the tokenizer's IsEOG; unless o.IgnoreEOS), when the
// context is full (an ErrContextFull error where o.MaxTokens was not
// reached), when ctx is done (its error), or when the loop breaks. An
// error is yielded once, with token -1, and ends the sequence. The model
// is held while the sequence runs: the model's own calls from its loop
// are ggml.ErrBusy errors. The last token is not evaluated: Pos counts
// the prompt and the tokens before it.
func (m *Model) Generate(ctx context.Context, prompt []int32, o GenerateOptions) iter.Seq2[int32, error] {
	return func(yield func(int32, error) bool) {
		if err := m.enter("Generate"); err != nil {
			yield(-1, err)
			return
		}
		defer m.leave()
		if err := m.generate(ctx, prompt, o, func(id int32) bool { return yield(id, nil) }); err != nil {
			yield(-1, err)
		}
	}
}

// generate is Generate's loop, in a call that entered the model: emit
// gets each token and returns false to stop.
func (m *Model) generate(ctx context.Context, prompt []int32, o GenerateOptions, emit func(int32) bool) error {
	if _, ok := m.net.(Encoder); ok {
		return fmt.Errorf("%w: model: the %s architecture is an encoder: it embeds (Embed), it does not generate", ErrModel, m.Config.Arch)
	}
	if o.MaxTokens < 0 {
		return fmt.Errorf("%w: model: GenerateOptions.MaxTokens %d", ggml.ErrInvalid, o.MaxTokens)
	}
	s, err := sample.New(o.Sampling)
	if err != nil {
		return err
	}
	logits, err := m.eval(ctx, prompt, false)
	if err != nil {
		return err
	}
	for _, id := range m.kv.hist[0] {
		s.Accept(id)
	}
	for n := 0; ; {
		id, err := s.Sample(logits)
		if err != nil {
			return err
		}
		s.Accept(id)
		n++
		if !emit(id) || n == o.MaxTokens || !o.IgnoreEOS && m.tok != nil && m.tok.IsEOG(id) {
			return nil
		}
		if m.kv.next[0] == m.nCtx || m.kv.free() == 0 {
			if o.MaxTokens > 0 {
				return fmt.Errorf("%w: %d tokens generated of %d", ErrContextFull, n, o.MaxTokens)
			}
			return nil
		}
		if logits, err = m.eval(ctx, []int32{id}, false); err != nil {
			return err
		}
	}
}

// GenerateText tokenizes prompt with the model's tokenizer, as llama.cpp
// does (BOS as the file says, special tokens such as <|eot_id|> read in
// the text), and yields the text the model generates after it, piece by
// piece as tokens come (a character split across tokens held back until
// whole; control tokens left out), as Generate does. The prompt replaces
// what the cache holds, except the tokens at its start that the cache
// already holds (the prompt of a previous call, or a conversation so
// far), which are not evaluated again. A model without a tokenizer that
// encodes yields its error.
func (m *Model) GenerateText(ctx context.Context, prompt string, o GenerateOptions) iter.Seq2[string, error] {
	return m.text("GenerateText", ctx, func(tok *tokenizer.Tokenizer) (string, error) { return prompt, nil }, o)
}

// Chat renders msgs with the file's chat template (ChatTemplate, with the
// generation prompt that begins the assistant's turn) and yields the
// reply, as GenerateText does; a conversation that grows by a turn
// evaluates only the new turn. Append the reply to msgs as an
// "assistant" message to go on.
func (m *Model) Chat(ctx context.Context, msgs []chat.Message, o GenerateOptions) iter.Seq2[string, error] {
	return m.text("Chat", ctx, func(tok *tokenizer.Tokenizer) (string, error) { return m.chatText(tok, msgs) }, o)
}

// chatText renders msgs with the chat template, for tok to encode.
func (m *Model) chatText(tok *tokenizer.Tokenizer, msgs []chat.Message) (string, error) {
	if m.tmplErr != nil {
		return "", m.tmplErr
	}
	text, err := m.tmpl.Render(msgs, chat.Options{AddGenerationPrompt: true})
	if err != nil {
		return "", err
	}
	// The template writes BOS where the model wants one, and so does
	// the tokenizer: llama.cpp drops the template's when the
	// tokenizer adds one.
	if bos := tok.BOS(); tok.AddsBOS() && bos >= 0 {
		text = strings.TrimPrefix(text, tok.Token(bos))
	}
	return text, nil
}

// encoder returns the model's tokenizer where it encodes, else why not.
func (m *Model) encoder(what string) (*tokenizer.Tokenizer, error) {
	err := m.tokErr
	if err == nil {
		err = m.tok.CanEncode()
	}
	if err != nil {
		return nil, fmt.Errorf("model: %s needs the model's tokenizer: %w", what, err)
	}
	return m.tok, nil
}

// Tokenize returns the tokens of text as GenerateText evaluates them
// (the file's BOS where it wants one, special tokens such as <|eot_id|>
// read in the text), or the error of a model whose tokenizer does not
// encode. It is safe to call while another goroutine uses the model.
func (m *Model) Tokenize(text string) ([]int32, error) {
	tok, err := m.encoder("Tokenize")
	if err != nil {
		return nil, err
	}
	return tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}), nil
}

// ChatPrompt returns the tokens of msgs rendered as Chat renders them
// (the chat template, with the generation prompt that begins the
// assistant's turn). It is safe to call while another goroutine uses the
// model.
func (m *Model) ChatPrompt(msgs []chat.Message) ([]int32, error) {
	tok, err := m.encoder("ChatPrompt")
	if err != nil {
		return nil, err
	}
	text, err := m.chatText(tok, msgs)
	if err != nil {
		return nil, err
	}
	return tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}), nil
}

// ChatText returns the text that ChatPrompt tokenizes: msgs rendered with
// the chat template, with the generation prompt. Tokenize(ChatText(msgs))
// is ChatPrompt(msgs); a caller that bounds its work looks at the text's
// length between the two. It is safe to call while another goroutine
// uses the model.
func (m *Model) ChatText(msgs []chat.Message) (string, error) {
	tok, err := m.encoder("ChatText")
	if err != nil {
		return "", err
	}
	return m.chatText(tok, msgs)
}

// text runs GenerateText and Chat: the prompt from render, tokenized.
func (m *Model) text(what string, ctx context.Context, render func(*tokenizer.Tokenizer) (string, error), o GenerateOptions) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := m.enter(what); err != nil {
			yield("", err)
			return
		}
		defer m.leave()
		tok, err := m.encoder(what)
		if err != nil {
			yield("", err)
			return
		}
		text, err := render(tok)
		if err != nil {
			yield("", err)
			return
		}
		ids := tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
		if len(ids) == 0 {
			yield("", fmt.Errorf("%w: model: %s: the prompt has no tokens", ggml.ErrInvalid, what))
			return
		}
		m.reuse(ids)
		dec := tok.NewDecoder(false)
		stopped := false
		err = m.generate(ctx, ids[m.kv.next[0]:], o, func(id int32) bool {
			s, err := dec.Add(id)
			if err != nil {
				yield("", err)
				stopped = true
				return false
			}
			if s != "" && !yield(s, nil) {
				stopped = true
				return false
			}
			return true
		})
		switch {
		case stopped:
		case err != nil:
			yield("", err)
		default:
			if rest := dec.Flush(); rest != "" {
				yield(rest, nil)
			}
		}
	}
}

// reuse keeps the cache's tokens that begin ids, but for the last of
// ids, which is evaluated again for its logits, and forgets the rest.
func (m *Model) reuse(ids []int32) {
	n, hist := 0, m.kv.hist[0]
	for n < len(hist) && n < len(ids)-1 && hist[n] == ids[n] {
		n++
	}
	m.kv.remove(0, n, maxDim)
}

// ChatTemplate returns the file's chat template (tokenizer.chat_template,
// package chat), or why it has none (an error wrapping
// chat.ErrNoTemplate, or the template's parse error).
func (m *Model) ChatTemplate() (*chat.Template, error) { return m.tmpl, m.tmplErr }

// Text returns the text of tokens, control tokens left out, through the
// model's tokenizer (ErrNoTokenizer or the tokenizer's error without
// one).
func (m *Model) Text(ids []int32) (string, error) {
	if m.tok == nil {
		return "", m.tokErr
	}
	return m.tok.Decode(ids, tokenizer.DecodeOptions{})
}
