package tokenizer

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// A WordPiece vocabulary for the tests, made from War and Peace as BERT's
// are from their corpus and written as llama.cpp's converter writes them:
// a token that starts a word has "▁" in front ("▁the"), a continuation
// has no "##" ("ing" for "##ing"), control tokens are as they are.
//
// It holds the special tokens, single characters (ASCII letters, digits,
// punctuation and symbols, a few accented, Greek, Cyrillic and CJK ones),
// each letter and digit as a continuation, the book's most frequent words
// whole, frequent word beginnings, and frequent word endings as
// continuations, so that most words of the book are one token, many are
// split, and words with characters outside it are [UNK].

// bertWords returns the words of War and Peace (runs of letters) by
// frequency, the most frequent first, lowered if lower.
func bertWords(lower bool) ([]string, error) {
	dir, err := ollamaDir()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer", "testdata", "war-and-peace.txt"))
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	for _, w := range strings.FieldsFunc(string(b), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if lower {
			w = strings.ToLower(w)
		}
		count[w]++
	}
	words := make([]string, 0, len(count))
	for w := range count {
		words = append(words, w)
	}
	slices.SortFunc(words, func(a, b string) int {
		return cmp.Or(count[b]-count[a], strings.Compare(a, b))
	})
	return words, nil
}

// makeBertVocab makes the vocabulary: lower says whether it is uncased
// (its words lowered, as bert-base-uncased's), bertLayout whether the
// special tokens have BERT's IDs ([PAD] 0, [unused0..98], [UNK] 100,
// [CLS] 101, [SEP] 102, [MASK] 103: llama.cpp's defaults, no keys
// needed) or the first five IDs.
func makeBertVocab(lower, bertLayout bool) (Vocab, error) {
	words, err := bertWords(lower)
	if err != nil {
		return Vocab{}, err
	}
	v := Vocab{Model: "bert", BOS: -1, EOS: -1, UNK: -1, EOT: -1, EOM: -1, SEP: -1, PAD: -1, MASK: -1}
	if !lower {
		v.Lowercase = &lower // and so StripAccents
	}
	seen := map[string]bool{}
	add := func(s string, typ TokenType) int32 {
		if seen[s] || s == "" {
			return -1
		}
		seen[s] = true
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, typ)
		return int32(len(v.Tokens) - 1)
	}
	special := func(s string) int32 { return add(s, TypeControl) }
	if bertLayout {
		v.PAD = special("[PAD]")
		for i := range 99 {
			add(fmt.Sprintf("▁[unused%d]", i), TypeNormal)
		}
		v.UNK, v.BOS, v.SEP, v.MASK = special("[UNK]"), special("[CLS]"), special("[SEP]"), special("[MASK]")
	} else {
		v.PAD, v.UNK, v.BOS, v.SEP, v.MASK = special("[PAD]"), special("[UNK]"), special("[CLS]"), special("[SEP]"), special("[MASK]")
	}
	start := func(s string) { add("▁"+s, TypeNormal) }
	cont := func(s string) { add(s, TypeNormal) }
	for c := rune('!'); c <= '~'; c++ {
		if lower && c >= 'A' && c <= 'Z' {
			continue
		}
		start(string(c))
		if unicode.IsLetter(c) || unicode.IsDigit(c) {
			cont(string(c))
		}
	}
	for _, s := range []string{"é", "è", "à", "ç", "ü", "ö", "ñ", "ß", "α", "β", "ω", "ж", "д", "я", "中", "文", "日", "本", "你", "好", "世", "界", "語", "€", "£", "°", "—", "…", "«", "»"} {
		start(s)
		cont(s)
	}
	for _, w := range words[:min(3000, len(words))] {
		start(w)
	}
	// Beginnings of the less frequent words, and their endings as
	// continuations: the most frequent of each.
	begins, ends := map[string]int{}, map[string]int{}
	for _, w := range words[min(3000, len(words)):] {
		r := []rune(w)
		for n := 2; n <= 5 && n < len(r); n++ {
			begins[string(r[:n])]++
			ends[string(r[len(r)-n:])]++
		}
	}
	for i, m := range []map[string]int{begins, ends} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int { return cmp.Or(m[b]-m[a], strings.Compare(a, b)) })
		for _, k := range keys[:min(700, len(keys))] {
			if i == 0 {
				start(k)
			} else {
				cont(k)
			}
		}
	}
	return v, nil
}

var (
	bertVocab      = sync.OnceValues(func() (Vocab, error) { return makeBertVocab(true, true) })
	bertCasedVocab = sync.OnceValues(func() (Vocab, error) { return makeBertVocab(false, false) })
)
