package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/model"
)

// errClosed ends the requests of an engine that closes.
var errClosed = fmt.Errorf("%w: engine: closed", ggml.ErrClosed)

// loop is the engine's goroutine: the only user of the model.
func (e *Engine) loop() {
	defer close(e.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-e.stop:
			cancel() // a compute that runs stops
		case <-ctx.Done():
		}
	}()
	l := &state{e: e, m: e.m}
	for i := range e.m.Sequences() {
		l.slots = append(l.slots, &slot{seq: i})
	}
	defer l.shutdown()
	for {
		select {
		case <-e.stop:
			return
		case f := <-e.jobs:
			f()
			continue
		default:
		}
		l.sweep()
		l.admit()
		batch, ok := l.plan()
		if !ok {
			l.wait()
			continue
		}
		if len(batch) == 0 {
			continue // plan ended requests: look again
		}
		l.step(ctx, batch)
	}
}

// state is the loop's own: the sequences and the requests admitted.
type state struct {
	e      *Engine
	m      *model.Model
	slots  []*slot
	active []*request // admitted, in the order they came
	steps  uint64

	batch  []model.Token
	owners []*request // the request of each token of batch
}

// wait blocks until something may have changed: a request queued (where
// a sequence is free), a reader took a token or left, a job, or Close.
func (l *state) wait() {
	var q chan *request
	if l.freeSlot() != nil {
		q = l.e.queue
	}
	select {
	case <-l.e.stop:
	case f := <-l.e.jobs:
		f()
	case r := <-q:
		l.take(r)
	case <-l.e.wake:
	}
}

// freeSlot returns a sequence no request uses: an empty one first, else
// the one idle the longest; nil when every one is in use.
func (l *state) freeSlot() *slot {
	var best *slot
	for _, s := range l.slots {
		switch {
		case s.req != nil:
		case len(s.toks) == 0:
			return s
		case best == nil || s.used < best.used:
			best = s
		}
	}
	return best
}

// admit takes waiting requests while a sequence is free.
func (l *state) admit() {
	for l.freeSlot() != nil {
		select {
		case r := <-l.e.queue:
			l.take(r)
		default:
			return
		}
	}
}

// take admits r to a sequence: the one whose tokens share the longest
// prefix with r's prompt (but its last token, which runs for its logits)
// if no request uses it, else a free one, which shares that prefix's
// cells when the prompt starts (share).
func (l *state) take(r *request) {
	if r.ctx.Err() != nil {
		l.end(r, context.Cause(r.ctx))
		return
	}
	want := r.Prompt[:len(r.Prompt)-1]
	var src *slot
	k := 0
	for _, s := range l.slots {
		if n := commonPrefix(s.toks, want); n > k {
			src, k = s, n
		}
	}
	dst := l.freeSlot()
	if src != nil && src.req == nil {
		dst = src
	}
	// In its own sequence the prefix stays; another's is shared when the
	// prompt starts (plan), so that a waiting request holds no cells.
	var err error
	if dst == src {
		err = l.m.SeqRemove(dst.seq, k, -1)
		dst.toks = dst.toks[:k]
	} else {
		err = l.m.SeqRemove(dst.seq, -1, -1)
		dst.toks, k = dst.toks[:0], 0
	}
	if err != nil {
		l.end(r, err)
		return
	}
	r.slot, dst.req, r.fed = dst, r, k
	for _, id := range r.Prompt {
		r.sampler.Accept(id)
	}
	l.active = append(l.active, r)
	l.e.mu.Lock()
	l.e.stats.Requests++
	l.e.stats.Reused += k
	l.e.stats.Active = len(l.active)
	l.e.mu.Unlock()
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// end ends request r: err, if not nil, is the last item of its stream;
// its sequence keeps its cells for a later prompt that begins the same
// way until another request needs it.
func (l *state) end(r *request, err error) {
	r.stopWake()
	if s := r.slot; s != nil {
		s.req, s.used = nil, l.steps
		r.slot = nil
	}
	if i := slices.Index(l.active, r); i >= 0 {
		l.active = slices.Delete(l.active, i, i+1)
	}
	l.e.mu.Lock()
	l.e.stats.Active = len(l.active)
	l.e.mu.Unlock()
	// The stream ends last: its reader sees the engine's counts without
	// this request.
	if err != nil {
		r.out <- event{tok: -1, err: err} // out keeps room for it
	}
	close(r.out)
}

// sweep ends the requests whose context is done, with its error after
// the tokens their streams hold (their readers may be gone).
func (l *state) sweep() {
	for _, r := range slices.Clone(l.active) {
		if r.ctx.Err() != nil {
			l.end(r, context.Cause(r.ctx))
		}
	}
}

// paused reports whether r's reader is a stream's length behind: r sits
// out the steps until it reads.
func (l *state) paused(r *request) bool { return len(r.out) >= l.e.opts.Buffer }

// plan makes the next step's batch: one token of each request that is
// generating and whose reader keeps up, then chunks of the prompts, in
// the order the requests came, up to the model's BatchSize tokens and the
// cache's free cells (freeing idle sequences' cells where it is short of
// them). A request the cells do not reach waits for a later step: others
// end and give theirs back. Where no request can take a cell (every cell
// held by a running request) and none waits for its reader, the newest
// ends with ErrContextFull, which frees its cells. ok is false when there
// is nothing to run.
func (l *state) plan() (batch []model.Token, ok bool) {
	l.batch, l.owners = l.batch[:0], l.owners[:0]
	var gen, prompt []*request
	for _, r := range l.active {
		switch {
		case r.fed < len(r.Prompt):
			prompt = append(prompt, r)
		case !l.paused(r):
			gen = append(gen, r)
		}
	}
	if len(gen)+len(prompt) == 0 {
		return nil, false
	}
	free := func() int { return l.m.ContextSize() - l.m.CacheUsed() - len(l.batch) }
	// room makes n cells free if it can, evicting idle sequences, and
	// returns how many of n are.
	room := func(n int) int {
		for free() < n && l.evict() {
		}
		return min(n, free())
	}
	budget := l.m.BatchSize()
	for _, r := range gen {
		if budget == 0 || room(1) == 0 {
			break
		}
		l.batch = append(l.batch, model.Token{ID: r.last, Seq: r.slot.seq, Logits: true})
		l.owners = append(l.owners, r)
		budget--
	}
	for _, r := range prompt {
		if budget == 0 {
			break
		}
		if !r.started {
			// A prompt starts once the cache can hold the rest of it and
			// a token, so that cells do not go to many prompts of which
			// none can finish; then it shares the longest prefix the
			// cache holds (a request admitted beside the first one with
			// the same system prompt finds it evaluated by now).
			src, k := l.prefix(r)
			if n := len(r.Prompt) - max(k, r.fed) + 1; room(n) < n {
				break
			}
			if src != nil {
				l.share(r, src, k)
			}
			r.started = true
		}
		k := room(min(len(r.Prompt)-r.fed, budget))
		if k == 0 {
			break
		}
		for j := range k {
			l.batch = append(l.batch, model.Token{ID: r.Prompt[r.fed+j], Seq: r.slot.seq, Logits: r.fed+j == len(r.Prompt)-1})
			l.owners = append(l.owners, r)
		}
		budget -= k
	}
	if len(l.batch) == 0 {
		if len(gen)+len(prompt) < len(l.active) {
			return nil, false // readers behind: their requests go on, and end, when they read
		}
		// Every cell is held by a running request and none can go on:
		// the newest that holds cells gives them back and decodes its
		// tokens again later (preempt); alone, a request always fits.
		for i := len(l.active) - 1; i >= 0; i-- {
			if r := l.active[i]; len(r.slot.toks) > 0 && i > 0 {
				l.preempt(r)
				return nil, true
			}
		}
		r := l.active[len(l.active)-1]
		l.end(r, fmt.Errorf("%w: engine: the cache's %d cells are held by %d running requests", model.ErrContextFull, l.m.ContextSize(), len(l.active)))
		return nil, true
	}
	return l.batch, true
}

// preempt takes r's cells back, as vLLM's recompute preemption does: its
// sequence is emptied, and what it held (its prompt and the tokens it
// generated, and the last one sampled) becomes a prompt to decode again
// once the cache has room, after which it goes on where it was: its
// sampler and its stream are untouched.
func (l *state) preempt(r *request) {
	toks := slices.Clone(r.slot.toks)
	if r.fed >= len(r.Prompt) && r.last >= 0 {
		toks = append(toks, r.last) // generating: the token sampled last, not decoded yet
	} else {
		toks = slices.Clone(r.Prompt) // in its prompt: the prompt
	}
	if err := l.m.SeqRemove(r.slot.seq, -1, -1); err != nil {
		l.end(r, err)
		return
	}
	r.slot.toks = r.slot.toks[:0]
	r.Prompt, r.fed, r.started = toks, 0, false
	l.e.mu.Lock()
	l.e.stats.Preempted++
	l.e.mu.Unlock()
}

// prefix returns the sequence, other than r's, that holds the longest
// prefix of r's prompt (but its last token) longer than what r has, and
// its length; nil where none does.
func (l *state) prefix(r *request) (*slot, int) {
	want := r.Prompt[:len(r.Prompt)-1]
	var src *slot
	k := r.fed
	for _, s := range l.slots {
		if n := commonPrefix(s.toks, want); s != r.slot && n > k {
			src, k = s, n
		}
	}
	return src, k
}

// share gives r's sequence the first k tokens of src's (model's SeqCopy:
// their cells serve both), in place of what it had.
func (l *state) share(r *request, src *slot, k int) {
	own := r.slot
	if err := l.m.SeqRemove(own.seq, -1, -1); err != nil {
		return
	}
	own.toks = own.toks[:0]
	if err := l.m.SeqCopy(src.seq, own.seq, 0, k); err != nil {
		r.fed = 0
		return
	}
	own.toks = append(own.toks, src.toks[:k]...)
	l.e.mu.Lock()
	l.e.stats.Reused += k - r.fed
	l.e.mu.Unlock()
	r.fed = k
}

// evict frees the cells of the sequence idle the longest that holds any,
// and reports whether there was one.
func (l *state) evict() bool {
	var victim *slot
	for _, s := range l.slots {
		if s.req == nil && len(s.toks) > 0 && (victim == nil || s.used < victim.used) {
			victim = s
		}
	}
	if victim == nil {
		return false
	}
	if err := l.m.SeqRemove(victim.seq, -1, -1); err != nil {
		return false
	}
	victim.toks = victim.toks[:0]
	return true
}

// step runs one batch and hands each request its token.
func (l *state) step(ctx context.Context, batch []model.Token) {
	l.steps++
	logits, err := l.m.Decode(ctx, batch)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return // Close: shutdown ends them
		}
		// The batch's requests end with the error; the cache is as it
		// was before the step.
		for _, r := range slices.Compact(slices.Clone(l.owners)) {
			if r.slot != nil {
				l.end(r, err)
			}
		}
		return
	}
	nPrompt, nGen := 0, 0
	for i, t := range batch {
		r := l.owners[i]
		r.slot.toks = append(r.slot.toks, t.ID)
		if r.fed < len(r.Prompt) {
			r.fed++
			nPrompt++
		} else {
			nGen++
		}
	}
	vocab := l.m.Config.VocabSize
	j := 0
	for i, t := range batch {
		if !t.Logits {
			continue
		}
		r := l.owners[i]
		out := logits[j*vocab : (j+1)*vocab]
		j++
		if r.slot == nil {
			continue
		}
		l.next(r, out)
	}
	l.e.mu.Lock()
	l.e.stats.Steps++
	l.e.stats.Tokens += len(batch)
	l.e.stats.Prompt += nPrompt
	l.e.stats.Generated += nGen
	l.e.mu.Unlock()
}

// next samples r's next token from logits, hands it to r's reader, and
// ends r where it is done.
func (l *state) next(r *request, logits []float32) {
	id, err := r.sampler.Sample(logits)
	if err != nil {
		l.end(r, err)
		return
	}
	r.sampler.Accept(id)
	r.out <- event{tok: id} // not paused: there is room
	r.emitted++
	r.last = id
	tok := l.e.tok
	switch {
	case r.MaxTokens > 0 && r.emitted == r.MaxTokens:
		l.end(r, nil)
	case !r.IgnoreEOS && tok != nil && tok.IsEOG(id):
		l.end(r, nil)
	case len(r.slot.toks) >= l.m.ContextSize():
		if r.MaxTokens > 0 {
			l.end(r, fmt.Errorf("%w: %d tokens generated of %d", model.ErrContextFull, r.emitted, r.MaxTokens))
		} else {
			l.end(r, nil)
		}
	}
}

// shutdown ends every request, running or waiting, with errClosed.
func (l *state) shutdown() {
	for _, r := range slices.Clone(l.active) {
		l.end(r, errClosed)
	}
	for {
		select {
		case r := <-l.e.queue:
			l.end(r, errClosed)
		default:
			return
		}
	}
}
