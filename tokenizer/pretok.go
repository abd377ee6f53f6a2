package tokenizer

import "unicode"

// The pre-tokenizers split a text, as code points, into words. Each is
// written out by hand as llama.cpp runs it (its hand-written matchers of
// the regular expressions, and std::regex for the default pre-tokenizer's
// simpler ones), since Go's regexp lacks the look-ahead they use. A split
// works on a segment [ini, end) and appends the ends of its pieces.

// span is the text under a split: its code points and their classes.
type span struct {
	cp []rune
	cl []class
}

// splitFunc splits the segment [ini, end) of s, appending the end of each
// piece to ends.
type splitFunc func(s *span, ini, end int, ends []int) []int

// splitEach applies f to every segment of ends (segments are [0, ends[0]),
// [ends[0], ends[1]), ...).
func splitEach(f splitFunc, s *span, ends []int) []int {
	out := make([]int, 0, len(ends)*2)
	ini := 0
	for _, e := range ends {
		out = f(s, ini, e, out)
		ini = e
	}
	return out
}

// splitter is a cursor over one segment: the class or code point of a
// position outside it is 0, or -1.
type splitter struct {
	s        *span
	ini, end int
	ends     []int
	last     int // the end of the last piece
}

func (p *splitter) class(i int) class {
	if i < p.ini || i >= p.end {
		return 0
	}
	return p.s.cl[i]
}

func (p *splitter) cp(i int) rune {
	if i < p.ini || i >= p.end {
		return -1
	}
	return p.s.cp[i]
}

// cut ends a piece at i (nothing when it would be empty).
func (p *splitter) cut(i int) {
	if i > p.last {
		p.ends = append(p.ends, i)
	}
	p.last = i
}

// contraction returns the length of the contraction ('s 't 'm 'd 're 've
// 'll) at i, or 0; fold lowers the letters first (Llama 3's is case
// insensitive).
func (p *splitter) contraction(i int, fold bool) int {
	if p.cp(i) != '\'' || i+1 >= p.end {
		return 0
	}
	lower := func(r rune) rune {
		if fold {
			return unicode.ToLower(r)
		}
		return r
	}
	switch lower(p.cp(i + 1)) {
	case 's', 't', 'm', 'd':
		return 2
	}
	if i+2 >= p.end {
		return 0
	}
	a, b := lower(p.cp(i+1)), lower(p.cp(i+2))
	if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
		return 3
	}
	return 0
}

// spaces counts the white space from i on.
func (p *splitter) spaces(i int) int {
	n := 0
	for p.class(i+n)&classSpace != 0 {
		n++
	}
	return n
}

const wordClasses = classSpace | classLetter | classNumber

// splitLlama3 is Llama 3's expression:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitLlama3(s *span, ini, end int, ends []int) []int {
	return splitLlama3Digits(s, ini, end, ends, 3)
}

// splitQwen2 is Qwen2's expression, Llama 3's with one number a piece
// (\p{N} for \p{N}{1,3}):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// llama.cpp matches it by hand too (unicode_regex_split_custom_qwen2), its
// contractions case insensitive as Llama 3's.
func splitQwen2(s *span, ini, end int, ends []int) []int {
	return splitLlama3Digits(s, ini, end, ends, 1)
}

// splitLlama3Digits is Llama 3's expression with runs of numbers cut into
// pieces of at most digits code points (\p{N}{1,digits}).
func splitLlama3Digits(s *span, ini, end int, ends []int, digits int) []int {
	p := &splitter{s: s, ini: ini, end: end, ends: ends, last: ini}
	for pos := ini; pos < end; {
		r, c := p.cp(pos), p.class(pos)
		if n := p.contraction(pos, true); n > 0 {
			pos += n
			p.cut(pos)
			continue
		}
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if !isRN(r) && c&classNumber == 0 && (c&classLetter != 0 || p.class(pos+1)&classLetter != 0) {
			pos++
			for p.class(pos)&classLetter != 0 {
				pos++
			}
			p.cut(pos)
			continue
		}
		// \p{N}{1,digits}
		if c&classNumber != 0 {
			from := pos
			for p.class(pos)&classNumber != 0 {
				pos++
				if pos-from >= digits {
					p.cut(pos)
					from = pos
				}
			}
			p.cut(pos)
			continue
		}
		// ' '?[^\s\p{L}\p{N}]+[\r\n]*
		c2 := c
		if r == ' ' {
			c2 = p.class(pos + 1)
		}
		if c2&wordClasses == 0 {
			if r == ' ' {
				pos++
			}
			for c2&wordClasses == 0 && c2 != 0 {
				pos++
				c2 = p.class(pos)
			}
			for isRN(p.cp(pos)) {
				pos++
			}
			p.cut(pos)
			continue
		}
		// \s*[\r\n]+, \s+(?!\S), \s+
		n, lastRN := 0, -1
		for p.class(pos+n)&classSpace != 0 {
			if isRN(p.cp(pos + n)) {
				lastRN = pos + n + 1
			}
			n++
		}
		switch {
		case lastRN >= 0:
			pos = lastRN
		case n > 1 && pos+n < end:
			pos += n - 1
		case n > 0:
			pos += n
		default:
			pos++
		}
		p.cut(pos)
	}
	return p.ends
}

// splitGPT2 is GPT-2's expression:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(s *span, ini, end int, ends []int) []int {
	p := &splitter{s: s, ini: ini, end: end, ends: ends, last: ini}
	for pos := ini; pos < end; {
		r, c := p.cp(pos), p.class(pos)
		if n := p.contraction(pos, false); n > 0 {
			pos += n
			p.cut(pos)
			continue
		}
		c2 := c
		if r == ' ' {
			c2 = p.class(pos + 1)
		}
		run := func(same func(class) bool) {
			if r == ' ' {
				pos++
			}
			for same(c2) {
				pos++
				c2 = p.class(pos)
			}
			p.cut(pos)
		}
		switch {
		case c2&classLetter != 0:
			run(func(c class) bool { return c&classLetter != 0 })
			continue
		case c2&classNumber != 0:
			run(func(c class) bool { return c&classNumber != 0 })
			continue
		case c2&wordClasses == 0 && c2 != 0:
			run(func(c class) bool { return c&wordClasses == 0 && c != 0 })
			continue
		}
		n := p.spaces(pos)
		switch {
		case n > 1 && pos+n < end:
			pos += n - 1
		case n > 0:
			pos += n
		default:
			pos++
		}
		p.cut(pos)
	}
	return p.ends
}

// splitRuns splits runs of code points of class want from the rest: a run
// is a piece, and so is each stretch between runs (std::regex_iterator
// over want+).
func splitRuns(want class) splitFunc {
	return func(s *span, ini, end int, ends []int) []int {
		p := &splitter{s: s, ini: ini, end: end, ends: ends, last: ini}
		for pos := ini; pos < end; {
			if s.cl[pos]&want == 0 {
				pos++
				continue
			}
			p.cut(pos)
			for pos < end && s.cl[pos]&want != 0 {
				pos++
			}
			p.cut(pos)
		}
		p.cut(end)
		return p.ends
	}
}

// splitDigitTriples splits out every three ASCII digits in a row, from
// the left ([0-9][0-9][0-9]).
func splitDigitTriples(s *span, ini, end int, ends []int) []int {
	p := &splitter{s: s, ini: ini, end: end, ends: ends, last: ini}
	digit := func(i int) bool { return i < end && s.cp[i] >= '0' && s.cp[i] <= '9' }
	for pos := ini; pos < end; {
		if digit(pos) && digit(pos+1) && digit(pos+2) {
			p.cut(pos)
			pos += 3
			p.cut(pos)
			continue
		}
		pos++
	}
	p.cut(end)
	return p.ends
}

// splitEachOf splits every code point of class want from the rest, one
// piece each (std::regex_iterator over a one-character class, \p{N}).
func splitEachOf(want class) splitFunc {
	return func(s *span, ini, end int, ends []int) []int {
		p := &splitter{s: s, ini: ini, end: end, ends: ends, last: ini}
		for pos := ini; pos < end; pos++ {
			if s.cl[pos]&want != 0 {
				p.cut(pos)
				p.cut(pos + 1)
			}
		}
		p.cut(end)
		return p.ends
	}
}

// preSplits are the splits of each pre-tokenizer, in order.
var preSplits = map[preKind][]splitFunc{
	preDefault: {splitRuns(classPunct), splitGPT2, splitRuns(classNumber), splitDigitTriples},
	preGPT2:    {splitGPT2},
	preLlama3:  {splitLlama3},
	preSmolLM:  {splitEachOf(classNumber), splitGPT2},
	preQwen2:   {splitQwen2},
}
