package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Errors, for errors.Is: every error of New, NewForDecoding, FromGGUF and
// FromGGUFForDecoding wraps one, and so does CanEncode's.
var (
	// ErrUnsupported: a tokenizer model other than "llama", "gpt2" and
	// "bert", or
	// a pre-tokenizer this package does not implement (New refuses it;
	// NewForDecoding accepts it and CanEncode returns the error).
	ErrUnsupported = errors.New("unsupported tokenizer")
	// ErrKey: a key the tokenizer needs is missing or has the wrong type.
	ErrKey = errors.New("bad tokenizer key")
	// ErrLength: scores or token types of another length than the tokens.
	ErrLength = errors.New("tokenizer arrays of different lengths")
	// ErrTokenType: a token type that is not one of the TokenType values.
	ErrTokenType = errors.New("unknown token type")
	// ErrTokenText: a token that is not valid UTF-8, or the same text
	// twice in the vocabulary.
	ErrTokenText = errors.New("bad token text")
	// ErrMerge: a merge that is not two pieces separated by a space.
	ErrMerge = errors.New("bad merge")
	// ErrTokenID: a token ID outside the vocabulary (a special token of
	// the file, or an ID given to Decode or Piece), or a BOS or EOS to add
	// that the vocabulary does not have (for "bert": no BOS or no SEP).
	ErrTokenID = errors.New("token ID outside the vocabulary")
	// ErrTooLarge: a token longer than MaxTokenLen bytes, or tokens and
	// merges of more than MaxVocabBytes bytes together.
	ErrTooLarge = errors.New("vocabulary too large")
)

// The limits of a vocabulary, which New refuses beyond them with an
// ErrTooLarge error. The largest vocabularies of real models have tokens
// of a few hundred bytes and a few megabytes of text in all; within the
// limits, what a tokenizer allocates is a small multiple of its
// vocabulary's bytes (at most about 40 bytes a byte of special token
// text, for the automaton that finds them in a text, the same a byte of
// any token for WordPiece's automaton of all tokens, and 16 bytes a byte
// of a byte-level BPE token's piece), whatever the vocabulary holds.
const (
	// MaxTokenLen is the most bytes a token's text may have.
	MaxTokenLen = 1 << 16
	// MaxVocabBytes is the most bytes the texts of all tokens and merges
	// may have together.
	MaxVocabBytes = 1 << 26
)

// TokenType is a token's type, as tokenizer.ggml.token_type writes it
// (llama.cpp's llama_token_type).
type TokenType int32

// Token types.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// attr is a token's attributes (llama.cpp's llama_token_attr): its type,
// and control added by the rules on texts.
type attr uint8

const (
	attrUnknown attr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
	attrRStrip // white space after the token in a text goes with it
)

var typeAttr = [...]attr{
	TypeUndefined: 0, TypeNormal: attrNormal, TypeUnknown: attrUnknown, TypeControl: attrControl,
	TypeUserDefined: attrUserDefined, TypeUnused: attrUnused, TypeByte: attrByte,
}

// Vocab is what a tokenizer is made of: the tokenizer keys of a GGUF
// file, as plain values. New checks it; FromGGUF reads one from a file.
type Vocab struct {
	// Model is the family: "llama" (SentencePiece), "gpt2" (byte-level
	// BPE) or "bert" (WordPiece).
	Model string
	// Tokens are the tokens' texts, by ID.
	Tokens []string
	// Scores rank SentencePiece merges (higher first); nil: all 0.
	Scores []float32
	// Types are the tokens' types; nil: all TypeNormal.
	Types []TokenType
	// Merges are byte-level BPE's pairs, "left right", by rank.
	Merges []string
	// Pre names the byte-level BPE pre-tokenizer (see the package
	// documentation); "" is "default".
	Pre string
	// BOS, EOS and UNK are the beginning, end of sequence and unknown
	// tokens; -1: none (the zero value is token 0). BERT's BOS is its
	// [CLS].
	BOS, EOS, UNK int32
	// SEP, PAD and MASK are the separator, padding and mask tokens
	// (BERT's [SEP], [PAD], [MASK]); -1: none (the zero value is token
	// 0). Encode uses SEP only, for "bert"; PAD and MASK are for the
	// caller (Tokenizer.PAD, MASK).
	SEP, PAD, MASK int32
	// EOT and EOM end a turn and a message (they end generation); -1:
	// none.
	EOT, EOM int32
	// Name is the model's name (general.name). llama.cpp applies one rule
	// by it: in a model named Phi-3 ("phi-3" or "phi3" in any case),
	// ASCII white space after a special token in a text goes with the
	// token ("<|user|>\nHi" is "<|user|>" "Hi"), except after <s>,
	// <unk> and <|endoftext|>.
	Name string
	// AddBOS, AddEOS say whether EncodeOptions.AddSpecial adds BOS and
	// EOS, and AddSpacePrefix whether a space goes in front of the text
	// (SentencePiece) and is taken off again by Decode. Nil: llama.cpp's
	// default for the model and pre-tokenizer (BOS for SentencePiece and
	// Llama 3's pre-tokenizer, no EOS, the space for SentencePiece).
	AddBOS, AddEOS, AddSpacePrefix *bool
	// Lowercase and StripAccents are WordPiece's normalization ("bert"
	// only): lower the text, and strip accents (each character its
	// canonical decomposition's first, marks left out). Nil: llama.cpp's
	// default, Lowercase true and StripAccents as Lowercase.
	Lowercase, StripAccents *bool
}

// preKind is a byte-level BPE pre-tokenizer.
type preKind int

const (
	preDefault preKind = iota // llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEFAULT
	preGPT2
	preLlama3
	preSmolLM // each number alone, then GPT-2's expression
	preQwen2  // Llama 3's expression with each number alone
)

// preRule is what a tokenizer.ggml.pre name sets, as llama.cpp's
// llama_vocab::impl::load sets it.
type preRule struct {
	kind         preKind
	ignoreMerges bool // a word that is a token is that token
	addBOS       bool // the default of tokenizer.ggml.add_bos_token
	keepSpaces   bool // no clean-up of spaces when decoding
}

// llama3Rule is Llama 3's pre-tokenizer and its aliases.
var llama3Rule = preRule{kind: preLlama3, ignoreMerges: true, addBOS: true}

// qwen2Rule is Qwen2's pre-tokenizer (Qwen 2, 2.5 and 3) and the names
// llama.cpp gives it with the same settings.
var qwen2Rule = preRule{kind: preQwen2, keepSpaces: true}

// preNames maps tokenizer.ggml.pre to the pre-tokenizers implemented.
var preNames = map[string]preRule{
	"": {kind: preDefault}, "default": {kind: preDefault},
	"gpt-2":  {kind: preGPT2},
	"llama3": llama3Rule, "llama-v3": llama3Rule, "llama-bpe": llama3Rule, "falcon3": llama3Rule, "pixtral": llama3Rule,
	"smaug-bpe": {kind: preLlama3}, // Llama 3's expression, merges always
	"smollm":    {kind: preSmolLM, keepSpaces: true},
	"qwen2":     qwen2Rule, "deepseek-r1-qwen": qwen2Rule, "kormo": qwen2Rule, "f2llmv2": qwen2Rule,
	"hunyuan": qwen2Rule, "solar-open": qwen2Rule,
	"megrez": {kind: preQwen2}, "stablelm2": {kind: preQwen2}, // Qwen2's expression, spaces cleaned up
}

// unknownPreRule is what NewForDecoding takes for a pre-tokenizer this
// package does not implement: llama.cpp's defaults for byte-level BPE
// (no BOS added), and the text decoded as its tokens spell it, without
// the clean-up of spaces that most of llama.cpp's recent pre-tokenizers
// turn off.
var unknownPreRule = preRule{kind: preDefault, keepSpaces: true}

// Tokenizer encodes text into token IDs and decodes them, for one
// vocabulary. It may be used by several goroutines at once.
type Tokenizer struct {
	encErr error // why the tokenizer does not encode (NewForDecoding), or nil
	bpe    bool
	wpm    bool // WordPiece ("bert")
	pre    preKind
	tokens []string
	scores []float32
	types  []TokenType
	attrs  []attr
	ids    map[string]int32
	ranks  map[string]int32 // merges: "left right" -> rank

	bos, eos, unk  int32
	eot, eom       int32
	sep, pad, mask int32
	addBOS, addEOS bool
	addSpacePrefix bool
	cleanSpaces    bool
	spmWords       bool // no token has a "▁" after another character
	ignoreMerges   bool
	eog            map[int32]bool
	special        []int32   // control, user-defined and unknown tokens, longest first
	specials       automaton // finds the special tokens in a text (partition)
	byteTokens     [256]int32
	pieces         [][]byte // llama_token_to_piece(special=true) of each token

	lowercase, stripAccents bool      // WordPiece's normalization
	words                   automaton // WordPiece: finds the tokens that start at each place of a word
}

// endTexts are the texts llama.cpp takes for tokens that end generation
// (its EOG list) whatever their type: they become control tokens.
var endTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
	"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
	"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
	"<｜end▁of▁sentence｜>", "[e~[",
}

// fimTexts are the texts llama.cpp takes for fill-in-the-middle tokens
// when a file does not name them: they become control tokens too, and the
// pad, repository and file separator ones end generation.
var fimTexts = []string{
	"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>",
	"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>",
	"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>",
}

var fimEndTexts = []string{
	"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
	"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
	"<|file_sep|>",
}

// New makes a tokenizer of v, checking it first: the model and
// pre-tokenizer are ones this package implements (ErrUnsupported), scores
// and types have one entry a token (ErrLength), types are known
// (ErrTokenType), token texts are valid UTF-8 and unique (ErrTokenText;
// an empty text is named "[EMPTY_<id>]" as llama.cpp names it), merges
// are two pieces (ErrMerge), and the special tokens are in the
// vocabulary, BOS and EOS too when they are to be added (BOS and SEP,
// which Encode adds, for "bert") (ErrTokenID), and
// the vocabulary is within MaxTokenLen and MaxVocabBytes (ErrTooLarge).
// Every tokenizer New returns encodes and decodes.
func New(v Vocab) (*Tokenizer, error) {
	t, err := NewForDecoding(v)
	if err != nil {
		return nil, err
	}
	if t.encErr != nil {
		return nil, t.encErr
	}
	return t, nil
}

// NewForDecoding makes a tokenizer of v as New does, except that a
// byte-level BPE pre-tokenizer this package does not implement is no
// error: the tokenizer decodes (Decode, Piece, NewDecoder) and answers
// about its tokens as any other, and CanEncode returns the ErrUnsupported
// error that names the pre-tokenizer. Decoding then follows llama.cpp's
// defaults for byte-level BPE: no BOS added (unless the vocabulary says
// so) and no clean-up of spaces. Every other fault of v is the error New
// returns. This is the constructor for a program that runs a model
// whatever its tokenizer, and needs its tokenizer to read what the model
// writes.
func NewForDecoding(v Vocab) (*Tokenizer, error) {
	t := &Tokenizer{bos: v.BOS, eos: v.EOS, unk: v.UNK, eot: v.EOT, eom: v.EOM, sep: v.SEP, pad: v.PAD, mask: v.MASK}
	switch v.Model {
	case "llama":
		t.addSpacePrefix, t.addBOS = true, true
	case "bert":
		t.wpm, t.addBOS, t.cleanSpaces = true, true, true
		t.lowercase = v.Lowercase == nil || *v.Lowercase
		t.stripAccents = t.lowercase
		if v.StripAccents != nil {
			t.stripAccents = *v.StripAccents
		}
	case "gpt2":
		t.bpe = true
		pre, ok := preNames[v.Pre]
		if !ok {
			t.encErr = fmt.Errorf("tokenizer: %w: pre-tokenizer %q (this package implements default, gpt-2, llama-bpe, smaug-bpe, smollm and qwen2, and their aliases)", ErrUnsupported, v.Pre)
			pre = unknownPreRule
		}
		t.pre = pre.kind
		t.cleanSpaces = !pre.keepSpaces
		t.ignoreMerges, t.addBOS = pre.ignoreMerges, pre.addBOS
	default:
		return nil, fmt.Errorf("tokenizer: %w: model %q (want llama, gpt2 or bert)", ErrUnsupported, v.Model)
	}
	for _, f := range []struct {
		v *bool
		t *bool
	}{{v.AddBOS, &t.addBOS}, {v.AddEOS, &t.addEOS}, {v.AddSpacePrefix, &t.addSpacePrefix}} {
		if f.v != nil {
			*f.t = *f.v
		}
	}
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: %w: no tokens", ErrKey)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("tokenizer: %w: %d scores for %d tokens", ErrLength, len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("tokenizer: %w: %d token types for %d tokens", ErrLength, len(v.Types), n)
	}
	t.tokens = make([]string, n)
	t.scores = slices.Clone(v.Scores) // the caller may change v's later
	if t.scores == nil {
		t.scores = make([]float32, n)
	}
	t.types = make([]TokenType, n)
	t.attrs = make([]attr, n)
	t.ids = make(map[string]int32, n)
	total := 0
	for _, m := range v.Merges {
		total += len(m)
	}
	for i, s := range v.Tokens {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i)
		}
		if len(s) > MaxTokenLen {
			return nil, fmt.Errorf("tokenizer: %w: token %d has %d bytes (at most MaxTokenLen, %d)", ErrTooLarge, i, len(s), MaxTokenLen)
		}
		if total += len(s); total > MaxVocabBytes {
			return nil, fmt.Errorf("tokenizer: %w: tokens and merges of more than MaxVocabBytes (%d) bytes together", ErrTooLarge, MaxVocabBytes)
		}
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("tokenizer: %w: token %d (%q) is not valid UTF-8", ErrTokenText, i, s)
		}
		if j, dup := t.ids[s]; dup {
			return nil, fmt.Errorf("tokenizer: %w: tokens %d and %d are both %q", ErrTokenText, j, i, s)
		}
		t.tokens[i] = s
		t.ids[s] = int32(i)
		typ := TypeNormal
		if v.Types != nil {
			typ = v.Types[i]
			if typ < 0 || int(typ) >= len(typeAttr) {
				return nil, fmt.Errorf("tokenizer: %w: token %d (%q) has type %d", ErrTokenType, i, s, typ)
			}
		}
		t.types[i] = typ
		t.attrs[i] = typeAttr[typ]
	}
	for _, id := range []struct {
		name string
		id   int32
	}{{"BOS", v.BOS}, {"EOS", v.EOS}, {"UNK", v.UNK}, {"EOT", v.EOT}, {"EOM", v.EOM}, {"SEP", v.SEP}, {"PAD", v.PAD}, {"MASK", v.MASK}} {
		if id.id < -1 || id.id >= int32(n) {
			return nil, fmt.Errorf("tokenizer: %w: %s is %d, and the vocabulary has %d tokens", ErrTokenID, id.name, id.id, n)
		}
	}
	if (t.addBOS || t.wpm) && t.bos < 0 {
		return nil, fmt.Errorf("tokenizer: %w: BOS is to be added, and there is none", ErrTokenID)
	}
	if t.wpm && t.sep < 0 {
		return nil, fmt.Errorf("tokenizer: %w: SEP is to be added, and there is none", ErrTokenID)
	}
	if t.addEOS && t.eos < 0 && !t.wpm {
		return nil, fmt.Errorf("tokenizer: %w: EOS is to be added, and there is none", ErrTokenID)
	}
	if t.bpe {
		t.ranks = make(map[string]int32, len(v.Merges))
		for r, m := range v.Merges {
			i := strings.IndexByte(m[min(1, len(m)):], ' ') + 1
			if i <= 0 || i == len(m)-1 {
				return nil, fmt.Errorf("tokenizer: %w: merge %d is %q, want two pieces separated by a space", ErrMerge, r, m)
			}
			if _, dup := t.ranks[m]; !dup {
				t.ranks[m] = int32(r)
			}
		}
	}

	// The end-of-generation tokens, and the texts llama.cpp makes control
	// tokens whatever the file says.
	t.eog = map[int32]bool{}
	for _, id := range []int32{v.EOS, v.EOT, v.EOM} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	for _, l := range []struct {
		texts []string
		ends  bool
	}{{endTexts, true}, {fimTexts, false}, {fimEndTexts, true}} {
		for _, s := range l.texts {
			if id, ok := t.ids[s]; ok {
				t.attrs[id] |= attrControl
				t.eog[id] = t.eog[id] || l.ends
			}
		}
	}

	for i, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, int32(i))
		}
	}
	if isPhi3(v.Name) {
		for _, id := range t.special {
			t.attrs[id] |= attrRStrip
		}
		if id, ok := t.ids["</s>"]; ok {
			t.attrs[id] |= attrRStrip
		}
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if id, ok := t.ids[s]; ok {
				t.attrs[id] &^= attrRStrip
			}
		}
	}
	slices.SortStableFunc(t.special, func(a, b int32) int { return len(t.tokens[b]) - len(t.tokens[a]) })
	t.specials = newAutomaton(t.tokens, t.special, func(id int32) bool {
		return t.attrs[id]&(attrControl|attrUnknown) == 0
	})

	if t.wpm {
		all := make([]int32, n)
		for i := range all {
			all[i] = int32(i)
		}
		t.words = newAutomaton(t.tokens, all, func(int32) bool { return true })
	}
	for b := range 256 {
		t.byteTokens[b] = t.findByteToken(byte(b))
	}
	if !t.bpe && !t.wpm {
		t.spmWords = true
		for _, s := range t.tokens {
			if !onlySpaceRuns(s) {
				t.spmWords = false
				break
			}
		}
	}
	t.pieces = make([][]byte, n)
	for i := range t.pieces {
		t.pieces[i] = t.piece(int32(i))
	}
	return t, nil
}

// isPhi3 reports whether a model of this name gets llama.cpp's rule for
// Phi-3: its name, ASCII letters lowered, holds "phi-3" or "phi3".
func isPhi3(name string) bool {
	b := []byte(name)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return strings.Contains(string(b), "phi-3") || strings.Contains(string(b), "phi3")
}

// findByteToken is the token of byte b: <0xNN> or the byte itself for
// SentencePiece, its rune of the byte-to-unicode map for byte-level BPE;
// -1 if the vocabulary has none.
func (t *Tokenizer) findByteToken(b byte) int32 {
	if t.bpe {
		if id, ok := t.ids[string(byteRune[b])]; ok {
			return id
		}
		return -1
	}
	if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
		return id
	}
	if id, ok := t.ids[string([]byte{b})]; ok {
		return id
	}
	return -1
}

// CanEncode returns nil if the tokenizer encodes, or the ErrUnsupported
// error that says why not: a tokenizer of NewForDecoding whose
// pre-tokenizer this package does not implement. Tokenizers of New and
// FromGGUF always encode.
func (t *Tokenizer) CanEncode() error { return t.encErr }

// Len returns the number of tokens.
func (t *Tokenizer) Len() int { return len(t.tokens) }

// Model returns "llama" (SentencePiece), "gpt2" (byte-level BPE) or
// "bert" (WordPiece).
func (t *Tokenizer) Model() string {
	if t.bpe {
		return "gpt2"
	}
	if t.wpm {
		return "bert"
	}
	return "llama"
}

// BOS returns the beginning-of-sequence token (BERT's [CLS]), or -1.
func (t *Tokenizer) BOS() int32 { return t.bos }

// SEP returns the separator token (BERT's [SEP], which
// EncodeOptions.AddSpecial puts at the end of a "bert" text), or -1.
func (t *Tokenizer) SEP() int32 { return t.sep }

// PAD returns the padding token (tokenizer.ggml.padding_token_id), or -1.
func (t *Tokenizer) PAD() int32 { return t.pad }

// MASK returns the mask token (tokenizer.ggml.mask_token_id), or -1.
func (t *Tokenizer) MASK() int32 { return t.mask }

// EOS returns the end-of-sequence token, or -1.
func (t *Tokenizer) EOS() int32 { return t.eos }

// EOT returns the end-of-turn token (tokenizer.ggml.eot_token_id), or -1.
func (t *Tokenizer) EOT() int32 { return t.eot }

// EOM returns the end-of-message token (tokenizer.ggml.eom_token_id), or
// -1.
func (t *Tokenizer) EOM() int32 { return t.eom }

// UNK returns the unknown token, or -1.
func (t *Tokenizer) UNK() int32 { return t.unk }

// AddsBOS reports whether EncodeOptions.AddSpecial puts BOS in front:
// as the vocabulary says (Vocab.AddBOS), and always for "bert".
func (t *Tokenizer) AddsBOS() bool { return t.addBOS || t.wpm }

// AddsEOS reports whether EncodeOptions.AddSpecial puts EOS at the end:
// as the vocabulary says (Vocab.AddEOS), and never for "bert", which
// puts SEP there instead.
func (t *Tokenizer) AddsEOS() bool { return t.addEOS && !t.wpm }

// IsEOG reports whether token id ends generation (llama_vocab_is_eog): EOS,
// EOT, EOM, or a token llama.cpp takes for one by its text
// ("<|eot_id|>", "<end_of_turn>", ...).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// Token returns token id's text as the vocabulary writes it ("▁the",
// "Ġthe", "<0x0A>"), or "" for an ID outside the vocabulary.
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// Type returns token id's type as the vocabulary gives it, or
// TypeUndefined for an ID outside the vocabulary.
func (t *Tokenizer) Type(id int32) TokenType {
	if id < 0 || int(id) >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
}

// ID returns the token whose text is s, as the vocabulary writes it.
func (t *Tokenizer) ID(s string) (int32, bool) {
	id, ok := t.ids[s]
	return id, ok
}

// onlySpaceRuns reports whether every "▁" of s that is not at its start
// follows another "▁".
func onlySpaceRuns(s string) bool {
	for i := 1; i < len(s); i++ {
		if strings.HasPrefix(s[i:], "▁") && !strings.HasSuffix(s[:i], "▁") {
			return false
		}
	}
	return true
}
