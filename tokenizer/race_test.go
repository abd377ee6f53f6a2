//go:build race

package tokenizer

// raceOn reports whether the race detector is on (go test -race).
const raceOn = true
