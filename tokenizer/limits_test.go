package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The limits on what a vocabulary or a text can cost (issue #40): a
// piece is linear in its token, a vocabulary beyond MaxTokenLen and
// MaxVocabBytes is refused, and special tokens that nest give the
// partition llama.cpp's search gives, in linear time.

// unknownRunesVocab is a byte-level BPE vocabulary whose token 1 is
// tokenText, a normal token.
func unknownRunesVocab(tokenText string) Vocab {
	return Vocab{Model: "gpt2", Tokens: []string{"a", tokenText, "<|end|>"}, Types: []TokenType{TypeNormal, TypeNormal, TypeControl},
		BOS: 2, EOS: 2, UNK: -1, EOT: -1, EOM: -1}
}

// TestPieceLinear: a byte-level BPE token made of characters outside
// GPT-2's byte map decodes to llama.cpp's markers with the token's text in
// the first one only: at most 16 bytes a byte of the token (llama.cpp's
// piece, with the text in every marker, grows with the square of the
// token's length: 2.7 GB for a 90 KB token).
func TestPieceLinear(t *testing.T) {
	for _, c := range []struct {
		name, text, want string
	}{
		{"one", "一", "[UNK_BYTE_0xe4b880一]"},
		{"two", "a一\x01", "a[UNK_BYTE_0xe4b880a一\x01][UNK_BYTE_0x01]"},
		{"controls", "\x01\x02", "[UNK_BYTE_0x01\x01\x02][UNK_BYTE_0x02]"},
	} {
		tok, err := New(unknownRunesVocab(c.text))
		require.NoError(t, err, c.name)
		got, err := tok.Piece(1, false)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, c.name)
	}
	for _, r := range []string{"\x01", "一", "😀"} {
		text := strings.Repeat(r, 4096) // 16 MB for llama.cpp's piece of "\x01"s
		tok, err := New(unknownRunesVocab(text))
		require.NoError(t, err)
		got, err := tok.Piece(1, true)
		require.NoError(t, err)
		require.LessOrEqual(t, len(got), 16*len(text), "the piece of %d × %q", len(text)/len(r), r)
		assert.True(t, strings.HasPrefix(got, "[UNK_BYTE_0x"), "%.40q", got)
		dec, err := tok.Decode([]int32{1, 1}, DecodeOptions{})
		require.NoError(t, err)
		assert.Len(t, dec, 2*len(got))
	}
}

// TestVocabTooLarge: a token longer than MaxTokenLen, or tokens and merges
// of more than MaxVocabBytes together, are an ErrTooLarge error; at the
// limits they are taken.
func TestVocabTooLarge(t *testing.T) {
	// One token too long (90 KB, as the issue's), of characters outside
	// the byte map and of plain letters.
	for _, r := range []string{"一", "a"} {
		v := unknownRunesVocab(strings.Repeat(r, 90_000/len(r)))
		_, err := New(v)
		require.ErrorIs(t, err, ErrTooLarge)
		assert.Contains(t, err.Error(), "MaxTokenLen")
		_, err = NewForDecoding(v)
		require.ErrorIs(t, err, ErrTooLarge)
	}
	_, err := New(unknownRunesVocab(strings.Repeat("a", MaxTokenLen)))
	require.NoError(t, err, "a token of MaxTokenLen bytes")
	_, err = New(unknownRunesVocab(strings.Repeat("a", MaxTokenLen+1)))
	require.ErrorIs(t, err, ErrTooLarge)

	// Many tokens within MaxTokenLen, more than MaxVocabBytes together
	// (windows of one random text, so that they take little memory).
	rng := rand.New(rand.NewPCG(40, 40))
	const n, size, stride = 1100, 61440, 1024
	b := make([]byte, n*stride+size)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	text := string(b)
	v := Vocab{Model: "gpt2", BOS: -1, EOS: -1, UNK: -1, EOT: -1, EOM: -1}
	for i := range n {
		v.Tokens = append(v.Tokens, text[i*stride:i*stride+size])
	}
	require.Greater(t, n*size, MaxVocabBytes)
	_, err = New(v)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "MaxVocabBytes")
	v.Tokens = v.Tokens[:MaxVocabBytes/size]
	_, err = New(v)
	require.NoError(t, err, "tokens within MaxVocabBytes")

	// Merges count too.
	v = unknownRunesVocab("b")
	v.Merges = []string{"a b", strings.Repeat("a", MaxVocabBytes) + " b"}
	_, err = New(v)
	require.ErrorIs(t, err, ErrTooLarge)
}

// partitionReference is llama.cpp's tokenizer_st_partition as it is
// written: each special token, the longest first, searched for in every
// fragment of text left.
func (t *Tokenizer) partitionReference(text string, parse bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text: text, id: -1}}
	for _, id := range t.special {
		if !parse && t.attrs[id]&(attrControl|attrUnknown) != 0 {
			continue
		}
		s := t.tokens[id]
		var next []fragment
		for _, f := range frags {
			if f.id >= 0 {
				next = append(next, f)
				continue
			}
			rest := f.text
			for {
				i := strings.Index(rest, s)
				if i < 0 {
					break
				}
				if i > 0 {
					next = append(next, fragment{text: rest[:i], id: -1})
				}
				next = append(next, fragment{id: id})
				rest = rest[i+len(s):]
				if t.attrs[id]&attrRStrip != 0 {
					rest = strings.TrimLeft(rest, " \t\n\v\f\r")
				}
			}
			if rest != "" {
				next = append(next, fragment{text: rest, id: -1})
			}
		}
		frags = next
	}
	return frags
}

// nestedVocab is a byte-level BPE vocabulary with special tokens that
// nest depth deep, each a prefix of the next: "<", "<"+step,
// "<"+step+step, ...
func nestedVocab(depth int, typ TokenType, step string) Vocab {
	v := Vocab{Model: "gpt2", BOS: -1, EOS: -1, UNK: -1, EOT: -1, EOM: -1,
		Tokens: []string{"Ġ", "a"}, Types: []TokenType{TypeNormal, TypeNormal}}
	for i := range depth {
		v.Tokens = append(v.Tokens, "<"+strings.Repeat(step, i))
		v.Types = append(v.Types, typ)
	}
	return v
}

// TestPartitionNested: special tokens that nest, overlap and share their
// beginnings and ends give the partition of llama.cpp's search, with and
// without ParseSpecial, Phi-3's rule too, for random texts made of their
// pieces; and nested ones thousands deep split a long text as llama.cpp
// does.
func TestPartitionNested(t *testing.T) {
	rng := rand.New(rand.NewPCG(randomSeed(t), 40))
	pieces := []string{"a", "b", "ab", "ba", "aab", "<", "‹", "|", " ", "\n", "x"}
	for round := range 300 {
		v := Vocab{Model: "gpt2", BOS: -1, EOS: -1, UNK: -1, EOT: -1, EOM: -1}
		seen := map[string]bool{}
		for range 1 + rng.IntN(12) {
			var b strings.Builder
			for range 1 + rng.IntN(5) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			if s := b.String(); !seen[s] {
				seen[s] = true
				v.Tokens = append(v.Tokens, s)
				v.Types = append(v.Types, []TokenType{TypeNormal, TypeControl, TypeUserDefined, TypeUnknown}[rng.IntN(4)])
			}
		}
		if rng.IntN(3) == 0 {
			v.Name = "phi3"
		}
		tok, err := New(v)
		require.NoError(t, err)
		for range 20 {
			var b strings.Builder
			for range rng.IntN(40) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			text := b.String()
			for _, parse := range []bool{false, true} {
				want := tok.partitionReference(text, parse)
				got := tok.partition(text, parse)
				require.Equal(t, want, got, "round %d: %q in %q (parse %v, %q)", round, tok.special, text, parse, v.Name)
			}
		}
	}

	for _, c := range []struct {
		typ  TokenType
		step string
	}{{TypeControl, "<"}, {TypeUserDefined, "<"}, {TypeUserDefined, "‹"}, {TypeControl, "‹"}} {
		tok, err := New(nestedVocab(2000, c.typ, c.step))
		require.NoError(t, err)
		for _, text := range []string{
			strings.Repeat("<", 5000), strings.Repeat("<‹", 3000), "<" + strings.Repeat("‹", 4500) + "<",
			strings.Repeat("<"+strings.Repeat("‹", 1500)+"x", 3), strings.Repeat(strings.Repeat("<", 1999)+"x", 3),
			strings.Repeat("<", 1500) + "x" + strings.Repeat("<", 2500),
		} {
			for _, parse := range []bool{false, true} {
				require.Equal(t, tok.partitionReference(text, parse), tok.partition(text, parse), "%.20q, parse %v", text, parse)
			}
		}
	}
}

// BenchmarkEncodeNestedSpecials: a megabyte of "<" with special tokens
// "<", "<<", "<<<", ... nested 3000 deep (and "<", "<‹", "<‹‹", ...),
// against a megabyte of plain text (issue #40: 50 s against 0.3 s, when
// each place walked the special tokens' trie as far as the text went on).
func BenchmarkEncodeNestedSpecials(b *testing.B) {
	nested := nestedVocab(3000, TypeUserDefined, "<")
	for _, c := range []struct {
		name string
		text string
		v    Vocab
	}{
		{"nested", strings.Repeat("<", 1<<20), nested},
		{"nested-cut", strings.Repeat(strings.Repeat("<", 2999)+"x", (1<<20)/3000), nested},
		{"nested-other", strings.Repeat("<"+strings.Repeat("‹", 2999)+" ", (1<<20)/9000), nestedVocab(3000, TypeUserDefined, "‹")},
		{"plain", strings.Repeat("Hello world, ", (1<<20)/13), nested},
	} {
		tok, err := New(c.v)
		require.NoError(b, err)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				tok.Encode(c.text, EncodeOptions{ParseSpecial: true})
			}
		})
	}
}

func ExampleMaxTokenLen() {
	_, err := New(Vocab{Model: "gpt2", Tokens: []string{strings.Repeat("a", MaxTokenLen+1)}, BOS: -1, EOS: -1, UNK: -1, EOT: -1, EOM: -1})
	fmt.Println(err)
	// Output: tokenizer: vocabulary too large: token 0 has 65537 bytes (at most MaxTokenLen, 65536)
}
