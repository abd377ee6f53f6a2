// Package chat renders the chat templates of model files: the Jinja
// templates of Hugging Face's tokenizer_config.json, which GGUF files carry
// as tokenizer.chat_template.
//
// Rendering follows Hugging Face's JavaScript renderer @huggingface/jinja
// (0.5), byte for byte: its subset of Jinja, its whitespace rules
// (trim_blocks and lstrip_blocks on, one trailing newline of the template
// dropped), and its quirks (JavaScript's == and string conversions, macros
// that see their caller's variables). The tests compare the two on real
// templates.
//
// A template comes from a file and may be hostile: rendering is bounded by
// MaxOutput bytes of output and a fixed budget of work and nesting, and
// fails with an error wrapping ErrLimit beyond them, without panicking.
package chat

import (
	"errors"
	"fmt"
	"sort"

	"github.com/go-ggml/ggml/gguf"
)

// Limits of a rendering.
const (
	// MaxOutput is the most bytes a rendering may return, and the
	// longest string a template may build.
	MaxOutput = 16 << 20
	// maxAlloc bounds the bytes of all the strings, lists and ranges one
	// rendering builds.
	maxAlloc = 8 * MaxOutput
	// maxSteps bounds the work of one rendering: expressions evaluated,
	// loop iterations (loopStepCost each), elements built. The largest
	// real templates take thousands for a conversation.
	maxSteps     = 5_000_000
	loopStepCost = 10
	// maxDepth bounds the nesting of the template's source and of the
	// values printed as JSON.
	maxDepth = 256
	// maxEvalDepth bounds the nesting of evaluation, macro calls included.
	maxEvalDepth = 2000
)

var (
	// ErrTemplate is wrapped by every error of parsing or rendering a
	// template.
	ErrTemplate = errors.New("chat template")
	// ErrNoTemplate is returned by FromGGUF for a file without
	// tokenizer.chat_template.
	ErrNoTemplate = errors.New("no tokenizer.chat_template in the file")
	// ErrLimit is wrapped (with ErrTemplate) by the errors of a template
	// that exceeds MaxOutput or the work and nesting limits.
	ErrLimit = errors.New("limit exceeded")
)

// RaiseError is the error of a template that called
// raise_exception(message), as many do for messages they do not accept
// (roles out of order, a system message where none is allowed). Render
// returns it wrapped with ErrTemplate; errors.As finds it.
type RaiseError struct {
	Message string
}

// Error returns "raise_exception: " and the message.
func (e *RaiseError) Error() string { return "raise_exception: " + e.Message }

// Message is one message of a conversation. The template sees it as an
// object with the keys role and content.
type Message struct {
	Role, Content string
}

// Options are the variables of one rendering besides the messages.
type Options struct {
	// AddGenerationPrompt is add_generation_prompt: end with the start of
	// the assistant's turn.
	AddGenerationPrompt bool
	// BOS and EOS are bos_token and eos_token. Empty, they are the
	// template's (FromGGUF reads them from the file).
	BOS, EOS string
	// Vars are more variables ("tools", "date_string", ...): Go strings,
	// booleans, numbers, nil, Messages, and slices, arrays, maps with
	// string keys and pointers of those. They may not redefine messages,
	// add_generation_prompt, bos_token, eos_token or the renderer's
	// globals (true, range, raise_exception, ...), which is an error.
	Vars map[string]any
}

// Template is a parsed chat template. It is immutable: one Template may
// render in several goroutines at once.
type Template struct {
	src      string
	body     []node
	bos, eos string
}

// Parse parses a chat template. Its errors wrap ErrTemplate.
func Parse(src string) (t *Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("chat: %w: parse: internal error: %v", ErrTemplate, r)
		}
	}()
	if len(src) > MaxOutput {
		return nil, fmt.Errorf("chat: %w: %w: a template of %d bytes (the limit is %d)", ErrTemplate, ErrLimit, len(src), MaxOutput)
	}
	toks, err := tokenize(preprocess(src))
	if err != nil {
		return nil, fmt.Errorf("chat: %w: parse: %w", ErrTemplate, err)
	}
	body, err := parse(toks)
	if err != nil {
		return nil, fmt.Errorf("chat: %w: parse: %w", ErrTemplate, err)
	}
	return &Template{src: src, body: body}, nil
}

// Source returns the text of the template.
func (t *Template) Source() string { return t.src }

// BOS returns the template's default bos_token: the text of the file's
// BOS token for a template from FromGGUF, else "".
func (t *Template) BOS() string { return t.bos }

// EOS returns the template's default eos_token, as BOS.
func (t *Template) EOS() string { return t.eos }

// reserved are the names Options.Vars may not use.
var reserved = func() map[string]bool {
	m := map[string]bool{"messages": true, "add_generation_prompt": true, "bos_token": true, "eos_token": true, "namespace": true}
	for k := range globals() {
		m[k] = true
	}
	return m
}()

// Render renders the conversation msgs. Its errors wrap ErrTemplate: a
// template that raised (see RaiseError), failed (an unknown filter, an
// operation on undefined values: the renderer's errors), or exceeded a
// limit (ErrLimit).
func (t *Template) Render(msgs []Message, o Options) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("chat: %w: render: internal error: %v", ErrTemplate, r)
		}
	}()
	bos, eos := o.BOS, o.EOS
	if bos == "" {
		bos = t.bos
	}
	if eos == "" {
		eos = t.eos
	}
	root := newEnv(nil)
	root.vars = globals()
	keys := make([]string, 0, len(o.Vars))
	for k := range o.Vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if reserved[k] {
			return "", fmt.Errorf("chat: %w: Options.Vars may not set %q", ErrTemplate, k)
		}
		v, err := fromGo(o.Vars[k], 0)
		if err != nil {
			return "", fmt.Errorf("chat: %w: Vars[%q]: %w", ErrTemplate, k, err)
		}
		root.vars[k] = v
	}
	m, err := fromGo(msgs, 0)
	if err != nil {
		return "", fmt.Errorf("chat: %w: %w", ErrTemplate, err)
	}
	if msgs == nil {
		m = arrVal(nil)
	}
	root.vars["messages"] = m
	root.vars["add_generation_prompt"] = boolVal(o.AddGenerationPrompt)
	root.vars["bos_token"] = strVal(bos)
	root.vars["eos_token"] = strVal(eos)
	in := &interp{}
	v, err := in.block(t.body, root)
	if err != nil {
		return "", fmt.Errorf("chat: %w: %w", ErrTemplate, err)
	}
	return v.s, nil
}

// GGUF keys FromGGUF reads.
const (
	KeyChatTemplate = "tokenizer.chat_template"
	keyTokens       = "tokenizer.ggml.tokens"
	keyBOS          = "tokenizer.ggml.bos_token_id"
	keyEOS          = "tokenizer.ggml.eos_token_id"
)

// FromGGUF parses the chat template of f (tokenizer.chat_template; a file
// without one is an ErrNoTemplate error) and sets the template's BOS and
// EOS to the texts of the file's BOS and EOS tokens
// (tokenizer.ggml.tokens at tokenizer.ggml.bos_token_id and
// eos_token_id), or "" where the file names none or one out of range.
func FromGGUF(f *gguf.File) (*Template, error) {
	if _, ok := f.Value(KeyChatTemplate); !ok {
		return nil, fmt.Errorf("chat: %w", ErrNoTemplate)
	}
	src, err := f.String(KeyChatTemplate)
	if err != nil {
		return nil, fmt.Errorf("chat: %w: %w", ErrTemplate, err)
	}
	t, err := Parse(src)
	if err != nil {
		return nil, err
	}
	t.bos, t.eos = tokenText(f, keyBOS), tokenText(f, keyEOS)
	return t, nil
}

// tokenText is the text of the token whose ID is at key, or "".
func tokenText(f *gguf.File, key string) string {
	v, ok := f.Value(key)
	if !ok {
		return ""
	}
	var id int64 = -1
	switch x := v.Any().(type) {
	case uint32:
		id = int64(x)
	case int32:
		id = int64(x)
	case uint64:
		id = int64(min(x, 1<<62))
	case int64:
		id = x
	}
	tv, ok := f.Value(keyTokens)
	if !ok || id < 0 || id >= int64(tv.Len()) {
		return ""
	}
	s, _ := tv.Index(int(id)).Any().(string)
	return s
}
