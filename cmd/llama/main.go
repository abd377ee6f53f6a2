// Command llama runs a GGUF model with go-ggml, as llama.cpp's llama-cli
// does: the prompt in one batch, then token-by-token generation, on the
// best backend (all layers on the GPU if there is one) and the CPU through
// ggml's scheduler. Ctrl-C stops it cleanly.
//
//	go run ./cmd/llama -gen tiny.gguf -size tiny -type q4_0   # a random model
//	go run ./cmd/llama -model tiny.gguf -prompt "Once upon a time" -n 16
//	go run ./cmd/llama -model Llama-3.2-1B-Instruct-Q4_K_M.gguf -prompt "The capital of France is" -n 32
//	go run ./cmd/llama -model tiny.gguf -prompt-ids 1,2,3 -ids
//
// It runs the architectures whose packages it imports (model/bert: BERT
// embedding models, with -embd; model/llama: Llama
// 2 and 3.x, TinyLlama, Mistral 7B v0.1, SmolLM; model/qwen2: Qwen2 and
// Qwen2.5; model/qwen3: Qwen3; model/gemma: Gemma 2 and 3; model/phi3:
// Phi-3; any mix of
// weight types, such as Q4_K_M): each package's documentation lists what a file may hold
// and what is refused, each with an error that names the key or tensor.
// -gen writes a random Llama model laid out as llama.cpp's converter and
// quantizer write one (package model/modeltest); -type q4_K_M gives it
// llama.cpp's Q4_K_M mix and -vocab gpt2 a Llama 3 style vocabulary
// (synthetic: made-up token texts).
//
// The prompt is text (-prompt, or -p-file), tokenized with the file's
// tokenizer (package tokenizer, as llama.cpp tokenizes: BOS as the file
// says, special tokens such as <|eot_id|> read in the text), or token IDs
// (-prompt-ids). The prompt and the generated text stream to stdout as
// tokens come, a character split across tokens held back until whole;
// -ids prints each token's ID and text instead. The model's shape and
// weight types, the speed and memory use go to stderr. The model code is
// in package model and the architectures' packages under it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/model"
	_ "github.com/go-ggml/ggml/model/bert"
	"github.com/go-ggml/ggml/model/chat"
	_ "github.com/go-ggml/ggml/model/gemma"
	_ "github.com/go-ggml/ggml/model/llama"
	"github.com/go-ggml/ggml/model/modeltest"
	_ "github.com/go-ggml/ggml/model/phi3"
	_ "github.com/go-ggml/ggml/model/qwen2"
	_ "github.com/go-ggml/ggml/model/qwen3"
	"github.com/go-ggml/ggml/model/sample"
	"github.com/go-ggml/ggml/tokenizer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "llama: interrupted")
		os.Exit(130)
	case err != nil:
		msg := err.Error()
		if !strings.HasPrefix(msg, "llama: ") {
			msg = "llama: " + msg // one prefix: the model package's errors have it
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

// run runs the command with the arguments args (without the program
// name), writing tokens to stdout and reports to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("llama", flag.ContinueOnError)
	flags.SetOutput(stderr)
	var (
		modelPath = flags.String("model", "", "the GGUF file to run")
		prompt    = flags.String("prompt", "", "the prompt text, tokenized with the model's tokenizer (BOS added as the file says; default: the BOS token alone)")
		promptIDs = flags.String("prompt-ids", "", "the prompt as comma-separated token IDs, instead of -prompt")
		promptF   = flags.String("p-file", "", "read the prompt text from this file, instead of -prompt")
		showIDs   = flags.Bool("ids", false, "print each token's ID and text, one a line, instead of the text as it streams")
		n         = flags.Int("n", 16, "tokens to generate; -1 (or 0): until the end-of-sequence token, or the context is full")
		gpuLayers = flags.Int("gpu-layers", -1, "blocks on the GPU, from the last; -1: all, 0: CPU only")
		temp      = flags.Float64("temp", 0, "sampling temperature; 0: greedy")
		topK      = flags.Int("top-k", 40, "sample from the k most likely tokens; 0: all")
		topP      = flags.Float64("top-p", 0.95, "sample from the smallest set of tokens whose probability reaches p; 1: all")
		seed      = flags.Uint64("seed", 1, "the sampler's seed")
		minP      = flags.Float64("min-p", 0, "drop tokens less likely than p times the most likely one; 0: off")
		repeatP   = flags.Float64("repeat-penalty", 1, "divide the logits of the last -repeat-last-n tokens by this (multiply the negative ones); 1: off")
		repeatN   = flags.Int("repeat-last-n", 64, "how many of the last tokens the penalties look at; 0: off")
		presenceP = flags.Float64("presence-penalty", 0, "subtract this from the logits of tokens among the last -repeat-last-n")
		freqP     = flags.Float64("frequency-penalty", 0, "subtract this times their count from the logits of tokens among the last -repeat-last-n")
		embd      = flags.Bool("embd", false, "print the prompt's embedding (an embedding model's, such as BERT's: pooled as the file says, unit length) instead of generating")
		chatMode  = flags.Bool("chat", false, "send the prompt as a user's message through the file's chat template (tokenizer.chat_template) and print the reply")
		system    = flags.String("system", "", "with -chat: a system message before the user's")
		nCtx      = flags.Int("ctx", 0, "KV cache positions; 0: the model's training context, at most 4096")
		batch     = flags.Int("batch", 512, "most tokens per compute in prompt processing")
		threads   = flags.Int("threads", 0, "CPU threads; 0: one per core")
		poll      = flags.Int("poll", 50, "how long the CPU threads look for the next token's work before they sleep, 0 to 100 (llama.cpp's 50); 0: at once")
		cacheType = flags.String("cache-type", "f16", "KV cache type: f16, f32, q8_0 or q4_0 (the quantized ones need flash attention)")
		ignoreEOS = flags.Bool("ignore-eos", false, "go on after the end-of-sequence token")
		fa        = flags.String("fa", "auto", "flash attention (attention as one fused op): auto (where every backend has it), on or off")
		dotFile   = flags.String("dot", "", "write the graph of the last token (Graphviz's dot language: dot -Tsvg) to this file")
		noRepack  = flags.Bool("no-repack", false, "keep the CPU's weights in its own buffer type, not in the extra ones llama.cpp uses (AMX, CPU_REPACK): slower, to compare")
		smallPgs  = flags.Bool("small-pages", false, "keep the weights copied into CPU memory in the system's default pages, not huge pages: slower generation, to compare")

		gen     = flags.String("gen", "", "write a GGUF with random weights (-arch) to this file and exit")
		size    = flags.String("size", "tiny", "with -gen: the model size, one of "+strings.Join(modeltest.PresetNames(), ", "))
		genType = flags.String("type", "q4_0", "with -gen: the weight type (f32, f16, q8_0, q4_0, q4_K, ...), or q4_K_M for llama.cpp's mix of q4_K and q6_K")
		genArch = flags.String("arch", "llama", "with -gen: the architecture, one of "+strings.Join(modeltest.RandomArchitectures, ", "))
		vocab   = flags.String("vocab", "llama", "with -gen: the tokenizer, llama (SentencePiece, Llama 2) or gpt2 (byte-level BPE, Llama 3; a preset vocabulary under 261 tokens grows to fit it)")
		tied    = flags.Bool("tied", false, "with -gen: no output.weight, the output uses token_embd")
		genSeed = flags.Uint64("gen-seed", 1, "with -gen: the seed of the weights")
	)
	flags.Usage = func() {
		fmt.Fprint(stderr, `usage: llama -model FILE [-prompt TEXT | -p-file FILE | -prompt-ids IDS] [-n N] [flags]
       llama -gen FILE [-size S] [-type T] [-vocab V]

llama runs a GGUF model (architectures: `+strings.Join(model.Architectures(), ", ")+`, as
llama.cpp makes them) with go-ggml on the best backend and the CPU:
it tokenizes the prompt text with the model's tokenizer (or takes token IDs),
processes it in one batch, then generates tokens one at a time, streaming the
text to stdout, and reports speed and memory on stderr. With -gen it writes a
model with random weights and the metadata llama.cpp's converter writes, to
try it: its vocabulary is synthetic (made-up token texts, with a tokenizer
that works but means nothing), so its text is gibberish.

flags:
`)
		flags.PrintDefaults()
	}
	// llama.cpp's names for the same flags, so that its users' habits work
	// (Go's flag package takes -name and --name alike).
	for alias, name := range map[string]string{
		"m": "model", "p": "prompt", "f": "p-file", "c": "ctx", "t": "threads", "b": "batch",
		"ngl": "gpu-layers", "n-gpu-layers": "gpu-layers", "ctx-size": "ctx", "n-predict": "n",
		"file": "p-file", "threads": "threads", "flash-attn": "fa", "cache-type-k": "cache-type",
	} {
		if alias == name {
			continue
		}
		f := flags.Lookup(name)
		flags.Var(f.Value, alias, "llama.cpp's name for -"+name)
	}
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *gen != "" {
		return generate(stderr, *gen, *genArch, *size, *genType, *vocab, *tied, *genSeed)
	}
	if *modelPath == "" {
		flags.Usage()
		return errors.New("-model is required (or -gen to write a random model)")
	}
	if *n < -1 {
		return fmt.Errorf("-n %d: want a count, or -1 (or 0) for until the end of the sequence", *n)
	}
	// The prompt's syntax is checked, and its file read, before the model
	// loads (its IDs against the vocabulary after).
	given := 0
	for _, p := range []string{*prompt, *promptIDs, *promptF} {
		if p != "" {
			given++
		}
	}
	if given > 1 {
		return errors.New("-prompt, -prompt-ids and -p-file: give one")
	}
	ids, err := parseIDs(*promptIDs)
	if err != nil {
		return err
	}
	text := *prompt
	if *promptF != "" {
		b, err := os.ReadFile(*promptF)
		if err != nil {
			return fmt.Errorf("-p-file: %w", err)
		}
		text = string(b)
	}
	ct, err := model.ParseCacheType(*cacheType)
	if err != nil {
		return fmt.Errorf("-cache-type %q: want f16, f32, q8_0 or q4_0", *cacheType)
	}
	faMode, ok := map[string]model.FlashAttnMode{"auto": model.FlashAttnAuto, "on": model.FlashAttnOn, "off": model.FlashAttnOff}[*fa]
	if !ok {
		return fmt.Errorf("-fa %q: want auto, on or off", *fa)
	}

	t0 := time.Now()
	var progress func(done, total uint64)
	if isTerminal(stderr) {
		progress = progressBar(stderr)
	}
	m, err := model.Load(ctx, *modelPath, model.Options{
		ContextSize: *nCtx, BatchSize: *batch, GPULayers: *gpuLayers, CPUOnly: *gpuLayers == 0, Threads: *threads, Poll: *poll, CacheType: ct,
		NoRepack: *noRepack, SmallPages: *smallPgs, FlashAttn: faMode, Progress: progress,
	})
	if err != nil {
		return err
	}
	defer m.Close()
	c := m.Config
	var names []string
	for _, be := range m.Backends() {
		names = append(names, be.Name())
	}
	attn := "attention as matrix products"
	if m.FlashAttn() {
		attn = "flash attention"
	}
	fmt.Fprintf(stderr, "model: %d layers, %d wide, %d heads (%d KV), vocabulary %d, %.1fM weights (%s; in %s); %s; loaded in %v on %s\n",
		c.BlockCount, c.EmbeddingLength, c.HeadCount, c.HeadCountKV, c.VocabSize, float64(m.Params())/1e6,
		m.WeightTypes(), m.WeightBuffers(), attn, time.Since(t0).Round(time.Millisecond), strings.Join(names, " + "))

	sampling := sample.Params{
		Temperature: float32(*temp), TopK: *topK, TopP: float32(*topP), MinP: float32(*minP),
		RepeatPenalty: float32(*repeatP), PenaltyLastN: *repeatN, PresencePenalty: float32(*presenceP),
		FrequencyPenalty: float32(*freqP), Seed: *seed,
	}
	if *chatMode {
		return chatReply(ctx, m, *system, text, model.GenerateOptions{MaxTokens: max(*n, 0), Sampling: sampling, IgnoreEOS: *ignoreEOS}, stdout, stderr)
	}
	tok, tokErr := m.Tokenizer()
	if text != "" {
		if tokErr == nil {
			tokErr = tok.CanEncode()
		}
		if tokErr != nil {
			return fmt.Errorf("a text prompt needs the model's tokenizer (-prompt-ids takes token IDs): %w", tokErr)
		}
		ids = tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	}
	tokens := promptOrBOS(ids, tok)
	if m.Encoder() && !*embd {
		return fmt.Errorf("%w: the %s model is an embedding model: -embd prints a prompt's embedding", model.ErrModel, c.Arch)
	}
	if *embd {
		v, err := m.Embed(ctx, tokens, model.PoolDefault)
		if err != nil {
			return err
		}
		var b strings.Builder
		for i, x := range v {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.FormatFloat(float64(x), 'g', 9, 32))
		}
		b.WriteByte('\n')
		_, err = io.WriteString(stdout, b.String())
		return err
	}
	out := newTextOut(stdout, tok, *showIDs)

	// The prompt in one batch, then one token at a time.
	sampler, err := sample.New(sampling)
	if err != nil {
		return err
	}
	for _, id := range tokens {
		sampler.Accept(id)
	}
	t1 := time.Now()
	logits, err := m.Eval(ctx, tokens, false)
	if err != nil {
		return err
	}
	promptTime := time.Since(t1)
	// The prompt is written once Eval has checked its IDs.
	if err := out.prompt(tokens); err != nil {
		return err
	}
	if !*showIDs {
		fmt.Fprintf(stderr, "prompt: %d tokens %v\n", len(tokens), tokens)
	}
	var generated []int32
	t2 := time.Now()
	for *n <= 0 || len(generated) < *n {
		id, err := sampler.Sample(logits)
		if err != nil {
			return err
		}
		sampler.Accept(id)
		generated = append(generated, id)
		if err := out.token(id); err != nil {
			return err
		}
		if (tok != nil && tok.IsEOG(id) && !*ignoreEOS) || len(generated) == *n {
			break
		}
		if m.Pos() == m.ContextSize() {
			fmt.Fprintln(stderr, "llama: the context is full")
			break
		}
		if logits, err = m.Eval(ctx, []int32{id}, false); err != nil {
			return err
		}
	}
	genTime := time.Since(t2)
	if err := out.end(generated); err != nil {
		return err
	}
	if *dotFile != "" {
		if err := writeDot(m, *dotFile); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "graph of the last token: %s (render it with dot -Tsvg)\n", *dotFile)
	}

	st := m.Stats()
	fmt.Fprintf(stderr, "prompt: %d tokens in %v (%.1f tokens/s); generation: %d tokens in %v (%.1f tokens/s)\n",
		len(tokens), promptTime.Round(time.Microsecond), float64(len(tokens))/promptTime.Seconds(),
		len(generated), genTime.Round(time.Microsecond), float64(len(generated))/genTime.Seconds())
	total := st.Overhead() + st.Compute
	fmt.Fprintf(stderr, "time outside ggml's compute: %.2f %% (graphs: %d built for %d computes, %v; inputs %v; compute checks %v; logits %v)\n",
		100*st.Overhead().Seconds()/total.Seconds(), st.Graphs, st.Computes, st.Build.Round(time.Microsecond),
		st.Input.Round(time.Microsecond), st.Checks.Round(time.Microsecond), st.Output.Round(time.Microsecond))
	for _, u := range m.Memory() {
		fmt.Fprintf(stderr, "memory on %s: weights %s, KV cache %s, compute %s reserved, %s at the most; device %s free of %s at load\n",
			u.Backend, mib(u.Weights), mib(u.KVCache), mib(u.ComputeReserved), mib(u.ComputePeak), mib(u.Free), mib(u.Total))
	}
	return nil
}

// chatReply sends text as a user's message (after a system message, if
// any) through the model's chat template and streams the reply to
// stdout.
func chatReply(ctx context.Context, m *model.Model, system, text string, o model.GenerateOptions, stdout, stderr io.Writer) error {
	var msgs []chat.Message
	if system != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: system})
	}
	msgs = append(msgs, chat.Message{Role: "user", Content: text})
	t0 := time.Now()
	for piece, err := range m.Chat(ctx, msgs, o) {
		if err != nil {
			return err
		}
		if _, err := io.WriteString(stdout, piece); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(stdout, "\n"); err != nil {
		return err
	}
	st := m.Stats()
	fmt.Fprintf(stderr, "chat: %d tokens in %v (%d computes)\n", st.Tokens, time.Since(t0).Round(time.Millisecond), st.Computes)
	return nil
}

// parseIDs parses -prompt-ids' comma-separated token IDs (none when s is
// empty).
func parseIDs(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int32
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("-prompt-ids: %q is not a token ID", f)
		}
		out = append(out, int32(id))
	}
	return out, nil
}

// textOut writes the prompt and the generated tokens to w: as text
// streamed through the tokenizer's decoder (a character split across
// tokens held back until whole; without a tokenizer, each token as <id>),
// or with ids one line a token ("id\t"text"") between a "prompt:" and a
// "text:" line.
type textOut struct {
	w   io.Writer
	tok *tokenizer.Tokenizer // nil: the file has none
	dec *tokenizer.Decoder
	ids bool
}

func newTextOut(w io.Writer, tok *tokenizer.Tokenizer, ids bool) *textOut {
	o := &textOut{w: w, tok: tok, ids: ids}
	if tok != nil {
		o.dec = tok.NewDecoder(false)
	}
	return o
}

// text returns the text of ids, control tokens written as their pieces.
func (o *textOut) text(ids []int32) string {
	if o.tok == nil {
		var b strings.Builder
		for _, id := range ids {
			fmt.Fprintf(&b, "<%d>", id)
		}
		return b.String()
	}
	s, err := o.tok.Decode(ids, tokenizer.DecodeOptions{RenderSpecial: true})
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return s
}

func (o *textOut) prompt(tokens []int32) error {
	if o.ids {
		_, err := fmt.Fprintf(o.w, "prompt: %v %q\n", tokens, o.text(tokens))
		return err
	}
	for _, id := range tokens {
		if err := o.token(id); err != nil {
			return err
		}
	}
	return nil
}

func (o *textOut) token(id int32) error {
	var err error
	switch {
	case o.ids:
		_, err = fmt.Fprintf(o.w, "%d\t%q\n", id, o.text([]int32{id}))
	case o.dec != nil:
		var s string
		if s, err = o.dec.Add(id); err == nil {
			_, err = io.WriteString(o.w, s)
		}
	default:
		_, err = io.WriteString(o.w, o.text([]int32{id}))
	}
	return err
}

// end finishes the output: the bytes held back and a line break, or the
// "text:" line of gen.
func (o *textOut) end(gen []int32) error {
	if o.ids {
		_, err := fmt.Fprintf(o.w, "text: %q\n", o.text(gen))
		return err
	}
	var rest string
	if o.dec != nil {
		rest = o.dec.Flush()
	}
	_, err := io.WriteString(o.w, rest+"\n")
	return err
}

// promptOrBOS is the prompt ids, or the tokenizer's BOS token without one
// (1 without a tokenizer or a BOS).
func promptOrBOS(ids []int32, tok *tokenizer.Tokenizer) []int32 {
	if len(ids) > 0 {
		return ids
	}
	if tok != nil && tok.BOS() >= 0 {
		return []int32{tok.BOS()}
	}
	return []int32{1}
}

func parseType(name string) (ggml.Type, error) {
	for _, t := range ggml.Types() {
		if t.String() == name {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown type %q", name)
}

// generate writes a random model with the metadata of a file converted
// and quantized by llama.cpp.
func generate(stderr io.Writer, path, arch, size, typ, vocab string, tied bool, seed uint64) error {
	cfg, ok := modeltest.Presets[size]
	if !ok {
		return fmt.Errorf("-size %q: want one of %s", size, strings.Join(modeltest.PresetNames(), ", "))
	}
	cfg.Arch = arch
	if vocab == "gpt2" && cfg.VocabSize < modeltest.MinGPT2Vocab {
		// The smallest presets' vocabularies are too small for GPT-2's
		// 256 byte tokens: the vocabulary grows to fit.
		cfg.VocabSize = modeltest.MinGPT2Vocab
	}
	r := modeltest.RandomModel{Config: cfg, Tied: tied, Seed: seed, Converted: true, Vocab: vocab}
	if typ == "q4_K_M" {
		r.Types = modeltest.MixQ4KM(cfg.BlockCount, tied)
	} else {
		t, err := parseType(typ)
		if err != nil {
			return err
		}
		r.Type = t
	}
	t0 := time.Now()
	if err := modeltest.WriteRandom(path, r); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s: %s model, %.1fM %s weights, %s, in %v\n", path, size,
		float64(modeltest.Params(cfg, tied))/1e6, typ, mib(uint64(st.Size())), time.Since(t0).Round(time.Millisecond))
	return nil
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// writeDot writes the model's last graph to the file path.
func writeDot(m *model.Model, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := m.WriteDot(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar returns a gguf progress callback that draws a bar on w, a
// terminal, redrawn in place at each whole percent and ended with a line
// break when the load is done. Calls may come from several goroutines.
func progressBar(w io.Writer) func(done, total uint64) {
	var mu sync.Mutex
	last := -1
	return func(done, total uint64) {
		mu.Lock()
		defer mu.Unlock()
		pct := 100
		if total > 0 {
			pct = int(min(done, total) * 100 / total)
		}
		if pct == last {
			return
		}
		last = pct
		const width = 30
		n := pct * width / 100
		fmt.Fprintf(w, "\rloading weights [%s%s] %3d%% of %.1f MiB", strings.Repeat("=", n), strings.Repeat(" ", width-n), pct, float64(total)/(1<<20))
		if pct == 100 {
			fmt.Fprintln(w)
		}
	}
}
