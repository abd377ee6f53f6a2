package tokenizer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/gguf"
)

// TestSentencePieceSignedZero: scores -0 and +0 are equal, as they are to
// llama.cpp's comparison, so the leftmost merge goes first (llama.cpp
// gives these tokens).
func TestSentencePieceSignedZero(t *testing.T) {
	neg := float32(math.Copysign(0, -1))
	for _, merged := range []map[string]float32{{"▁a": neg, "ab": 0}, {"▁a": 0, "ab": neg}} {
		tok := newTok(t, spmVocab(merged))
		assert.Equal(t, []string{"▁a", "b"}, pieces(tok, tok.Encode("ab", EncodeOptions{})), "%v", merged)
	}
}

// TestNewCopiesVocab: a Tokenizer keeps nothing of the Vocab it was made
// of, so changing the Vocab afterwards changes nothing.
func TestNewCopiesVocab(t *testing.T) {
	v := spmVocab(map[string]float32{"▁a": -1, "ab": -2})
	tok := newTok(t, v)
	want := pieces(tok, tok.Encode("ab", EncodeOptions{}))
	require.Equal(t, []string{"▁a", "b"}, want)
	for i := range v.Scores {
		v.Scores[i] = float32(i)
	}
	for i := range v.Tokens {
		v.Tokens[i] = "x"
		v.Types[i] = TypeControl
	}
	assert.Equal(t, want, pieces(tok, tok.Encode("ab", EncodeOptions{})))

	b := bpeVocab("gpt-2", "a b")
	btok := newTok(t, b)
	b.Merges[0] = "b c"
	assert.Equal(t, []string{"ab"}, pieces(btok, btok.Encode("ab", EncodeOptions{})))
}

// TestBytePieces: a byte token's byte is read from its fourth and fifth
// characters as llama.cpp's strtol reads them (white space and a sign in
// front too); the wanted bytes are llama.cpp's.
func TestBytePieces(t *testing.T) {
	for text, want := range map[string]string{
		"<0x41>": "A", "<0xff>": "\xff", "<0x1G>": "\x01", "<0xG1>": "\x00", "<0x>": "\x00", "<0x": "\x00",
		"<0x 5>": "\x05", "<0x\t7>": "\a", "<0x 9": "\t", "<0x+A>": "\n", "<0x-1>": "\xff", "<0x-F>": "\xf1",
		"<0x 0>": "\x00", "<0x\n>": "\x00", "<0x0x>": "\x00", "<0x-0>": "\x00", "<0x+>": "\x00", "<0x- >": "\x00",
	} {
		v := spmVocab(nil)
		v.Tokens = append(v.Tokens, text)
		v.Scores = append(v.Scores, 0)
		v.Types = append(v.Types, TypeByte)
		tok := newTok(t, v)
		got, err := tok.Piece(int32(tok.Len()-1), false)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%q", text)
	}
}

// TestHostileVocab: vocabularies that lie or are odd give a tokenizer
// that keeps to its vocabulary, or an error of their kind.
func TestHostileVocab(t *testing.T) {
	no := false
	for _, c := range []struct {
		name string
		v    Vocab
		want error // nil: New succeeds
	}{
		{"empty model", Vocab{Tokens: []string{"a"}}, ErrUnsupported},
		{"model case", Vocab{Model: "LLAMA", Tokens: []string{"a"}}, ErrUnsupported},
		{"no tokens, gpt2", Vocab{Model: "gpt2"}, ErrKey},
		{"empty token list", Vocab{Model: "llama", Tokens: []string{}, Scores: []float32{}}, ErrKey},
		{"one token", Vocab{Model: "llama", Tokens: []string{"a"}, BOS: 0, EOS: 0, UNK: 0}, nil},
		{"no specials", Vocab{Model: "llama", Tokens: []string{"a"}, BOS: -1, EOS: -1, UNK: -1, EOT: -1, EOM: -1, AddBOS: &no}, nil},
		{"BOS max", Vocab{Model: "llama", Tokens: []string{"a"}, BOS: math.MaxInt32}, ErrTokenID},
		{"UNK min", Vocab{Model: "llama", Tokens: []string{"a"}, UNK: math.MinInt32}, ErrTokenID},
		{"EOM", Vocab{Model: "llama", Tokens: []string{"a"}, EOM: 1}, ErrTokenID},
		{"empty token named like another", Vocab{Model: "llama", Tokens: []string{"[EMPTY_1]", ""}}, ErrTokenText},
		{"two empty tokens", Vocab{Model: "llama", Tokens: []string{"", ""}}, nil},
		{"type 7", Vocab{Model: "llama", Tokens: []string{"a"}, Types: []TokenType{7}}, ErrTokenType},
		{"type max", Vocab{Model: "llama", Tokens: []string{"a"}, Types: []TokenType{math.MaxInt32}}, ErrTokenType},
		{"type min", Vocab{Model: "llama", Tokens: []string{"a"}, Types: []TokenType{math.MinInt32}}, ErrTokenType},
		{"scores longer", Vocab{Model: "llama", Tokens: []string{"a"}, Scores: make([]float32, 2)}, ErrLength},
		{"scores empty, not nil", Vocab{Model: "llama", Tokens: []string{"a"}, Scores: []float32{}}, ErrLength},
		{"types empty, not nil", Vocab{Model: "llama", Tokens: []string{"a"}, Types: []TokenType{}}, ErrLength},
		{"merge of missing tokens", Vocab{Model: "gpt2", Tokens: []string{"a", "b"}, Merges: []string{"x y", "a b", "ab c"}}, nil},
		{"merge of three pieces", Vocab{Model: "gpt2", Tokens: []string{"a"}, Merges: []string{"a b c"}}, nil},
		{"merge twice", Vocab{Model: "gpt2", Tokens: []string{"a"}, Merges: []string{"a a", "a a"}}, nil},
		{"merge without right", Vocab{Model: "gpt2", Tokens: []string{"a"}, Merges: []string{"a b", "ab "}}, ErrMerge},
		{"merge of spaces", Vocab{Model: "gpt2", Tokens: []string{"a"}, Merges: []string{"  "}}, ErrMerge},
		{"merge of one space", Vocab{Model: "gpt2", Tokens: []string{"a"}, Merges: []string{" "}}, ErrMerge},
		{"merge starting with a space", Vocab{Model: "gpt2", Tokens: []string{"a"}, Merges: []string{" a b"}}, nil},
		{"NaN and infinite scores", Vocab{Model: "llama", Tokens: []string{"a", "b", "ab", "▁"},
			Scores: []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}}, nil},
		{"byte types everywhere", Vocab{Model: "gpt2", Tokens: []string{"a", "<0xZZ>", "<0x"},
			Types: []TokenType{TypeByte, TypeByte, TypeByte}}, nil},
		{"undefined and unused types", Vocab{Model: "llama", Tokens: []string{"a", "b", "▁"},
			Types: []TokenType{TypeUndefined, TypeUnused, TypeNormal}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok, err := New(c.v)
			if c.want != nil {
				require.ErrorIs(t, err, c.want)
				require.Nil(t, tok)
				return
			}
			require.NoError(t, err)
			for _, text := range append([]string{"ab ab", "a b c", "abc\xff", "▁a▁"}, hardCases...) {
				for _, o := range encodeModes {
					ids := tok.Encode(text, o)
					checkIDs(t, tok, ids, text)
					require.Equal(t, ids, tok.Encode(text, o))
					for _, d := range decodeModes {
						_, err := tok.Decode(ids, d)
						require.NoError(t, err)
					}
					checkDecoder(t, tok, ids, o.ParseSpecial)
				}
			}
		})
	}

	// A merge whose result is no token: its bytes' tokens, as llama.cpp
	// writes them; merges naming missing tokens never apply.
	tok := newTok(t, bpeVocab("gpt-2", "x y", "b c", "a b"))
	assert.Equal(t, []string{"a", "b", "c"}, pieces(tok, tok.Encode("abc", EncodeOptions{})))
	// The first of two equal merges ranks.
	tok = newTok(t, bpeVocab("gpt-2", "b c", "a b", "b c"))
	assert.Equal(t, []string{"a", "b", "c"}, pieces(tok, tok.Encode("abc", EncodeOptions{})))
	// No byte tokens and no unknown token: characters that no token
	// covers give nothing.
	tok = newTok(t, Vocab{Model: "llama", Tokens: []string{"▁", "a"}, BOS: -1, EOS: -1, UNK: -1, EOT: -1, EOM: -1, AddBOS: &no})
	assert.Equal(t, []string{"▁", "a"}, pieces(tok, tok.Encode("aé", EncodeOptions{})))
}

// TestFromGGUFKeyTypes: every tokenizer key of a file, given a value of
// each GGUF type, gives a tokenizer or an error of a documented kind.
func TestFromGGUFKeyTypes(t *testing.T) {
	v := spmVocab(map[string]float32{"ab": -1})
	nested, err := gguf.ValueOf([]string{"a"})
	require.NoError(t, err)
	values := []any{
		uint8(1), int8(-1), uint16(1), int16(-1), uint32(1), int32(-1), uint64(1 << 40), int64(-1),
		float32(1), float64(1), true, "llama", "gpt2", "",
		[]uint8{1}, []int8{-1}, []uint16{1}, []int16{1}, []uint32{1, 2, 3}, []int32{-1}, []uint64{1}, []int64{1},
		[]float32{1}, []float64{1}, []bool{true}, []string{"a b"}, []string{}, []int32{},
		[]gguf.Value{nested},
		make([]int32, len(v.Tokens)), make([]float32, len(v.Tokens)), make([]float64, len(v.Tokens)), make([]uint32, len(v.Tokens)),
	}
	keys := []string{keyModel, keyTokens, keyScores, keyTypes, keyMerges, keyPre, keyAddBOS, keyAddEOS, keySpacePrefix,
		"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
		"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id", keyName}
	for _, base := range []Vocab{v, bpeVocab("llama-bpe", "a b")} {
		for _, key := range keys {
			for _, val := range values {
				path := writeGGUF(t, base, map[string]any{key: val})
				f, err := gguf.Open(path)
				require.NoError(t, err)
				tok, err := FromGGUF(f)
				require.NoError(t, f.Close())
				if err != nil {
					requireKnownErr(t, err, "%s = %#v", key, val)
					continue
				}
				ids := tok.Encode("ab <s> a", EncodeOptions{AddSpecial: true, ParseSpecial: true})
				checkIDs(t, tok, ids, "ab")
			}
		}
	}
}

// TestEncodeConcurrent: several goroutines encoding and decoding with one
// Tokenizer at once get what one gets alone (go test -race checks that
// they share nothing they write).
func TestEncodeConcurrent(t *testing.T) {
	seed := randomSeed(t)
	for _, name := range []string{"llama3", "gemma2"} {
		tok := realTok(t, name)
		rng := rand.New(rand.NewPCG(seed, 1))
		texts := make([]string, 40)
		for i := range texts {
			var b strings.Builder
			for range rng.IntN(60) {
				b.WriteString(randomPieces[rng.IntN(len(randomPieces))])
			}
			texts[i] = b.String()
		}
		texts = append(texts, strings.Repeat("long text ", 500)) // over the word cache's threshold
		o := EncodeOptions{AddSpecial: true, ParseSpecial: true}
		want := make([][]int32, len(texts))
		wantText := make([]string, len(texts))
		for i, text := range texts {
			want[i] = tok.Encode(text, o)
			var err error
			wantText[i], err = tok.Decode(want[i], DecodeOptions{RenderSpecial: true})
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		errs := make(chan string, 8*len(texts))
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range texts {
					i := (k + g*5) % len(texts)
					if got := tok.Encode(texts[i], o); !assert.ObjectsAreEqual(want[i], got) {
						errs <- "Encode " + texts[i]
					}
					if got, err := tok.Decode(want[i], DecodeOptions{RenderSpecial: true}); err != nil || got != wantText[i] {
						errs <- "Decode " + texts[i]
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Errorf("%s (seed %d): %q differs from one goroutine's", name, seed, e)
		}
	}
}

// BenchmarkEncodeAdversarial tokenizes runs of one adversarial piece,
// 32 KiB and 128 KiB of it, with special tokens parsed: the time of the
// larger is about four times the smaller's where encoding is linear (a
// benchmark, not a test: speed is not asserted in tests).
func BenchmarkEncodeAdversarial(b *testing.B) {
	for _, name := range []string{"llama3", "gemma2"} {
		tok := realTok(b, name)
		for _, p := range []string{" ", "\n", " \n", "a", "1", "<", "<|", "<|eot_id", "\xff", "\xe2", "▁", "a▁", "'s", "😀", "\u3000", ".,"} {
			for _, size := range []int{1 << 15, 1 << 17} {
				text := strings.Repeat(p, size/len(p))
				b.Run(fmt.Sprintf("%s/%q/%dKiB", name, p, size>>10), func(b *testing.B) {
					b.SetBytes(int64(len(text)))
					for b.Loop() {
						tok.Encode(text, EncodeOptions{ParseSpecial: true})
					}
				})
			}
		}
	}
}
