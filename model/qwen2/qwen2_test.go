package qwen2_test

import (
	"os"
	"testing"

	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model/modeltest"
	"github.com/go-ggml/ggml/model/qwen2"
)

func TestMain(m *testing.M) { os.Exit(testutil.RunLeakChecked(m)) }

// TestMatchesReference holds qwen2's logits to the float64 reference, for
// f32 and q8_0 weights, tied and not, over a prompt and generated tokens.
func TestMatchesReference(t *testing.T) {
	c := modeltest.Presets["tiny"]
	c.Arch = qwen2.Arch
	modeltest.CheckReference(t, modeltest.RandomModel{Config: c})
}

// TestMatchesLlamaCpp holds qwen2's greedy tokens and logits to llama.cpp's
// on the same random files: f32 and q8_0, tied and not, with a GPT-2
// vocabulary as qwen2's files have.
func TestMatchesLlamaCpp(t *testing.T) {
	c := modeltest.Presets["tiny"]
	c.Arch, c.VocabSize = qwen2.Arch, 320
	modeltest.CheckLlamaCpp(t, modeltest.RandomModel{Config: c, Vocab: "gpt2"})
}
