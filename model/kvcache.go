package model

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/go-ggml/ggml/backend"
	"github.com/go-ggml/ggml/ggml"
)

// MaxSequences is the most sequences one model's KV cache holds at once
// (Options.Sequences).
const MaxSequences = 64

// cells is what the KV cache holds, cell by cell, as llama.cpp's unified
// cache keeps it: each cell's position and the sequences it belongs to
// (one token's key and value serve every sequence that shares the
// prefix it is part of), and per sequence the next position and the
// tokens of its unbroken prefix. The tensors (layer.k, layer.v) hold the
// cells' keys and values; a cell's index is its row.
type cells struct {
	pos  []int32  // each cell's position, -1 for a free cell
	seqs []uint64 // each cell's sequences, a bit per sequence; 0 for a free cell
	used int      // cells with a sequence

	next []int     // per sequence: the position of its next token (its highest position plus one; 0 when empty)
	hist [][]int32 // per sequence: its tokens at positions 0, 1, ... as far as it has every one
	cur  []int     // per sequence: the cell after its last one, where its next token goes if free (-1: none)
	resv []bool    // cells given to the tokens of a batch being placed
}

// kvPage is the run of cells a sequence's tokens fill before they go to
// another (where the cache holds several sequences): the cells of one
// sequence stay together, so that a fused attention kernel that works
// through the cache kvPage cells at a time (go-ggml's tiled kernel:
// GOGGML_FA_BK in fattn.c) finds most blocks hidden from most queries and
// skips them. Interleaved, as a batch of one token a sequence would place
// them, every block would hold a cell of every sequence.
var kvPage = 64

func newCells(nCtx, nSeq int) *cells {
	c := &cells{pos: make([]int32, nCtx), seqs: make([]uint64, nCtx), next: make([]int, nSeq), hist: make([][]int32, nSeq),
		cur: make([]int, nSeq), resv: make([]bool, nCtx)}
	for i := range c.pos {
		c.pos[i] = -1
	}
	for i := range c.cur {
		c.cur[i] = -1
	}
	return c
}

// usable reports whether cell i is free and not given to a token of the
// batch being placed.
func (c *cells) usable(i int) bool { return c.seqs[i] == 0 && !c.resv[i] }

// place gives a token of sequence seq a cell, reserved until the batch is
// placed (unreserve): the cell after the sequence's last where it is free
// and in the same page, else the first page of kvPage cells all free,
// else the first free cell. With one sequence that is the next cell: the
// cells are the positions.
func (c *cells) place(seq int) int {
	n := len(c.pos)
	i := c.cur[seq]
	if !(i > 0 && i < n && i%kvPage != 0 && c.usable(i)) {
		i = -1
		for p := 0; p < n && i < 0; p += kvPage {
			if c.usable(p) && !slices.ContainsFunc(c.seqs[p:min(p+kvPage, n)], func(s uint64) bool { return s != 0 }) &&
				!slices.Contains(c.resv[p:min(p+kvPage, n)], true) {
				i = p
			}
		}
		if i < 0 {
			for j := range n {
				if c.usable(j) {
					i = j
					break
				}
			}
		}
	}
	c.resv[i] = true
	c.cur[seq] = i + 1
	return i
}

// unreserve ends the placing of a batch whose tokens have cells.
func (c *cells) unreserve(cells []int) {
	for _, i := range cells {
		c.resv[i] = false
	}
}

// free reports the number of free cells.
func (c *cells) free() int { return len(c.pos) - c.used }

// take gives cell i to sequence seq at position pos.
func (c *cells) take(i, seq int, pos int32) {
	if c.seqs[i] == 0 {
		c.used++
	}
	c.seqs[i] |= 1 << seq
	c.pos[i] = pos
}

// drop takes sequence seq out of cell i, freeing the cell if it was its
// last.
func (c *cells) drop(i, seq int) {
	if c.seqs[i]&(1<<seq) == 0 {
		return
	}
	c.seqs[i] &^= 1 << seq
	if c.seqs[i] == 0 {
		c.pos[i] = -1
		c.used--
	}
}

// top returns one more than the highest cell in use: the cells a graph
// attends to.
func (c *cells) top() int {
	for i := len(c.pos) - 1; i >= 0; i-- {
		if c.seqs[i] != 0 {
			return i + 1
		}
	}
	return 0
}

// recount sets sequence seq's next position from its cells and cuts its
// history to what it still has.
func (c *cells) recount(seq int) {
	next, cur := 0, -1
	for i, s := range c.seqs {
		if s&(1<<seq) != 0 && int(c.pos[i])+1 > next {
			next, cur = int(c.pos[i])+1, i+1
		}
	}
	c.next[seq], c.cur[seq] = next, cur
	if len(c.hist[seq]) > next {
		c.hist[seq] = c.hist[seq][:next]
	}
}

// remove takes sequence seq out of the cells at positions [p0, p1).
func (c *cells) remove(seq int, p0, p1 int) {
	for i, s := range c.seqs {
		if s&(1<<seq) != 0 && int(c.pos[i]) >= p0 && int(c.pos[i]) < p1 {
			c.drop(i, seq)
		}
	}
	if p0 < len(c.hist[seq]) {
		c.hist[seq] = c.hist[seq][:p0]
	}
	c.recount(seq)
}

// copySeq makes sequence dst share src's cells at positions [p0, p1),
// and the tokens of src's history there.
func (c *cells) copySeq(src, dst, p0, p1 int) {
	for i, s := range c.seqs {
		if s&(1<<src) != 0 && int(c.pos[i]) >= p0 && int(c.pos[i]) < p1 {
			c.take(i, dst, c.pos[i])
		}
	}
	if p0 == 0 {
		h := c.hist[src][:min(p1, len(c.hist[src]))]
		c.hist[dst] = append(c.hist[dst][:0], h...)
	}
	c.recount(dst)
}

// visible reports whether a token of sequence seq at position p sees
// cell i: a cell of its sequence at its position or before (any position
// where causal is false), and with window > 0 fewer than window positions
// before.
func (c *cells) visible(i, seq int, p int32, causal bool, window int) bool {
	if c.seqs[i]&(1<<seq) == 0 {
		return false
	}
	q := c.pos[i]
	if causal && q > p {
		return false
	}
	return window <= 0 || int(p-q) < window
}

// checkSeq returns an error for a sequence number outside the cache's.
func (m *Model) checkSeq(what string, seq int) error {
	if seq < 0 || seq >= len(m.kv.next) {
		return fmt.Errorf("%w: model: %s: sequence %d: the cache holds sequences 0 to %d (Options.Sequences)", ggml.ErrInvalid, what, seq, len(m.kv.next)-1)
	}
	return nil
}

// checkRange resolves a range of positions [p0, p1) of a Seq call: p0 < 0
// is 0 and p1 < 0 the end.
func checkRange(what string, p0, p1 int) (int, int, error) {
	if p0 < 0 {
		p0 = 0
	}
	if p1 < 0 {
		p1 = maxDim
	}
	if p0 > p1 {
		return 0, 0, fmt.Errorf("%w: model: %s: positions %d to %d", ggml.ErrInvalid, what, p0, p1)
	}
	return p0, p1, nil
}

// Sequences is the number of sequences the KV cache holds
// (Options.Sequences): sequence numbers are 0 to Sequences()-1.
func (m *Model) Sequences() int { return len(m.kv.next) }

// SeqLen returns the position of sequence seq's next token: one more
// than the highest position it has in the cache, 0 when it has none (or
// seq is no sequence of the cache).
func (m *Model) SeqLen(seq int) int {
	if seq < 0 || seq >= len(m.kv.next) {
		return 0
	}
	return m.kv.next[seq]
}

// CacheUsed returns the number of the KV cache's cells in use: a cell
// that sequences share counts once. ContextSize is their number.
func (m *Model) CacheUsed() int { return m.kv.used }

// SeqRemove takes sequence seq's tokens at positions [p0, p1) out of the
// KV cache (p0 < 0 means 0, p1 < 0 the end), freeing the cells no other
// sequence shares, as llama.cpp's llama_memory_seq_rm does. Its next
// token goes after the highest position it keeps.
func (m *Model) SeqRemove(seq, p0, p1 int) error {
	if err := m.enter("SeqRemove"); err != nil {
		return err
	}
	defer m.leave()
	if err := m.checkSeq("SeqRemove", seq); err != nil {
		return err
	}
	p0, p1, err := checkRange("SeqRemove", p0, p1)
	if err != nil {
		return err
	}
	m.kv.remove(seq, p0, p1)
	return nil
}

// SeqCopy makes sequence dst share sequence src's tokens at positions
// [p0, p1) (p0 < 0 means 0, p1 < 0 the end) without copying them: the
// cells serve both, as llama.cpp's llama_memory_seq_cp does. A prompt's
// prefix evaluated once then serves every sequence that begins with it.
// dst must have no tokens in the range (SeqRemove them first): a
// sequence has one token per position.
func (m *Model) SeqCopy(src, dst, p0, p1 int) error {
	if err := m.enter("SeqCopy"); err != nil {
		return err
	}
	defer m.leave()
	if err := m.checkSeq("SeqCopy", src); err != nil {
		return err
	}
	if err := m.checkSeq("SeqCopy", dst); err != nil {
		return err
	}
	p0, p1, err := checkRange("SeqCopy", p0, p1)
	if err != nil {
		return err
	}
	if src == dst {
		return nil
	}
	for i, s := range m.kv.seqs {
		if s&(1<<dst) != 0 && int(m.kv.pos[i]) >= p0 && int(m.kv.pos[i]) < p1 {
			return fmt.Errorf("%w: model: SeqCopy: sequence %d has a token at position %d, in the range copied", ggml.ErrInvalid, dst, m.kv.pos[i])
		}
	}
	m.kv.copySeq(src, dst, p0, p1)
	return nil
}

// SeqKeep drops every sequence but seq from the KV cache, as llama.cpp's
// llama_memory_seq_keep does.
func (m *Model) SeqKeep(seq int) error {
	if err := m.enter("SeqKeep"); err != nil {
		return err
	}
	defer m.leave()
	if err := m.checkSeq("SeqKeep", seq); err != nil {
		return err
	}
	c := m.kv
	for i, s := range c.seqs {
		if other := s &^ (1 << seq); other != 0 {
			for other != 0 {
				c.drop(i, bits.TrailingZeros64(other))
				other &= other - 1
			}
		}
	}
	for s := range c.next {
		if s != seq {
			c.next[s], c.hist[s], c.cur[s] = 0, c.hist[s][:0], -1
		}
	}
	return nil
}

// SeqShift adds delta to the positions of sequence seq's tokens at
// positions [p0, p1) (p0 < 0 means 0, p1 < 0 the end) and rotates their
// cached keys to match, as llama.cpp's llama_memory_seq_add does: a
// conversation longer than the context drops its oldest tokens with
// SeqRemove, moves the rest down with SeqShift, and goes on. Tokens moved
// below position 0 leave the cache. The positions the tokens move to must
// not hold other tokens of the sequence (a sequence has one token per
// position): ErrInvalid. A cell that other sequences share (SeqCopy) moves
// for them too: a cell has one position, as in llama.cpp. A network whose
// keys carry no RoPE (no Shifter) refuses it with backend.ErrUnsupported.
// If the rotation fails, the tokens it moved leave the cache, and the
// error says so.
func (m *Model) SeqShift(seq, p0, p1, delta int) error {
	if err := m.enter("SeqShift"); err != nil {
		return err
	}
	defer m.leave()
	if err := m.checkSeq("SeqShift", seq); err != nil {
		return err
	}
	p0, p1, err := checkRange("SeqShift", p0, p1)
	if err != nil {
		return err
	}
	sh, ok := m.net.(Shifter)
	if !ok {
		return fmt.Errorf("%w: model: SeqShift: the %s network's keys carry no RoPE to move", backend.ErrUnsupported, m.Config.Arch)
	}
	if delta == 0 || p0 == p1 {
		return nil
	}
	if delta < -maxDim || delta > maxDim {
		return fmt.Errorf("%w: model: SeqShift: delta %d (at most %d either way)", ggml.ErrInvalid, delta, maxDim)
	}
	c := m.kv
	bit := uint64(1) << seq
	inRange := func(i int) bool { return c.seqs[i]&bit != 0 && int(c.pos[i]) >= p0 && int(c.pos[i]) < p1 }
	// The positions the tokens move to: free in the sequence, and within
	// the positions a cache can hold.
	for i, s := range c.seqs {
		if s&bit == 0 {
			continue
		}
		p := int(c.pos[i])
		if inRange(i) {
			if p+delta >= maxDim {
				return fmt.Errorf("%w: model: SeqShift: position %d moved by %d is past %d", ggml.ErrInvalid, p, delta, maxDim-1)
			}
			continue
		}
		if p >= p0+delta && p < p1+delta {
			return fmt.Errorf("%w: model: SeqShift: sequence %d has a token at position %d, where the shift moves another", ggml.ErrInvalid, seq, p)
		}
	}
	// The cells that move and stay: runs of adjacent cells, each rotated
	// by one op per layer.
	var runs [][2]int
	for i := range c.seqs {
		if !inRange(i) || int(c.pos[i])+delta < 0 {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1][1] == i {
			runs[n-1][1] = i + 1
		} else {
			runs = append(runs, [2]int{i, i + 1})
		}
	}
	rotErr := m.rotateKeys(sh, runs, int32(delta))
	// The positions: every sequence that shares a moved cell sees it move
	// (or leave, below 0); their histories end before the first moved
	// position.
	affected := uint64(0)
	low := max(0, min(p0, p0+delta))
	for i := range c.seqs {
		if !inRange(i) {
			continue
		}
		s := c.seqs[i]
		affected |= s
		np := int(c.pos[i]) + delta
		if np < 0 || rotErr != nil {
			for o := s; o != 0; o &= o - 1 {
				c.drop(i, bits.TrailingZeros64(o))
			}
			continue
		}
		c.pos[i] = int32(np)
	}
	for o := affected; o != 0; o &= o - 1 {
		s := bits.TrailingZeros64(o)
		if len(c.hist[s]) > low {
			c.hist[s] = c.hist[s][:low]
		}
		c.recount(s)
	}
	if rotErr != nil {
		return fmt.Errorf("model: SeqShift: rotating the keys (the tokens it moved left the cache): %w", rotErr)
	}
	return nil
}

// rotateKeys rotates the cached keys of the cells of runs ([first, end)
// cell indices) by delta positions in every layer: RoPE with the
// network's parameters (Shifter) at position delta, in place (an f32 or
// f16 cache) or through f32 (a quantized one), as llama.cpp's K-shift
// graph does. A rotation composes with the one the keys have (angles add),
// so the keys become what they would be at their new positions. The
// scheduler's graph of the last batch is dropped for it.
func (m *Model) rotateKeys(sh Shifter, runs [][2]int, delta int32) error {
	if len(runs) == 0 {
		return nil
	}
	if s := m.step; s != nil {
		m.step = nil
		if err := m.sched.Reset(); err != nil {
			return err
		}
		if err := s.ctx.Close(); err != nil {
			return err
		}
	}
	longest := 0
	for _, r := range runs {
		longest = max(longest, r[1]-r[0])
	}
	nodes := len(m.layers)*len(runs)*4 + 8
	ctx, err := ggml.NewContext(ggml.ContextParams{MaxTensors: nodes, NoAlloc: true, Graph: true, GraphSize: max(nodes, ggml.DefaultGraphSize)})
	if err != nil {
		return err
	}
	defer ctx.Close()
	pos := ctx.NewTensor(ggml.TypeI32, int64(longest)).SetName("inp_k_shift").SetInput()
	c := m.Config
	hd, nhkv := int64(c.HeadDim), int64(c.HeadCountKV)
	var outs []*ggml.Tensor
	for il := range m.layers {
		l := &m.layers[il]
		rp := sh.ShiftRope(il)
		// The rotation alone: ggml scales sin and cos by AttnFactor, and
		// by 1 + 0.1·ln(1/FreqScale) more with YaRN (ExtFactor), which
		// the keys have had once already.
		rp.AttnFactor = 1
		if rp.ExtFactor != 0 && rp.FreqScale > 0 {
			rp.AttnFactor = float32(1 / (1 + 0.1*math.Log(1/float64(rp.FreqScale))))
		}
		for _, r := range runs {
			n := int64(r[1] - r[0])
			view := ctx.View3D(l.k, hd, nhkv, n, m.kvHead, m.kvRow, uint64(r[0])*m.kvRow)
			p := ctx.View1D(pos, n, 0)
			if m.quantCache() {
				outs = append(outs, ctx.Cpy(ctx.Rope(ctx.Cast(view, ggml.TypeF32), p, rp), view))
			} else {
				outs = append(outs, ctx.RopeInPlace(view, p, rp))
			}
		}
	}
	g, err := ctx.BuildGraph(outs...)
	if err != nil {
		return err
	}
	defer m.sched.Reset() // the next batch allocates its own graph
	if err := m.sched.AllocGraph(g); err != nil {
		return err
	}
	shift := make([]int32, longest)
	for i := range shift {
		shift[i] = delta
	}
	if err := ggml.SetData(pos, shift); err != nil {
		return err
	}
	return m.sched.Compute(context.Background(), g)
}
