package tokenizer

import (
	"unicode"
)

// byteRune is GPT-2's byte-to-unicode map: the printable bytes of Latin-1
// stand for themselves, the other 68 for the runes from U+0100 on, in
// order. runeByte inverts it.
var byteRune, runeByte = func() ([256]rune, map[rune]byte) {
	var br [256]rune
	rb := make(map[rune]byte, 256)
	next := rune(256)
	for b := range 256 {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			br[b] = rune(b)
		} else {
			br[b] = next
			next++
		}
		rb[br[b]] = byte(b)
	}
	return br, rb
}()

// byteRuneText is byteRune as UTF-8, by byte.
var byteRuneText = func() (s [256]string) {
	for b, r := range byteRune {
		s[b] = string(r)
	}
	return s
}()

// decodeCodepoint reads the code point at s[i:] as llama.cpp's
// unicode_cpt_from_utf8 does: a lead byte and the continuation bytes it
// calls for make a code point whatever its value (overlong forms and
// surrogates included); a byte that does not start one is U+FFFD, one
// byte long. A value above U+10FFFF, which llama.cpp cannot write back,
// is U+FFFD too.
func decodeCodepoint(s string, i int) (rune, int) {
	b0 := s[i]
	cont := func(k int) bool { return i+k < len(s) && s[i+k]&0xC0 == 0x80 }
	switch {
	case b0 < 0x80:
		return rune(b0), 1
	case b0&0x40 == 0:
		return unicode.ReplacementChar, 1
	case b0&0x20 == 0:
		if !cont(1) {
			return unicode.ReplacementChar, 1
		}
		return rune(b0&0x1F)<<6 | rune(s[i+1]&0x3F), 2
	case b0&0x10 == 0:
		if !cont(1) || !cont(2) {
			return unicode.ReplacementChar, 1
		}
		return rune(b0&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3
	case b0&0x08 == 0:
		if !cont(1) || !cont(2) || !cont(3) {
			return unicode.ReplacementChar, 1
		}
		r := rune(b0&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
		if r > unicode.MaxRune {
			r = unicode.ReplacementChar
		}
		return r, 4
	}
	return unicode.ReplacementChar, 1
}

// appendCodepoint writes r in UTF-8 as llama.cpp's unicode_cpt_to_utf8
// does: surrogates too, which Go's encoder replaces.
func appendCodepoint(b []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(b, byte(r))
	case r < 0x800:
		return append(b, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return append(b, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
}

// utf8Len is the length of the UTF-8 sequence that byte b starts, by its
// high bits alone (llama.cpp's unicode_len_utf8): 1 for ASCII and
// continuation bytes.
func utf8Len(b byte) int {
	switch b >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}

// class is what the pre-tokenizers ask of a code point. Positions outside
// the text being split have class 0; every code point inside has
// classIn.
type class uint8

const (
	classIn class = 1 << iota
	classLetter
	classNumber
	classSpace
	classPunct // default pre-tokenizer's first split: \p{P} and $+<=>^~|
)

var asciiClass = func() (c [128]class) {
	for b := range 128 {
		c[b] = computeClass(rune(b))
	}
	return c
}()

// classOf classifies r: see computeClass.
func classOf(r rune) class {
	if r < 0x80 {
		return asciiClass[r]
	}
	return computeClass(r)
}

// computeClass classifies r by Go's unicode tables: letters (\p{L}),
// numbers (\p{N}), white space (the White_Space property, which is
// llama.cpp's \s), and the punctuation of the default pre-tokenizer.
func computeClass(r rune) class {
	c := classIn
	switch {
	case unicode.IsLetter(r):
		c |= classLetter
	case unicode.IsNumber(r):
		c |= classNumber
	case unicode.Is(unicode.White_Space, r):
		c |= classSpace
	case unicode.IsPunct(r) || (r < 0x80 && r != '`' && unicode.IsSymbol(r)):
		c |= classPunct
	}
	return c
}

// isRN reports whether r is a carriage return or a line feed.
func isRN(r rune) bool { return r == '\r' || r == '\n' }
