package tokenizer

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/gguf"
)

// wpmVocab is a small WordPiece vocabulary as llama.cpp's converter
// writes one: [PAD] [UNK] [CLS] [SEP] [MASK], then the tokens given
// ("▁" in front: a word's start).
func wpmVocab(tokens ...string) Vocab {
	v := Vocab{Model: "bert", BOS: 2, EOS: -1, UNK: 1, EOT: -1, EOM: -1, SEP: 3, PAD: 0, MASK: 4}
	v.Tokens = append([]string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}, tokens...)
	v.Types = make([]TokenType, len(v.Tokens))
	for i := range v.Types {
		v.Types[i] = TypeNormal
		if i < 5 {
			v.Types[i] = TypeControl
		}
	}
	return v
}

// wpmPieces encodes text and returns the tokens' texts.
func wpmPieces(tok *Tokenizer, text string, o EncodeOptions) []string {
	var out []string
	for _, id := range tok.Encode(text, o) {
		out = append(out, tok.Token(id))
	}
	return out
}

// TestWPMEncode: WordPiece's rules, on a small vocabulary.
func TestWPMEncode(t *testing.T) {
	tok := newTok(t, wpmVocab("▁un", "▁una", "aff", "able", "▁the", "▁cafe", "▁,", "▁!", "▁中", "▁文", "▁a", "a", "b", "▁$", "▁naive", "▁x▁y"))
	assert.Equal(t, "bert", tok.Model())
	assert.Equal(t, int32(3), tok.SEP())
	assert.Equal(t, int32(0), tok.PAD())
	assert.Equal(t, int32(4), tok.MASK())
	assert.True(t, tok.AddsBOS())
	assert.False(t, tok.AddsEOS())
	for _, c := range []struct {
		text string
		o    EncodeOptions
		want []string
	}{
		{"", EncodeOptions{}, nil},
		{"", EncodeOptions{AddSpecial: true}, []string{"[CLS]", "[SEP]"}},
		{"  \t\n ", EncodeOptions{AddSpecial: true}, []string{"[CLS]", "[SEP]"}},
		// The longest token first, even where a shorter one would split
		// the rest: "▁una" leaves "ffable", which no token begins.
		{"unaffable", EncodeOptions{}, []string{"[UNK]"}},
		{"The  UNAFF,able!", EncodeOptions{}, []string{"▁the", "[UNK]", "▁,", "[UNK]", "▁!"}},
		{"the ab aab", EncodeOptions{AddSpecial: true}, []string{"[CLS]", "▁the", "▁a", "b", "▁a", "a", "b", "[SEP]"}},
		{"Café NAÏVE", EncodeOptions{}, []string{"▁cafe", "▁naive"}},
		{"中文a", EncodeOptions{}, []string{"▁中", "▁文", "▁a"}},
		{"$a", EncodeOptions{}, []string{"▁$", "▁a"}},
		{"x▁y", EncodeOptions{}, []string{"▁x▁y"}},
		{"a\x00b\u200bb\ufffd\xffa", EncodeOptions{}, []string{"▁a", "b", "b", "a"}}, // NUL, \p{C}, U+FFFD, a bad byte: nothing
		{"the[SEP]the", EncodeOptions{ParseSpecial: true}, []string{"▁the", "[SEP]", "▁the"}},
		{"[SEP]", EncodeOptions{}, []string{"[UNK]", "[UNK]", "[UNK]"}}, // "[", "sep", "]": no "▁[" in the vocabulary
	} {
		assert.Equal(t, c.want, wpmPieces(tok, c.text, c.o), "%q %+v", c.text, c.o)
	}
	for _, c := range []struct {
		ids  []int32
		o    DecodeOptions
		want string
	}{
		{tok.Encode("the cafe, ab!", EncodeOptions{AddSpecial: true}), DecodeOptions{}, " the cafe, ab!"},
		{tok.Encode("the cafe, ab!", EncodeOptions{AddSpecial: true}), DecodeOptions{RenderSpecial: true}, "[CLS] the cafe, ab![SEP]"},
		{tok.Encode("the cafe, ab!", EncodeOptions{AddSpecial: true}), DecodeOptions{RemoveSpecial: true, RenderSpecial: true}, " the cafe, ab![SEP]"},
	} {
		got, err := tok.Decode(c.ids, c.o)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "%v %+v", c.ids, c.o)
	}

	// Cased, and accents kept.
	no, yes := false, true
	v := wpmVocab("▁The", "▁the", "▁café", "▁cafe")
	v.Lowercase = &no
	cased := newTok(t, v)
	assert.Equal(t, []string{"▁The", "▁the", "▁café"}, wpmPieces(cased, "The the café", EncodeOptions{}))
	v.StripAccents = &yes
	assert.Equal(t, []string{"▁The", "▁cafe"}, wpmPieces(newTok(t, v), "The café", EncodeOptions{}))
}

// TestWPMHostile: vocabularies without the special tokens, long words,
// bad UTF-8.
func TestWPMHostile(t *testing.T) {
	// Without [UNK], a word that does not split is nothing (llama.cpp
	// writes -1).
	v := wpmVocab("▁a")
	v.UNK = -1
	tok := newTok(t, v)
	assert.Equal(t, []string{"▁a"}, wpmPieces(tok, "b a c", EncodeOptions{}))
	// Encode adds [CLS] and [SEP]: a vocabulary without them is refused,
	// whatever add_bos_token says.
	for _, edit := range []func(*Vocab){
		func(v *Vocab) { v.BOS = -1 },
		func(v *Vocab) { v.SEP = -1 },
		func(v *Vocab) { no := false; v.BOS, v.AddBOS = -1, &no },
		func(v *Vocab) { v.SEP = 1000 },
		func(v *Vocab) { v.MASK = -2 },
	} {
		v := wpmVocab("▁a")
		edit(&v)
		_, err := New(v)
		assert.ErrorIs(t, err, ErrTokenID)
		_, err = NewForDecoding(v)
		assert.ErrorIs(t, err, ErrTokenID)
	}
	// No EOS is needed, even where add_eos_token says so.
	v = wpmVocab("▁a")
	yes := true
	v.AddEOS = &yes
	newTok(t, v)

	// A word of 100 KB: linear, split or not, even with tokens that
	// almost match everywhere (a naive longest match tries them at each
	// place).
	long := strings.Repeat("a", 100_000)
	tok = newTok(t, wpmVocab("▁a", "a", "▁"+strings.Repeat("a", 5000)+"b", strings.Repeat("a", 5000)+"b"))
	ids := tok.Encode(long, EncodeOptions{})
	assert.Len(t, ids, 100_000)
	assert.Equal(t, []int32{1}, tok.Encode(long+"c", EncodeOptions{})) // quadratic, this took minutes: go test's -timeout

	// Bad UTF-8 and lone surrogates, encoded and never a panic.
	tok = newTok(t, wpmVocab("▁a", "a"))
	for _, s := range []string{"\xff", "\xc3", "a\xe2\x82a", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\x80a"} {
		ids := tok.Encode(s, EncodeOptions{AddSpecial: true})
		checkIDs(t, tok, ids, s)
	}
}

// TestWPMReadVocab: a "bert" file without IDs gets llama.cpp's defaults
// (BERT's: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103), none
// beyond the vocabulary, and its normalization keys.
func TestWPMReadVocab(t *testing.T) {
	v, err := bertVocab()
	require.NoError(t, err)
	path := writeGGUF(t, Vocab{Model: "bert", Tokens: v.Tokens, Types: v.Types, BOS: -1, EOS: -1, UNK: -1, SEP: -1, PAD: -1, MASK: -1}, map[string]any{keyStripAcc: false})
	f, err := gguf.Open(path)
	require.NoError(t, err)
	got, err := ReadVocab(f)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	assert.Equal(t, []int32{101, -1, 100, 102, 0, 103}, []int32{got.BOS, got.EOS, got.UNK, got.SEP, got.PAD, got.MASK})
	assert.Nil(t, got.Lowercase)
	require.NotNil(t, got.StripAccents)
	assert.False(t, *got.StripAccents)

	small := wpmVocab("▁a")
	path = writeGGUF(t, Vocab{Model: "bert", Tokens: small.Tokens, BOS: -1, EOS: -1, UNK: -1, SEP: -1, PAD: -1, MASK: -1}, nil)
	f, err = gguf.Open(path)
	require.NoError(t, err)
	got, err = ReadVocab(f)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	assert.Equal(t, []int32{-1, -1, -1, -1, 0, -1}, []int32{got.BOS, got.EOS, got.UNK, got.SEP, got.PAD, got.MASK})
	_, err = New(got)
	assert.ErrorIs(t, err, ErrTokenID, "no [CLS] and [SEP] to add")
}

// TestWPMBook: the test vocabulary splits War and Peace as a real one
// would: most words whole, some split (so that the reference tests
// compare something), and a word of letters it lacks unknown.
func TestWPMBook(t *testing.T) {
	tok := realTok(t, "bert")
	b, err := os.ReadFile(testdata(t, "war-and-peace.txt"))
	require.NoError(t, err)
	ids := tok.Encode(string(b), EncodeOptions{})
	counts := map[string]int{}
	for _, id := range ids {
		switch s := tok.Token(id); {
		case id == tok.UNK():
			counts["unk"]++
		case strings.HasPrefix(s, "▁"):
			counts["start"]++
		default:
			counts["cont"]++
		}
	}
	t.Logf("%d tokens, %d tokens in the vocabulary: %v", len(ids), tok.Len(), counts)
	assert.Greater(t, counts["cont"], len(ids)/50)
	assert.Less(t, counts["unk"], len(ids)/100)
	assert.Equal(t, []int32{tok.UNK()}, tok.Encode("Ελληνικά", EncodeOptions{}), "letters the vocabulary lacks")
}

// TestWPMReferenceLongWord: a word of 100 KB, and a 100 KB text of
// words, as llama.cpp splits them.
func TestWPMReferenceLongWord(t *testing.T) {
	v := realVocab(t, "bert")
	ref := startLlamaCpp(t, writeGGUF(t, v, nil))
	tok := realTok(t, "bert")
	for _, text := range []string{
		strings.Repeat("ab", 50_000),
		strings.Repeat("Natasha", 15_000),
		strings.Repeat("Natasha", 15_000) + "\u2603",
		strings.Repeat("Привет, ", 10_000),
	} {
		assert.Equal(t, ref.tokenize(t, text, EncodeOptions{AddSpecial: true}), tok.Encode(text, EncodeOptions{AddSpecial: true}), "%.20q…", text)
	}
}
