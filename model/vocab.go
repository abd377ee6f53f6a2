package model

import (
	"fmt"
	"math"
	"strings"

	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/tokenizer"
)

// Vocab is a model's vocabulary (tokenizer.ggml.tokens) for turning token
// IDs into text. It decodes the two kinds llama.cpp's Llama files use:
// SentencePiece ("llama": "▁" is a space, <0xNN> is the byte NN) and
// GPT-2 byte-level BPE ("gpt2", Llama 3: each byte is one printable rune).
// Its tokenizer (Tokenizer: package tokenizer, llama.cpp's tokenizers in
// Go) turns text into tokens.
type Vocab struct {
	tok    *tokenizer.Tokenizer
	tokErr error
	tokens []string
	types  []int32 // tokenizer.ggml.token_type, nil if absent
	gpt2   bool
	BOS    int // tokenizer.ggml.bos_token_id, -1 if absent
	EOS    int // tokenizer.ggml.eos_token_id, -1 if absent
}

// Token types of tokenizer.ggml.token_type (llama.cpp's
// llama_token_type).
const (
	TokenNormal      = 1
	TokenUnknown     = 2
	TokenControl     = 3
	TokenUserDefined = 4
	TokenUnused      = 5
	TokenByte        = 6
)

// ReadVocab reads the vocabulary of f; a file without one gives a Vocab
// whose tokens print as their IDs. A tokenizer model other than llama
// (SentencePiece) and gpt2 (byte-level BPE), a token_type or scores array
// of another length than the tokens, or a BOS or EOS ID outside the
// vocabulary is an ErrModel error.
func ReadVocab(f *gguf.File) (*Vocab, error) {
	v := &Vocab{BOS: -1, EOS: -1}
	if _, ok := f.Value("tokenizer.ggml.tokens"); !ok {
		return v, nil
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModel, err)
	}
	v.tokens = tokens
	if _, ok := f.Value("tokenizer.ggml.model"); ok {
		m, err := f.String("tokenizer.ggml.model")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrModel, err)
		}
		switch m {
		case "llama":
		case "gpt2":
			v.gpt2 = true
		default:
			return nil, fmt.Errorf("%w: tokenizer.ggml.model %q: this example decodes llama (SentencePiece) and gpt2 (byte-level BPE) vocabularies", ErrModel, m)
		}
	}
	if _, ok := f.Value("tokenizer.ggml.token_type"); ok {
		types, err := gguf.Get[[]int32](f, "tokenizer.ggml.token_type")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrModel, err)
		}
		if len(types) != len(tokens) {
			return nil, fmt.Errorf("%w: %d token types for %d tokens", ErrModel, len(types), len(tokens))
		}
		v.types = types
	}
	if val, ok := f.Value("tokenizer.ggml.scores"); ok && val.Len() != len(tokens) {
		return nil, fmt.Errorf("%w: %d token scores for %d tokens", ErrModel, val.Len(), len(tokens))
	}
	for _, p := range []struct {
		key string
		id  *int
	}{{"bos_token_id", &v.BOS}, {"eos_token_id", &v.EOS}} {
		val, ok := f.Value("tokenizer.ggml." + p.key)
		if !ok {
			continue
		}
		var id int64 = -1
		switch x := val.Any().(type) {
		case uint32:
			id = int64(x)
		case int32:
			id = int64(x)
		case uint64:
			id = int64(min(x, math.MaxInt32))
		case int64:
			id = x
		default:
			return nil, fmt.Errorf("%w: tokenizer.ggml.%s is a %v, want an integer", ErrModel, p.key, val.Type())
		}
		if id < 0 || id >= int64(len(tokens)) {
			return nil, fmt.Errorf("%w: tokenizer.ggml.%s is %d, outside the vocabulary of %d", ErrModel, p.key, id, len(tokens))
		}
		*p.id = int(id)
	}
	v.tok, v.tokErr = tokenizer.FromGGUF(f)
	return v, nil
}

// Tokenizer returns the file's tokenizer, or the error that says why it
// has none (no vocabulary, or one package tokenizer refuses); the model
// runs without one, from token IDs.
func (v *Vocab) Tokenizer() (*tokenizer.Tokenizer, error) {
	if v.tok == nil && v.tokErr == nil {
		return nil, fmt.Errorf("%w: the file has no vocabulary", ErrModel)
	}
	return v.tok, v.tokErr
}

// IsEOG reports whether token id ends generation: EOS, or a token the
// tokenizer takes for an end (of a turn, "<|eot_id|>"), as llama.cpp does.
func (v *Vocab) IsEOG(id int32) bool {
	if v.tok != nil {
		return v.tok.IsEOG(id)
	}
	return v.EOS >= 0 && id == int32(v.EOS)
}

// Type returns the type of token id (TokenNormal, TokenControl, ...), or
// 0 when the file gives none or id is outside the vocabulary.
func (v *Vocab) Type(id int32) int {
	if id < 0 || int(id) >= len(v.types) {
		return 0
	}
	return int(v.types[id])
}

// Len returns the number of tokens (0 when the file has no vocabulary).
func (v *Vocab) Len() int { return len(v.tokens) }

// Piece returns token id as it is written in the file, or "" when there is
// no such token.
func (v *Vocab) Piece(id int32) string {
	if id < 0 || int(id) >= len(v.tokens) {
		return ""
	}
	return v.tokens[id]
}

// Bytes returns the bytes token id stands for: the piece with "▁" turned
// into a space, a byte token <0xNN> (of type TokenByte, or any such piece
// when the file gives no types) into the byte NN (SentencePiece), or the
// piece's runes mapped back to bytes (GPT-2). Control tokens print as
// their pieces ("<s>", "<|eot_id|>"). An ID outside the vocabulary gives
// "<id>".
func (v *Vocab) Bytes(id int32) []byte {
	if id < 0 || int(id) >= len(v.tokens) {
		return fmt.Appendf(nil, "<%d>", id)
	}
	p := v.tokens[id]
	if v.gpt2 {
		out := make([]byte, 0, len(p))
		for _, r := range p {
			if b, ok := gpt2Byte[r]; ok {
				out = append(out, b)
			} else {
				out = append(out, string(r)...)
			}
		}
		return out
	}
	if t := v.Type(id); (t == TokenByte || t == 0) && len(p) == 6 && strings.HasPrefix(p, "<0x") && p[5] == '>' {
		var b byte
		if _, err := fmt.Sscanf(p[3:5], "%02X", &b); err == nil {
			return []byte{b}
		}
	}
	return []byte(strings.ReplaceAll(p, "▁", " "))
}

// Decode returns the text of a sequence of tokens.
func (v *Vocab) Decode(ids []int32) string {
	var b []byte
	for _, id := range ids {
		b = append(b, v.Bytes(id)...)
	}
	return string(b)
}

// gpt2Byte inverts GPT-2's bytes_to_unicode: printable Latin-1 bytes stand
// for themselves, the others for the runes from U+0100 on, in order.
var gpt2Byte = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}()
