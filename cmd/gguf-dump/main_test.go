package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/ggml"
	"github.com/go-ggml/ggml/gguf"
)

func TestDump(t *testing.T) {
	b := gguf.NewBuilder()
	require.NoError(t, b.Set(gguf.KeyArchitecture, "llama"))
	require.NoError(t, b.Set("llama.block_count", uint32(32)))
	tokens := make([]string, 100)
	for i := range tokens {
		tokens[i] = string(rune('a' + i%26))
	}
	require.NoError(t, b.Set("tokenizer.ggml.tokens", tokens))
	require.NoError(t, b.Set("nested", []gguf.Value{gguf.NewValue([]int32{1, 2}), gguf.NewValue([]int32{3})}))
	require.NoError(t, b.AddTensor("token_embd.weight", ggml.TypeQ8_0, []int64{64, 10}, gguf.FromBytes(make([]byte, 34*2*10))))
	require.NoError(t, b.AddTensor("output_norm.weight", ggml.TypeF32, []int64{64}, gguf.FromBytes(make([]byte, 256))))
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, b.WriteFile(path))

	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-n", "3", path}))
	got := out.String()
	t.Log("\n" + got)
	want := `: GGUF version 3, 2.2 KiB
alignment 32, data at byte 1248, 2 tensors of 936 B, 4 key-value pairs

* 4 key-value pairs
    1: str      general.architecture = "llama"
    2: u32      llama.block_count = 32
    3: [100]str tokenizer.ggml.tokens = ["a", "b", "c", ... 97 more]
    4: [2][]i32 nested = [[1, 2], [3]]

* 2 tensors
  #  elements  type    shape  offset  bytes name
  1       640  q8_0  64 x 10    1248    680 token_embd.weight
  2        64   f32       64    1952    256 output_norm.weight
`
	assert.Equal(t, path+want, got)
	lines := strings.Split(got, "\n")
	assert.Contains(t, lines[len(lines)-2], "output_norm.weight")

	out.Reset()
	require.NoError(t, run(&out, []string{"-kv=false", path}))
	assert.NotContains(t, out.String(), "general.architecture")
	assert.Contains(t, out.String(), "token_embd.weight")

	bad := filepath.Join(t.TempDir(), "bad.gguf")
	require.NoError(t, os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\x7f\x00\x00\x00\x00\x00\x00\x00\x00"), 0o644))
	err := run(&out, []string{bad})
	require.ErrorIs(t, err, gguf.ErrFormat)
	assert.Contains(t, err.Error(), "cannot fit")
	require.ErrorIs(t, run(&out, nil), errUsage)
	require.ErrorIs(t, run(&out, []string{"-n", "-1", path}), errUsage)
	require.Error(t, run(&out, []string{path + ".missing"}))
	assert.Equal(t, "1.5 KiB", human(1536))
	assert.Equal(t, "3.0 GiB", human(3<<30))
}

// TestHelp: -h says what gguf-dump does and describes every flag.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-h"}))
	for _, want := range []string{"prints a GGUF file's header", "-n int", "-kv", "-tensors"} {
		assert.Contains(t, out.String(), want)
	}
}

// TestDumpEscapes: a key, a string value and a tensor name that hold
// escape sequences (and other control characters, invalid UTF-8) are
// printed escaped: no control byte of the file reaches the output.
func TestDumpEscapes(t *testing.T) {
	const esc = "\x1b[31mred\x1b]0;title\x07"
	b := gguf.NewBuilder()
	require.NoError(t, b.Set(gguf.KeyArchitecture, "llama"))
	require.NoError(t, b.Set("key"+esc, "value"+esc+"\r\xff"))
	require.NoError(t, b.Set("tokens", []string{"tok" + esc}))
	require.NoError(t, b.AddTensor("name"+esc+"\t\n", ggml.TypeF32, []int64{4}, gguf.FromBytes(make([]byte, 16))))
	require.NoError(t, b.AddTensor("plain.weight", ggml.TypeF32, []int64{4}, gguf.FromBytes(make([]byte, 16))))
	path := filepath.Join(t.TempDir(), "esc.gguf")
	require.NoError(t, b.WriteFile(path))

	var out bytes.Buffer
	require.NoError(t, run(&out, []string{path}))
	got := out.String()
	for i, c := range []byte(got) {
		if c < 0x20 && c != '\n' || c == 0x7f || c >= 0x80 {
			t.Fatalf("byte %#x at %d of the output:\n%q", c, i, got)
		}
	}
	q := `\x1b[31mred\x1b]0;title\a`
	assert.Contains(t, got, `"key`+q+`"`, "the key, quoted")
	assert.Contains(t, got, `"value`+q+`\r\xff"`, "the value, quoted")
	assert.Contains(t, got, `"tok`+q+`"`, "an array's string, quoted")
	assert.Contains(t, got, `"name`+q+`\t\n"`, "the tensor name, quoted")
	assert.Contains(t, got, " plain.weight\n", "a plain name as it is")
}

// TestDumpFIFO: a FIFO without a writer (or any file that is not a
// regular one) is refused at once, not waited on.
func TestDumpFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.gguf")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	t.Cleanup(func() {
		// Unblock a reader left waiting by a broken run.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	for _, path := range []string{fifo, dir} {
		done := make(chan error, 1)
		go func() { done <- run(&bytes.Buffer{}, []string{path}) }()
		select {
		case err := <-done:
			require.ErrorIs(t, err, gguf.ErrInvalid, path)
			assert.Contains(t, err.Error(), "not a regular file")
		case <-time.After(10 * time.Second):
			t.Fatalf("gguf-dump %s still blocks after 10s", path)
		}
	}
}
