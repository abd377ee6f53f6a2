package bridge

/*
#include "goggml.h"
extern void goggmlLog(int level, char *text);

static void goggml_log_cb(enum ggml_log_level level, const char *text, void *ud) {
	(void)ud;
	goggmlLog((int)level, (char *)text);
}
static void goggml_install_log(void) { ggml_log_set(goggml_log_cb, NULL); }
*/
import "C"

import (
	"log/slog"

	"github.com/go-ggml/ggml/internal/life"
)

// ggml's log goes to the logger set with ggml.SetLogger (life.Logger) from
// the start: this package's init runs before any package that starts a
// backend (internal/gpulink registers the GPU backends at init, and
// Vulkan's logs its devices then), and after the provider's, so this
// callback replaces any it installed, which printed to stderr.
func init() { C.goggml_install_log() }

//export goggmlLog
func goggmlLog(level C.int, text *C.char) {
	var l slog.Level
	switch level {
	case C.GGML_LOG_LEVEL_CONT:
		life.LogPiece(0, true, C.GoString(text))
		return
	case C.GGML_LOG_LEVEL_DEBUG:
		l = slog.LevelDebug
	case C.GGML_LOG_LEVEL_WARN:
		l = slog.LevelWarn
	case C.GGML_LOG_LEVEL_ERROR:
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	life.LogPiece(l, false, C.GoString(text))
}
