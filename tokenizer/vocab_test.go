package tokenizer

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/gguf"
)

// The real vocabularies of the tests come from the test data of the
// ollama module (a dependency of go-ggml, in the module cache): Llama
// 3.2's byte-level BPE (encoder.json, vocab.bpe), Gemma 2's SentencePiece
// model (tokenizer.model) and War and Peace. Only the data is used.

var ollamaDir = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ollama/ollama").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m github.com/ollama/ollama: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
})

// testdata returns the path of a file of ollama's tokenizer test data.
func testdata(t testing.TB, name string) string {
	t.Helper()
	dir, err := ollamaDir()
	require.NoError(t, err)
	p := filepath.Join(dir, "tokenizer", "testdata", name)
	_, err = os.Stat(p)
	require.NoError(t, err, "the ollama module's test data (go mod download github.com/ollama/ollama)")
	return p
}

// llama3Specials are Llama 3.1/3.2's 256 special tokens from ID 128000
// on, as its tokenizer_config.json names them.
func llama3Specials() []string {
	named := map[int]string{
		0: "<|begin_of_text|>", 1: "<|end_of_text|>", 4: "<|finetune_right_pad_id|>",
		6: "<|start_header_id|>", 7: "<|end_header_id|>", 8: "<|eom_id|>", 9: "<|eot_id|>", 10: "<|python_tag|>",
	}
	var out []string
	reserved := 0
	for i := range 256 {
		if s, ok := named[i]; ok {
			out = append(out, s)
			continue
		}
		out = append(out, fmt.Sprintf("<|reserved_special_token_%d|>", reserved))
		reserved++
	}
	return out
}

// llama3Vocab is Llama 3.2's vocabulary as llama.cpp's converter writes
// it: the tokens by ID, the special tokens (control), the merges, the
// llama-bpe pre-tokenizer, BOS 128000, EOS 128009 (the instruct model's).
var llama3Vocab = sync.OnceValues(func() (Vocab, error) {
	dir, err := ollamaDir()
	if err != nil {
		return Vocab{}, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer", "testdata", "llama3.2", "encoder.json"))
	if err != nil {
		return Vocab{}, err
	}
	var enc map[string]int32
	if err := json.Unmarshal(b, &enc); err != nil {
		return Vocab{}, err
	}
	tokens := make([]string, len(enc))
	for s, id := range enc {
		if id < 0 || int(id) >= len(tokens) || tokens[id] != "" {
			return Vocab{}, fmt.Errorf("encoder.json: id %d", id)
		}
		tokens[id] = s
	}
	types := make([]TokenType, len(tokens))
	for i := range types {
		types[i] = TypeNormal
	}
	for _, s := range llama3Specials() {
		tokens = append(tokens, s)
		types = append(types, TypeControl)
	}
	f, err := os.Open(filepath.Join(dir, "tokenizer", "testdata", "llama3.2", "vocab.bpe"))
	if err != nil {
		return Vocab{}, err
	}
	defer f.Close()
	var merges []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#version") {
			merges = append(merges, line)
		}
	}
	if err := sc.Err(); err != nil {
		return Vocab{}, err
	}
	yes := true
	return Vocab{
		Model: "gpt2", Pre: "llama-bpe", Tokens: tokens, Types: types, Merges: merges,
		BOS: 128000, EOS: 128009, UNK: -1, EOT: -1, EOM: -1, AddBOS: &yes,
	}, nil
})

// gemma2Vocab is Gemma 2's SentencePiece vocabulary as llama.cpp's
// converter writes a SentencePiece model (its _create_vocab_sentencepiece):
// the pieces, scores and types of tokenizer.model, where a user-defined
// piece becomes a normal token; BOS 2, EOS 1, unknown 3, and no space in
// front (Gemma's add_space_prefix false). The model is "llama": llama.cpp
// tokenizes it as plain SentencePiece.
var gemma2Vocab = sync.OnceValues(func() (Vocab, error) {
	dir, err := ollamaDir()
	if err != nil {
		return Vocab{}, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer", "testdata", "gemma2", "tokenizer.model"))
	if err != nil {
		return Vocab{}, err
	}
	pieces, err := parseSentencePiece(b)
	if err != nil {
		return Vocab{}, err
	}
	v := Vocab{Model: "llama", BOS: 2, EOS: 1, UNK: 3, EOT: -1, EOM: -1}
	for _, p := range pieces {
		typ := p.typ
		if typ == TypeUserDefined {
			typ = TypeNormal
		}
		v.Tokens = append(v.Tokens, p.piece)
		v.Scores = append(v.Scores, p.score)
		v.Types = append(v.Types, typ)
	}
	no := false
	v.AddSpacePrefix = &no
	return v, nil
})

// spPiece is one piece of a SentencePiece model.
type spPiece struct {
	piece string
	score float32
	typ   TokenType
}

// parseSentencePiece reads the pieces of a SentencePiece ModelProto: its
// repeated field 1, each a message of piece (1, string), score (2, float)
// and type (3, enum; normal when absent). Other fields are skipped.
func parseSentencePiece(b []byte) ([]spPiece, error) {
	var out []spPiece
	err := protoFields(b, func(field int, wire int, v uint64, data []byte) error {
		if field != 1 || wire != 2 {
			return nil
		}
		p := spPiece{typ: TypeNormal}
		err := protoFields(data, func(field int, wire int, v uint64, data []byte) error {
			switch {
			case field == 1 && wire == 2:
				p.piece = string(data)
			case field == 2 && wire == 5:
				p.score = math.Float32frombits(uint32(v))
			case field == 3 && wire == 0:
				p.typ = TokenType(v)
			}
			return nil
		})
		out = append(out, p)
		return err
	})
	return out, err
}

// protoFields calls f with each field of a protobuf message: its number,
// wire type, and value (varint and fixed) or bytes (length-delimited).
func protoFields(b []byte, f func(field, wire int, v uint64, data []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("protobuf: bad key")
		}
		b = b[n:]
		field, wire := int(key>>3), int(key&7)
		var v uint64
		var data []byte
		switch wire {
		case 0:
			v, n = binary.Uvarint(b)
			if n <= 0 {
				return fmt.Errorf("protobuf: bad varint")
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return fmt.Errorf("protobuf: short fixed64")
			}
			v, b = binary.LittleEndian.Uint64(b), b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return fmt.Errorf("protobuf: bad length")
			}
			data, b = b[n:n+int(l)], b[n+int(l):]
		case 5:
			if len(b) < 4 {
				return fmt.Errorf("protobuf: short fixed32")
			}
			v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		default:
			return fmt.Errorf("protobuf: wire type %d", wire)
		}
		if err := f(field, wire, v, data); err != nil {
			return err
		}
	}
	return nil
}

// realVocab returns a vocabulary by name, failing the test when it
// cannot be read.
func realVocab(t testing.TB, name string) Vocab {
	t.Helper()
	var v Vocab
	var err error
	switch name {
	case "llama3":
		v, err = llama3Vocab()
	case "gemma2":
		v, err = gemma2Vocab()
	case "bert":
		v, err = bertVocab()
	case "bert-cased":
		v, err = bertCasedVocab()
	default:
		t.Fatalf("no vocabulary %s", name)
	}
	require.NoError(t, err, "the ollama module's test data (go mod download github.com/ollama/ollama)")
	return v
}

// writeGGUF writes a GGUF file with the vocabulary v and the metadata of
// a small Llama model (no tensors: llama.cpp reads it with vocab_only), and
// extra keys, at a new path.
func writeGGUF(t testing.TB, v Vocab, extra map[string]any) string {
	t.Helper()
	b := gguf.NewBuilder()
	set := func(key string, val any) { require.NoError(t, b.Set(key, val), key) }
	set(gguf.KeyArchitecture, "llama")
	name := "tokenizer test"
	if v.Name != "" {
		name = v.Name
	}
	set("general.name", name)
	for _, kv := range []struct {
		k string
		v uint32
	}{
		{"llama.context_length", 512}, {"llama.embedding_length", 64}, {"llama.block_count", 1},
		{"llama.feed_forward_length", 128}, {"llama.attention.head_count", 4}, {"llama.attention.head_count_kv", 4},
		{"llama.rope.dimension_count", 16}, {"llama.vocab_size", uint32(len(v.Tokens))},
	} {
		set(kv.k, kv.v)
	}
	set("llama.attention.layer_norm_rms_epsilon", float32(1e-5))
	set(keyModel, v.Model)
	set(keyTokens, v.Tokens)
	if v.Scores != nil {
		set(keyScores, v.Scores)
	}
	if v.Types != nil {
		types := make([]int32, len(v.Types))
		for i, x := range v.Types {
			types[i] = int32(x)
		}
		set(keyTypes, types)
	}
	if v.Model == "gpt2" {
		set(keyMerges, v.Merges)
		if v.Pre != "" {
			set(keyPre, v.Pre)
		}
	}
	for _, id := range []struct {
		key string
		id  int32
	}{{"bos_token_id", v.BOS}, {"eos_token_id", v.EOS}, {"unknown_token_id", v.UNK}} {
		bertDefault := v.Model == "bert" && (id.key == "bos_token_id" && id.id == 101 || id.key == "unknown_token_id" && id.id == 100)
		if id.id >= 0 && !bertDefault {
			set("tokenizer.ggml."+id.key, uint32(id.id))
		}
	}
	if v.Model == "bert" {
		// BERT's IDs are llama.cpp's defaults: written only where they
		// differ (a file of the default layout has none).
		for _, id := range []struct {
			key      string
			id, dflt int32
		}{{"seperator_token_id", v.SEP, 102}, {"padding_token_id", v.PAD, 0}, {"mask_token_id", v.MASK, 103}} {
			if id.id >= 0 && id.id != id.dflt {
				set("tokenizer.ggml."+id.key, uint32(id.id))
			}
		}
	}
	for _, f := range []struct {
		key string
		v   *bool
	}{{keyAddBOS, v.AddBOS}, {keyAddEOS, v.AddEOS}, {keySpacePrefix, v.AddSpacePrefix}, {keyLowercase, v.Lowercase}, {keyStripAcc, v.StripAccents}} {
		if f.v != nil {
			set(f.key, *f.v)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set(k, extra[k])
	}
	path := filepath.Join(t.TempDir(), "vocab.gguf")
	require.NoError(t, b.WriteFile(path))
	return path
}
