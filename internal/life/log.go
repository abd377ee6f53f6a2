package life

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
)

var logger atomic.Pointer[slog.Logger]

// SetLogger routes ggml's log to l; nil restores slog.Default() (package
// ggml exports it as ggml.SetLogger).
func SetLogger(l *slog.Logger) { logger.Store(l) }

// Logger returns the logger ggml's log goes to.
func Logger() *slog.Logger {
	if l := logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// ggml writes a log line in pieces (GGML_LOG_LEVEL_CONT continues the last
// one); lines are assembled here and handed to slog whole.
var logLine struct {
	sync.Mutex
	level slog.Level
	buf   bytes.Buffer
}

// LogPiece takes one piece of ggml's log, as ggml's log callback receives
// it (internal/bridge installs the callback before any backend starts):
// at level, or continuing the last piece's line when cont is set. Each
// whole line goes to Logger as one record.
func LogPiece(level slog.Level, cont bool, s string) {
	var lines []string
	logLine.Lock()
	if !cont {
		if logLine.buf.Len() > 0 { // a new message ends an unfinished line
			lines = append(lines, logLine.buf.String())
			logLine.buf.Reset()
		}
		logLine.level = level
	}
	lvl := logLine.level
	logLine.buf.WriteString(s)
	for {
		i := bytes.IndexByte(logLine.buf.Bytes(), '\n')
		if i < 0 {
			break
		}
		lines = append(lines, string(logLine.buf.Next(i + 1)[:i]))
	}
	logLine.Unlock()
	l := Logger()
	for _, line := range lines {
		if line != "" {
			l.Log(context.Background(), lvl, line, "source", "ggml")
		}
	}
}
