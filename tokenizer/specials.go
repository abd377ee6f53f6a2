package tokenizer

import (
	"slices"
	"strings"
)

// automaton finds the special tokens that start at each place of a text:
// an Aho–Corasick automaton of their texts written backwards, run over the
// text from its end. After the bytes text[p:q] (read from q-1 down to p),
// its state is the longest beginning of text[p:q] that ends some special
// token, and longest[m] of that state is the longest special token that
// text[p:q] begins with (m = 0: any; m = 1: no control or unknown token,
// the ones a text without ParseSpecial may hold). One run is linear in the
// bytes read, however the tokens nest or share their beginnings.
//
// The nodes are in breadth-first order, the children of a node one after
// the other; a node is 19 bytes.
type automaton struct {
	first   []int32 // the node's first child
	kids    []uint16
	label   []byte     // the byte that leads to the node
	fail    []int32    // the node of the longest proper suffix (of the reversed text) that is a node
	longest [2][]int32 // the order (in Tokenizer.special) of the longest token that ends here or on the fail chain; -1: none
	root    [256]int32 // the root's children by byte; 0: none
}

// newAutomaton makes the automaton of the texts of tokens ids (each
// taken once), in their order; plain says whether a token counts without
// ParseSpecial.
func newAutomaton(texts []string, ids []int32, plain func(int32) bool) automaton {
	// The texts backwards, sorted: each node is a run of them that share
	// its bytes.
	type rev struct {
		s     string
		order int32
	}
	revs := make([]rev, len(ids))
	for o, id := range ids {
		b := []byte(texts[id])
		slices.Reverse(b)
		revs[o] = rev{string(b), int32(o)}
	}
	slices.SortFunc(revs, func(a, b rev) int { return strings.Compare(a.s, b.s) })

	a := automaton{}
	var lo, hi, depth []int32 // while building: each node's run of revs, and its depth
	add := func(label byte, l, h, d int32) {
		a.first = append(a.first, 0)
		a.kids = append(a.kids, 0)
		a.label = append(a.label, label)
		a.fail = append(a.fail, 0)
		a.longest[0] = append(a.longest[0], -1)
		a.longest[1] = append(a.longest[1], -1)
		lo, hi, depth = append(lo, l), append(hi, h), append(depth, d)
	}
	add(0, 0, int32(len(revs)), 0)
	for n := int32(0); n < int32(len(lo)); n++ {
		d := depth[n]
		i := lo[n]
		// The text that ends at this node comes first in its run.
		if i < hi[n] && int32(len(revs[i].s)) == d {
			o := revs[i].order
			a.longest[0][n] = o
			if plain(ids[o]) {
				a.longest[1][n] = o
			}
			i++
		}
		// Where the tokens ending here do not count, the longest that
		// ends on the fail chain does (the fail node has a smaller depth:
		// it is done).
		if n > 0 {
			f := a.fail[n]
			for m := range a.longest {
				if a.longest[m][n] < 0 {
					a.longest[m][n] = a.longest[m][f]
				}
			}
		}
		a.first[n] = int32(len(lo))
		for i < hi[n] {
			c := revs[i].s[d]
			j := i + 1
			for j < hi[n] && revs[j].s[d] == c {
				j++
			}
			child := int32(len(lo))
			add(c, i, j, d+1)
			a.kids[n]++
			// The child's fail node: the fail chain of n, down to the first
			// node with a child by c. Those nodes are shallower than n,
			// so their children are made already.
			if n == 0 {
				a.root[c] = child
			} else {
				f := a.fail[n]
				for {
					if k := a.child(f, c); k > 0 {
						a.fail[child] = k
						break
					}
					if f == 0 {
						break
					}
					f = a.fail[f]
				}
			}
			i = j
		}
	}
	return a
}

// child returns the child of node n by byte c, or 0 (the root is no
// one's child).
func (a *automaton) child(n int32, c byte) int32 {
	if n == 0 {
		return a.root[c]
	}
	lo, hi := a.first[n], a.first[n]+int32(a.kids[n])
	for lo < hi {
		m := int32(uint32(lo+hi) >> 1)
		if a.label[m] < c {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < a.first[n]+int32(a.kids[n]) && a.label[lo] == c {
		return lo
	}
	return 0
}

// step returns the state after state by byte c.
func (a *automaton) step(state int32, c byte) int32 {
	for {
		if k := a.child(state, c); k > 0 {
			return k
		}
		if state == 0 {
			return 0
		}
		state = a.fail[state]
	}
}
