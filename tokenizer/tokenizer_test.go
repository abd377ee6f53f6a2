package tokenizer

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/gguf"
)

// spmVocab is a small SentencePiece vocabulary: <unk> <s> </s>, byte
// tokens for 'Z' and the bytes of "é", "▁", "a", "b", and the merged
// pieces given with their scores.
func spmVocab(merged map[string]float32) Vocab {
	v := Vocab{Model: "llama", BOS: 1, EOS: 2, UNK: 0, EOT: -1, EOM: -1,
		Tokens: []string{"<unk>", "<s>", "</s>", "<0x5A>", "<0xC3>", "<0xA9>", "▁", "a", "b"},
		Types:  []TokenType{TypeUnknown, TypeControl, TypeControl, TypeByte, TypeByte, TypeByte, TypeNormal, TypeNormal, TypeNormal},
	}
	v.Scores = make([]float32, len(v.Tokens))
	for _, s := range []string{"▁a", "ab", "▁ab"} {
		if score, ok := merged[s]; ok {
			v.Tokens = append(v.Tokens, s)
			v.Scores = append(v.Scores, score)
			v.Types = append(v.Types, TypeNormal)
		}
	}
	return v
}

func newTok(t testing.TB, v Vocab) *Tokenizer {
	t.Helper()
	tok, err := New(v)
	require.NoError(t, err)
	return tok
}

// pieces returns the tokens' texts.
func pieces(tok *Tokenizer, ids []int32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = tok.Token(id)
	}
	return out
}

// TestSentencePieceMerges: the best scored merge goes first, and a
// merge happens only while the merged text is a token; by hand.
func TestSentencePieceMerges(t *testing.T) {
	for _, c := range []struct {
		merged map[string]float32
		text   string
		want   []string
	}{
		{map[string]float32{"▁a": -1, "ab": -2}, "ab", []string{"▁a", "b"}},
		{map[string]float32{"▁a": -2, "ab": -1}, "ab", []string{"▁", "ab"}},
		{map[string]float32{"▁a": -1, "ab": -2, "▁ab": -3}, "ab", []string{"▁ab"}},
		{map[string]float32{"▁a": -2, "ab": -1, "▁ab": -3}, "ab", []string{"▁ab"}},
		// Equal scores: the leftmost first.
		{map[string]float32{"▁a": -1, "ab": -1}, "ab", []string{"▁a", "b"}},
		{map[string]float32{"ab": -1}, "abab", []string{"▁", "ab", "ab"}},
		// No token: bytes, and the unknown token for a byte without one.
		{nil, "Z", []string{"▁", "<0x5A>"}},
		{nil, "é", []string{"▁", "<0xC3>", "<0xA9>"}},
		{nil, "Y", []string{"▁", "<unk>"}},
		{nil, "a b", []string{"▁", "a", "▁", "b"}},
	} {
		tok := newTok(t, spmVocab(c.merged))
		got := tok.Encode(c.text, EncodeOptions{})
		assert.Equal(t, c.want, pieces(tok, got), "%q with %v", c.text, c.merged)
	}
}

// TestSentencePieceSpecial: BOS and EOS as the flags say, the space in
// front of the text and after a special token, and "<s>" read as the
// token only with ParseSpecial.
func TestSentencePieceSpecial(t *testing.T) {
	v := spmVocab(map[string]float32{"ab": -1})
	yes, no := true, false
	v.AddEOS = &yes
	tok := newTok(t, v)
	assert.Equal(t, []string{"<s>", "▁", "ab", "</s>"}, pieces(tok, tok.Encode("ab", EncodeOptions{AddSpecial: true})))
	assert.Equal(t, []string{"▁", "ab"}, pieces(tok, tok.Encode("ab", EncodeOptions{})))
	assert.Equal(t, []string{"<s>", "▁", "ab", "<s>", "▁", "a"},
		pieces(tok, tok.Encode("<s>ab<s>a", EncodeOptions{ParseSpecial: true})), "a space after each special token")
	plain := pieces(tok, tok.Encode("<s>", EncodeOptions{}))
	assert.NotContains(t, plain, "<s>")
	assert.Empty(t, tok.Encode("", EncodeOptions{}))
	assert.Equal(t, []string{"<s>", "</s>"}, pieces(tok, tok.Encode("", EncodeOptions{AddSpecial: true})))

	v.AddSpacePrefix, v.AddBOS, v.AddEOS = &no, &no, &no
	tok = newTok(t, v)
	assert.Equal(t, []string{"ab"}, pieces(tok, tok.Encode("ab", EncodeOptions{AddSpecial: true})))
}

// bpeVocab is a small byte-level vocabulary: the byte runes of a b c and
// space (Ġ), merged pieces, and a control token.
func bpeVocab(pre string, merges ...string) Vocab {
	v := Vocab{Model: "gpt2", Pre: pre, BOS: 6, EOS: 6, UNK: -1, EOT: -1, EOM: -1, Merges: merges,
		Tokens: []string{"a", "b", "c", "Ġ", "ab", "Ġa", "<|end|>", "abc", "1", "2", "3", "12", "123", "'", "s", ".", "Ċ"},
	}
	v.Types = make([]TokenType, len(v.Tokens))
	for i := range v.Types {
		v.Types[i] = TypeNormal
	}
	v.Types[6] = TypeControl
	return v
}

// TestBPEMerges: the lowest ranked merge goes first; by hand.
func TestBPEMerges(t *testing.T) {
	for _, c := range []struct {
		pre    string
		merges []string
		text   string
		want   []string
	}{
		{"gpt-2", []string{"a b", "ab c", "Ġ a"}, "abc", []string{"abc"}},
		{"gpt-2", []string{"a b", "ab c", "Ġ a"}, " ab", []string{"Ġ", "ab"}},
		{"gpt-2", []string{"Ġ a", "a b"}, " ab", []string{"Ġa", "b"}},
		{"gpt-2", []string{"a b"}, "ab ab", []string{"ab", "Ġ", "ab"}},
		{"gpt-2", nil, "cab", []string{"c", "a", "b"}},
		// GPT-2 splits "'s" off; Llama 3 keeps numbers in threes.
		{"gpt-2", nil, "a's", []string{"a", "'", "s"}},
		{"llama-bpe", []string{"1 2", "12 3"}, "1231", []string{"123", "1"}},
		{"gpt-2", []string{"1 2", "12 3"}, "1231", []string{"123", "1"}},
		// Llama 3 takes a word that is a token whole, whatever the merges.
		{"llama-bpe", nil, "abc", []string{"abc"}},
		{"gpt-2", nil, "abc", []string{"a", "b", "c"}},
	} {
		tok := newTok(t, bpeVocab(c.pre, c.merges...))
		got := tok.Encode(c.text, EncodeOptions{})
		assert.Equal(t, c.want, pieces(tok, got), "%q with %s %v", c.text, c.pre, c.merges)
	}
}

// TestPreTokenizers: the words each pre-tokenizer splits a text into.
func TestPreTokenizers(t *testing.T) {
	words := func(pre preKind, text string) []string {
		s := &span{}
		for _, r := range text {
			s.cp = append(s.cp, r)
			s.cl = append(s.cl, classOf(r))
		}
		ends := []int{len(s.cp)}
		for _, f := range preSplits[pre] {
			ends = splitEach(f, s, ends)
		}
		var out []string
		ini := 0
		for _, e := range ends {
			out = append(out, string(s.cp[ini:e]))
			ini = e
		}
		return out
	}
	for _, c := range []struct {
		pre  preKind
		text string
		want []string
	}{
		{preLlama3, "Hello world", []string{"Hello", " world"}},
		{preLlama3, "it's IT'S", []string{"it", "'s", " IT", "'S"}},
		{preLlama3, "1234567", []string{"123", "456", "7"}},
		{preLlama3, "a  b", []string{"a", " ", " b"}},
		{preLlama3, "a \n\n b", []string{"a", " \n\n", " b"}},
		{preLlama3, "(x)!\n", []string{"(x", ")!\n"}},
		{preGPT2, "it's IT'S", []string{"it", "'s", " IT", "'", "S"}},
		{preGPT2, "a  b", []string{"a", " ", " b"}},
		{preGPT2, "1234567", []string{"1234567"}},
		{preDefault, "1234567", []string{"123", "456", "7"}},
		{preDefault, "a+b", []string{"a", "+", "b"}},
		{preDefault, "x 12345.", []string{"x", " ", "123", "45", "."}},
		// Qwen2: Llama 3's expression, each number alone.
		{preQwen2, "1234567", []string{"1", "2", "3", "4", "5", "6", "7"}},
		{preQwen2, "x12 ٣٤", []string{"x", "1", "2", " ", "٣", "٤"}},
		{preQwen2, "it's IT'S", []string{"it", "'s", " IT", "'S"}},
		{preQwen2, "a \n\n b", []string{"a", " \n\n", " b"}},
		{preQwen2, "(x)!\n", []string{"(x", ")!\n"}},
		{preQwen2, "$1.5", []string{"$", "1", ".", "5"}},
	} {
		assert.Equal(t, c.want, words(c.pre, c.text), "%q", c.text)
	}
}

// TestRoundTrip: decoding what was encoded gives the text back, with the
// real vocabularies (where neither adds nor cleans anything).
func TestRoundTrip(t *testing.T) {
	texts := []string{"Hello world", "  leading and trailing  ", "tabs\tand\nnewlines\n\n", "naïve café 你好 😀 👨‍👩‍👧",
		"<|eot_id|> <end_of_turn> <s>", "x = f(1234) + 'a'", "CJK 日本語 한국어"}
	for _, name := range []string{"llama3", "gemma2"} {
		tok := newTok(t, realVocab(t, name))
		for _, text := range texts {
			for _, o := range []EncodeOptions{{}, {AddSpecial: true}} {
				got, err := tok.Decode(tok.Encode(text, o), DecodeOptions{RemoveSpecial: true})
				require.NoError(t, err)
				assert.Equal(t, text, got, "%s: %q %+v", name, text, o)
			}
		}
	}
}

// TestDecoder: a streaming decoder gives the text back in pieces that
// are each valid UTF-8, though tokens split characters.
func TestDecoder(t *testing.T) {
	text := "héllo 😀👍🏽 世界 ok \xff end"
	for _, name := range []string{"llama3", "gemma2"} {
		tok := newTok(t, realVocab(t, name))
		ids := tok.Encode(text, EncodeOptions{})
		d := tok.NewDecoder(false)
		var b strings.Builder
		split := false
		for _, id := range ids {
			p, _ := tok.Piece(id, false)
			split = split || !utf8.ValidString(p)
			s, err := d.Add(id)
			require.NoError(t, err)
			if !strings.Contains(s, "\xff") {
				assert.True(t, utf8.ValidString(s), "%s: %q", name, s)
			}
			b.WriteString(s)
		}
		b.WriteString(d.Flush())
		assert.True(t, split, "%s: some token holds part of a character", name)
		want, err := tok.Decode(ids, DecodeOptions{})
		require.NoError(t, err)
		assert.Equal(t, want, b.String())
		_, err = d.Add(-1)
		assert.ErrorIs(t, err, ErrTokenID)
	}

	// The held back bytes come out as they are at Flush.
	tok := newTok(t, spmVocab(nil))
	d := tok.NewDecoder(false)
	s, err := d.Add(4) // <0xC3>: the first byte of é
	require.NoError(t, err)
	assert.Empty(t, s)
	assert.Equal(t, "\xc3", d.Flush())
	for _, id := range []int32{4, 5} {
		s, err = d.Add(id)
		require.NoError(t, err)
	}
	assert.Equal(t, "é", s)
}

// TestDecodeCleanSpaces: byte-level BPE's decoding drops the spaces
// llama.cpp's clean-up drops.
func TestDecodeCleanSpaces(t *testing.T) {
	for in, want := range map[string]string{
		"a , b . c ! d ?": "a, b. c! d?", "x ' y": "x'y", "it 's": "it's", "I 'm": "I'm", "we 've": "we've",
		"they 're": "they're", "don 't": "don 't", "he 'd": "he 'd", "she 'll": "she 'll", "": "",
	} {
		assert.Equal(t, want, string(cleanSpaces([]byte(in))), "%q", in)
	}
}

// TestPieces: pieces by token type, and IDs outside the vocabulary.
func TestPieces(t *testing.T) {
	tok := newTok(t, spmVocab(map[string]float32{"▁a": -1}))
	for id, want := range map[int32]string{0: "<unk>", 1: "<s>", 3: "Z", 6: " ", 9: " a"} {
		got, err := tok.Piece(id, true)
		require.NoError(t, err)
		assert.Equal(t, want, got, "token %d", id)
	}
	got, err := tok.Piece(1, false)
	require.NoError(t, err)
	assert.Empty(t, got, "a control token without special")
	for _, id := range []int32{-1, int32(tok.Len())} {
		_, err := tok.Piece(id, true)
		assert.ErrorIs(t, err, ErrTokenID)
		_, err = tok.Decode([]int32{id}, DecodeOptions{})
		assert.ErrorIs(t, err, ErrTokenID)
	}
	text, err := tok.Decode([]int32{1, 9, 2}, DecodeOptions{})
	require.NoError(t, err)
	assert.Equal(t, " a", text, "the BOS in front keeps the space")
	text, err = tok.Decode([]int32{9}, DecodeOptions{})
	require.NoError(t, err)
	assert.Equal(t, "a", text)

	b := newTok(t, bpeVocab("gpt-2"))
	text, err = b.Decode([]int32{3, 0, 16, 6}, DecodeOptions{RenderSpecial: true})
	require.NoError(t, err)
	assert.Equal(t, " a\n<|end|>", text)
	assert.True(t, b.IsEOG(6))
	assert.False(t, b.IsEOG(0))
}

// TestNewErrors: each lie of a vocabulary is an error of its kind.
func TestNewErrors(t *testing.T) {
	yes := true
	for _, c := range []struct {
		name string
		edit func(*Vocab)
		want error
	}{
		{"model", func(v *Vocab) { v.Model = "t5" }, ErrUnsupported},
		{"pre", func(v *Vocab) { v.Model, v.Pre = "gpt2", "qwen35-unknown" }, ErrUnsupported},
		{"no tokens", func(v *Vocab) { v.Tokens, v.Scores, v.Types = nil, nil, nil }, ErrKey},
		{"scores", func(v *Vocab) { v.Scores = v.Scores[1:] }, ErrLength},
		{"types", func(v *Vocab) { v.Types = append(v.Types, TypeNormal) }, ErrLength},
		{"type value", func(v *Vocab) { v.Types[7] = 9 }, ErrTokenType},
		{"negative type", func(v *Vocab) { v.Types[7] = -1 }, ErrTokenType},
		{"invalid UTF-8", func(v *Vocab) { v.Tokens[7] = "a\xff" }, ErrTokenText},
		{"duplicate", func(v *Vocab) { v.Tokens[8] = "a" }, ErrTokenText},
		{"BOS", func(v *Vocab) { v.BOS = int32(len(v.Tokens)) }, ErrTokenID},
		{"EOS", func(v *Vocab) { v.EOS = -2 }, ErrTokenID},
		{"EOT", func(v *Vocab) { v.EOT = 1 << 20 }, ErrTokenID},
		{"no BOS to add", func(v *Vocab) { v.BOS = -1 }, ErrTokenID},
		{"no EOS to add", func(v *Vocab) { v.EOS, v.AddEOS = -1, &yes }, ErrTokenID},
		{"merge", func(v *Vocab) { v.Model, v.Merges = "gpt2", []string{"a b", "ab"} }, ErrMerge},
		{"merge space", func(v *Vocab) { v.Model, v.Merges = "gpt2", []string{"a "} }, ErrMerge},
		{"empty merge", func(v *Vocab) { v.Model, v.Merges = "gpt2", []string{""} }, ErrMerge},
	} {
		v := spmVocab(nil)
		c.edit(&v)
		_, err := New(v)
		assert.ErrorIs(t, err, c.want, c.name)
	}
	// An empty token is named as llama.cpp names it.
	v := spmVocab(nil)
	v.Tokens[8] = ""
	tok := newTok(t, v)
	assert.Equal(t, "[EMPTY_8]", tok.Token(8))
}

// TestFromGGUFErrors: lying files are errors of their kind, never panics.
func TestFromGGUFErrors(t *testing.T) {
	v := spmVocab(map[string]float32{"ab": -1})
	for _, c := range []struct {
		name  string
		extra map[string]any
		want  error
	}{
		{"model", map[string]any{keyModel: "t5"}, ErrUnsupported},
		{"model type", map[string]any{keyModel: uint32(1)}, ErrKey},
		{"tokens type", map[string]any{keyTokens: []int32{1, 2}}, ErrKey},
		{"types length", map[string]any{keyTypes: []int32{1, 1, 1}}, ErrLength},
		{"types type", map[string]any{keyTypes: []float32{1}}, ErrKey},
		{"scores length", map[string]any{keyScores: []float32{0}}, ErrLength},
		{"scores type", map[string]any{keyScores: []string{"x"}}, ErrKey},
		{"BOS", map[string]any{"tokenizer.ggml.bos_token_id": uint32(1000)}, ErrTokenID},
		{"EOS type", map[string]any{"tokenizer.ggml.eos_token_id": "2"}, ErrKey},
		{"add_bos type", map[string]any{keyAddBOS: uint8(1)}, ErrKey},
		{"invalid UTF-8", map[string]any{keyTokens: append(append([]string(nil), v.Tokens[:9]...), "\xc3")}, ErrTokenText},
		{"gpt2 without merges", map[string]any{keyModel: "gpt2"}, ErrKey},
	} {
		path := writeGGUF(t, v, c.extra)
		f, err := gguf.Open(path)
		require.NoError(t, err, c.name)
		_, err = FromGGUF(f)
		assert.ErrorIs(t, err, c.want, c.name)
		_, err = FromGGUFForDecoding(f)
		assert.ErrorIs(t, err, c.want, "%s: for decoding", c.name)
		require.NoError(t, f.Close())
	}

	bv := bpeVocab("llama-bpe", "a b")
	for _, c := range []struct {
		name  string
		extra map[string]any
		want  error
	}{
		{"merges", map[string]any{keyMerges: []string{"ab"}}, ErrMerge},
		{"merges type", map[string]any{keyMerges: []int32{1}}, ErrKey},
		{"pre", map[string]any{keyPre: "deepseek-llm"}, ErrUnsupported},
		{"pre type", map[string]any{keyPre: true}, ErrKey},
	} {
		path := writeGGUF(t, bv, c.extra)
		f, err := gguf.Open(path)
		require.NoError(t, err, c.name)
		_, err = FromGGUF(f)
		assert.ErrorIs(t, err, c.want, c.name)
		tok, err := FromGGUFForDecoding(f)
		if c.name == "pre" {
			// An unknown pre-tokenizer still decodes.
			require.NoError(t, err, c.name)
			assert.ErrorIs(t, tok.CanEncode(), ErrUnsupported)
			assert.ErrorContains(t, tok.CanEncode(), `"deepseek-llm"`)
		} else {
			assert.ErrorIs(t, err, c.want, "%s: for decoding", c.name)
		}
		require.NoError(t, f.Close())
	}

	// The keys a file leaves out take llama.cpp's defaults.
	path := writeGGUF(t, Vocab{Model: "gpt2", Tokens: bv.Tokens, Merges: bv.Merges, BOS: -1, EOS: -1, UNK: -1}, nil)
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tok, err := FromGGUF(f)
	require.NoError(t, err)
	assert.Equal(t, int32(11), tok.BOS(), "llama.cpp's default for gpt2")
	assert.False(t, tok.AddsBOS(), "no BOS by default without Llama 3's pre-tokenizer")
}

// TestEncodeLargeText: a megabyte of War and Peace in one text is
// tokenized whole (BenchmarkEncode measures how fast), and decodes back.
func TestEncodeLargeText(t *testing.T) {
	b, err := os.ReadFile(testdata(t, "war-and-peace.txt"))
	require.NoError(t, err)
	text := string(b[:1<<20])
	text = strings.ToValidUTF8(text[:strings.LastIndexByte(text, '\n')+1], "")
	for _, name := range []string{"llama3", "gemma2"} {
		tok := newTok(t, realVocab(t, name))
		ids := tok.Encode(text, EncodeOptions{})
		assert.Greater(t, len(ids), len(text)/8, name)
		got, err := tok.Decode(ids, DecodeOptions{})
		require.NoError(t, err)
		if name == "gemma2" {
			assert.Equal(t, text, got)
		}
	}
}

// BenchmarkEncode tokenizes the first megabyte of War and Peace as one
// text.
func BenchmarkEncode(b *testing.B) {
	data, err := os.ReadFile(testdata(b, "war-and-peace.txt"))
	require.NoError(b, err)
	text := string(data[:1<<20])
	for _, name := range []string{"llama3", "gemma2"} {
		tok, err := New(realVocab(b, name))
		require.NoError(b, err)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var n int
			for b.Loop() {
				n = len(tok.Encode(text, EncodeOptions{}))
			}
			b.ReportMetric(float64(n), "tokens")
		})
	}
}

// TestSentencePieceWords: merging word by word (where the vocabulary
// allows it) gives what merging the whole text at once, as llama.cpp
// does, gives.
func TestSentencePieceWords(t *testing.T) {
	b, err := os.ReadFile(testdata(t, "war-and-peace.txt"))
	require.NoError(t, err)
	text := string(b[:200000]) + " " + strings.Join(hardCases, "  ") + strings.Join(randomPieces, "") + strings.Join(randomPieces, " ")
	tok := newTok(t, realVocab(t, "gemma2"))
	require.True(t, tok.spmWords, "Gemma's vocabulary has no token with a ▁ after another character")
	words := tok.Encode(text, EncodeOptions{})
	whole := *tok
	whole.spmWords = false
	assert.Equal(t, words, whole.Encode(text, EncodeOptions{}))

	v := spmVocab(map[string]float32{"ab": -1})
	v.Tokens = append(v.Tokens, "a▁b")
	v.Scores = append(v.Scores, 0)
	v.Types = append(v.Types, TypeNormal)
	assert.False(t, newTok(t, v).spmWords)
}

// TestPhi3RStrip: in a model named Phi-3, ASCII white space after a
// special token goes with it, except after <s> and <unk>; by hand.
func TestPhi3RStrip(t *testing.T) {
	v := spmVocab(nil)
	no := false
	v.AddSpacePrefix = &no
	text := "a</s> \nb<s> a<unk> b</s>\u00a0a"
	o := EncodeOptions{ParseSpecial: true}
	plain := []string{"a", "</s>", "▁", "<unk>", "b", "<s>", "▁", "a", "<unk>", "▁", "b", "</s>", "<unk>", "<unk>", "a"}
	stripped := []string{"a", "</s>", "b", "<s>", "▁", "a", "<unk>", "▁", "b", "</s>", "<unk>", "<unk>", "a"}
	for name, want := range map[string][]string{"": plain, "phi-2": plain, "Phi-3-mini": stripped, "my PHI3 model": stripped} {
		v.Name = name
		tok := newTok(t, v)
		assert.Equal(t, want, pieces(tok, tok.Encode(text, o)), "name %q", name)
		// Without ParseSpecial the control tokens are text, and nothing
		// goes.
		assert.Equal(t, 3, len(tok.Encode("</s> \nb", EncodeOptions{}))-len(tok.Encode("</s>", EncodeOptions{})), "name %q", name)
	}
}
