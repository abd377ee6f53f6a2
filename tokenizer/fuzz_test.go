package tokenizer

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The hostile input tests: fuzz targets (make fuzz runs them for longer;
// go test runs their seeds) and table tests of what a user may pass in.
// Each input gives a correct result or an error of one of the package's
// error variables, never a panic.

// errKinds are the package's error variables: every error of New,
// ReadVocab and FromGGUF wraps one.
var errKinds = []error{ErrUnsupported, ErrKey, ErrLength, ErrTokenType, ErrTokenText, ErrMerge, ErrTokenID, ErrTooLarge}

// requireKnownErr fails unless err wraps one of errKinds.
func requireKnownErr(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	for _, k := range errKinds {
		if errors.Is(err, k) {
			return
		}
	}
	require.Fail(t, "an error of no documented kind", append([]any{"%v"}, append([]any{err}, msgAndArgs...)...)...)
}

// realTokenizers are the tokenizers of the real vocabularies, made once
// for all the fuzz inputs.
var realTokenizers = struct {
	sync.Mutex
	m map[string]*Tokenizer
}{m: map[string]*Tokenizer{}}

func realTok(t testing.TB, name string) *Tokenizer {
	t.Helper()
	realTokenizers.Lock()
	defer realTokenizers.Unlock()
	if tok, ok := realTokenizers.m[name]; ok {
		return tok
	}
	tok, err := New(realVocab(t, name))
	require.NoError(t, err)
	realTokenizers.m[name] = tok
	return tok
}

// bpeText is the text byte-level BPE gives back for text: each code point
// as llama.cpp reads and writes it (a byte that starts none as U+FFFD);
// valid UTF-8 comes back as it is.
func bpeText(text string) string {
	var b []byte
	for i := 0; i < len(text); {
		r, n := decodeCodepoint(text, i)
		b = appendCodepoint(b, r)
		i += n
	}
	return string(b)
}

// concatPieces is the pieces of ids one after the other.
func concatPieces(t testing.TB, tok *Tokenizer, ids []int32, special bool) string {
	t.Helper()
	var b []byte
	for _, id := range ids {
		var err error
		b, err = tok.AppendPiece(b, id, special)
		require.NoError(t, err)
	}
	return string(b)
}

// checkDecoder feeds ids to a Decoder one at a time and checks that what
// it gives, with its Flush, is the pieces of ids one after the other, that
// each part is valid UTF-8 when the whole is, and that an ID outside the
// vocabulary fed in between changes nothing.
func checkDecoder(t testing.TB, tok *Tokenizer, ids []int32, special bool) string {
	t.Helper()
	want := concatPieces(t, tok, ids, special)
	valid := utf8.ValidString(want)
	d := tok.NewDecoder(special)
	var b strings.Builder
	for i, id := range ids {
		if i%3 == 1 {
			for _, bad := range []int32{-1, int32(tok.Len()), -1 << 31} {
				s, err := d.Add(bad)
				require.ErrorIs(t, err, ErrTokenID)
				require.Empty(t, s)
			}
		}
		s, err := d.Add(id)
		require.NoError(t, err)
		if valid {
			require.True(t, utf8.ValidString(s), "part %q of valid UTF-8 %q", s, want)
		}
		b.WriteString(s)
	}
	b.WriteString(d.Flush())
	require.Equal(t, want, b.String(), "streamed")
	require.Empty(t, d.Flush(), "a second Flush")
	return want
}

// checkIDs fails unless every ID is in the vocabulary.
func checkIDs(t testing.TB, tok *Tokenizer, ids []int32, text string) {
	t.Helper()
	for _, id := range ids {
		require.True(t, id >= 0 && int(id) < tok.Len(), "ID %d of %q outside [0, %d)", id, text, tok.Len())
	}
}

// codepointTooLarge reports whether text has a four-byte sequence for a
// value above U+10FFFF, which llama.cpp cannot tokenize (see the package
// documentation).
func codepointTooLarge(text string) bool {
	for i := 0; i+3 < len(text); i++ {
		b := text[i]
		if b&0xF8 == 0xF0 && text[i+1]&0xC0 == 0x80 && text[i+2]&0xC0 == 0x80 && text[i+3]&0xC0 == 0x80 {
			if rune(b&7)<<18|rune(text[i+1]&0x3F)<<12 > utf8.MaxRune {
				return true
			}
		}
	}
	return false
}

// FuzzEncode tokenizes arbitrary bytes with the real Llama 3 and Gemma 2
// vocabularies, in every mode, and checks what must hold of any text:
// IDs in the vocabulary, BOS and EOS where the vocabulary adds them, the
// same tokens twice and merging word by word, a Decoder that agrees with
// Decode, and the text back (Gemma: valid UTF-8 without "▁", which
// decodes as a space; Llama 3: after its clean-up of spaces).
func FuzzEncode(f *testing.F) {
	for _, s := range hardCases {
		f.Add(s)
	}
	for _, s := range randomPieces {
		f.Add(strings.Repeat(s, 3))
	}
	f.Add(strings.Repeat("<", 100) + "<|eot_id|>")
	f.Add("\xe2 \xe2\x96 ▁ \xf0▁▁")
	f.Add("\xf4\x90\x80\x80")
	for _, name := range []string{"llama3", "gemma2"} {
		realTok(f, name)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, name := range []string{"llama3", "gemma2"} {
			tok := realTok(t, name)
			for _, o := range encodeModes {
				ids := tok.Encode(text, o)
				checkIDs(t, tok, ids, text)
				require.Equal(t, ids, tok.Encode(text, o), "%s: the same text twice", name)
				body := ids
				if o.AddSpecial && tok.AddsBOS() {
					require.NotEmpty(t, body)
					require.Equal(t, tok.BOS(), body[0])
					body = body[1:]
				}
				if o.AddSpecial && tok.AddsEOS() {
					require.NotEmpty(t, body)
					require.Equal(t, tok.EOS(), body[len(body)-1])
					body = body[:len(body)-1]
				}
				if text == "" {
					require.Empty(t, body)
				}
				if !tok.bpe {
					whole := *tok
					whole.spmWords = false
					require.Equal(t, ids, whole.Encode(text, o), "%s: word by word and whole, %q %+v", name, text, o)
				}

				got := checkDecoder(t, tok, body, o.ParseSpecial)
				dec, err := tok.Decode(body, DecodeOptions{RenderSpecial: o.ParseSpecial})
				require.NoError(t, err)
				if tok.bpe {
					require.Equal(t, string(cleanSpaces([]byte(got))), dec, "%s: %q", name, text)
					require.Equal(t, string(cleanSpaces([]byte(bpeText(text)))), dec, "%s: %q %+v", name, text, o)
				} else {
					require.Equal(t, got, dec, "%s: %q", name, text)
					if utf8.ValidString(text) && !strings.Contains(text, "▁") {
						require.Equal(t, text, dec, "%s: %q %+v", name, text, o)
					}
				}
				dec2, err := tok.Decode(ids, DecodeOptions{RemoveSpecial: true, RenderSpecial: o.ParseSpecial})
				require.NoError(t, err)
				if o.AddSpecial {
					require.Equal(t, dec, dec2, "%s: RemoveSpecial leaves out what AddSpecial added", name)
				}
			}
			if tok.bpe {
				// A long text keeps the tokens of the words it has seen:
				// the same tokens as without.
				require.Equal(t, tok.encodeBPE(text, nil, nil), tok.encodeBPE(text, nil, map[string][]int32{}), name)
			}
		}
	})
}

// FuzzEncodeReference compares Encode and Decode with llama.cpp's on
// arbitrary bytes, in every mode (skipped where llama.cpp is not
// installed; see reference_test.go).
func FuzzEncodeReference(f *testing.F) {
	for _, s := range hardCases {
		f.Add(s)
	}
	var cases []refCase
	for _, name := range []string{"llama3", "gemma2", "bert"} {
		path := writeGGUF(f, realVocab(f, name), nil)
		cases = append(cases, refCase{name: name, tok: realTok(f, name), ref: startLlamaCpp(f, path)})
	}
	f.Fuzz(func(t *testing.T, text string) {
		if codepointTooLarge(text) {
			t.Skip("llama.cpp fails on a code point above U+10FFFF")
		}
		for _, c := range cases {
			require.True(t, checkText(t, c, text, encodeModes, decodeModes), "%s: %q", c.name, text)
		}
	})
}

// fuzzIDs reads data as little-endian int32 token IDs, some outside any
// vocabulary.
func fuzzIDs(data []byte) []int32 {
	ids := make([]int32, 0, len(data)/4)
	for ; len(data) >= 4; data = data[4:] {
		ids = append(ids, int32(binary.LittleEndian.Uint32(data)))
	}
	return ids
}

// idBytes writes ids as fuzzIDs reads them.
func idBytes(ids ...int32) []byte {
	var b []byte
	for _, id := range ids {
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
	}
	return b
}

// FuzzDecoder decodes arbitrary token IDs, in range or not, with the real
// vocabularies and a small one: Decode is an ErrTokenID error exactly
// when an ID is outside the vocabulary, Piece agrees, and a Decoder fed
// the IDs one at a time gives the pieces one after the other.
func FuzzDecoder(f *testing.F) {
	f.Add(idBytes(), false)
	f.Add(idBytes(0, 1, 2, 3), true)
	f.Add(idBytes(-1), false)
	f.Add(idBytes(1<<31-1, -1<<31), true)
	f.Add(idBytes(128000, 9906, 1917, 128009), true)
	f.Add(idBytes(2, 235269, 236183, 1), false)
	f.Add(idBytes(4, 5, 4, 4), false)
	for _, s := range hardCases {
		f.Add(idBytes(realTok(f, "gemma2").Encode(s, EncodeOptions{AddSpecial: true})...), true)
		f.Add(idBytes(realTok(f, "llama3").Encode(s, EncodeOptions{ParseSpecial: true})...), false)
	}
	small := newTok(f, spmVocab(map[string]float32{"▁a": -1, "ab": -2}))
	bpe := newTok(f, bpeVocab("gpt-2", "a b"))
	f.Fuzz(func(t *testing.T, data []byte, special bool) {
		ids := fuzzIDs(data)
		for _, tok := range []*Tokenizer{realTok(t, "llama3"), realTok(t, "gemma2"), small, bpe} {
			var in []int32
			for _, id := range ids {
				p, err := tok.Piece(id, special)
				if id < 0 || int(id) >= tok.Len() {
					require.ErrorIs(t, err, ErrTokenID)
					require.Empty(t, p)
					require.Empty(t, tok.Token(id))
					require.Equal(t, TypeUndefined, tok.Type(id))
					require.False(t, tok.IsEOG(id))
					continue
				}
				require.NoError(t, err)
				in = append(in, id)
			}
			for _, o := range decodeModes {
				_, err := tok.Decode(ids, o)
				if len(in) < len(ids) {
					require.ErrorIs(t, err, ErrTokenID)
				} else {
					require.NoError(t, err)
				}
			}
			got := checkDecoder(t, tok, in, special)
			dec, err := tok.Decode(in, DecodeOptions{RenderSpecial: special})
			require.NoError(t, err)
			want := got
			if tok.addSpacePrefix && len(in) > 0 {
				p, _ := tok.Piece(in[0], special)
				if strings.HasPrefix(p, " ") {
					want = want[1:]
				}
			}
			if tok.cleanSpaces {
				want = string(cleanSpaces([]byte(want)))
			}
			require.Equal(t, want, dec)
		}
	})
}

// fuzzVocab builds a vocabulary from fuzz bytes, lies included: tokens
// (duplicates, empty, invalid UTF-8), types (unknown ones too), scores and
// merges of other lengths, special token IDs in and out of range.
func fuzzVocab(data []byte) Vocab {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	id := func() int32 {
		b := next()
		switch {
		case b == 0xFF:
			return -1
		case b == 0xFE:
			return -2
		case b == 0xFD:
			return 1 << 30
		}
		return int32(b % 32)
	}
	flag := func() *bool {
		switch b := next() % 3; b {
		case 0:
			return nil
		default:
			v := b == 1
			return &v
		}
	}
	v := Vocab{}
	ctl := next()
	switch {
	case ctl&1 == 0 && ctl&0x40 != 0:
		v.Model = "bert"
	case ctl&1 == 0:
		v.Model = "llama"
	default:
		v.Model = "gpt2"
		v.Pre = []string{"", "default", "gpt-2", "llama-bpe", "llama3", "qwen2", "qwen35", "smollm"}[int(ctl>>1)%8]
	}
	if ctl&0x80 != 0 {
		v.Model = string([]byte{ctl})
	}
	v.BOS, v.EOS, v.UNK, v.EOT, v.EOM = id(), id(), id(), id(), id()
	if v.Model == "bert" {
		v.SEP, v.EOS = v.EOS, -1 // WordPiece's second special token
	}
	v.AddBOS, v.AddEOS, v.AddSpacePrefix = flag(), flag(), flag()
	n := int(next() % 40)
	lengths := next()
	// With lengths&0x10, one more byte sizes the vocabulary: its low
	// nibble adds 64 tokens a unit (up to 960 more, each "t<i>" after the
	// parts), its high nibble
	// repeats every other part 4<<k times (up to 128 Ki times: beyond
	// MaxTokenLen).
	var grow byte
	if lengths&0x10 != 0 {
		grow = next()
		n += int(grow&0x0F) * 64
	}
	// Tokens: the bytes that follow, cut at each 0x00; the byte tokens of
	// the first bytes too, so that SentencePiece has some; then tokens of
	// their own ("t40", ...) after 40.
	rest := string(data)
	parts := strings.Split(rest, "\x00")
	for i := range n {
		var s string
		switch {
		case i < len(parts):
			s = parts[i]
			if grow>>4 != 0 && i%2 == 1 {
				s = strings.Repeat(s, 4<<(grow>>4))
			}
		case i >= 40 || grow&0x0F != 0:
			s = "t" + strconv.Itoa(i)
		case i%3 == 0:
			s = string(rune('a' + i%26))
		default:
			s = "<0x" + strings.ToUpper(string("0123456789abcdef"[i%16])) + string("0123456789ABCDEF"[(i*7)%16]) + ">"
		}
		v.Tokens = append(v.Tokens, s)
	}
	if lengths&1 != 0 {
		v.Scores = make([]float32, n+int(lengths>>6&1))
		for i := range v.Scores {
			if len(rest) == 0 {
				continue
			}
			switch c := rest[i%len(rest)]; c {
			case 0:
				v.Scores[i] = float32(math.Copysign(0, -1))
			case 1:
				v.Scores[i] = float32(math.NaN())
			case 2:
				v.Scores[i] = float32(math.Inf(-1))
			default:
				v.Scores[i] = float32(int(c)-128) / 16
			}
		}
	}
	if lengths&2 != 0 {
		v.Types = make([]TokenType, n+int(lengths>>7&1))
		for i := range v.Types {
			if len(rest) > 0 {
				v.Types[i] = TokenType(int(rest[(i*5)%len(rest)]) % 8)
			} else {
				v.Types[i] = TokenType(i % 7)
			}
		}
	}
	// Merges: pairs of the tokens (some naming none), and the parts as
	// they are.
	for i := range parts {
		if lengths&4 != 0 && i+1 < len(parts) {
			v.Merges = append(v.Merges, parts[i]+" "+parts[i+1])
		}
		if lengths&8 != 0 {
			v.Merges = append(v.Merges, parts[i])
		}
	}
	return v
}

// FuzzNew builds a tokenizer from a vocabulary made of fuzz bytes, lies
// and all: New gives an error of a documented kind or a tokenizer, and a
// tokenizer encodes the bytes into IDs it has, decodes them, and decodes
// every one of its tokens.
func FuzzNew(f *testing.F) {
	f.Add([]byte{}, "")
	f.Add([]byte("\x00\xff\xff\xff\xff\xff\x02\x00\x00\x08\x03a\x00b\x00ab\x00\xe2\x96\x81"), "ab ab")
	f.Add([]byte("\x01\x00\x00\xff\xff\xff\x00\x00\x00\x10\x0fa\x00b\x00\xc4\xa0\x00ab"), "a b ab")
	f.Add([]byte("\x0b\x00\x00\xff\xff\xff\x00\x00\x00\x10\x0fa\x00b\x00\xc4\xa0\x001\x002"), "a b 12 ab")  // qwen2
	f.Add([]byte("\x0d\x00\x00\xff\xff\xff\x00\x00\x00\x10\x0fa\x00b\x00\xc4\xa0\x00ab"), "a b ab\x01\x00") // an unknown pre-tokenizer
	f.Add([]byte("\x07\x01\x01\xff\xff\xff\x01\x00\x00\x10\x0c<|x|>\x00a\x00b\x00ab"), "a<|x|>b")
	f.Add([]byte("\x00\x01\x02\x00\xff\xff\x01\x02\x00\x20\x03<unk>\x00<s>\x00</s>\x00\xe2\x96\x81\x00a"), "<s>\xff a")
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00"), "x")
	for _, s := range hardCases {
		f.Add([]byte("\x05\x00\x00\xff\xff\xff\x01\x00\x00\x30\x0f"+strings.ReplaceAll(s, " ", "\x00")), s)
	}
	// Issue #40: more tokens, long ones of characters outside GPT-2's
	// byte map (a piece linear in its token), one beyond MaxTokenLen, and
	// special tokens that nest.
	f.Add([]byte("\x01\x00\x00\xff\xff\xff\x00\x00\x00\x04\x15\x10a\x00\x01\x02\x03\x00b\x00一二"), "a\x01\x02 b一二")
	f.Add([]byte("\x01\x00\x00\xff\xff\xff\x00\x00\x00\x04\x15\x2fa\x00\x01\x00b"), "a\x01 b t99")
	f.Add([]byte("\x01\x00\x00\xff\xff\xff\x00\x00\x00\x04\x15\xf0a\x00\x01\x00b"), "ab")
	// WordPiece: [CLS] [SEP] [UNK] and words, with and without them.
	f.Add([]byte("\x40\x00\x02\x01\xff\xff\x00\x00\x00\x08\x0c[CLS]\x00[UNK]\x00[SEP]\x00\xe2\x96\x81a\x00b\x00\xe2\x96\x81ab"), "A b, ab\xff AB ba")
	f.Add([]byte("\x40\xff\xff\xff\xff\xff\x00\x00\x00\x04\x0c\xe2\x96\x81a\x00a"), "aaaa")
	f.Add([]byte("\x03\x02\x02\xff\xff\xff\x00\x00\x00\x08\x13\x00<\x00<<\x00<<<\x00<<<<\x00a\x04\x04\x04\x04\x01"), "<<<<<<<<<<a<<")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		v := fuzzVocab(data)
		tok, err := New(v)
		dec, decErr := NewForDecoding(v)
		if err == nil {
			// Where New succeeds, NewForDecoding makes the same tokenizer.
			require.NoError(t, decErr)
			require.NoError(t, tok.CanEncode())
			require.NoError(t, dec.CanEncode())
		}
		if err != nil {
			requireKnownErr(t, err, "%+v", v)
			require.Nil(t, tok)
			if decErr != nil {
				requireKnownErr(t, decErr, "%+v", v)
				require.Nil(t, dec)
				return
			}
			// Only an unknown pre-tokenizer: the tokenizer decodes.
			require.ErrorIs(t, dec.CanEncode(), ErrUnsupported)
			require.ErrorIs(t, err, ErrUnsupported)
			for id := range int32(dec.Len()) {
				for _, special := range []bool{false, true} {
					_, err := dec.Piece(id, special)
					require.NoError(t, err)
				}
			}
			ids := fuzzIDs([]byte(text))
			for i := range ids {
				ids[i] = int32(uint32(ids[i]) % uint32(dec.Len()))
			}
			for _, d := range decodeModes {
				_, err := dec.Decode(ids, d)
				require.NoError(t, err)
			}
			checkDecoder(t, dec, ids, true)
			return
		}
		require.Equal(t, len(v.Tokens), tok.Len())
		for id := range int32(tok.Len()) {
			for _, special := range []bool{false, true} {
				p, err := tok.Piece(id, special)
				require.NoError(t, err)
				require.LessOrEqual(t, len(p), 16*len(tok.Token(id)), "the piece of token %d %q", id, tok.Token(id))
			}
			want := v.Tokens[id]
			if want == "" {
				want = tok.Token(id)
				require.True(t, strings.HasPrefix(want, "[EMPTY_"), want)
			}
			require.Equal(t, want, tok.Token(id))
			got, ok := tok.ID(want)
			require.True(t, ok)
			require.Equal(t, id, got)
		}
		for _, o := range encodeModes {
			ids := tok.Encode(text, o)
			checkIDs(t, tok, ids, text)
			require.Equal(t, ids, tok.Encode(text, o))
			if !tok.bpe {
				whole := *tok
				whole.spmWords = false
				require.Equal(t, ids, whole.Encode(text, o), "word by word and whole")
			}
			for _, d := range decodeModes {
				_, err := tok.Decode(ids, d)
				require.NoError(t, err)
			}
			checkDecoder(t, tok, ids, o.ParseSpecial)
		}
	})
}
