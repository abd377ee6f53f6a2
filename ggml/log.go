package ggml

/*
#include "goggml.h"
extern void goggmlLog(int level, char *text);
extern void goggmlAbort(char *message);
*/
import "C"

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/go-ggml/ggml/internal/life"
)

var logger atomic.Pointer[slog.Logger]

// SetLogger routes ggml's log to l; nil restores slog.Default(). ggml's
// levels map to slog's: debug, info, warn and error.
func SetLogger(l *slog.Logger) { logger.Store(l) }

func currentLogger() *slog.Logger {
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

func slogLevel(level C.int) (slog.Level, bool) {
	switch level {
	case C.GGML_LOG_LEVEL_DEBUG:
		return slog.LevelDebug, true
	case C.GGML_LOG_LEVEL_WARN:
		return slog.LevelWarn, true
	case C.GGML_LOG_LEVEL_ERROR:
		return slog.LevelError, true
	case C.GGML_LOG_LEVEL_CONT:
		return 0, false
	default:
		return slog.LevelInfo, true
	}
}

//export goggmlLog
func goggmlLog(level C.int, text *C.char) {
	s := C.GoString(text)
	var lines []string
	logLine.Lock()
	if l, ok := slogLevel(level); ok {
		if logLine.buf.Len() > 0 { // a new message ends an unfinished line
			lines = append(lines, logLine.buf.String())
			logLine.buf.Reset()
		}
		logLine.level = l
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
	l := currentLogger()
	for _, line := range lines {
		if line != "" {
			l.Log(context.Background(), lvl, line, "source", "ggml")
		}
	}
}

//export goggmlAbort
func goggmlAbort(message *C.char) {
	// Unwinds through ggml's C frames to the nearest life.Catch of the
	// goroutine that called into C; see AssertError.
	panic(life.AssertPanic{Err: &AssertError{Message: C.GoString(message)}})
}
