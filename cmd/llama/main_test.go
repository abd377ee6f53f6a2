package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/chat"
	_ "github.com/go-ggml/ggml/model/llama"
	"github.com/go-ggml/ggml/model/modeltest"
	"github.com/go-ggml/ggml/tokenizer"
)

// runCmd runs the command and returns its stdout and stderr.
func runCmd(t *testing.T, ctx context.Context, args ...string) (string, string, error) {
	t.Helper()
	var out, errs bytes.Buffer
	err := run(ctx, args, &out, &errs)
	return out.String(), errs.String(), err
}

// tokenLines returns the IDs of the generated-token lines ("id\t"text"").
func tokenLines(t *testing.T, out string) []int {
	var ids []int
	for _, line := range strings.Split(out, "\n") {
		id, text, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(id)
		require.NoError(t, err, line)
		_, err = strconv.Unquote(text)
		require.NoError(t, err, line)
		ids = append(ids, n)
	}
	return ids
}

// The command writes a random model and generates from it: greedily (the
// same tokens every time) and sampled (the same tokens for the same seed).
func TestGenerateAndRun(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	_, stderr, err := runCmd(t, ctx, "-gen", path, "-size", "tiny", "-type", "q8_0")
	require.NoError(t, err)
	assert.Contains(t, stderr, "wrote "+path)

	args := []string{"-model", path, "-prompt-ids", "1, 2,3", "-ids", "-n", "10", "-threads", "1", "-ignore-eos"}
	out, stderr, err := runCmd(t, ctx, args...)
	require.NoError(t, err, stderr)
	t.Log("\n" + out + stderr)
	assert.Contains(t, out, "prompt: [1 2 3]")
	assert.Contains(t, out, "text: ")
	greedy := tokenLines(t, out)
	assert.Len(t, greedy, 10)
	for _, want := range []string{"model: 2 layers, 64 wide, 4 heads (2 KV), vocabulary 256", "tokens/s", "time outside ggml's compute", "memory on CPU: weights"} {
		assert.Contains(t, stderr, want)
	}
	out, _, err = runCmd(t, ctx, args...)
	require.NoError(t, err)
	assert.Equal(t, greedy, tokenLines(t, out))

	sampled := append(args, "-temp", "1.5", "-top-k", "0", "-top-p", "1", "-seed", "7")
	out, _, err = runCmd(t, ctx, sampled...)
	require.NoError(t, err)
	first := tokenLines(t, out)
	out, _, err = runCmd(t, ctx, sampled...)
	require.NoError(t, err)
	assert.Equal(t, first, tokenLines(t, out))
	assert.NotEqual(t, greedy, first, "at temperature 1.5, ten tokens are not all the most likely ones")
}

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	_, _, err := runCmd(t, ctx, "-gen", path)
	require.NoError(t, err)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-model is required"},
		{[]string{"-model", path, "-prompt-ids", "1,x"}, `-prompt-ids: "x" is not a token ID`},
		{[]string{"-model", path, "-prompt-ids", "1,999"}, "token 999 (at 1) outside the vocabulary of 256"},
		{[]string{"-model", path, "-prompt", "a", "-prompt-ids", "1"}, "give one"},
		{[]string{"-model", path, "-p-file", filepath.Join(t.TempDir(), "none.txt")}, "-p-file"},
		{[]string{"-model", path, "-cache-type", "q9"}, `-cache-type "q9": want f16, f32, q8_0 or q4_0`},
		{[]string{"-gen", path, "-size", "huge"}, `-size "huge"`},
		{[]string{"-gen", path, "-vocab", "t5"}, `vocabulary "t5"`},
		{[]string{"-gen", path, "-type", "q4_K"}, "a row of 64 is not a whole number of q4_K blocks"},
		{[]string{"-model", filepath.Join(t.TempDir(), "none.gguf")}, "no such file"},
		// The prompt is checked before the model is loaded.
		{[]string{"-model", filepath.Join(t.TempDir(), "none.gguf"), "-prompt-ids", "1,x"}, `"x" is not a token ID`},
		{[]string{"-model", path, "-n", "-2"}, "-n -2"},
	} {
		_, _, err := runCmd(t, ctx, append(c.args, "-threads", "1")...)
		require.Error(t, err, "%v", c.args)
		assert.Contains(t, err.Error(), c.want)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = runCmd(t, cancelled, "-model", path, "-threads", "1")
	require.ErrorIs(t, err, context.Canceled)
}

// TestRunConvertedFiles runs the command end to end on files laid out as
// llama.cpp's converter and quantizer write them: the tiny preset in
// Q4_K_M (whose rows of 64 take llama.cpp's fallbacks q5_0 and q8_0), and
// a 256-wide model in Q4_K_M with a Llama 3 vocabulary, biases and no
// llama.vocab_size. The tokens the command prints are the greedy ones of
// the model package, which its tests hold to the float64 reference.
func TestRunConvertedFiles(t *testing.T) {
	ctx := context.Background()
	rng := testutil.NewRNG(t)
	dir := t.TempDir()

	tiny := filepath.Join(dir, "tiny-q4_K_M.gguf")
	_, stderr, err := runCmd(t, ctx, "-gen", tiny, "-type", "q4_K_M", "-gen-seed", fmt.Sprint(rng.Uint64()))
	require.NoError(t, err)
	assert.Contains(t, stderr, "q4_K_M weights")

	c := model.Config{
		ContextLength: 2048, EmbeddingLength: 256, BlockCount: 4, FeedForward: 512,
		HeadCount: 4, HeadCountKV: 2, HeadDim: 64, RopeDim: 64,
		RopeFreqBase: 500000, RopeFreqScale: 1, RMSEps: 1e-5, VocabSize: 512,
	}
	wide := filepath.Join(dir, "llama3-like.gguf")
	require.NoError(t, modeltest.WriteRandom(wide, modeltest.RandomModel{
		Config: c, Types: modeltest.MixQ4KM(c.BlockCount, false), Biases: true, Converted: true, Vocab: "gpt2", Seed: rng.Uint64(),
	}))

	for _, f := range []struct {
		path, prompt string
		types        []string
	}{
		{tiny, "1,40,7,99", []string{"q5_0 ×", "q8_0 ×", "f32 ×"}},
		{wide, "507,300,261,42", []string{"q4_K ×25", "q6_K ×5", "f32 ×37"}}, // 507: <|begin_of_text|>
	} {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			// On the CPU, as the model package's run below: with -tags
			// vulkan the command would put every layer on the GPU, whose
			// greedy choice between near-equal logits may differ.
			out, stderr, err := runCmd(t, ctx, "-model", f.path, "-prompt-ids", f.prompt, "-ids", "-n", "6", "-threads", "1", "-ignore-eos", "-gpu-layers", "0")
			require.NoError(t, err, stderr)
			t.Log("\n" + out + stderr)
			for _, want := range f.types {
				assert.Contains(t, stderr, want)
			}
			got := tokenLines(t, out)
			require.Len(t, got, 6)

			// The same greedy run through the model package.
			m, err := model.Load(ctx, f.path, model.Options{Threads: 1, CacheType: model.CacheF16, CPUOnly: true})
			require.NoError(t, err)
			defer m.Close()
			var prompt []int32
			for _, id := range strings.Split(f.prompt, ",") {
				n, err := strconv.Atoi(id)
				require.NoError(t, err)
				prompt = append(prompt, int32(n))
			}
			var want []int32
			for id, err := range m.Generate(ctx, prompt, model.GenerateOptions{MaxTokens: 6, IgnoreEOS: true}) {
				require.NoError(t, err)
				want = append(want, id)
			}
			require.Len(t, want, 6)
			for i, id := range want {
				assert.Equal(t, int(id), got[i], "token %d", i)
			}
			tok, err := m.Tokenizer()
			require.NoError(t, err)
			text, err := tok.Decode(want, tokenizer.DecodeOptions{RenderSpecial: true})
			require.NoError(t, err)
			assert.Contains(t, out, fmt.Sprintf("text: %q", text))
		})
	}
}

// TestRunHelpAndUntilEnd: -h says what the command does; -n -1 generates
// until the end of the sequence, here the end of a 24-position context.
func TestRunHelpAndUntilEnd(t *testing.T) {
	ctx := context.Background()
	_, stderr, err := runCmd(t, ctx, "-h")
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, stderr, "runs a GGUF model (architectures: bert, gemma2, gemma3, llama, phi3, qwen2, qwen3, qwen3moe,")
	assert.Contains(t, stderr, "-gen FILE")
	assert.Contains(t, stderr, "synthetic")

	path := filepath.Join(t.TempDir(), "tiny.gguf")
	_, _, err = runCmd(t, ctx, "-gen", path)
	require.NoError(t, err)
	out, stderr, err := runCmd(t, ctx, "-model", path, "-prompt-ids", "1,2,3,4", "-ids", "-n", "-1", "-ctx", "24", "-ignore-eos", "-threads", "1")
	require.NoError(t, err, stderr)
	assert.Len(t, tokenLines(t, out), 24-4+1, "tokens until the context is full (the last one sampled from its final logits)")
	assert.Contains(t, stderr, "the context is full")
}

// TestRunDot: -dot writes the graph of the last token, which Graphviz
// renders (CI installs it).
func TestRunDot(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, dot := filepath.Join(dir, "tiny.gguf"), filepath.Join(dir, "g.dot")
	_, _, err := runCmd(t, ctx, "-gen", path)
	require.NoError(t, err)
	_, stderr, err := runCmd(t, ctx, "-model", path, "-n", "2", "-ignore-eos", "-threads", "1", "-dot", dot)
	require.NoError(t, err, stderr)
	src, err := os.ReadFile(dot)
	require.NoError(t, err)
	assert.Contains(t, string(src), "digraph")
	assert.Contains(t, string(src), "on CPU")
	bin, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("Graphviz's dot is not installed (CI installs it)")
	}
	out, err := exec.Command(bin, "-Tsvg", dot).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "<svg")
}

// TestProgressBar: the bar is drawn in place at whole percents and ends
// with a line break; a run whose standard error is no terminal draws none.
func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := progressBar(&b)
	for _, done := range []uint64{0, 10, 11, 500, 1000} {
		p(done, 1000)
	}
	out := b.String()
	assert.Equal(t, 4, strings.Count(out, "\r"), "0, 1, 50 and 100 %%: %q", out)
	assert.Contains(t, out, "100% of 0.0 MiB\n")
	assert.False(t, isTerminal(&b))

	path := filepath.Join(t.TempDir(), "tiny.gguf")
	_, _, err := runCmd(t, context.Background(), "-gen", path)
	require.NoError(t, err)
	_, stderr, err := runCmd(t, context.Background(), "-model", path, "-n", "1", "-threads", "1")
	require.NoError(t, err)
	assert.NotContains(t, stderr, "loading weights")
}

// TestRunTextPrompt: a text prompt (-prompt or -p-file) is tokenized with
// the file's tokenizer, BOS first, and the prompt and generated text
// stream to stdout as text (the synthetic vocabularies' text is
// gibberish: the tiny SentencePiece one lacks "▁", so spaces are unknown
// tokens), the tokens and statistics to stderr; the tokens are those of
// the same run from their IDs.
func TestRunTextPrompt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, vocab := range []string{"llama", "gpt2"} {
		t.Run(vocab, func(t *testing.T) {
			path := filepath.Join(dir, vocab+".gguf")
			size := "tiny"
			if vocab == "gpt2" {
				path = filepath.Join(dir, "gpt2.gguf")
				c := modeltest.Presets["tiny"]
				c.VocabSize = 512
				require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: c, Converted: true, Vocab: "gpt2", Type: ggml.TypeQ8_0}))
			} else {
				_, _, err := runCmd(t, ctx, "-gen", path, "-size", size, "-vocab", vocab)
				require.NoError(t, err)
			}
			m, err := model.Load(ctx, path, model.Options{Threads: 1})
			require.NoError(t, err)
			tok, err := m.Tokenizer()
			require.NoError(t, err)
			m.Close()
			prompt := "kalo mine the sea"
			ids := tok.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
			require.Equal(t, tok.BOS(), ids[0])

			common := []string{"-model", path, "-n", "8", "-threads", "1", "-ignore-eos", "-gpu-layers", "0"}
			out, stderr, err := runCmd(t, ctx, append(common, "-prompt", prompt)...)
			require.NoError(t, err, stderr)
			t.Log("\n" + out + stderr)
			assert.Contains(t, stderr, fmt.Sprintf("prompt: %d tokens %v", len(ids), ids))
			assert.Contains(t, stderr, "tokens/s")

			file := filepath.Join(dir, vocab+".txt")
			require.NoError(t, os.WriteFile(file, []byte(prompt), 0o644))
			fromFile, _, err := runCmd(t, ctx, append(common, "-p-file", file)...)
			require.NoError(t, err)
			assert.Equal(t, out, fromFile)

			var idList []string
			for _, id := range ids {
				idList = append(idList, fmt.Sprint(id))
			}
			withIDs, _, err := runCmd(t, ctx, append(common, "-prompt-ids", strings.Join(idList, ","), "-ids")...)
			require.NoError(t, err)
			gen := tokenLines(t, withIDs)
			require.Len(t, gen, 8)
			var text strings.Builder
			for _, id := range append(ids, toInt32(gen)...) {
				p, err := tok.Piece(id, false)
				require.NoError(t, err)
				text.WriteString(p)
			}
			assert.Equal(t, text.String()+"\n", out, "the text is the pieces of the prompt and the tokens generated")
		})
	}
}

func toInt32(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// TestRunChat: -chat sends the prompt through the file's chat template
// and prints the reply the library's Chat gives; llama.cpp's flag names
// (-m, -p, -n, -t, -c, --temp, --seed) run the same command.
func TestRunChat(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chat.gguf")
	c := modeltest.Presets["tiny"]
	c.VocabSize = 512
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: c, Converted: true, Vocab: "gpt2", Type: ggml.TypeQ8_0, Seed: 5}))

	out, stderr, err := runCmd(t, ctx, "-model", path, "-chat", "-system", "be brief", "-prompt", "hello there", "-n", "6", "-ignore-eos", "-threads", "1", "-gpu-layers", "0")
	require.NoError(t, err, stderr)
	m, err := model.Load(ctx, path, model.Options{Threads: 1, CPUOnly: true})
	require.NoError(t, err)
	defer m.Close()
	var want strings.Builder
	msgs := []chat.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello there"}}
	for piece, err := range m.Chat(ctx, msgs, model.GenerateOptions{MaxTokens: 6, IgnoreEOS: true}) {
		require.NoError(t, err)
		want.WriteString(piece)
	}
	assert.Equal(t, want.String()+"\n", out)

	long, _, err := runCmd(t, ctx, "-model", path, "-prompt-ids", "1,2,3", "-ids", "-n", "5", "-threads", "1", "-ctx", "32", "-gpu-layers", "0", "-temp", "0.9", "-seed", "3")
	require.NoError(t, err)
	short, _, err := runCmd(t, ctx, "-m", path, "-prompt-ids", "1,2,3", "-ids", "-n", "5", "-t", "1", "-c", "32", "-ngl", "0", "--temp", "0.9", "--seed", "3")
	require.NoError(t, err)
	assert.Equal(t, long, short)
	require.Len(t, tokenLines(t, short), 5)
}

// TestRunEmbd: -embd prints the prompt's embedding, the library's Embed.
func TestRunEmbd(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bert.gguf")
	c := modeltest.Presets["tiny"]
	c.Arch, c.HeadCountKV, c.NormEps = "bert", c.HeadCount, 1e-12
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: c, Seed: 9}))
	out, stderr, err := runCmd(t, ctx, "-m", path, "-prompt-ids", "1,7,9,2", "-embd", "-t", "1", "-ngl", "0")
	require.NoError(t, err, stderr)
	m, err := model.Load(ctx, path, model.Options{Threads: 1, CPUOnly: true})
	require.NoError(t, err)
	defer m.Close()
	want, err := m.Embed(ctx, []int32{1, 7, 9, 2}, model.PoolDefault)
	require.NoError(t, err)
	fields := strings.Fields(out)
	require.Len(t, fields, len(want))
	for i, f := range fields {
		v, err := strconv.ParseFloat(f, 32)
		require.NoError(t, err)
		assert.InDelta(t, want[i], v, 1e-6, "value %d", i)
	}
	_, _, err = runCmd(t, ctx, "-m", path, "-prompt-ids", "1,2", "-n", "2", "-t", "1")
	require.ErrorIs(t, err, model.ErrModel, "an encoder does not generate")
}

// -vocab gpt2 with the tiny preset (a vocabulary of 256, under GPT-2's 256
// bytes and special tokens): the vocabulary grows to fit, and the model
// runs a text prompt. (It was refused with a message that named no fix.)
func TestGenerateGPT2Tiny(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tiny-gpt2.gguf")
	_, stderr, err := runCmd(t, ctx, "-gen", path, "-size", "tiny", "-vocab", "gpt2")
	require.NoError(t, err, stderr)
	out, stderr, err := runCmd(t, ctx, "-model", path, "-prompt", "Hello", "-n", "4", "-threads", "1", "-ignore-eos")
	require.NoError(t, err, stderr)
	assert.Contains(t, stderr, fmt.Sprintf("vocabulary %d", modeltest.MinGPT2Vocab))
	t.Log("\n" + out)
}
