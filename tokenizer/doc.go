// Package tokenizer turns text into the token IDs of a Llama (or BERT)
// GGUF file and back, as llama.cpp does, token for token. Its code is Go
// and calls no C, and nothing in it depends on the provider; it imports
// package gguf (to read a file's tokenizer keys: FromGGUF, ReadVocab),
// which links ggml, so a program that uses it is built with cgo like the
// rest of go-ggml.
//
//	f, err := gguf.Open("model.gguf")
//	tok, err := tokenizer.FromGGUF(f)
//	ids := tok.Encode("Once upon a time", tokenizer.EncodeOptions{AddSpecial: true})
//	text, err := tok.Decode(ids, tokenizer.DecodeOptions{})
//
// New builds a tokenizer from plain slices (a Vocab) instead of a file.
//
// # Families
//
// Three families (tokenizer.ggml.model): the two Llama files use, and
// BERT's:
//
//   - "llama": SentencePiece (Llama 1 and 2, Mistral, TinyLlama; Gemma's
//     vocabulary too). Spaces are written "▁", a space is put in front of
//     the text (tokenizer.ggml.add_space_prefix, default true) and after
//     each special token; pairs of pieces merge, the best scored first
//     (tokenizer.ggml.scores); a character no token covers is spelled
//     with byte tokens <0xNN>.
//   - "gpt2": byte-level BPE (Llama 3). The text is split into words by
//     the pre-tokenizer that tokenizer.ggml.pre names, each byte of a
//     word becomes one printable rune (GPT-2's byte-to-unicode map), and
//     the pairs of tokenizer.ggml.merges merge, the lowest rank first.
//     Pre-tokenizers: "llama-bpe" (and its aliases "llama3", "llama-v3",
//     "falcon3", "pixtral": Llama 3's regular expression, with words that
//     are whole tokens kept whole), "smaug-bpe" (Llama 3's expression,
//     every word merged), "smollm" (SmolLM: each digit alone, then GPT-2's
//     expression; decoding keeps spaces before punctuation), "qwen2"
//     (Qwen 2, 2.5 and 3, and its aliases "deepseek-r1-qwen", "kormo",
//     "f2llmv2", "hunyuan", "solar-open": Llama 3's expression with each
//     number alone, every word merged, decoding keeps spaces; "megrez" and
//     "stablelm2" the same with the clean-up of spaces), "gpt-2" (GPT-2's
//     expression), and "default" (llama.cpp's default: punctuation runs,
//     GPT-2's expression, digit runs and triples), which a file without
//     the key gets, as in llama.cpp. Another name is an ErrUnsupported
//     error of New and FromGGUF.
//   - "bert": WordPiece (BERT-family embedding models: all-MiniLM, bge,
//     nomic-embed), llama.cpp's LLAMA_VOCAB_TYPE_WPM. The text is
//     lowered and its accents stripped (tokenizer.ggml.normalizer.lowercase
//     and strip_accents, both true by default), split at white space,
//     with each punctuation mark, ASCII symbol and CJK ideograph a word
//     of its own, and control characters left out; each word, with "▁"
//     in front (llama.cpp's converter writes a token that starts a word
//     "▁the" and a continuation "##ing" as "ing"), is split greedily, the
//     longest token first, and a word that does not split is the unknown
//     token. EncodeOptions.AddSpecial puts [CLS] (the BOS) in front and
//     [SEP] at the end, whatever tokenizer.ggml.add_bos_token says.
//     Decoding writes "▁" as a space (the text comes back lowered, with
//     a space in front of each word) and cleans up spaces before
//     punctuation.
//
// # Decoding only
//
// A vocabulary whose pre-tokenizer this package does not implement can
// still be read: NewForDecoding and FromGGUFForDecoding accept it, and
// give a tokenizer that decodes, answers about its tokens (Len, Token,
// Type, BOS, EOS, EOT, IsEOG) and refuses to encode: CanEncode returns
// the ErrUnsupported error that names the pre-tokenizer, and Encode
// panics with it. A program that runs any model and encodes only when it
// can loads its tokenizer so:
//
//	tok, err := tokenizer.FromGGUFForDecoding(f)
//	...
//	if err := tok.CanEncode(); err != nil {
//		return err // a prompt cannot be tokenized; token IDs still can be decoded
//	}
//	ids := tok.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: true})
//
// # Special tokens
//
// Control and unknown tokens ("<s>", "<|eot_id|>") are read in a text only
// when EncodeOptions.ParseSpecial asks; otherwise the text "<s>" is
// tokenized as the characters it is made of. User-defined tokens are always
// read whole, as in llama.cpp. EncodeOptions.AddSpecial adds BOS and EOS
// as the file says (tokenizer.ggml.add_bos_token, add_eos_token, with
// llama.cpp's defaults: BOS for SentencePiece and Llama 3). As llama.cpp
// does, tokens whose texts mark the end of a turn or fill-in-the-middle
// ("<|eot_id|>", "<end_of_turn>", "<|fim_prefix|>", ...) are treated as
// control tokens whatever their type in the file.
//
// # Decoding
//
// Decode is llama_detokenize (with its clean-up of spaces before
// punctuation for byte-level BPE), Piece is llama_token_to_piece, and a
// Decoder turns tokens into text as they come, holding back the bytes of a
// character that is not complete yet.
//
// # Differences from llama.cpp
//
// Character classes (letters, numbers, white space) come from Go's unicode
// tables, whose Unicode version may differ from llama.cpp's for characters
// assigned recently. A byte-level text with a UTF-8 sequence that encodes a
// value above U+10FFFF is read as U+FFFD, where llama.cpp fails. A
// SentencePiece vocabulary without a byte token for a byte it needs gives
// the unknown token (or nothing without one), where llama.cpp fails; a
// WordPiece word that does not split, in a vocabulary without an unknown
// token, gives nothing, where llama.cpp writes the ID -1. WordPiece's
// accent stripping takes each character's canonical decomposition from
// a table of Unicode 14 (nfd.go, made from Python's unicodedata), where
// llama.cpp has its own. A WordPiece vocabulary without [CLS] or [SEP]
// is refused by New (ErrTokenID), where llama.cpp fails when it
// tokenizes with AddSpecial, and a byte token in one is decoded as
// SentencePiece's are, where llama.cpp fails to load it. A
// NaN score, which llama.cpp's comparisons leave unordered, takes a fixed
// place of its own among the scores (by its bits), and a SentencePiece
// byte token shorter than "<0x" is the byte 0, where llama.cpp fails.
// Of llama.cpp's per-model attribute rules, Phi-3's (white space after a
// special token goes with it; Vocab.Name) is applied, also to a
// vocabulary without <s>, </s>, <unk> or <|endoftext|>, where llama.cpp
// fails; the others, for other families (gpt-oss and Gemma 4
// workarounds), are not. A byte-level BPE token with characters outside
// GPT-2's byte map is decoded with llama.cpp's marker for each of them,
// "[UNK_BYTE_0x<its UTF-8 in hex><the token's text>]", as llama.cpp writes
// it, except that the token's text is in the first marker only (the later
// ones are "[UNK_BYTE_0x<hex>]"): llama.cpp's piece grows with the square
// of the token's length. And New refuses a vocabulary beyond
// MaxTokenLen and MaxVocabBytes (ErrTooLarge), which llama.cpp takes.
//
// # Limits
//
// What a vocabulary can make a tokenizer allocate is bounded by the
// vocabulary's size: a token has at most MaxTokenLen bytes, and the
// tokens and merges together at most MaxVocabBytes, and the tokenizer's
// memory is a small multiple of that. Encode finds the special tokens in
// a text in time linear in the text (and the logarithm of the count of
// places where special tokens start), however many special tokens there
// are and however they nest. WordPiece finds the longest token at each
// place of a word in time linear in the word, however long the tokens
// (with an automaton of all the tokens, of the size above a byte of the
// vocabulary), where llama.cpp tries every length up to the longest
// token's at each place.
//
// # Concurrency
//
// A Tokenizer is immutable once made and may be used by several goroutines
// at once. A Decoder is used by one goroutine at a time.
package tokenizer
