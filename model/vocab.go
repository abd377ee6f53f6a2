package model

import (
	"errors"
	"fmt"

	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/tokenizer"
)

// ErrNoTokenizer is Model.Tokenizer's error for a file without a
// vocabulary (no tokenizer.ggml.tokens): such a model runs from token IDs.
var ErrNoTokenizer = errors.New("model: the file has no vocabulary")

// readTokenizer reads f's tokenizer with package tokenizer, for decoding
// at least (tokenizer.FromGGUFForDecoding: a pre-tokenizer it cannot
// encode with still decodes). It returns the tokenizer, or why there is
// none (tokErr: no vocabulary, or a tokenizer model package tokenizer
// does not implement, such as BERT's WordPiece: the model runs from token
// IDs), or, for a vocabulary that contradicts itself or the model (arrays
// of different lengths, a special token outside it, bad merges, another
// number of tokens than token_embd's rows), an ErrModel error that Load
// returns.
func readTokenizer(f *gguf.File, vocabSize int) (tok *tokenizer.Tokenizer, tokErr, err error) {
	v, ok := f.Value("tokenizer.ggml.tokens")
	if !ok {
		return nil, ErrNoTokenizer, nil
	}
	if v.Len() != vocabSize {
		return nil, nil, fmt.Errorf("%w: %d tokens in tokenizer.ggml.tokens, %d rows in token_embd.weight", ErrModel, v.Len(), vocabSize)
	}
	tok, err = tokenizer.FromGGUFForDecoding(f)
	switch {
	case errors.Is(err, tokenizer.ErrUnsupported):
		return nil, fmt.Errorf("model: the file's tokenizer: %w", err), nil
	case err != nil:
		return nil, nil, fmt.Errorf("%w: %w", ErrModel, err)
	}
	return tok, nil, nil
}

// Tokenizer returns the file's tokenizer (package tokenizer, which
// tokenizes and decodes as llama.cpp does), or the error that says why it
// has none: ErrNoTokenizer, or one wrapping tokenizer.ErrUnsupported for a
// tokenizer model package tokenizer does not implement. The model runs
// without one, from token IDs. A tokenizer whose pre-tokenizer package
// tokenizer does not implement decodes but cannot encode: its CanEncode
// says why.
func (m *Model) Tokenizer() (*tokenizer.Tokenizer, error) {
	return m.tok, m.tokErr
}
