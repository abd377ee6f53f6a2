package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/internal/testutil"
	"github.com/go-ggml/ggml/model/modeltest"
)

// TestServe: the command serves a random model on 127.0.0.1 with
// llama-server's flags, answers a chat completion, and stops when its
// context ends.
func TestServe(t *testing.T) {
	rng := testutil.NewRNG(t)
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	require.NoError(t, modeltest.WriteRandom(path, modeltest.RandomModel{Config: modeltest.Presets["tiny"], Converted: true, Seed: rng.Uint64()}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"-m", path, "--host", "127.0.0.1", "--port", "0", "-np", "2", "-c", "256", "-t", "2", "-ctk", "f32"}, ready, &stderr)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("run: %v (%s)", err, stderr.String())
	}
	body := `{"messages":[{"role":"user","content":"hello"}],"max_tokens":3,"ignore_eos":true}`
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	assert.Equal(t, "tiny", out.Model)
	assert.Equal(t, 3, out.Usage.CompletionTokens)
	assert.Contains(t, stderr.String(), "2 sequences, 256 cells")
	cancel()
	require.NoError(t, <-done)

	require.Error(t, run(context.Background(), nil, nil, &stderr), "no model")
}
