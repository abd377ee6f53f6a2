package tokenizer

import (
	"errors"
	"fmt"

	"github.com/go-ggml/ggml/gguf"
)

// Keys of the tokenizer in a GGUF file.
const (
	keyModel       = "tokenizer.ggml.model"
	keyTokens      = "tokenizer.ggml.tokens"
	keyScores      = "tokenizer.ggml.scores"
	keyTypes       = "tokenizer.ggml.token_type"
	keyMerges      = "tokenizer.ggml.merges"
	keyPre         = "tokenizer.ggml.pre"
	keyAddBOS      = "tokenizer.ggml.add_bos_token"
	keyAddEOS      = "tokenizer.ggml.add_eos_token"
	keySpacePrefix = "tokenizer.ggml.add_space_prefix"
	keyName        = "general.name"
	keyLowercase   = "tokenizer.ggml.normalizer.lowercase"
	keyStripAcc    = "tokenizer.ggml.normalizer.strip_accents"
)

// ReadVocab reads the tokenizer keys of f (and general.name, for
// Vocab.Name) into a Vocab, with llama.cpp's defaults for the special
// tokens a file does not name (SentencePiece: BOS 1, EOS 2, unknown 0;
// byte-level BPE: BOS and EOS 11; WordPiece: BOS ([CLS]) 101, unknown
// 100, SEP 102, PAD 0, MASK 103, no EOS; none where the vocabulary is
// smaller), and WordPiece's normalization
// (tokenizer.ggml.normalizer.lowercase, strip_accents). A missing
// tokenizer.ggml.model, tokens, or
// merges of a "gpt2" model, or a key of the wrong type, is an ErrKey
// error; a special token ID outside the vocabulary an ErrTokenID error.
// New checks the rest.
func ReadVocab(f *gguf.File) (Vocab, error) {
	v := Vocab{BOS: -1, EOS: -1, UNK: -1, EOT: -1, EOM: -1, SEP: -1, PAD: -1, MASK: -1}
	var err error
	if v.Model, err = f.String(keyModel); err != nil {
		return Vocab{}, keyErr(err)
	}
	if v.Tokens, err = f.Strings(keyTokens); err != nil {
		return Vocab{}, keyErr(err)
	}
	n := int32(len(v.Tokens))
	switch v.Model {
	case "llama":
		v.BOS, v.EOS, v.UNK = 1, 2, 0
	case "bert":
		v.BOS, v.UNK, v.SEP, v.PAD, v.MASK = 101, 100, 102, 0, 103
	case "gpt2":
		v.BOS, v.EOS = 11, 11
		if v.Merges, err = f.Strings(keyMerges); err != nil {
			return Vocab{}, keyErr(err)
		}
		if _, ok := f.Value(keyPre); ok {
			if v.Pre, err = f.String(keyPre); err != nil {
				return Vocab{}, keyErr(err)
			}
		}
	default:
		return Vocab{}, fmt.Errorf("tokenizer: %w: %s is %q (want llama, gpt2 or bert)", ErrUnsupported, keyModel, v.Model)
	}
	for _, id := range []*int32{&v.BOS, &v.EOS, &v.UNK, &v.SEP, &v.PAD, &v.MASK} {
		if *id >= n {
			*id = -1
		}
	}
	if val, ok := f.Value(keyScores); ok {
		switch s := val.Any().(type) {
		case []float32:
			v.Scores = s
		case []int32:
			v.Scores = make([]float32, len(s))
			for i, x := range s {
				v.Scores[i] = float32(x)
			}
		default:
			return Vocab{}, fmt.Errorf("tokenizer: %w: %s is %v, want an array of f32 or i32", ErrKey, keyScores, val.Type())
		}
	}
	if _, ok := f.Value(keyTypes); ok {
		types, err := gguf.Get[[]int32](f, keyTypes)
		if err != nil {
			return Vocab{}, keyErr(err)
		}
		v.Types = make([]TokenType, len(types))
		for i, x := range types {
			v.Types[i] = TokenType(x)
		}
	}
	for _, p := range []struct {
		key string
		id  *int32
	}{
		{"bos_token_id", &v.BOS}, {"eos_token_id", &v.EOS}, {"unknown_token_id", &v.UNK},
		{"eot_token_id", &v.EOT}, {"eom_token_id", &v.EOM},
		{"seperator_token_id", &v.SEP}, {"padding_token_id", &v.PAD}, {"mask_token_id", &v.MASK}, // sic: "seperator", as llama.cpp spells it
	} {
		key := "tokenizer.ggml." + p.key
		val, ok := f.Value(key)
		if !ok {
			continue
		}
		var id int64
		switch x := val.Any().(type) {
		case uint32:
			id = int64(x)
		case int32:
			id = int64(x)
		case uint64:
			id = int64(min(x, 1<<62))
		case int64:
			id = x
		default:
			return Vocab{}, fmt.Errorf("tokenizer: %w: %s is %v, want an integer", ErrKey, key, val.Type())
		}
		if id < 0 || id >= int64(n) {
			return Vocab{}, fmt.Errorf("tokenizer: %w: %s is %d, and the vocabulary has %d tokens", ErrTokenID, key, id, n)
		}
		*p.id = int32(id)
	}
	if _, ok := f.Value(keyName); ok {
		if v.Name, err = f.String(keyName); err != nil {
			return Vocab{}, keyErr(err)
		}
	}
	for _, p := range []struct {
		key string
		v   **bool
	}{{keyAddBOS, &v.AddBOS}, {keyAddEOS, &v.AddEOS}, {keySpacePrefix, &v.AddSpacePrefix}, {keyLowercase, &v.Lowercase}, {keyStripAcc, &v.StripAccents}} {
		if _, ok := f.Value(p.key); !ok {
			continue
		}
		b, err := f.Bool(p.key)
		if err != nil {
			return Vocab{}, keyErr(err)
		}
		*p.v = &b
	}
	return v, nil
}

// FromGGUF makes the tokenizer of f: ReadVocab, then New.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	v, err := ReadVocab(f)
	if err != nil {
		return nil, err
	}
	return New(v)
}

// FromGGUFForDecoding makes the tokenizer of f as NewForDecoding does:
// ReadVocab, then NewForDecoding. A file whose pre-tokenizer this package
// does not implement gives a tokenizer that decodes, and whose CanEncode
// says why it does not encode.
func FromGGUFForDecoding(f *gguf.File) (*Tokenizer, error) {
	v, err := ReadVocab(f)
	if err != nil {
		return nil, err
	}
	return NewForDecoding(v)
}

// keyErr wraps an error of package gguf's getters in ErrKey.
func keyErr(err error) error {
	if errors.Is(err, ErrKey) {
		return err
	}
	return fmt.Errorf("tokenizer: %w: %w", ErrKey, err)
}
