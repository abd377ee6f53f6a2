package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DecodeOptions are Decode's flags (llama_detokenize's).
type DecodeOptions struct {
	// RemoveSpecial leaves out a BOS in front and an EOS at the end where
	// the vocabulary adds them.
	RemoveSpecial bool
	// RenderSpecial writes control and unknown tokens as their texts
	// ("<|eot_id|>"); without it they are left out.
	RenderSpecial bool
}

// piece is the text of token id with special tokens rendered
// (llama_token_to_piece with special set): a control, unknown or
// user-defined token as it is written, a normal token with "▁" as a space
// (SentencePiece) or its byte runes as bytes (byte-level BPE; a rune
// outside GPT-2's byte map as llama.cpp's marker "[UNK_BYTE_0x<hex>...]"),
// a byte token as its byte; other types are empty. A piece is at most 16
// times its token's length.
func (t *Tokenizer) piece(id int32) []byte {
	a, s := t.attrs[id], t.tokens[id]
	switch {
	case a&(attrControl|attrUnknown|attrUserDefined) != 0:
		return []byte(s)
	case a&attrNormal != 0:
		if !t.bpe {
			return []byte(strings.ReplaceAll(s, "▁", " "))
		}
		b := make([]byte, 0, len(s))
		marked := false
		for _, r := range s {
			if c, ok := runeByte[r]; ok {
				b = append(b, c)
				continue
			}
			// llama.cpp's marker for a rune outside the byte map, which
			// holds the token's text: only the first marker here, so
			// that a piece is at most 16 times its token's length (see
			// the package documentation).
			b = append(b, "[UNK_BYTE_0x"...)
			for _, c := range []byte(string(r)) {
				b = fmt.Appendf(b, "%02x", c)
			}
			if !marked {
				b = append(b, s...)
				marked = true
			}
			b = append(b, ']')
		}
		return b
	case a&attrByte != 0:
		return []byte{hexByte(s)}
	}
	return nil
}

// hexByte reads the byte of a byte token "<0xNN>" as llama.cpp does:
// strtol in base 16 of its fourth and fifth characters (white space and a
// sign in front allowed, as many hex digits as follow, 0 without one),
// cut to a byte.
func hexByte(s string) byte {
	s = s[min(3, len(s)):min(5, len(s))]
	i := 0
	for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
		i++
	}
	neg := i < len(s) && s[i] == '-'
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	var b byte
digits:
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			b = b<<4 | (c - '0')
		case c >= 'a' && c <= 'f':
			b = b<<4 | (c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			b = b<<4 | (c - 'A' + 10)
		default:
			break digits
		}
	}
	if neg {
		b = -b
	}
	return b
}

// AppendPiece appends the text of token id to b, as llama_token_to_piece
// writes it (see DecodeOptions.RenderSpecial for special). An ID outside
// the vocabulary is an ErrTokenID error.
func (t *Tokenizer) AppendPiece(b []byte, id int32, special bool) ([]byte, error) {
	if id < 0 || int(id) >= len(t.tokens) {
		return b, fmt.Errorf("tokenizer: %w: token %d, and the vocabulary has %d", ErrTokenID, id, len(t.tokens))
	}
	if !special && t.attrs[id]&(attrControl|attrUnknown) != 0 {
		return b, nil
	}
	return append(b, t.pieces[id]...), nil
}

// Piece returns the text of token id: AppendPiece to nothing.
func (t *Tokenizer) Piece(id int32, special bool) (string, error) {
	b, err := t.AppendPiece(nil, id, special)
	return string(b), err
}

// Decode returns the text of tokens, as llama_detokenize writes it: the
// pieces one after the other, the space SentencePiece put in front of the
// text taken off again (unless a BOS it added leads), and for byte-level
// BPE llama.cpp's clean-up of spaces (" ." " ," " !" " ?" lose the space,
// " ' " its spaces, " 's" " 'm" " 're" " 've" the space). An ID outside
// the vocabulary is an ErrTokenID error.
func (t *Tokenizer) Decode(ids []int32, o DecodeOptions) (string, error) {
	strip := t.addSpacePrefix
	if o.RemoveSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		strip = false
		ids = ids[1:]
	}
	if o.RemoveSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	var b []byte
	for _, id := range ids {
		n := len(b)
		var err error
		if b, err = t.AppendPiece(b, id, o.RenderSpecial); err != nil {
			return "", err
		}
		if strip && len(b) > n && b[n] == ' ' {
			b = append(b[:n], b[n+1:]...)
		}
		strip = false
	}
	if t.cleanSpaces {
		b = cleanSpaces(b)
	}
	return string(b), nil
}

// cleanSpaces is llama.cpp's clean_up_tokenization_spaces, in its three
// passes over the bytes.
func cleanSpaces(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	// A space before ? ! . , goes.
	out := b[:1]
	for i := 1; i < len(b); i++ {
		if b[i-1] == ' ' && strings.IndexByte("?!.,", b[i]) >= 0 {
			out = out[:len(out)-1]
		}
		out = append(out, b[i])
	}
	// An apostrophe between spaces loses both; the byte after it is then
	// no space any more for the next test.
	b = out
	out = b[:1]
	for i := 1; i < len(b); i++ {
		c := b[i]
		if c == '\'' && i+1 < len(b) && b[i-1] == ' ' && b[i+1] == ' ' {
			out = out[:len(out)-1]
			b[i+1] = 0 // llama.cpp writes a NUL there, then skips it
			out = append(out, c)
			i++
			continue
		}
		out = append(out, c)
	}
	// Contractions: " 's" " 'm" " 're" " 've" lose the space.
	b = out
	out = b[:1]
	for i := 1; i < len(b); i++ {
		c := b[i]
		if b[i-1] == ' ' && c == '\'' && i+1 < len(b) {
			switch c1 := b[i+1]; {
			case c1 == 's' || c1 == 'm':
				out = out[:len(out)-1]
			case c1 == 't' || c1 == 'd':
			case i+2 < len(b) && ((c1 == 'r' || c1 == 'v') && b[i+2] == 'e'):
				out = out[:len(out)-1]
			}
		}
		out = append(out, c)
	}
	return out
}

// Decoder turns tokens into text as they come (a model's output, one token
// at a time): each Add returns the text that is complete, holding back the
// last bytes while they are the start of a UTF-8 sequence that more bytes
// may complete (a character split across tokens). Bytes that can never
// be valid UTF-8 are passed on as they are. A Decoder is used by one
// goroutine at a time.
type Decoder struct {
	t       *Tokenizer
	special bool
	pending []byte
}

// NewDecoder returns a streaming decoder; special renders control tokens
// as their texts (see DecodeOptions.RenderSpecial).
func (t *Tokenizer) NewDecoder(special bool) *Decoder {
	return &Decoder{t: t, special: special}
}

// Add decodes token id and returns the text now complete (possibly
// empty). An ID outside the vocabulary is an ErrTokenID error, and
// changes nothing.
func (d *Decoder) Add(id int32) (string, error) {
	var err error
	if d.pending, err = d.t.AppendPiece(d.pending, id, d.special); err != nil {
		return "", err
	}
	n := completeUTF8(d.pending)
	out := string(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out, nil
}

// Flush returns the bytes held back, complete or not, and empties the
// decoder.
func (d *Decoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completeUTF8 returns the length of b without a trailing incomplete
// UTF-8 sequence (a lead byte followed by fewer continuation bytes than
// it calls for).
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}
