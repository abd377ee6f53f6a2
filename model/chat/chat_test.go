package chat

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
)

// chatml is a ChatML template in the style of Qwen's, with a check of the
// roles.
const chatml = `{% for message in messages %}{% if message['role'] not in ['system', 'user', 'assistant'] %}{{ raise_exception('Unknown role: ' + message['role']) }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

func render(t *testing.T, src string, msgs []Message, o Options) (string, error) {
	t.Helper()
	tmpl, err := Parse(src)
	require.NoError(t, err)
	return tmpl.Render(msgs, o)
}

// TestRender checks renderings against texts written out here (the
// reference tests check them against Hugging Face's renderer).
func TestRender(t *testing.T) {
	msgs := []Message{{"system", "Be brief."}, {"user", "Hi é😀"}}
	for _, c := range []struct {
		name, src string
		msgs      []Message
		o         Options
		want      string
	}{
		{"chatml", chatml, msgs, Options{AddGenerationPrompt: true},
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi é😀<|im_end|>\n<|im_start|>assistant\n"},
		{"no generation prompt", chatml, msgs[1:], Options{}, "<|im_start|>user\nHi é😀<|im_end|>\n"},
		{"bos and eos", "{{ bos_token }}x{{ eos_token }}", nil, Options{BOS: "<s>", EOS: "</s>"}, "<s>x</s>"},
		{"vars", "{{ tools|tojson }} {{ date_string }} {{ n + 1 }} {{ f }}", nil,
			Options{Vars: map[string]any{"tools": []map[string]any{{"name": "f", "b": true}}, "date_string": "26 Jul 2024", "n": 41, "f": 2.5}},
			`[{"b": true, "name": "f"}] 26 Jul 2024 42 2.5`},
		{"trim_blocks and lstrip_blocks", "  {% if true %}\nyes\n  {% endif %}\n", nil, Options{}, "yes\n"},
		{"whitespace control", "a  {{- ' b ' -}}  c {#- x -#} d", nil, Options{}, "a b cd"},
		{"javascript equality and numbers", "{{ 1 == '1' }} {{ 1.0 }} {{ 1 / 4 }} {{ 'a' ~ 2.0 }}", nil, Options{}, "true 1.0 0.25 a2"},
		{"macro and namespace", "{% macro f(x, y=2) %}{{ x * y }}{% endmacro %}{% set ns = namespace(v=1) %}{% set ns.v = f(3) %}{{ ns.v }}", nil, Options{}, "6"},
		{"break drops the iteration's output", "{% for i in range(3) %}a{% if i == 1 %}{% break %}{% endif %}{% endfor %}", nil, Options{}, "a"},
		{"undefined is quiet", "[{{ nothing }}{{ nothing.at.all }}]", nil, Options{}, "[]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := render(t, c.src, c.msgs, c.o)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestRaiseException(t *testing.T) {
	_, err := render(t, chatml, []Message{{"tool", "x"}}, Options{})
	require.ErrorIs(t, err, ErrTemplate)
	var raised *RaiseError
	require.ErrorAs(t, err, &raised)
	assert.Equal(t, "Unknown role: tool", raised.Message)
	assert.Contains(t, err.Error(), "Unknown role: tool")
	assert.NotErrorIs(t, err, ErrLimit)
}

func TestRenderErrors(t *testing.T) {
	for _, src := range []string{
		"{{ nothing + 1 }}",    // an operation on undefined
		"{{ 'a' < 'b' }}",      // no order on strings in the reference
		"{{ 1|nosuchfilter }}", // an unknown filter
		"{{ nothing() }}",      // calling a non-function
		"{% break %}",          // break outside a loop
		"{{ (1, 2) }}",         // printing a tuple
		"{% for x in 5 %}{% endfor %}",
	} {
		_, err := render(t, src, nil, Options{})
		require.ErrorIs(t, err, ErrTemplate, src)
		var raised *RaiseError
		assert.False(t, errors.As(err, &raised), src)
	}
	tmpl, err := Parse("{{ x }}")
	require.NoError(t, err)
	for _, name := range []string{"messages", "bos_token", "range", "true", "raise_exception", "namespace"} {
		_, err := tmpl.Render(nil, Options{Vars: map[string]any{name: 1}})
		require.ErrorIs(t, err, ErrTemplate, name)
	}
	_, err = tmpl.Render(nil, Options{Vars: map[string]any{"x": make(chan int)}})
	require.ErrorIs(t, err, ErrTemplate)
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"{% if %}", "{{ x", "{% endfor %}", "{% for %}", "{% for x in y %}", "{{ ) }}", "{% nosuch %}",
		"{# open", "{{ 'unterminated }}", "{{ '\\q' }}", "{% if x %}{% else %}", "{{ 1 + }}", "{% macro 1() %}{% endmacro %}",
		"{{ f(a=1, 2) }}", "{{ x[] }}", "{{ x[1:2:3:4] }}", "{{ @ }}",
	} {
		_, err := Parse(src)
		require.ErrorIs(t, err, ErrTemplate, src)
	}
}

// requireLimit runs a hostile template and checks that it fails with
// ErrLimit (the work budget bounds its time; go test's -timeout catches a
// template that escapes it).
func requireLimit(t *testing.T, src string) {
	t.Helper()
	tmpl, err := Parse(src)
	if err == nil {
		_, err = tmpl.Render([]Message{{"user", "x"}}, Options{})
	}
	require.ErrorIs(t, err, ErrTemplate)
	require.ErrorIs(t, err, ErrLimit)
}

func TestHostileTemplates(t *testing.T) {
	deep := 100_000
	for name, src := range map[string]string{
		"huge range":         "{% for i in range(100000000) %}x{% endfor %}",
		"nested loops":       "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}",
		"output over limit":  "{% for i in range(100000) %}" + strings.Repeat("x", 1000) + "{% endfor %}",
		"doubling string":    "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
		"doubling list":      "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}",
		"recursive macro":    "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
		"mutual recursion":   "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}",
		"deep parentheses":   "{{ " + strings.Repeat("(", deep) + "1" + strings.Repeat(")", deep) + " }}",
		"deep ifs":           strings.Repeat("{% if true %}", deep) + "x" + strings.Repeat("{% endif %}", deep),
		"deep lists":         "{{ " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + " }}",
		"deep nots":          "{{ " + strings.Repeat("not ", deep) + "x }}",
		"replace blow-up":    "{% set ns = namespace(s='xxxxxxxxxx') %}{% for i in range(12) %}{% set ns.s = ns.s.replace('x', 'xxxxxxxxxx') %}{% endfor %}",
		"many strings built": "{% set ns = namespace(s='" + strings.Repeat("x", 1<<20) + "') %}{% for i in range(1000) %}{% set ns.t = ns.s ~ i %}{% endfor %}",
	} {
		t.Run(name, func(t *testing.T) { requireLimit(t, src) })
	}
}

// TestMutatedTemplates parses and renders random corruptions of templates:
// whatever the source, an error or a text, never a panic or a hang.
func TestMutatedTemplates(t *testing.T) {
	rng := testutil.NewRNG(t)
	sources := append([]string{chatml}, features...)
	pieces := []string{"{%", "%}", "{{", "}}", "{#", "#}", "-", "(", ")", "[", "]", "'", "\"", "\\", "for x in", "endfor", "if", "endif", "|", ".", "range(9)", "macro m()", "endmacro", "m()", "loop", "**", "~", "not", " "}
	msgs := []Message{{"system", "s"}, {"user", "u"}, {"assistant", "a"}}
	for range 2000 {
		src := []byte(sources[rng.IntN(len(sources))])
		for range 1 + rng.IntN(4) {
			i := rng.IntN(len(src) + 1)
			switch rng.IntN(3) {
			case 0: // delete a span
				j := min(len(src), i+rng.IntN(8))
				src = append(src[:i:i], src[j:]...)
			case 1: // insert a piece of syntax
				src = append(src[:i:i], append([]byte(pieces[rng.IntN(len(pieces))]), src[i:]...)...)
			case 2: // duplicate a span
				j := min(len(src), i+rng.IntN(40))
				src = append(src[:j:j], append(bytes.Clone(src[i:j]), src[j:]...)...)
			}
		}
		tmpl, err := Parse(string(src))
		if err != nil {
			require.ErrorIs(t, err, ErrTemplate)
			continue
		}
		_, err = tmpl.Render(msgs, Options{AddGenerationPrompt: true})
		if err != nil {
			require.ErrorIs(t, err, ErrTemplate, "%s", src)
		}
	}
}

func FuzzTemplate(f *testing.F) {
	f.Add(chatml)
	for _, s := range features {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse(src)
		if err != nil {
			require.ErrorIs(t, err, ErrTemplate)
			return
		}
		out, err := tmpl.Render([]Message{{"user", "u"}, {"assistant", "a"}}, Options{})
		if err != nil {
			require.ErrorIs(t, err, ErrTemplate)
			return
		}
		require.LessOrEqual(t, len(out), MaxOutput)
	})
}

func TestConcurrentRender(t *testing.T) {
	tmpl, err := Parse(chatml + "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}")
	require.NoError(t, err)
	want, err := tmpl.Render([]Message{{"user", "a"}}, Options{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				got, err := tmpl.Render([]Message{{"user", "a"}}, Options{})
				assert.NoError(t, err)
				assert.Equal(t, want, got)
			}
		}()
	}
	wg.Wait()
}

// ggufFile writes a GGUF file with the keys kv and parses it.
func ggufFile(t *testing.T, kv map[string]any) *gguf.File {
	t.Helper()
	b := gguf.NewBuilder()
	require.NoError(t, b.Set(gguf.KeyArchitecture, "llama"))
	for k, v := range kv {
		require.NoError(t, b.Set(k, v), k)
	}
	var buf bytes.Buffer
	_, err := b.WriteTo(&buf)
	require.NoError(t, err)
	f, err := gguf.Parse(buf.Bytes())
	require.NoError(t, err)
	return f
}

func TestFromGGUF(t *testing.T) {
	f := ggufFile(t, map[string]any{
		KeyChatTemplate:               "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}",
		"tokenizer.ggml.tokens":       []string{"<unk>", "<s>", "</s>", "a"},
		"tokenizer.ggml.bos_token_id": uint32(1),
		"tokenizer.ggml.eos_token_id": uint32(2),
	})
	tmpl, err := FromGGUF(f)
	require.NoError(t, err)
	assert.Equal(t, "<s>", tmpl.BOS())
	assert.Equal(t, "</s>", tmpl.EOS())
	got, err := tmpl.Render([]Message{{"user", "hi"}}, Options{})
	require.NoError(t, err)
	assert.Equal(t, "<s>hi</s>", got)
	got, err = tmpl.Render([]Message{{"user", "hi"}}, Options{BOS: "[B]", EOS: "[E]"})
	require.NoError(t, err)
	assert.Equal(t, "[B]hi[E]", got, "Options override the file's tokens")

	// No token IDs, or one out of range: no default.
	tmpl, err = FromGGUF(ggufFile(t, map[string]any{
		KeyChatTemplate:               "x",
		"tokenizer.ggml.tokens":       []string{"a"},
		"tokenizer.ggml.eos_token_id": uint32(7),
	}))
	require.NoError(t, err)
	assert.Empty(t, tmpl.BOS())
	assert.Empty(t, tmpl.EOS())

	_, err = FromGGUF(ggufFile(t, map[string]any{"general.name": "no template"}))
	require.ErrorIs(t, err, ErrNoTemplate)
	_, err = FromGGUF(ggufFile(t, map[string]any{KeyChatTemplate: uint32(1)}))
	require.ErrorIs(t, err, ErrTemplate, "a template key of the wrong type")
	_, err = FromGGUF(ggufFile(t, map[string]any{KeyChatTemplate: "{% if %}"}))
	require.ErrorIs(t, err, ErrTemplate)
}
