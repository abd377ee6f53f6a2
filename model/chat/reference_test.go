package chat

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/internal/testutil"
)

// hfJinja is Hugging Face's renderer, @huggingface/jinja under node, run
// by testdata/hfjinja.cjs.
type hfJinja struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	in    *bufio.Writer
	out   *bufio.Reader
}

// startHFJinja starts the reference renderer from the node_modules that
// build/llamacpp.sh installs (node-llama-cpp brings @huggingface/jinja) in
// GOGGML_LLAMACPP (default ~/.cache/go-ggml/llamacpp). It skips the test
// where node or the package is missing, or fails it when
// GOGGML_REQUIRE_LLAMACPP=1.
func startHFJinja(t testing.TB) *hfJinja {
	t.Helper()
	dir := os.Getenv("GOGGML_LLAMACPP")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "go-ggml", "llamacpp")
	}
	modules := filepath.Join(dir, "node_modules")
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(modules, "@huggingface", "jinja", "package.json")); err != nil || statErr != nil {
		msg := fmt.Sprintf("@huggingface/jinja is not installed in %s, or node is missing (make llamacpp installs it; GOGGML_LLAMACPP names another place)", modules)
		if os.Getenv("GOGGML_REQUIRE_LLAMACPP") == "1" {
			t.Fatal(msg + ", and GOGGML_REQUIRE_LLAMACPP=1 requires it")
		}
		t.Skip(msg)
	}
	cmd := exec.Command(node, filepath.Join("testdata", "hfjinja.cjs"), modules)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	h := &hfJinja{cmd: cmd, stdin: stdin, in: bufio.NewWriter(stdin), out: bufio.NewReaderSize(stdout, 1<<20)}
	t.Cleanup(func() {
		h.stdin.Close()
		h.cmd.Wait()
	})
	return h
}

// request is one rendering for the reference.
type request struct {
	Template            string         `json:"template"`
	Messages            []jsonMessage  `json:"messages"`
	AddGenerationPrompt bool           `json:"add_generation_prompt"`
	BOS                 string         `json:"bos_token"`
	EOS                 string         `json:"eos_token"`
	Vars                map[string]any `json:"vars,omitempty"`
}

type jsonMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// result is a rendering's text, or its error.
type result struct {
	Text  *string `json:"text"`
	Error string  `json:"error"`
}

func (r result) String() string {
	if r.Text == nil {
		return "error: " + r.Error
	}
	return fmt.Sprintf("%q", *r.Text)
}

func (h *hfJinja) render(t testing.TB, req request) result {
	t.Helper()
	b, err := json.Marshal(req)
	require.NoError(t, err)
	_, err = h.in.Write(append(b, '\n'))
	require.NoError(t, err)
	require.NoError(t, h.in.Flush())
	line, err := h.out.ReadBytes('\n')
	require.NoError(t, err, "hfjinja.cjs stopped")
	var r result
	require.NoError(t, json.Unmarshal(line, &r), "%s", line)
	return r
}

// renderGo renders req with this package.
func renderGo(req request) result {
	tmpl, err := Parse(req.Template)
	if err != nil {
		return result{Error: err.Error()}
	}
	msgs := make([]Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = Message(m)
	}
	s, err := tmpl.Render(msgs, Options{AddGenerationPrompt: req.AddGenerationPrompt, BOS: req.BOS, EOS: req.EOS, Vars: req.Vars})
	if err != nil {
		return result{Error: err.Error()}
	}
	return result{Text: &s}
}

// agree reports whether two renderings agree: the same bytes, or both an
// error.
func agree(a, b result) bool {
	if a.Text == nil || b.Text == nil {
		return a.Text == nil && b.Text == nil
	}
	return *a.Text == *b.Text
}

func TestAgreeCatchesMismatch(t *testing.T) {
	s1, s2 := "<s>[INST] hi [/INST]", "<s>[INST] hi [/INST] "
	require.True(t, agree(result{Text: &s1}, result{Text: &s1}))
	require.True(t, agree(result{Error: "a"}, result{Error: "b"}))
	require.False(t, agree(result{Text: &s1}, result{Text: &s2}), "a one-byte difference")
	require.False(t, agree(result{Text: &s1}, result{Error: "x"}), "text against an error")
	require.False(t, agree(result{Error: "x"}, result{Text: &s1}), "an error against text")
}

// realTemplates returns the Hugging Face templates that ollama's module
// (a dependency) lists in template/index.json: name and source.
func realTemplates(t testing.TB) [][2]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ollama/ollama").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Skipf("the module github.com/ollama/ollama is not in the module cache: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "template", "index.json"))
	require.NoError(t, err)
	var idx []struct{ Name, Template string }
	require.NoError(t, json.Unmarshal(b, &idx))
	require.NotEmpty(t, idx)
	var ts [][2]string
	for i, e := range idx {
		ts = append(ts, [2]string{fmt.Sprintf("%02d-%s", i, e.Name), e.Template})
	}
	return ts
}

// fragments are pieces of message contents: words, unicode, whitespace,
// text that looks like template syntax or special tokens.
var fragments = []string{
	"Hello", "world", "What is 2+2?", "The answer is 4.", "héllo", "naïve café", "中文测试", "日本語",
	"😀", "👩‍💻", "مرحبا", "Ελληνικά", "\u00a0", "\u2028", "\ufeff",
	" ", "  ", "\n", "\n\n", "\t", " \n \t ", "\r\n",
	"{{ messages }}", "{% if true %}", "{# c #}", "<|im_end|>", "</s>", "[INST]", "<start_of_turn>",
	`"quoted"`, "'single'", `back\slash`, "a\\nb", "%}", "}}", "-", "+",
}

// randomContent joins 0 to 6 fragments.
func randomContent(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(7) {
		b.WriteString(fragments[rng.IntN(len(fragments))])
	}
	return b.String()
}

// messageSets returns the conversations the reference tests render: fixed
// ones (with and without a system message, multi-turn, unicode and
// whitespace, role orders that strict templates refuse) and random ones
// from rng.
func messageSets(rng *rand.Rand) [][]jsonMessage {
	sets := [][]jsonMessage{
		{{"user", "Hello"}},
		{{"system", "You are a helpful assistant."}, {"user", "Hi there!"}},
		{{"user", "What is 2+2?"}, {"assistant", "4"}, {"user", "And 3+3?"}},
		{{"system", "Be brief."}, {"user", "a"}, {"assistant", "b"}, {"user", "c"}, {"assistant", "d"}},
		{{"system", "  Système\n\n"}, {"user", "  ünïcødé 😀 中文\n\n  "}, {"assistant", "\n Sure!\t\n"}, {"user", "\t"}},
		{{"user", ""}, {"assistant", ""}, {"user", " "}},
		{{"assistant", "I speak first."}, {"user", "ok"}},
		{{"user", "one"}, {"user", "two"}},
		{{"system", "only a system message"}},
		{},
	}
	roles := []string{"user", "assistant"}
	for range 8 {
		var set []jsonMessage
		if rng.IntN(2) == 0 {
			set = append(set, jsonMessage{"system", randomContent(rng)})
		}
		for i := range 1 + rng.IntN(5) {
			role := roles[i%2]
			if rng.IntN(8) == 0 {
				role = roles[rng.IntN(2)]
			}
			set = append(set, jsonMessage{role, randomContent(rng)})
		}
		sets = append(sets, set)
	}
	return sets
}

// compareAll renders each template with each message set, with and
// without the generation prompt and BOS/EOS, in Go and in the reference,
// and reports the disagreements; it returns how many renderings (not
// errors) agreed for each template.
func compareAll(t *testing.T, h *hfJinja, templates [][2]string, sets [][]jsonMessage, vars map[string]any) map[string]int {
	texts := map[string]int{}
	for _, tm := range templates {
		t.Run(tm[0], func(t *testing.T) {
			bad := 0
			for si, set := range sets {
				for _, agp := range []bool{false, true} {
					for _, tok := range [][2]string{{"<s>", "</s>"}, {"", ""}} {
						req := request{Template: tm[1], Messages: set, AddGenerationPrompt: agp, BOS: tok[0], EOS: tok[1], Vars: vars}
						want, got := h.render(t, req), renderGo(req)
						if !agree(want, got) {
							bad++
							if bad <= 3 {
								t.Errorf("set %d %v, add_generation_prompt %v, bos %q:\nreference: %v\ngo:        %v", si, set, agp, tok[0], want, got)
							}
						} else if got.Text != nil {
							texts[tm[0]]++
						}
					}
				}
			}
			if bad > 3 {
				t.Errorf("%d disagreements in all", bad)
			}
		})
	}
	return texts
}

func TestRealTemplatesMatchReference(t *testing.T) {
	templates := realTemplates(t)
	h := startHFJinja(t)
	rng := testutil.NewRNG(t)
	texts := compareAll(t, h, templates, messageSets(rng), nil)
	// A reference that only failed would agree with a renderer that only
	// fails: every template must render some conversations.
	for _, tm := range templates {
		require.Positive(t, texts[tm[0]], "%s rendered no conversation in either renderer", tm[0])
	}
}

func TestReferenceRendersKnownText(t *testing.T) {
	h := startHFJinja(t)
	r := h.render(t, request{
		Template: "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}>{% endif %}",
		Messages: []jsonMessage{{"user", "héllo"}}, AddGenerationPrompt: true, BOS: "<s>",
	})
	require.NotNil(t, r.Text, r.Error)
	require.Equal(t, "<s>[user]héllo\n>", *r.Text)
	r = h.render(t, request{Template: "{{ raise_exception('no') }}"})
	require.Nil(t, r.Text)
	require.Equal(t, "no", r.Error)
}

// features are small templates over the language: each is rendered with
// a few message sets and compared with the reference.
var features = []string{
	`{{ 1 == 1.0 }} {{ 1 == '1' }} {{ true == 1 }} {{ none == undefined_var }} {{ 'a' != 'b' }}`,
	`{{ 1.0 }} {{ 2.5 }} {{ 1 / 2 }} {{ 4 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1e3 if false else 0.1 + 0.2 }}`,
	`{{ 'a' ~ 1 ~ 1.0 ~ true ~ none }} {{ 'x' + 1 }} {{ [1, 2] ~ '' }} {{ [1, 'a', [2]] }} {{ {'k': 1, 'b': [true, none]} }}`,
	`{{ [1, 2] + [3] }} {{ 2 in [1, 2] }} {{ 'b' in 'abc' }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ 'x' in undefined_var }}`,
	`{% for m in messages %}{{ loop.index }}/{{ loop.length }}{{ loop.first }}{{ loop.last }}{{ loop.revindex0 }}{{ m.role|upper }}|{% endfor %}`,
	`{% for m in messages if m.role == 'user' %}{{ loop.index0 }}{{ m.content|length }};{% else %}none{% endfor %}`,
	`{% for i in range(5) %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}`,
	`{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }} {% endfor %}{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}`,
	`{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.n }} {{ ns.s }}`,
	`{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}{% if true %}{% set x = 3 %}{% endif %}{{ x }}`,
	`{% macro greet(name, greeting='Hi') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('a') }} {{ greet('b', greeting='Yo') }} {{ greet('c', 'Hey') }}`,
	`{% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, 3, k=4) }}`,
	`{% macro wrap() %}[{{ caller() }}]{% endmacro %}{% call wrap() %}inner {{ messages|length }}{% endcall %}`,
	`{% set s %}  block {{ 1 }} {% endset %}[{{ s }}]{% filter upper %}shout {{ 'x' }}{% endfilter %}`,
	`{{ '  pad  '.strip() }}|{{ ' l'.lstrip() }}|{{ 'r '.rstrip() }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a-b-c'.split('-', 1) }}`,
	`{{ 'abc'.startswith('a') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'aaa'.replace('a', 'b', 2) }}{{ 'abc'.replace('', '-') }}{{ 'abc'|replace('b', 'B') }}`,
	`{{ 'héllo😀'|length }} {{ 'héllo😀'[1] }} {{ 'héllo😀'[-1] }} {{ 'héllo😀'[1:3] }} {{ 'abcdef'[::2] }} {{ 'abcdef'[::-1] }} {{ [1,2,3,4][1:] }} {{ [1,2,3][-2:] }} {{ messages[-1].role if messages else 'empty' }}`,
	`{{ messages|tojson }}|{{ {'a': 'é"\n', 'b': [1, 2.5]}|tojson(indent=2) }}|{{ {'é': '😀'}|tojson(ensure_ascii=true) }}|{{ {'b': 1, 'a': 2}|tojson(sort_keys=true, separators=(',', ':')) }}`,
	`{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A']|sort(case_sensitive=true) }} {{ [1, 2]|reverse|list }} {{ [1, 1, 2]|unique }} {{ [1, 2]|first }}{{ [1, 2]|last }} {{ ['a', 'b']|join(', ') }} {{ [1, 2]|join }}`,
	`{{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ messages|rejectattr('role', 'equalto', 'user')|map(attribute='role')|join(',') }} {{ messages|map(attribute='missing', default='d')|join }}`,
	`{{ '42abc'|int }} {{ 'x'|int }} {{ '3.5'|float }} {{ 3.7|int }} {{ -3|abs }} {{ true|int }} {{ 5|string }} {{ 'x'|default('y') }} {{ undefined_var|default('dflt') }} {{ ''|default('e', true) }}`,
	`{{ 'a\nb\n\nc'|indent }}|{{ 'a\nb'|indent(2, true) }}|{{ '  x  '|trim }}|{{ 'Hi'|lower }}{{ 'hi'|upper }}{{ 'hi there'|title }}`,
	`{{ x is defined }}{{ messages is defined }}{{ none is none }}{{ 1 is number }}{{ 1.5 is integer }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 3 is odd }}{{ 4 is even }}{{ 'ab' is lower }}{{ raise_exception is callable }}{{ true is boolean }}{{ 1 is not none }}`,
	`{{ not true }}{{ not not 1 }}{{ 1 and 'x' }}{{ 0 or 'y' }}{{ none or [] }}{{ -(1) }}{{ +2 }}{{ -1.5 }}{{ 1 if 0 }}|{{ 'a' if 1 else 'b' if 1 else 'c' }}`,
	`{{ {'get': 1}.get }} {{ {'a': 1}.get('a') }} {{ {'a': 1}.get('b', 'no') }} {{ {'a': 1}.get('b') }} {{ {'b': 2, 'a': 1}|dictsort }} {{ {'a': 1}.keys() }} {{ {'a': 1}.values() }} {{ {'a': 1}|length }}`,
	`{#- comment -#}  {{- ' trimmed ' -}}  {%- if true -%}  yes  {%- endif -%}  !
  {% if true %}
    indented
  {% endif %}
end`,
	`{{ "esc: \t \\ \x41 \u00e9 \' " }}{{ 'adjacent' 'strings' }}{{ messages[0]['role'] if messages|length > 0 }}`,
	`{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (1, 2) %}{{ t }}{{ t[0] }}{{ (1) }}{{ [1,2].length }}`,
	`{{ strftime_now is defined }}{{ range(3) }}{{ range(1, 7, 2) }}{{ range(5, 0, -2) }}`,
	`{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok`,
	`{{ messages[0].content.upper() }}{{ messages[1].nothing.deeper }}`,
	`{{ 'a' < 'b' }}`,
	`{{ undefined_var + 1 }}`,
	`{{ none.attr }}|{{ undefined_var.attr }}|{{ [1][5] }}|{{ 'x'.nope }}`,
	`{% generation %}gen {{ 1 }}{% endgeneration %} after`,
	`{{ messages|length }}{{ messages|tojson(indent=1) }}`,
}

func TestFeaturesMatchReference(t *testing.T) {
	h := startHFJinja(t)
	var templates [][2]string
	for i, f := range features {
		templates = append(templates, [2]string{fmt.Sprintf("feature%02d", i), f})
	}
	sets := [][]jsonMessage{
		{{"system", "Sys é"}, {"user", "Hi 😀"}, {"assistant", "Yo\n"}},
		{{"user", "only"}},
		{},
	}
	compareAll(t, h, templates, sets, nil)
}
