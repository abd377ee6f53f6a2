package tokenizer

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
)

// The reference is llama.cpp: the prebuilt libraries of node-llama-cpp
// 3.22.1 driven by testdata/llamacpp_tokenize.c, which build/llamacpp.sh
// (make llamacpp) compiles into GOGGML_LLAMACPP (default
// ~/.cache/go-ggml/llamacpp). Without it the tests that need it skip,
// unless GOGGML_REQUIRE_LLAMACPP=1 (make test-tokenizer), where its
// absence fails them.

// llamaCpp is a running llamacpp_tokenize on one GGUF file.
type llamaCpp struct {
	cmd            *exec.Cmd
	in             *bufio.Writer
	stdin          io.Closer
	out            *bufio.Reader
	nVocab         int
	bos, eos       int32
	addBOS, addEOS bool
}

// startLlamaCpp starts the reference on the GGUF file at path; it skips
// the test when llama.cpp is not installed (fails with
// GOGGML_REQUIRE_LLAMACPP=1), and under the race detector.
func startLlamaCpp(t testing.TB, path string) *llamaCpp {
	t.Helper()
	if raceOn {
		// As modeltest.StartLlamaCpp: the comparisons are tokens, one
		// goroutine against a process, not concurrency. They run in the
		// plain run; under -race (three times slower, War and Peace alone
		// 100 s) they cost every suite's race pass minutes for nothing.
		t.Skip("llama.cpp's comparisons run without -race")
	}
	dir := os.Getenv("GOGGML_LLAMACPP")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "go-ggml", "llamacpp")
	}
	bin := filepath.Join(dir, "bin", "llamacpp_tokenize")
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("llama.cpp's tokenizer is not installed in %s (make llamacpp installs it; GOGGML_LLAMACPP names another place)", dir)
		if os.Getenv("GOGGML_REQUIRE_LLAMACPP") == "1" {
			t.Fatal(msg + ", and GOGGML_REQUIRE_LLAMACPP=1 requires it")
		}
		t.Skip(msg)
	}
	lib := filepath.Join(dir, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
	cmd := exec.Command(bin, lib, path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	l := &llamaCpp{cmd: cmd, in: bufio.NewWriter(stdin), stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	t.Cleanup(l.close)
	line, err := l.out.ReadString('\n')
	require.NoError(t, err, "llamacpp_tokenize did not start")
	var addBOS, addEOS int
	_, err = fmt.Sscanf(line, "ready %d %d %d %d %d", &l.nVocab, &l.bos, &l.eos, &addBOS, &addEOS)
	require.NoError(t, err, line)
	l.addBOS, l.addEOS = addBOS == 1, addEOS == 1
	return l
}

func (l *llamaCpp) close() {
	fmt.Fprintln(l.in, "quit")
	l.in.Flush()
	l.stdin.Close()
	l.cmd.Wait()
}

// reply reads "ok ..." and returns the rest of the line.
func (l *llamaCpp) reply(t testing.TB) string {
	t.Helper()
	require.NoError(t, l.in.Flush())
	line, err := l.out.ReadString('\n')
	require.NoError(t, err)
	line = strings.TrimSuffix(line, "\n")
	rest, ok := strings.CutPrefix(line, "ok ")
	require.True(t, ok, "llamacpp_tokenize: %s", line)
	return rest
}

// replyBytes reads "ok <n>\n" and n bytes.
func (l *llamaCpp) replyBytes(t testing.TB) string {
	t.Helper()
	n, err := strconv.Atoi(l.reply(t))
	require.NoError(t, err)
	b := make([]byte, n)
	_, err = io.ReadFull(l.out, b)
	require.NoError(t, err)
	return string(b)
}

// tokenize is llama_tokenize.
func (l *llamaCpp) tokenize(t testing.TB, text string, o EncodeOptions) []int32 {
	t.Helper()
	fmt.Fprintf(l.in, "t %d %d %d\n%s", b2i(o.AddSpecial), b2i(o.ParseSpecial), len(text), text)
	return l.readIDs(t)
}

// readIDs reads the answer to a "t" request.
func (l *llamaCpp) readIDs(t testing.TB) []int32 {
	t.Helper()
	f := strings.Fields(l.reply(t))
	n, err := strconv.Atoi(f[0])
	require.NoError(t, err)
	require.Len(t, f, n+1)
	ids := make([]int32, n)
	for i := range ids {
		x, err := strconv.ParseInt(f[i+1], 10, 32)
		require.NoError(t, err)
		ids[i] = int32(x)
	}
	return ids
}

// detokenize is llama_detokenize.
func (l *llamaCpp) detokenize(t testing.TB, ids []int32, o DecodeOptions) string {
	t.Helper()
	fmt.Fprintf(l.in, "d %d %d %d", b2i(o.RemoveSpecial), b2i(o.RenderSpecial), len(ids))
	for _, id := range ids {
		fmt.Fprintf(l.in, " %d", id)
	}
	fmt.Fprintln(l.in)
	return l.replyBytes(t)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// refCase is a vocabulary under test: its tokenizer and llama.cpp on the
// same file.
type refCase struct {
	name    string
	tok     *Tokenizer
	ref     *llamaCpp
	variant bool // a vocabulary of another case with other settings: the same pieces
}

// refCases writes a GGUF file of each real vocabulary (and Gemma's with
// llama.cpp's default space in front, as Llama 2's files have it), reads
// the tokenizer back from the file, and starts llama.cpp on it.
func refCases(t *testing.T) []refCase {
	yes := true
	var out []refCase
	for _, c := range []struct {
		name  string
		vocab string
		edit  func(*Vocab)
	}{
		{"llama3", "llama3", nil},
		// Llama 3's vocabulary under the pre-tokenizers of other
		// files: SmolLM's (each digit alone, GPT-2's
		// expression, spaces kept as they are when decoding) and Smaug's
		// (Llama 3's expression, merges always).
		{"llama3-smollm", "llama3", func(v *Vocab) { v.Pre = "smollm" }},
		{"llama3-smaug", "llama3", func(v *Vocab) { v.Pre = "smaug-bpe" }},
		// And Qwen2's (Qwen 2, 2.5, 3): Llama 3's expression with each
		// number alone, merges always, no BOS, spaces kept.
		{"llama3-qwen2", "llama3", func(v *Vocab) { v.Pre = "qwen2" }},
		{"gemma2", "gemma2", nil},
		// WordPiece: an uncased vocabulary with BERT's IDs (llama.cpp's
		// defaults), the same keeping accents, and a cased one with
		// its special tokens first, named by keys.
		{"bert", "bert", nil},
		{"bert-accents", "bert", func(v *Vocab) { no := false; v.StripAccents = &no }},
		{"bert-cased", "bert-cased", nil},
		{"gemma2-space", "gemma2", func(v *Vocab) { v.AddSpacePrefix = &yes }},
		// A model named Phi-3: white space after special tokens goes
		// (llama.cpp needs Phi-3's <s>, </s> and <|endoftext|>: Gemma's
		// unused tokens take the place of those it lacks).
		{"gemma2-phi3", "gemma2", func(v *Vocab) {
			v.AddSpacePrefix, v.Name = &yes, "Phi-3 Mini Test"
			v.Tokens = slices.Clone(v.Tokens)
			v.Types = slices.Clone(v.Types)
			for i, s := range []string{"<s>", "</s>", "<|endoftext|>"} {
				if slices.Contains(v.Tokens, s) {
					continue
				}
				id := slices.Index(v.Tokens, fmt.Sprintf("<unused%d>", i))
				require.GreaterOrEqual(t, id, 0)
				v.Tokens[id], v.Types[id] = s, TypeControl
			}
		}},
	} {
		v := realVocab(t, c.vocab)
		if c.edit != nil {
			c.edit(&v)
		}
		path := writeGGUF(t, v, nil)
		ref := startLlamaCpp(t, path)
		f, err := gguf.Open(path)
		require.NoError(t, err)
		tok, err := FromGGUF(f)
		require.NoError(t, f.Close())
		require.NoError(t, err)
		require.Equal(t, ref.nVocab, tok.Len())
		require.Equal(t, ref.bos, tok.BOS())
		require.Equal(t, ref.eos, tok.EOS())
		require.Equal(t, ref.addBOS, tok.AddsBOS())
		require.Equal(t, ref.addEOS, tok.AddsEOS())
		out = append(out, refCase{c.name, tok, ref, c.edit != nil})
	}
	return out
}

// hardCases are texts that stress the tokenizers' rules.
var hardCases = []string{
	"", " ", "  ", "   ", "\t", " \t ", "\n", "\n\n", "\r\n", " \n", "\n ", "a\n\n\nb", "  \n  \n",
	"Hello", " Hello", "Hello ", "  Hello  ", "Hello world", "Hello  world", "Hello\tworld", "Hello\n\nworld",
	"1", "12", "123", "1234", "12345678901234567890", "3.14159", "1,000,000", "a1b22c333", " 42 ", "٣٤٥", "Ⅻ",
	"it's", "it'S", "you're", "YOU'RE", "we've", "I'm", "I'M", "she'll", "SHE'LL", "he'd", "HE'D", "don't", "DON'T",
	"'s", "'", "''", "' s", "rock 'n' roll", "O'Neil's", "l'été",
	"The quick brown fox jumps over the lazy dog.", "Hello, world! How are you? I'm fine.",
	"a , b . c ! d ? e", "x ' y", "say 'hi'", "(parenthesis) [brackets] {braces} <angles>",
	"$100 + 5% = ~$105 | ^caret `tick` ~tilde", "user@example.com", "https://example.com/path?q=1&r=2",
	"naïve café résumé", "Ελληνικά", "Русский текст", "עברית", "العربية", "हिन्दी",
	"你好，世界", "日本語のテキスト", "한국어 텍스트", "中文 English 混合",
	"😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "I ❤️ Go", "emoji😀inside",
	"\xff", "\xc3", "\xc3(", "a\xe2\x82b", "\xf0\x9f\x98", "\x80\x80", "ok\xfe\xffok", "\xc0\x80", "\xed\xa0\x80",
	"<s>", "</s>", "<unk>", "<s>Hello</s>", "<|begin_of_text|>", "<|eot_id|>", "<|begin_of_text|>Hello<|eot_id|>",
	"<start_of_turn>user\nHi<end_of_turn>", "<bos><eos>", "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
	"<|begin_of_text|><|begin_of_text|>", "<|eot_id", "<|", "x<|eot_id|>y", " <|eot_id|> ",
	"<start_of_turn>\n user<end_of_turn> \n\t<eos>  x", "</s> \n Hi", "<s> Hi", "<|endoftext|> a", "<|eot_id|>\n\nHi <|eot_id|>\u00a0x",
	"▁", "▁▁", "a▁b", "<0x0A>", "\x00", "a\x00b", "\x7f", "\u00a0nbsp", "\u2003em space", "\u3000ideographic",
	"    def f(x):\n        return x * 2\n", "if (a && b) { return 1; }", "<html><body>Hi</body></html>",
	"ALL CAPS TEXT", "MiXeD CaSe", "Tab\tSeparated\tValues", "trailing   ", "   leading",
}

// encodeModes are the flag combinations tried.
var encodeModes = []EncodeOptions{{}, {AddSpecial: true}, {ParseSpecial: true}, {AddSpecial: true, ParseSpecial: true}}

// decodeModes are Decode's flag combinations.
var decodeModes = []DecodeOptions{{}, {RemoveSpecial: true}, {RenderSpecial: true}, {RemoveSpecial: true, RenderSpecial: true}}

// checkText compares tokenizing text with llama.cpp's, in the modes
// given, and detokenizing the tokens in the decoding modes given, and the
// round trip where llama.cpp gives the text back.
func checkText(t *testing.T, c refCase, text string, modes []EncodeOptions, dmodes []DecodeOptions) bool {
	ok := true
	for _, o := range modes {
		want := c.ref.tokenize(t, text, o)
		got := c.tok.Encode(text, o)
		if !assert.Equal(t, want, got, "%s: Encode(%q, %+v)", c.name, text, o) {
			ok = false
			continue
		}
		for _, d := range dmodes {
			wantText := c.ref.detokenize(t, want, d)
			gotText, err := c.tok.Decode(got, d)
			require.NoError(t, err)
			if !assert.Equal(t, wantText, gotText, "%s: Decode(Encode(%q, %+v), %+v)", c.name, text, o, d) {
				ok = false
			}
			if wantText == text {
				assert.Equal(t, text, gotText)
			}
		}
	}
	return ok
}

// TestReferenceHardCases: the hard cases give llama.cpp's tokens and
// texts, in every mode, with both vocabularies.
func TestReferenceHardCases(t *testing.T) {
	for _, c := range refCases(t) {
		t.Run(c.name, func(t *testing.T) {
			for _, text := range hardCases {
				checkText(t, c, text, encodeModes, decodeModes)
			}
		})
	}
}

// TestReferencePieces: every token's piece is llama.cpp's, rendered and
// not, and so is whether it ends generation.
func TestReferencePieces(t *testing.T) {
	for _, c := range refCases(t) {
		if c.variant {
			continue // its pieces are its vocabulary's, checked in that case
		}
		t.Run(c.name, func(t *testing.T) {
			// In batches, so that requests and answers stay within the
			// pipes' buffers while neither side reads.
			const batch = 500
			bad := 0
			n := int32(c.tok.Len())
			for from := int32(0); from < n; from += batch {
				to := min(from+batch, n)
				for id := from; id < to; id++ {
					fmt.Fprintf(c.ref.in, "p %d 0\np %d 1\ne %d\n", id, id, id)
				}
				require.NoError(t, c.ref.in.Flush())
				for id := from; id < to; id++ {
					for _, special := range []bool{false, true} {
						got, err := c.tok.Piece(id, special)
						require.NoError(t, err)
						if want := c.ref.replyBytes(t); want != got {
							bad++
							assert.Equal(t, want, got, "%s: Piece(%d %q, %v)", c.name, id, c.tok.Token(id), special)
						}
					}
					if want := c.ref.reply(t) == "1"; want != c.tok.IsEOG(id) {
						bad++
						assert.Equal(t, want, c.tok.IsEOG(id), "%s: IsEOG(%d %q)", c.name, id, c.tok.Token(id))
					}
				}
				if bad > 20 {
					t.Fatal("too many differences")
				}
			}
		})
	}
}

// TestReferenceWarAndPeace: War and Peace, line by line, gives
// llama.cpp's tokens, with BOS as the file says; and the whole book as
// one text too.
func TestReferenceWarAndPeace(t *testing.T) {
	b, err := os.ReadFile(testdata(t, "war-and-peace.txt"))
	require.NoError(t, err)
	text := string(b)
	for _, c := range refCases(t) {
		t.Run(c.name, func(t *testing.T) {
			// In batches of lines, each tokenized then detokenized, so that
			// requests and answers stay within the pipes' buffers.
			const batch = 100
			o, d := EncodeOptions{AddSpecial: true}, DecodeOptions{RemoveSpecial: true}
			bad := 0
			lines := strings.SplitAfter(text, "\n")
			for from := 0; from < len(lines); from += batch {
				chunk := lines[from:min(from+batch, len(lines))]
				for _, line := range chunk {
					fmt.Fprintf(c.ref.in, "t 1 0 %d\n%s", len(line), line)
				}
				require.NoError(t, c.ref.in.Flush())
				ids := make([][]int32, len(chunk))
				for i, line := range chunk {
					ids[i] = c.tok.Encode(line, o)
					if !assert.Equal(t, c.ref.readIDs(t), ids[i], "%s: Encode(%q)", c.name, line) {
						bad++
					}
					fmt.Fprintf(c.ref.in, "d 1 0 %d", len(ids[i]))
					for _, id := range ids[i] {
						fmt.Fprintf(c.ref.in, " %d", id)
					}
					fmt.Fprintln(c.ref.in)
				}
				require.NoError(t, c.ref.in.Flush())
				for i, line := range chunk {
					got, err := c.tok.Decode(ids[i], d)
					require.NoError(t, err)
					want := c.ref.replyBytes(t)
					if !assert.Equal(t, want, got, "%s: Decode(Encode(%q))", c.name, line) {
						bad++
					}
					if want == line {
						assert.Equal(t, line, got)
					}
				}
				if bad > 10 {
					t.Fatal("too many differences")
				}
			}
			whole := text[:len(text)/4]
			assert.Equal(t, c.ref.tokenize(t, whole, EncodeOptions{}), c.tok.Encode(whole, EncodeOptions{}), "a quarter of the book as one text")
		})
	}
}

// randomSeed returns the seed of the random tests: the run's, as every
// package's tests take it (GOGGML_SEED replays it).
func randomSeed(t *testing.T) uint64 { return testutil.Seed(t) }

// randomPieces are what random texts are made of.
var randomPieces = []string{
	" ", "  ", "\t", "\n", "\r\n", "\n\n", "a", "e", "the", "The", "THE", " of", "ing", "tion", "x", "Zz",
	"0", "7", "42", "1234", "'s", "'t", "'re", "'VE", "'m", "'LL", "'d", "'", "\"", ".", ",", "!", "?", "...", "-", "—",
	"(", ")", "$", "+", "<", "=", ">", "^", "~", "|", "`", "_", "#", "@", "&", "%", "/", "\\",
	"é", "ß", "ñ", "Ω", "ж", "ש", "ع", "क", "中", "文", "日本", "한", "😀", "👍🏽", "\u200d", "\ufe0f", "❤",
	"\xff", "\xc3", "\x80", "\xe2\x82", "\u00a0", "\u3000", "٣", "Ⅻ",
	"<s>", "</s>", "<|eot_id|>", "<|begin_of_text|>", "<end_of_turn>", "<start_of_turn>", "<|", "|>", "▁",
}

// TestReferenceRandom: random texts of the pieces above give llama.cpp's
// tokens and texts, in every mode.
func TestReferenceRandom(t *testing.T) {
	seed := randomSeed(t)
	n := 300
	if testing.Short() {
		n = 50
	}
	for _, c := range refCases(t) {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			bad := 0
			for range n {
				var b strings.Builder
				for range rng.IntN(30) {
					b.WriteString(randomPieces[rng.IntN(len(randomPieces))])
				}
				if !checkText(t, c, b.String(), encodeModes, decodeModes) {
					bad++
				}
				if bad > 10 {
					t.Fatalf("too many differences (seed %d)", seed)
				}
			}
		})
	}
}
