package tokenizer

import (
	"math"
	"strings"
)

// EncodeOptions are Encode's flags (llama_tokenize's).
type EncodeOptions struct {
	// AddSpecial adds BOS in front and EOS at the end where the vocabulary
	// says to (Tokenizer.AddsBOS, AddsEOS); for "bert", BOS ([CLS]) in
	// front and SEP ([SEP]) at the end, always.
	AddSpecial bool
	// ParseSpecial reads the texts of control and unknown tokens ("<s>",
	// "<|eot_id|>") in the text as those tokens; without it they are
	// plain text. User-defined tokens are read whole either way.
	ParseSpecial bool
}

// fragment is a piece of the text (id < 0) or a special token.
type fragment struct {
	text string
	id   int32
}

// Encode returns the tokens of text, as llama_tokenize does. Text that is
// not valid UTF-8 is tokenized too: SentencePiece spells the bytes with
// byte tokens, byte-level BPE reads each bad byte as U+FFFD, WordPiece
// leaves it out.
//
// Encode panics, with CanEncode's error, on a tokenizer that does not
// encode (one of NewForDecoding whose pre-tokenizer this package does not
// implement); tokenizers of New and FromGGUF always encode.
func (t *Tokenizer) Encode(text string, o EncodeOptions) []int32 {
	if t.encErr != nil {
		panic(t.encErr)
	}
	out := make([]int32, 0, len(text)/3+2)
	if o.AddSpecial && (t.addBOS || t.wpm) {
		out = append(out, t.bos)
	}
	frags := t.partition(text, o.ParseSpecial)
	if t.wpm {
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, f.id)
				continue
			}
			out = t.encodeWPM(f.text, out)
		}
		if o.AddSpecial {
			out = append(out, t.sep)
		}
		return out
	}
	if t.bpe {
		var cache map[string][]int32
		if len(text) > 4096 {
			cache = map[string][]int32{}
		}
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, f.id)
				continue
			}
			out = t.encodeBPE(f.text, out, cache)
		}
	} else {
		prevSpecial := true // a space in front of the text, and after each special token
		for _, f := range frags {
			if f.id >= 0 {
				out = append(out, f.id)
				prevSpecial = true
				continue
			}
			s := f.text
			if t.addSpacePrefix && prevSpecial {
				s = " " + s
			}
			out = t.encodeSPM(strings.ReplaceAll(s, " ", "▁"), out)
			prevSpecial = false
		}
	}
	if o.AddSpecial && t.addEOS {
		out = append(out, t.eos)
	}
	return out
}

// partition splits text at the special tokens in it, as llama.cpp's
// tokenizer_st_partition does: the longest special token first, each at
// every place it occurs (left to right, not overlapping) in what is still
// text, then the next. Control and unknown tokens count only when parse
// is set. White space after a token of Phi-3's rule (Vocab.Name) goes
// with the token.
//
// llama.cpp searches the text once a token; this gives its partition in
// time linear in the text (and a logarithm for the places where special
// tokens start), however many special tokens there are and however they
// nest. Each place p of the text that is still text has a candidate: the
// longest special token that starts at p and ends within p's run of text.
// The candidates are taken in the tokens' order, and by place for a
// token, from a heap: each is placed unless an earlier placement covers
// its place. A placement at p ends the runs of the places before it, and
// only those within the token's length of p can have had a candidate
// that crosses p (no longer candidate is left): one run of the automaton
// backwards from p gives them their new, shorter candidates. A place that
// is still text when a token is taken, where that token starts and fits,
// has it as its candidate: every longer one that fits fitted before, and
// was placed or covered.
func (t *Tokenizer) partition(text string, parse bool) []fragment {
	if text == "" {
		return nil
	}
	mode := 0
	if !parse {
		mode = 1
	}
	a := &t.specials
	longest := a.longest[mode]
	// Each place's candidate, by its order in t.special; -1: none.
	var cand []int32
	var h placeHeap
	state := int32(0)
	for p := len(text) - 1; p >= 0; p-- {
		state = a.step(state, text[p])
		if o := longest[state]; o >= 0 {
			if cand == nil {
				cand = make([]int32, len(text))
				for i := range cand {
					cand[i] = -1
				}
			}
			cand[p] = o
			h = append(h, place{o, p})
		}
	}
	if cand == nil {
		return []fragment{{text: text, id: -1}}
	}
	h.init()
	const (
		free   = 0 // text
		start  = 1 // the start of a placed token
		placed = 2 // within a placed token, or white space that went with it
	)
	st := make([]uint8, len(text))
	for len(h) > 0 {
		k := h.pop()
		o, p := k.order, k.p
		if st[p] != free || cand[p] != o {
			continue // covered, or an outdated candidate
		}
		id := t.special[o]
		end := p + len(t.tokens[id])
		st[p] = start
		for q := p + 1; q < end; q++ {
			st[q] = placed
		}
		if t.attrs[id]&attrRStrip != 0 {
			for ; end < len(text) && st[end] == free && strings.IndexByte(" \t\n\v\f\r", text[end]) >= 0; end++ { // C's isspace
				st[end] = placed
			}
		}
		// New candidates for the places before p whose candidate may
		// cross p: the longest token within text[q:p].
		state := int32(0)
		for q := p - 1; q >= 0 && q > p-len(t.tokens[id]) && st[q] == free; q-- {
			state = a.step(state, text[q])
			if c := longest[state]; c != cand[q] {
				cand[q] = c
				if c >= 0 {
					h.push(place{c, q})
				}
			}
		}
	}
	var frags []fragment
	for p := 0; p < len(text); {
		switch st[p] {
		case start:
			id := t.special[cand[p]]
			frags = append(frags, fragment{id: id})
			p += len(t.tokens[id])
		case placed:
			p++
		default:
			q := p + 1
			for q < len(text) && st[q] == free {
				q++
			}
			frags = append(frags, fragment{text: text[p:q], id: -1})
			p = q
		}
	}
	return frags
}

// place is a candidate: a token, by its order in Tokenizer.special, at a
// place of the text.
type place struct {
	order int32
	p     int
}

// less orders candidates by their tokens' order, then by place.
func (a place) less(b place) bool {
	return a.order < b.order || a.order == b.order && a.p < b.p
}

// placeHeap is a priority queue of candidates, the first on top.
type placeHeap []place

func (h *placeHeap) push(k place) {
	*h = append(*h, k)
	q := *h
	i := len(q) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !q[i].less(q[parent]) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *placeHeap) down(i int) {
	q := *h
	n := len(q)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q[r].less(q[l]) {
			m = r
		}
		if !q[m].less(q[i]) {
			return
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
}

func (h *placeHeap) pop() place {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	*h = q[:last]
	h.down(0)
	return top
}

// init orders the candidates added with append.
func (h *placeHeap) init() {
	for i := len(*h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// symbol is a piece of a word being merged: text[start:start+n], linked to
// its neighbours (-1: none); n is 0 once merged into its left neighbour.
type symbol struct {
	start, n   int
	prev, next int
}

// bigram is a candidate merge of symbols left and right, whose texts are
// size bytes together. key orders the candidates, the smallest first: for
// SentencePiece the best score, for byte-level BPE the lowest rank, and
// then the leftmost.
type bigram struct {
	key         uint64
	left, right int32
	size        int32
}

// spmKey orders SentencePiece merges: the highest score first, then the
// leftmost (the float's bits made to sort as the float does, negated).
// -0 is +0, equal as llama.cpp compares scores.
func spmKey(score float32, left int) uint64 {
	if score == 0 {
		score = 0
	}
	u := math.Float32bits(score)
	if u&(1<<31) != 0 {
		u = ^u
	} else {
		u |= 1 << 31
	}
	return uint64(^u)<<32 | uint64(uint32(left))
}

// bpeKey orders byte-level BPE merges: the lowest rank first, then the
// leftmost.
func bpeKey(rank int32, left int) uint64 {
	return uint64(uint32(rank))<<32 | uint64(uint32(left))
}

// bigramHeap is a priority queue of bigrams, the smallest key on top.
type bigramHeap []bigram

func (h *bigramHeap) push(b bigram) {
	*h = append(*h, b)
	q := *h
	i := len(q) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if q[i].key >= q[parent].key {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *bigramHeap) down(i int) {
	q := *h
	n := len(q)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q[r].key < q[l].key {
			m = r
		}
		if q[i].key <= q[m].key {
			return
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
}

func (h *bigramHeap) pop() bigram {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	*h = q[:last]
	h.down(0)
	return top
}

// init orders the bigrams pushed with append.
func (h *bigramHeap) init() {
	for i := len(*h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// symbols splits text into one symbol a UTF-8 sequence, by lead bytes.
func symbols(text string, syms []symbol) []symbol {
	syms = syms[:0]
	for i := 0; i < len(text); {
		n := min(utf8Len(text[i]), len(text)-i)
		syms = append(syms, symbol{start: i, n: n, prev: len(syms) - 1, next: len(syms) + 1})
		i += n
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms
}

// merge runs the merges of a word: try proposes the bigram of two
// neighbouring symbols (false: none), and the best bigram merges until
// none is left. It returns the symbols, the merged ones with n 0.
func merge(syms []symbol, h *bigramHeap, try func(left, right int) (bigram, bool)) {
	add := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		if b, ok := try(l, r); ok {
			h.push(b)
		}
	}
	for i := 1; i < len(syms); i++ {
		if b, ok := try(i-1, i); ok {
			*h = append(*h, b)
		}
	}
	h.init()
	for len(*h) > 0 {
		b := h.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != int(b.size) {
			continue // outdated: one side has merged since
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = int(b.left)
		}
		add(l.prev, int(b.left))
		add(int(b.left), l.next)
	}
}

// encodeSPM appends the SentencePiece tokens of text (spaces already
// written "▁"): pairs merge, the best scored token first, while the merged
// text is a token; what is left that is no token is spelled in bytes.
//
// llama.cpp merges the whole text at once. Where no token holds a "▁"
// after another character (t.spmWords, SentencePiece's usual vocabulary),
// no merge can cross the place before a "▁" symbol that follows bytes
// other than a "▁", so the words between such places are merged one at a time,
// with the same result (the order of merges within a word is the same),
// and a long text keeps the tokens of the words it has seen.
func (t *Tokenizer) encodeSPM(text string, out []int32) []int32 {
	var syms []symbol
	var h bigramHeap
	if !t.spmWords {
		return t.spmWord(text, out, &syms, &h)
	}
	var cache map[string][]int32
	if len(text) > 4096 {
		cache = map[string][]int32{}
	}
	for len(text) > 0 {
		// The word ends before the next symbol (by lead bytes, as
		// symbols splits) that is a "▁" after bytes that are not one.
		end := len(text)
		for i := utf8Len(text[0]); i < len(text); i += utf8Len(text[i]) {
			if strings.HasPrefix(text[i:], "▁") && !strings.HasSuffix(text[:i], "▁") {
				end = i
				break
			}
		}
		word := text[:end]
		text = text[end:]
		if ids, ok := cache[word]; ok {
			out = append(out, ids...)
			continue
		}
		n := len(out)
		out = t.spmWord(word, out, &syms, &h)
		if cache != nil {
			cache[word] = out[n:len(out):len(out)]
		}
	}
	return out
}

// spmWord appends the SentencePiece tokens of text, merged as one.
func (t *Tokenizer) spmWord(text string, out []int32, symsBuf *[]symbol, h *bigramHeap) []int32 {
	syms := symbols(text, *symsBuf)
	*symsBuf = syms
	*h = (*h)[:0]
	merge(syms, h, func(l, r int) (bigram, bool) {
		a := syms[l]
		size := a.n + syms[r].n
		id, ok := t.ids[text[a.start:a.start+size]]
		if !ok {
			return bigram{}, false
		}
		return bigram{key: spmKey(t.scores[id], l), left: int32(l), right: int32(r), size: int32(size)}, true
	})
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		s := syms[i]
		piece := text[s.start : s.start+s.n]
		if id, ok := t.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(piece); j++ {
			if id := t.byteTokens[piece[j]]; id >= 0 {
				out = append(out, id)
			} else if t.unk >= 0 {
				out = append(out, t.unk)
			}
		}
	}
	return out
}

// encodeBPE appends the byte-level BPE tokens of text: its words by the
// pre-tokenizer, each in GPT-2's byte runes, merged by rank.
func (t *Tokenizer) encodeBPE(text string, out []int32, cache map[string][]int32) []int32 {
	s := &span{cp: make([]rune, 0, len(text)), cl: make([]class, 0, len(text))}
	for i := 0; i < len(text); {
		r, n := decodeCodepoint(text, i)
		s.cp = append(s.cp, r)
		s.cl = append(s.cl, classOf(r))
		i += n
	}
	ends := []int{len(s.cp)}
	for _, f := range preSplits[t.pre] {
		ends = splitEach(f, s, ends)
	}
	var raw, word []byte
	var syms []symbol
	h := &bigramHeap{}
	ini := 0
	for _, e := range ends {
		raw = raw[:0]
		for _, r := range s.cp[ini:e] {
			raw = appendCodepoint(raw, r)
		}
		ini = e
		word = word[:0]
		for _, b := range raw {
			word = append(word, byteRuneText[b]...)
		}
		if ids, ok := cache[string(word)]; ok {
			out = append(out, ids...)
			continue
		}
		n := len(out)
		out = t.bpeWord(string(word), out, &syms, h)
		if cache != nil {
			cache[string(word)] = out[n:len(out):len(out)]
		}
	}
	return out
}

// bpeWord appends the tokens of one word (in byte runes).
func (t *Tokenizer) bpeWord(w string, out []int32, symsBuf *[]symbol, h *bigramHeap) []int32 {
	if t.ignoreMerges {
		if id, ok := t.ids[w]; ok {
			return append(out, id)
		}
	}
	syms := symbols(w, *symsBuf)
	*symsBuf = syms
	*h = (*h)[:0]
	var key []byte
	merge(syms, h, func(l, r int) (bigram, bool) {
		a, b := syms[l], syms[r]
		key = append(append(append(key[:0], w[a.start:a.start+a.n]...), ' '), w[b.start:b.start+b.n]...)
		rank, ok := t.ranks[string(key)]
		if !ok {
			return bigram{}, false
		}
		return bigram{key: bpeKey(rank, l), left: int32(l), right: int32(r), size: int32(a.n + b.n)}, true
	})
	for i := 0; i >= 0 && i < len(syms); i = syms[i].next {
		s := syms[i]
		piece := w[s.start : s.start+s.n]
		if id, ok := t.ids[piece]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(piece); j++ {
			if id, ok := t.ids[piece[j:j+1]]; ok {
				out = append(out, id)
			}
		}
	}
	return out
}
