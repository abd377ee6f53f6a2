package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/model"
	"github.com/go-ggml/ggml/model/chat"
	"github.com/go-ggml/ggml/model/modeltest"
)

// TestMain runs the program itself when the test binary is started with
// CHAT_MAIN=1 (TestReadmeProgram does).
func TestMain(m *testing.M) {
	if os.Getenv("CHAT_MAIN") == "1" {
		os.Args = append([]string{"chat"}, os.Args[len(os.Args)-1])
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestReadmeProgram runs the README's program on a random Qwen3 file
// with a chat template and wants the library's Chat reply.
func TestReadmeProgram(t *testing.T) {
	c := modeltest.Presets["tiny"]
	c.Arch, c.VocabSize = "qwen3", 512
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: c, Vocab: "gpt2", Converted: true, Type: ggml.TypeQ8_0, Seed: 3}))
	cmd := exec.Command(os.Args[0], "-test.run=^$", path)
	cmd.Env = append(os.Environ(), "CHAT_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr // ggml's backends log there (ggml_vulkan's banner)
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())

	m, err := model.Load(context.Background(), path, model.Options{})
	require.NoError(t, err)
	defer m.Close()
	var want strings.Builder
	msgs := []chat.Message{{Role: "user", Content: "Why is the sky blue?"}}
	for piece, err := range m.Chat(context.Background(), msgs, model.GenerateOptions{MaxTokens: 128}) {
		require.NoError(t, err)
		want.WriteString(piece)
	}
	require.NotEmpty(t, want.String())
	assert.Equal(t, want.String()+"\n", string(out))
}

// The README's model program is this one, from its package clause on.
func TestREADMEIsThisProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	prog := string(src[strings.Index(string(src), "package main\n"):])
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	i := strings.Index(string(readme), "```go\n"+prog)
	require.GreaterOrEqual(t, i, 0, "README.md has no ```go block with examples/chat/main.go's program")
	rest := string(readme[i+len("```go\n")+len(prog):])
	require.True(t, strings.HasPrefix(rest, "```\n"), "README.md's model program goes on past examples/chat/main.go's")
}
