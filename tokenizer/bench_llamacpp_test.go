package tokenizer

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-ggml/ggml/gguf"
	"github.com/go-ggml/ggml/internal/testutil"
)

// BenchmarkEncodeLlamaCpp: the first megabyte of War and Peace as one
// text, tokenized by go-ggml (go) and by llama.cpp's llama_tokenize (c,
// timed inside llamacpp_tokenize, so the pipe that carries the text is not
// counted), on the same GGUF file of each real vocabulary, in pairs that
// bench/table reads (make bench-tokenizer). Both sides write the same
// tokens (checked before the pairs). GOGGML_BENCH_PAIRS sets the pairs (1
// by default); it skips without llama.cpp (make llamacpp).
func BenchmarkEncodeLlamaCpp(b *testing.B) {
	data, err := os.ReadFile(testdata(b, "war-and-peace.txt"))
	require.NoError(b, err)
	text := string(data[:1<<20])
	pairs := testutil.BenchPairs(b)
	type figure struct {
		name          string
		goSide, cSide func(*testing.B)
	}
	var figs []figure
	for _, name := range []string{"llama3", "gemma2"} {
		path := writeGGUF(b, realVocab(b, name), nil)
		ref := startLlamaCpp(b, path)
		f, err := gguf.Open(path)
		require.NoError(b, err)
		tok, err := FromGGUF(f)
		require.NoError(b, f.Close())
		require.NoError(b, err)
		o := EncodeOptions{AddSpecial: true}
		_, n := ref.bench(b, text, o, 1)
		require.Equal(b, n, len(tok.Encode(text, o)), "%s: the two sides' token counts", name)
		mbps := func(b *testing.B, d time.Duration) {
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "ns/op")
			b.ReportMetric(float64(len(text))*float64(b.N)/1e6/d.Seconds(), "MB/s")
			b.ReportMetric(float64(n), "tokens")
		}
		figs = append(figs, figure{"encode-1MiB-" + name,
			func(b *testing.B) {
				t0 := time.Now()
				for range b.N {
					tok.Encode(text, o)
				}
				mbps(b, time.Since(t0))
			},
			func(b *testing.B) {
				d, _ := ref.bench(b, text, o, b.N)
				mbps(b, d)
			}})
	}
	for i := range pairs {
		for _, f := range figs {
			testutil.RunPair(b, i, f.name, f.goSide, f.cSide)
		}
	}
}

// bench has llama.cpp tokenize text reps times in a row and returns the
// time they took and the count of tokens.
func (l *llamaCpp) bench(t testing.TB, text string, o EncodeOptions, reps int) (time.Duration, int) {
	t.Helper()
	fmt.Fprintf(l.in, "b %d %d %d %d\n%s", b2i(o.AddSpecial), b2i(o.ParseSpecial), reps, len(text), text)
	f := strings.Fields(l.reply(t))
	require.Len(t, f, 2)
	ns, err := strconv.ParseInt(f[0], 10, 64)
	require.NoError(t, err)
	n, err := strconv.Atoi(f[1])
	require.NoError(t, err)
	return time.Duration(ns), n
}
