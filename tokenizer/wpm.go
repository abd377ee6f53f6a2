package tokenizer

import (
	"sort"
	"unicode"
)

// WordPiece ("bert"), as llama.cpp's llm_tokenizer_wpm_session does it.
// llama.cpp's converter writes a BERT vocabulary with a "▁" in front of
// each token that starts a word ("the" is "▁the") and the "##" taken off
// a continuation ("##ing" is "ing"); control tokens ("[CLS]") are as
// they are.

// nfdFirst is the first code point of r's canonical decomposition (r
// itself without one): the base letter of a letter with accents.
func nfdFirst(r rune) rune {
	if r < nfdRanges[0].lo {
		return r
	}
	i := sort.Search(len(nfdRanges), func(i int) bool { return nfdRanges[i].hi >= r })
	if i < len(nfdRanges) && nfdRanges[i].lo <= r {
		return nfdRanges[i].first
	}
	return r
}

// isWPMAlone reports whether r is a word of its own in WordPiece's
// pre-tokenization: punctuation (\p{P}), an ASCII symbol (\p{S}), or a
// CJK ideograph of the ranges llama.cpp (and Hugging Face's BERT) take.
func isWPMAlone(r rune) bool {
	if r < 0x7F {
		return unicode.IsPunct(r) || unicode.IsSymbol(r)
	}
	return unicode.IsPunct(r) ||
		r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF ||
		r >= 0x20000 && r <= 0x2A6DF || r >= 0x2A700 && r <= 0x2B73F ||
		r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B920 && r <= 0x2CEAF || // sic: 0x2B920, as Hugging Face's
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}

// wpmWords appends the words of text to words, each with "▁" in front,
// as llama.cpp's preprocess makes them: the code points of text (a byte
// that starts none is U+FFFD), with accents stripped (each code point its
// decomposition's first, and marks, \p{M}, left out) where stripAccents
// says, and lowered where lower says; white space ends a word; NUL,
// U+FFFD and \p{C} are left out; punctuation, ASCII symbols and CJK
// ideographs are words of one code point. It returns the words as ends
// in buf, each word buf[previous end:end].
func wpmWords(text string, lower, stripAccents bool, buf []byte, ends []int) ([]byte, []int) {
	const space = "▁"
	buf = append(buf[:0], space...)
	ends = ends[:0]
	finish := func() { // ends the word in buf, if any
		if len(buf)-len(space) > lastEnd(ends) {
			ends = append(ends, len(buf))
			buf = append(buf, space...)
		}
	}
	for i := 0; i < len(text); {
		r, n := decodeCodepoint(text, i)
		i += n
		if stripAccents {
			r = nfdFirst(r)
		}
		if unicode.Is(unicode.White_Space, r) {
			finish()
			continue
		}
		if r == 0 || r == unicode.ReplacementChar || unicode.Is(unicode.C, r) {
			continue
		}
		if stripAccents && unicode.Is(unicode.M, r) {
			continue
		}
		c := r
		if lower {
			c = unicode.ToLower(r)
		}
		if isWPMAlone(r) {
			finish()
			buf = appendCodepoint(buf, c)
			finish()
			continue
		}
		buf = appendCodepoint(buf, c)
	}
	finish()
	return buf, ends
}

// lastEnd is the last of ends, or 0.
func lastEnd(ends []int) int {
	if len(ends) == 0 {
		return 0
	}
	return ends[len(ends)-1]
}

// encodeWPM appends the WordPiece tokens of text: each word (with its
// "▁") is split greedily, the longest token at its start, then the
// longest at the place after it, and so on; a word with a place where no
// token starts is the unknown token alone (nothing without one).
//
// llama.cpp tries each length from the longest token's down at each
// place; the automaton of all tokens, run over a word from its end, gives
// the longest token at every place at once, in time linear in the word.
func (t *Tokenizer) encodeWPM(text string, out []int32) []int32 {
	buf, ends := wpmWords(text, t.lowercase, t.stripAccents, nil, nil)
	a := &t.words
	var at []int32
	ini := 0
	for _, e := range ends {
		w := buf[ini:e]
		ini = e
		at = at[:0]
		for range w {
			at = append(at, -1)
		}
		state := int32(0)
		for p := len(w) - 1; p >= 0; p-- {
			state = a.step(state, w[p])
			at[p] = a.longest[0][state]
		}
		n := len(out)
		for p := 0; p < len(w); {
			id := at[p]
			if id < 0 {
				out = out[:n]
				break
			}
			out = append(out, id)
			p += len(t.tokens[id])
		}
		if len(out) == n && t.unk >= 0 {
			out = append(out, t.unk)
		}
	}
	return out
}
