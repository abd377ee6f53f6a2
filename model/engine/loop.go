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
// if no request uses it, else a free one that gets that prefix's cells
// (model.Model.SeqCopy).
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
	var err error
	if dst == src {
		err = l.m.SeqRemove(dst.seq, k, -1)
		dst.toks = dst.toks[:k]
	} else {
		err = l.m.SeqRemove(dst.seq, -1, -1)
		dst.toks = dst.toks[:0]
		if err == nil && k > 0 {
			err = l.m.SeqCopy(src.seq, dst.seq, 0, k)
			dst.toks = append(dst.toks, src.toks[:k]...)
		}
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
	if err != nil {
		r.out <- event{tok: -1, err: err} // out keeps room for it
	}
	close(r.out)
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
// generating and whose reader keeps up, then chunks of the prompts in the
// order the requests came, up to the model's BatchSize tokens and the
// cache's free cells. It frees idle sequences' cells where the cache is
// short of them, and ends the newest request where even that is not
// enough for one token each. ok is false when there is nothing to run.
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
	// Cells: one per generating request and at least one for a prompt.
	need := len(gen)
	if len(prompt) > 0 {
		need++
	}
	free := l.m.ContextSize() - l.m.CacheUsed()
	for free < need {
		if !l.evict() {
			// Every cell belongs to a running request: the newest ends.
			r := l.active[len(l.active)-1]
			l.end(r, fmt.Errorf("%w: engine: the cache's %d cells are in use by %d requests", model.ErrContextFull, l.m.ContextSize(), len(l.active)))
			return nil, true
		}
		free = l.m.ContextSize() - l.m.CacheUsed()
	}
	budget := min(l.m.BatchSize(), free)
	for _, r := range gen {
		if budget == 0 {
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
		k := min(len(r.Prompt)-r.fed, budget)
		for j := range k {
			l.batch = append(l.batch, model.Token{ID: r.Prompt[r.fed+j], Seq: r.slot.seq, Logits: r.fed+j == len(r.Prompt)-1})
			l.owners = append(l.owners, r)
		}
		budget -= k
	}
	return l.batch, true
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
