package tokenizer

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/gguf"
)

// TestDecodingOnly: a vocabulary whose pre-tokenizer this package does not
// implement is refused by New, and read by NewForDecoding into a tokenizer
// that decodes as the same vocabulary with a known pre-tokenizer of the
// same settings (Qwen2's: no BOS, no clean-up of spaces) does, and
// refuses to encode with an error that names the pre-tokenizer.
func TestDecodingOnly(t *testing.T) {
	const pre = "qwen35-unknown"
	unknown := realVocab(t, "llama3")
	unknown.Pre = pre
	known := unknown
	known.Pre = "qwen2"

	_, err := New(unknown)
	require.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, `"`+pre+`"`)

	dec, err := NewForDecoding(unknown)
	require.NoError(t, err)
	ref := newTok(t, known)
	require.NoError(t, ref.CanEncode())

	err = dec.CanEncode()
	require.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, `"`+pre+`"`)
	assert.PanicsWithError(t, err.Error(), func() { dec.Encode("Hello", EncodeOptions{}) })
	func() {
		defer func() {
			e, ok := recover().(error)
			require.True(t, ok, "Encode panics with an error")
			assert.ErrorIs(t, e, ErrUnsupported)
		}()
		dec.Encode("", EncodeOptions{AddSpecial: true})
	}()

	// What the model code asks of a vocabulary.
	assert.Equal(t, ref.Len(), dec.Len())
	assert.Equal(t, 128256, dec.Len())
	assert.Equal(t, "gpt2", dec.Model())
	for _, f := range []func(*Tokenizer) int32{(*Tokenizer).BOS, (*Tokenizer).EOS, (*Tokenizer).EOT, (*Tokenizer).EOM, (*Tokenizer).UNK} {
		assert.Equal(t, f(ref), f(dec))
	}
	assert.Equal(t, ref.AddsBOS(), dec.AddsBOS())
	assert.Equal(t, ref.AddsEOS(), dec.AddsEOS())
	eot, ok := dec.ID("<|eot_id|>")
	require.True(t, ok)
	assert.True(t, dec.IsEOG(eot))
	assert.Equal(t, TypeControl, dec.Type(eot))
	assert.Equal(t, "<|eot_id|>", dec.Token(eot))

	// Every token: its text, type, pieces and whether it ends generation.
	for id := range int32(dec.Len()) {
		require.Equal(t, ref.Token(id), dec.Token(id))
		require.Equal(t, ref.Type(id), dec.Type(id))
		require.Equal(t, ref.IsEOG(id), dec.IsEOG(id), "token %d", id)
		for _, special := range []bool{false, true} {
			want, err := ref.Piece(id, special)
			require.NoError(t, err)
			got, err := dec.Piece(id, special)
			require.NoError(t, err)
			require.Equal(t, want, got, "Piece(%d, %v)", id, special)
		}
	}

	// Texts: the tokens of the hard cases and of random ones, decoded at
	// once in every mode and as a stream.
	texts := append([]string{"a , b . it 's I 'm"}, hardCases...)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		var b strings.Builder
		for range rng.IntN(30) {
			b.WriteString(randomPieces[rng.IntN(len(randomPieces))])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		ids := ref.Encode(text, EncodeOptions{AddSpecial: true, ParseSpecial: true})
		ids = append(ids, eot, ref.BOS())
		for _, d := range decodeModes {
			want, err := ref.Decode(ids, d)
			require.NoError(t, err)
			got, err := dec.Decode(ids, d)
			require.NoError(t, err)
			assert.Equal(t, want, got, "Decode(Encode(%q), %+v)", text, d)
		}
		for _, special := range []bool{false, true} {
			assert.Equal(t, stream(t, ref, ids, special), stream(t, dec, ids, special), "%q streamed", text)
		}
	}
	_, err = dec.Decode([]int32{int32(dec.Len())}, DecodeOptions{})
	assert.ErrorIs(t, err, ErrTokenID)

	// A file says the same.
	f, err := gguf.Open(writeGGUF(t, unknown, nil))
	require.NoError(t, err)
	defer f.Close()
	_, err = FromGGUF(f)
	assert.ErrorIs(t, err, ErrUnsupported)
	fdec, err := FromGGUFForDecoding(f)
	require.NoError(t, err)
	assert.ErrorIs(t, fdec.CanEncode(), ErrUnsupported)
	text, err := fdec.Decode(ref.Encode("Hello, world 123", EncodeOptions{}), DecodeOptions{})
	require.NoError(t, err)
	assert.Equal(t, "Hello, world 123", text)
}

// TestNewForDecoding: NewForDecoding is New where New succeeds, and
// refuses what New refuses for any other reason than the pre-tokenizer.
func TestNewForDecoding(t *testing.T) {
	for _, v := range []Vocab{spmVocab(nil), bpeVocab("llama-bpe"), bpeVocab("qwen2", "a b"), bpeVocab("")} {
		tok, err := NewForDecoding(v)
		require.NoError(t, err)
		require.NoError(t, tok.CanEncode())
		want := newTok(t, v)
		assert.Equal(t, want.Encode("ab c<|end|>", EncodeOptions{AddSpecial: true}), tok.Encode("ab c<|end|>", EncodeOptions{AddSpecial: true}))
	}
	for _, c := range []struct {
		name string
		v    Vocab
		edit func(*Vocab)
		want error
	}{
		{"model", spmVocab(nil), func(v *Vocab) { v.Model = "t5" }, ErrUnsupported},
		{"merge", bpeVocab("qwen35"), func(v *Vocab) { v.Merges = []string{"ab"} }, ErrMerge},
		{"duplicate", bpeVocab("qwen35"), func(v *Vocab) { v.Tokens[1] = "a" }, ErrTokenText},
		{"types", bpeVocab("qwen35"), func(v *Vocab) { v.Types = v.Types[1:] }, ErrLength},
		{"BOS", bpeVocab("qwen35"), func(v *Vocab) { v.BOS = 1000 }, ErrTokenID},
		{"no tokens", bpeVocab("qwen35"), func(v *Vocab) { v.Tokens, v.Types = nil, nil }, ErrKey},
	} {
		c.edit(&c.v)
		tok, err := NewForDecoding(c.v)
		assert.ErrorIs(t, err, c.want, c.name)
		assert.Nil(t, tok, c.name)
	}
	// Unknown: no BOS added, spaces as the tokens spell them, unless the
	// vocabulary says otherwise.
	v := bpeVocab("qwen35")
	tok, err := NewForDecoding(v)
	require.NoError(t, err)
	assert.False(t, tok.AddsBOS())
	text, err := tok.Decode([]int32{0, 3, 15}, DecodeOptions{})
	require.NoError(t, err)
	assert.Equal(t, "a .", text)
	yes := true
	v.AddBOS = &yes
	tok, err = NewForDecoding(v)
	require.NoError(t, err)
	assert.True(t, tok.AddsBOS())
	text, err = tok.Decode([]int32{6, 0}, DecodeOptions{RemoveSpecial: true})
	require.NoError(t, err)
	assert.Equal(t, "a", text)
	assert.True(t, errors.Is(tok.CanEncode(), ErrUnsupported))
}

// TestQwen2Settings: the names of Qwen2's pre-tokenizer and their
// settings, as llama.cpp's llama_vocab::impl::load sets them.
func TestQwen2Settings(t *testing.T) {
	for _, c := range []struct {
		pre   string
		clean bool
	}{
		{"qwen2", false}, {"deepseek-r1-qwen", false}, {"kormo", false}, {"f2llmv2", false},
		{"hunyuan", false}, {"solar-open", false}, {"megrez", true}, {"stablelm2", true},
	} {
		tok := newTok(t, bpeVocab(c.pre, "a b", "1 2"))
		assert.Equal(t, preQwen2, tok.pre, c.pre)
		assert.Equal(t, c.clean, tok.cleanSpaces, c.pre)
		assert.False(t, tok.AddsBOS(), c.pre)
		// Merges always, never a word whole: "abc" is a token, and no
		// merge makes it.
		assert.Equal(t, []string{"ab", "c"}, pieces(tok, tok.Encode("abc", EncodeOptions{})), c.pre)
		// Each number alone: "12" is a merge, never made.
		assert.Equal(t, []string{"1", "2", "3"}, pieces(tok, tok.Encode("123", EncodeOptions{})), c.pre)
	}
}

// stream returns what a Decoder gives for each of ids, and its Flush.
func stream(t testing.TB, tok *Tokenizer, ids []int32, special bool) []string {
	t.Helper()
	d := tok.NewDecoder(special)
	var out []string
	for _, id := range ids {
		s, err := d.Add(id)
		require.NoError(t, err)
		out = append(out, s)
	}
	return append(out, d.Flush())
}
