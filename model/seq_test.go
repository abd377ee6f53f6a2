package model_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/internal/testutil"
	. "github.com/go-ggml/ggml/model"
	. "github.com/go-ggml/ggml/model/modeltest"
)

// aloneRun is one request run by itself: its greedy tokens after its
// prompt and the logits each was chosen from.
type aloneRun struct {
	prompt []int32
	tokens []int32
	logits [][]float32
}

// runAlone generates n tokens greedily after prompt in sequence 0 of m,
// from an empty cache.
func runAlone(t *testing.T, m *Model, prompt []int32, n int) aloneRun {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, m.Rewind(0))
	r := aloneRun{prompt: prompt}
	logits, err := m.Eval(ctx, prompt, false)
	require.NoError(t, err)
	for i := range n {
		id := argmaxOf(logits)
		r.tokens = append(r.tokens, id)
		r.logits = append(r.logits, slices.Clone(logits))
		if i+1 < n {
			logits, err = m.Eval(ctx, []int32{id}, false)
			require.NoError(t, err)
		}
	}
	return r
}

func argmaxOf(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// gap is the difference between the largest and the second largest of v.
func gap(v []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, x := range v {
		switch y := float64(x); {
		case y > a:
			a, b = y, a
		case y > b:
			b = y
		}
	}
	return a - b
}

// f16Bound bounds the largest difference between a sequence's logits in
// a batch of many and alone, relative to their root mean square, with an
// f16 cache: go-ggml's fused kernel keeps its sums in f32 (1.7e-3 seen
// over 15 runs), the provider's and upstream's sum V in f16 (9.9e-3
// seen), and random weights make a rounding that falls the other way
// grow from layer to layer.
var f16Bound = func() float64 {
	if ggml.OwnCPUKernels() {
		return 5e-3
	}
	return 3e-2
}()

// rmsOf is the root mean square of v.
func rmsOf(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s / float64(len(v)))
}

// relDiff is the largest difference between got and want relative to the
// root mean square of want.
func relDiff(got, want []float32) float64 {
	rms, worst := 0.0, 0.0
	for i, w := range want {
		rms += float64(w) * float64(w)
		worst = max(worst, math.Abs(float64(got[i])-float64(w)))
	}
	return worst / math.Sqrt(rms/float64(len(want)))
}

// request is one request of the simulated server: its alone run, the
// step it arrives at, the step it is cancelled at (-1: never), and once
// running its sequence and progress.
type request struct {
	alone          aloneRun
	arrive, cancel int
	seq            int
	fed            int // prompt tokens decoded
	got            []int32
	parted         bool // its tokens parted from the alone run's at a near-tie
	done           bool
}

// TestDecodeSequencesMatchAlone: requests served together, as a
// continuous-batching server serves them (each step a Decode of the
// waiting prompts' chunks and one token of every generating sequence,
// requests arriving between steps and some cancelled mid-way, their cells
// then reused), generate each the tokens it generates alone, and their
// logits agree with the alone run's within f16 rounding (f16Bound; an f16
// cache, llama.cpp's default, whose products round the queries and the
// attention weights to f16, and whose fused kernel in the provider's code
// sums V in f16), tokens parting only at a near-tie: up to 1, 2, 8 and 32
// sequences at once, prompts of 1 to 40 tokens in random chunks,
// the sequences' tokens interleaved in random order, batches cut in
// computes of 16 tokens; with attention fused and by products (its queries
// in chunks of 4).
func TestDecodeSequencesMatchAlone(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tinyFile(t, ggml.TypeF32, false, rng.Uint64())
	vocab := Presets["tiny"].VocabSize
	for _, tc := range []struct {
		name     string
		fa       FlashAttnMode
		products bool
	}{{"fused", FlashAttnOn, false}, {"products", FlashAttnOn, true}, {"no flash attention", FlashAttnOff, true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.products {
				defer func(c, f int) { *AttnChunk, *FusedMaxBatch = c, f }(*AttnChunk, *FusedMaxBatch)
				*AttnChunk, *FusedMaxBatch = 4, 0
			}
			alone := LoadModel(t, path, Options{ContextSize: 64, FlashAttn: tc.fa, CacheType: CacheF16})
			for _, width := range []int{1, 2, 8, 32} {
				m := LoadModel(t, path, Options{ContextSize: 1024, BatchSize: 16, Sequences: width, FlashAttn: tc.fa, CacheType: CacheF16})
				var reqs []*request
				for i := range 2 * width {
					r := &request{
						alone:  runAlone(t, alone, RandomTokens(rng, 1+rng.IntN(40), vocab), 1+rng.IntN(12)),
						arrive: rng.IntN(2*width + 1), cancel: -1, seq: -1,
					}
					if i%5 == 4 {
						r.cancel = r.arrive + 1 + rng.IntN(8)
					}
					reqs = append(reqs, r)
				}
				serve(t, m, rng, reqs, width)
				for i, r := range reqs {
					if r.cancel < 0 && !r.parted {
						assert.Equal(t, r.alone.tokens, r.got, "request %d", i)
					}
				}
				assert.Zero(t, m.CacheUsed(), "every sequence removed")
			}
		})
	}
}

// serve runs reqs through m, width sequences at a time, and checks each
// step's logits against the alone runs'.
func serve(t *testing.T, m *Model, rng *rand.Rand, reqs []*request, width int) {
	t.Helper()
	ctx := context.Background()
	free := make([]int, width)
	for i := range free {
		free[i] = i
	}
	for step := 0; ; step++ {
		// Cancellations and arrivals.
		var running []*request
		left := 0
		for _, r := range reqs {
			if r.done {
				continue
			}
			left++
			if r.seq >= 0 && step == r.cancel {
				require.NoError(t, m.SeqRemove(r.seq, -1, -1))
				free, r.seq, r.done = append(free, r.seq), -1, true
				continue
			}
			if r.seq < 0 && step >= r.arrive && len(free) > 0 {
				r.seq, free = free[0], free[1:]
				require.Zero(t, m.SeqLen(r.seq))
			}
			if r.seq >= 0 {
				running = append(running, r)
			}
		}
		if left == 0 {
			return
		}
		if len(running) == 0 {
			continue
		}
		// Each running request's tokens of this step, interleaved in a
		// random order that keeps each one's own.
		var parts [][]Token
		var owners []*request
		for _, r := range running {
			var toks []Token
			if p := r.alone.prompt; r.fed < len(p) {
				k := min(len(p)-r.fed, 1+rng.IntN(12))
				for j := range k {
					toks = append(toks, Token{ID: p[r.fed+j], Seq: r.seq, Logits: r.fed+j == len(p)-1})
				}
				r.fed += k
			} else {
				toks = []Token{{ID: r.got[len(r.got)-1], Seq: r.seq, Logits: true}}
			}
			parts = append(parts, toks)
			owners = append(owners, r)
		}
		var batch []Token
		var outs []*request
		for len(parts) > 0 {
			i := rng.IntN(len(parts))
			tok := parts[i][0]
			batch = append(batch, tok)
			if tok.Logits {
				outs = append(outs, owners[i])
			}
			if parts[i] = parts[i][1:]; len(parts[i]) == 0 {
				parts, owners = slices.Delete(parts, i, i+1), slices.Delete(owners, i, i+1)
			}
		}
		logits, err := m.Decode(ctx, batch)
		require.NoError(t, err, "step %d", step)
		vocab := m.Config.VocabSize
		require.Len(t, logits, len(outs)*vocab)
		for i, r := range outs {
			l := logits[i*vocab : (i+1)*vocab]
			k := len(r.got)
			if !r.parted {
				want := r.alone.logits[k]
				require.Less(t, relDiff(l, want), f16Bound, "step %d, sequence %d, token %d", step, r.seq, k)
				id := argmaxOf(l)
				if id != r.alone.tokens[k] {
					require.Less(t, gap(want), 2*f16Bound*rmsOf(want), "step %d, sequence %d, token %d: %d, alone %d", step, r.seq, k, id, r.alone.tokens[k])
					r.parted = true
				}
			}
			r.got = append(r.got, r.alone.tokens[k]) // go on as the alone run did
			if len(r.got) == len(r.alone.tokens) {
				require.NoError(t, m.SeqRemove(r.seq, -1, -1))
				free, r.seq, r.done = append(free, r.seq), -1, true
			}
		}
	}
}

// TestSeqCopySharesPrefix: a system prompt evaluated once in sequence 0
// and shared (SeqCopy) with seven more sequences, each going on with its
// own question, gives each the logits of the whole run alone, and the
// shared prefix takes its cells once.
func TestSeqCopySharesPrefix(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tinyFile(t, ggml.TypeF32, false, rng.Uint64())
	vocab := Presets["tiny"].VocabSize
	alone := LoadModel(t, path, Options{ContextSize: 128})
	m := LoadModel(t, path, Options{ContextSize: 128, Sequences: 8})
	ctx := context.Background()
	system := RandomTokens(rng, 20, vocab)
	_, err := m.Eval(ctx, system, false)
	require.NoError(t, err)
	var batch []Token
	var wants [][]float32
	used := len(system)
	for s := 1; s < 8; s++ {
		require.NoError(t, m.SeqCopy(0, s, -1, -1))
		require.Equal(t, len(system), m.SeqLen(s))
		q := RandomTokens(rng, 1+rng.IntN(6), vocab)
		for i, id := range q {
			batch = append(batch, Token{ID: id, Seq: s, Logits: i == len(q)-1})
		}
		used += len(q)
		want, err := alone.Eval(ctx, append(slices.Clone(system), q...), false)
		require.NoError(t, err)
		wants = append(wants, slices.Clone(want))
		require.NoError(t, alone.Rewind(0))
	}
	require.Equal(t, len(system), m.CacheUsed(), "the prefix's cells are shared")
	logits, err := m.Decode(ctx, batch)
	require.NoError(t, err)
	require.Equal(t, used, m.CacheUsed())
	for i, want := range wants {
		assert.Less(t, relDiff(logits[i*vocab:(i+1)*vocab], want), 1e-4, "sequence %d", i+1)
	}
	// Sequence 0 gone, the prefix stays for the others; SeqKeep(3)
	// leaves the prefix and sequence 3's question.
	require.NoError(t, m.SeqRemove(0, -1, -1))
	assert.Equal(t, used, m.CacheUsed())
	assert.Zero(t, m.Pos())
	n3 := m.SeqLen(3)
	require.NoError(t, m.SeqKeep(3))
	assert.Equal(t, n3, m.CacheUsed())
	for s := range 8 {
		if s != 3 {
			assert.Zero(t, m.SeqLen(s), "sequence %d", s)
		}
	}
}

// TestSeqRemoveMiddle: after a range of positions is removed from the
// middle of a sequence, the later tokens keep their positions, the next
// token goes after the highest, and none sees the removed ones: as the
// float64 reference with the same removal (Reference.Remove), several
// times over, and in a sequence of its own where another shares the
// cache.
func TestSeqRemoveMiddle(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tinyFile(t, ggml.TypeF32, false, rng.Uint64())
	vocab := Presets["tiny"].VocabSize
	m := LoadModel(t, path, Options{ContextSize: 96, BatchSize: 8, Sequences: 2, CacheType: CacheF32})
	ref := OpenReference(t, path)
	ctx := context.Background()
	// Sequence 0 is the noise: tokens in cells between sequence 1's.
	_, err := m.Decode(ctx, tokensOf(RandomTokens(rng, 7, vocab), 0, false))
	require.NoError(t, err)
	next, removed := 0, map[int]bool{}
	for round := range 4 {
		ids := RandomTokens(rng, 6+rng.IntN(10), vocab)
		got, err := m.Decode(ctx, tokensOf(ids, 1, true))
		require.NoError(t, err)
		var want []float64
		for _, id := range ids {
			want = ref.Next(id)
		}
		next += len(ids)
		require.Equal(t, next, m.SeqLen(1))
		assert.LessOrEqual(t, LogitError(got, want), Tolerance[ggml.TypeF32].Worst, "round %d", round)
		_, err = m.Decode(ctx, tokensOf(RandomTokens(rng, 3, vocab), 0, false))
		require.NoError(t, err)
		// A range from the middle (not the last token), the next
		// position stays.
		p0 := rng.IntN(next - 1)
		p1 := p0 + 1 + rng.IntN(next-1-p0)
		freed := 0
		for p := p0; p < p1; p++ {
			if !removed[p] {
				freed++
			}
			removed[p] = true
		}
		used := m.CacheUsed()
		require.NoError(t, m.SeqRemove(1, p0, p1))
		ref.Remove(p0, p1)
		require.Equal(t, next, m.SeqLen(1))
		require.Equal(t, used-freed, m.CacheUsed())
	}
}

// tokensOf is ids as a batch of sequence seq, with the last token's
// logits where last is set.
func tokensOf(ids []int32, seq int, last bool) []Token {
	out := make([]Token, len(ids))
	for i, id := range ids {
		out[i] = Token{ID: id, Seq: seq, Logits: last && i == len(ids)-1}
	}
	return out
}

// TestDecodeErrors: a sequence outside the cache's, a token outside the
// vocabulary, more tokens than free cells and a sequence past the
// context are errors of their kinds, and leave the cache as it was; the
// Seq calls refuse bad sequences and ranges and copying into a sequence
// that has tokens.
func TestDecodeErrors(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tinyFile(t, ggml.TypeF32, false, rng.Uint64())
	m := LoadModel(t, path, Options{ContextSize: 16, BatchSize: 4, Sequences: 3})
	ctx := context.Background()
	_, err := m.Decode(ctx, tokensOf([]int32{1, 2, 3}, 1, true))
	require.NoError(t, err)
	state := func() string {
		return fmt.Sprint(m.CacheUsed(), m.SeqLen(0), m.SeqLen(1), m.SeqLen(2))
	}
	before := state()
	for _, tc := range []struct {
		batch []Token
		err   error
	}{
		{nil, ggml.ErrInvalid},
		{[]Token{{ID: 1, Seq: 3}}, ggml.ErrInvalid},
		{[]Token{{ID: 1, Seq: -1}}, ggml.ErrInvalid},
		{[]Token{{ID: 1}, {ID: int32(m.Config.VocabSize), Seq: 2}}, ErrToken},
		{tokensOf(make([]int32, 14), 2, true), ErrContextFull},
		// 4 + 4 + 4 tokens in three computes, the last refused by its
		// token: the first two computes' cells are given back.
		{append(tokensOf(make([]int32, 8), 0, true), Token{ID: -1, Seq: 2}), ErrToken},
	} {
		_, err := m.Decode(ctx, tc.batch)
		require.ErrorIs(t, err, tc.err, "%v", tc.batch)
		require.Equal(t, before, state())
	}
	// A compute that fails (cancelled) gives back the cells of the whole
	// batch.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = m.Decode(cctx, tokensOf(make([]int32, 8), 0, true))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, before, state())
	// Positions past the context in one sequence: sequence 2 at
	// position 10 with one cell, 7 tokens, 12 free cells.
	_, err = m.Decode(ctx, tokensOf(make([]int32, 10), 2, true))
	require.NoError(t, err)
	require.NoError(t, m.SeqRemove(2, 0, 9))
	before = state()
	require.Equal(t, "4 0 3 10", before)
	_, err = m.Decode(ctx, tokensOf(make([]int32, 7), 2, true))
	require.ErrorIs(t, err, ErrContextFull)
	require.Equal(t, before, state())
	require.NoError(t, m.SeqRemove(2, -1, -1))

	require.ErrorIs(t, m.SeqRemove(3, 0, 1), ggml.ErrInvalid)
	require.ErrorIs(t, m.SeqRemove(0, 5, 2), ggml.ErrInvalid)
	require.ErrorIs(t, m.SeqCopy(1, 5, -1, -1), ggml.ErrInvalid)
	require.ErrorIs(t, m.SeqKeep(-1), ggml.ErrInvalid)
	_, err = m.Decode(ctx, tokensOf([]int32{4}, 2, true))
	require.NoError(t, err)
	require.ErrorIs(t, m.SeqCopy(1, 2, -1, -1), ggml.ErrInvalid, "sequence 2 has a token at position 0")
	require.NoError(t, m.SeqCopy(1, 2, 1, -1), "sequence 2 has no token at positions 1 on")
	require.Equal(t, 3, m.SeqLen(2))
	require.NoError(t, m.SeqCopy(1, 1, -1, -1), "a sequence onto itself: nothing to do")
	require.NoError(t, m.Close())
	require.ErrorIs(t, m.SeqRemove(0, -1, -1), ggml.ErrClosed)
	_, err = m.Decode(ctx, tokensOf([]int32{1}, 0, true))
	require.ErrorIs(t, err, ggml.ErrClosed)

	_, err = Load(ctx, path, Options{Sequences: MaxSequences + 1})
	require.ErrorIs(t, err, ggml.ErrInvalid)
	_, err = Load(ctx, path, Options{Sequences: -1})
	require.ErrorIs(t, err, ggml.ErrInvalid)
}

// TestQuantizedCache: a q8_0 or q4_0 KV cache takes 53 % or 28 % of
// f16's memory; one sequence's logits are the float64 reference's that
// rounds keys and values to the type (and queries to q8_0 where the
// provider's kernel runs, not go-ggml's tiled one), as the CPU's fused
// attention does (at float32 precision for the best token: 8e-7 of the
// logits' root mean square at the median; a rounding that falls the other
// way reached 0.073, which Tolerance allows q8_0 weights), and many
// sequences decoded together stay within the bound of the type's rounding
// from the f16 cache's logits. On this random model, whose attention
// weights are sharper than a trained model's, that bound is large: over
// 25 seeds with each kernel the largest difference was 0.079 of the
// logits' rms for q8_0 and 1.23 for q4_0. Without flash attention, or
// with heads its blocks do not divide, it is refused.
func TestQuantizedCache(t *testing.T) {
	rng := testutil.NewRNG(t)
	c := Presets["tiny"]
	c.HeadCount, c.HeadCountKV, c.HeadDim = 4, 2, 32 // heads of one q8_0 block
	path := filepath.Join(t.TempDir(), "heads32.gguf")
	require.NoError(t, WriteRandom(path, RandomModel{Config: c, Type: ggml.TypeF32, Seed: rng.Uint64()}))
	vocab := c.VocabSize
	opts := Options{ContextSize: 256, BatchSize: 32, Sequences: 4}
	f16 := LoadModel(t, path, Options{ContextSize: 256, BatchSize: 32, Sequences: 4, CacheType: CacheF16})
	kv16 := f16.Memory()[0].KVCache
	ctx := context.Background()
	var batches [][]Token
	for range 3 {
		var b []Token
		for s := range 4 {
			b = append(b, tokensOf(RandomTokens(rng, 1+rng.IntN(20), vocab), s, true)...)
		}
		batches = append(batches, b)
	}
	for _, tc := range []struct {
		ct    CacheType
		ratio float64
		bound float64
	}{{CacheQ8_0, 34.0 / 64, 0.2}, {CacheQ4_0, 18.0 / 64, 2.5}} {
		o := opts
		o.CacheType = tc.ct
		m := LoadModel(t, path, o)
		assert.InDelta(t, tc.ratio, float64(m.Memory()[0].KVCache)/float64(kv16), 0.01, "%v: the cache's memory against f16's", tc.ct)
		worst := 0.0
		for _, b := range batches {
			want, err := f16.Decode(ctx, b)
			require.NoError(t, err)
			want = slices.Clone(want)
			got, err := m.Decode(ctx, b)
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := 0; i < len(want); i += vocab {
				worst = max(worst, relDiff(got[i:i+vocab], want[i:i+vocab]))
			}
		}
		for s := range 4 {
			require.NoError(t, f16.SeqRemove(s, -1, -1))
		}
		t.Logf("%v: largest difference from the f16 cache's logits %.3g of their rms", tc.ct, worst)
		assert.Less(t, worst, tc.bound, "%v", tc.ct)
		assert.Greater(t, worst, 0.0, "%v: the cache rounds", tc.ct)

		// One sequence against the float64 reference that rounds keys,
		// values and queries as the CPU's fused attention does.
		one := LoadModel(t, path, Options{ContextSize: 64, BatchSize: 8, CacheType: tc.ct})
		ref := OpenReference(t, path)
		ref.QuantCache = map[CacheType]ggml.Type{CacheQ8_0: ggml.TypeQ8_0, CacheQ4_0: ggml.TypeQ4_0}[tc.ct]
		ref.F32Queries = ggml.OwnCPUKernels()
		CheckAgainstReference(t, one, ref, RandomTokens(rng, 40, vocab), 20, Tol{Best: 1e-5, Worst: 0.15})

		o.FlashAttn = FlashAttnOff
		_, err := Load(ctx, path, o)
		require.ErrorIs(t, err, ggml.ErrInvalid)
	}
	odd := tinyFile(t, ggml.TypeF32, false, rng.Uint64()) // heads of 16 values: no whole q8_0 block
	_, err := Load(ctx, odd, Options{CacheType: CacheQ8_0})
	require.ErrorIs(t, err, ggml.ErrType)
	_, err = Load(ctx, path, Options{CacheType: CacheType(99)})
	require.ErrorIs(t, err, ggml.ErrType)
	for _, ct := range []CacheType{CacheF16, CacheF32, CacheQ8_0, CacheQ4_0} {
		got, err := ParseCacheType(ct.String())
		require.NoError(t, err)
		require.Equal(t, ct, got)
	}
	_, err = ParseCacheType("q4_K")
	require.ErrorIs(t, err, ggml.ErrType)
	require.Equal(t, "CacheType(99)", CacheType(99).String())
}

// SeqShift moves a sequence's tokens and rotates their keys: after its
// oldest tokens are dropped and the rest moved to position 0 (and later
// moved up), the model goes on as the float64 reference does after the
// same removal and shift. Another sequence's tokens sit in the
// cells before, so the moved cells start past cell 0. f32 and f16 caches,
// attention fused and as products; a q8_0 cache (rotated through f32)
// against the reference that rounds as the kernels do.
func TestSeqShift(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tinyFile(t, ggml.TypeF32, false, rng.Uint64())
	vocab := Presets["tiny"].VocabSize
	for _, tc := range []struct {
		ct  CacheType
		fa  FlashAttnMode
		tol Tol
	}{
		{CacheF32, FlashAttnOn, Tolerance[ggml.TypeF32]},
		{CacheF32, FlashAttnOff, Tolerance[ggml.TypeF32]},
		// The provider's and upstream's fused kernels sum V in f16
		// (5e-3 seen on x86-64-v3), go-ggml's in f32 (5e-5).
		{CacheF16, FlashAttnOn, Tol{Best: 1, Worst: f16Bound}},
	} {
		t.Run(fmt.Sprintf("%v/fused=%v", tc.ct, tc.fa == FlashAttnOn), func(t *testing.T) {
			m := LoadModel(t, path, Options{ContextSize: 256, BatchSize: 32, Sequences: 2, CacheType: tc.ct, FlashAttn: tc.fa})
			_, err := m.Decode(context.Background(), tokensOf(RandomTokens(rng, 9, vocab), 1, false))
			require.NoError(t, err)
			ref := OpenReference(t, path)
			ref.RoundCacheToHalf = tc.ct == CacheF16
			CheckSeqShift(t, m, ref, rng, tc.tol)
			require.Equal(t, 9, m.SeqLen(1), "the other sequence is where it was")
		})
	}
	t.Run("yarn", func(t *testing.T) {
		// YaRN scales sin and cos: the keys are scaled once, at their
		// store, and the shift's rotation must not scale them again.
		c := Presets["tiny"]
		c.RopeScaling, c.RopeFreqScale, c.RopeCtxOrig, c.RopeExtFactor, c.RopeAttnFactor = "yarn", 0.25, 64, 1, 1.25
		ypath := filepath.Join(t.TempDir(), "yarn.gguf")
		require.NoError(t, WriteRandom(ypath, RandomModel{Config: c, Type: ggml.TypeF32, Seed: rng.Uint64()}))
		m := LoadModel(t, ypath, Options{ContextSize: 128, BatchSize: 32})
		CheckSeqShift(t, m, OpenReference(t, ypath), rng, Tolerance[ggml.TypeF32])
	})
	t.Run("q8_0", func(t *testing.T) {
		c := Presets["tiny"]
		c.HeadCount, c.HeadCountKV, c.HeadDim = 4, 2, 32 // heads of one q8_0 block
		qpath := filepath.Join(t.TempDir(), "heads32.gguf")
		require.NoError(t, WriteRandom(qpath, RandomModel{Config: c, Type: ggml.TypeF32, Seed: rng.Uint64()}))
		m := LoadModel(t, qpath, Options{ContextSize: 128, BatchSize: 32, CacheType: CacheQ8_0})
		ref := OpenReference(t, qpath)
		ref.QuantCache, ref.F32Queries = ggml.TypeQ8_0, ggml.OwnCPUKernels()
		CheckSeqShift(t, m, ref, rng, Tol{Best: 1, Worst: 0.05})
	})
}

// SeqShift's refusals and edges: a shift onto the sequence's own tokens
// is ErrInvalid and changes nothing; tokens moved below 0 leave the cache;
// a bad sequence is ErrInvalid; a shift by 0 does nothing.
func TestSeqShiftEdges(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := tinyFile(t, ggml.TypeF32, false, rng.Uint64())
	m := LoadModel(t, path, Options{ContextSize: 64, BatchSize: 16})
	_, err := m.Decode(context.Background(), tokensOf(RandomTokens(rng, 10, Presets["tiny"].VocabSize), 0, true))
	require.NoError(t, err)
	require.ErrorIs(t, m.SeqShift(0, 5, -1, -2), ggml.ErrInvalid) // onto positions 3 and 4
	require.ErrorIs(t, m.SeqShift(0, 0, 5, 3), ggml.ErrInvalid)   // onto 5 to 7
	require.Equal(t, 10, m.SeqLen(0))
	require.Equal(t, 10, m.CacheUsed())
	require.ErrorIs(t, m.SeqShift(3, 0, -1, 1), ggml.ErrInvalid)
	require.ErrorIs(t, m.SeqShift(0, 4, 2, 1), ggml.ErrInvalid)
	require.NoError(t, m.SeqShift(0, 0, -1, 0))
	require.NoError(t, m.SeqShift(0, 0, -1, -3)) // positions 0 to 2 leave
	require.Equal(t, 7, m.SeqLen(0))
	require.Equal(t, 7, m.CacheUsed())
	require.NoError(t, m.SeqShift(0, 0, -1, 20))
	require.Equal(t, 27, m.SeqLen(0))
	require.Equal(t, 7, m.CacheUsed())
}
