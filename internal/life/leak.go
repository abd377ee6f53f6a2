package life

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// Leaks is the opt-in leak report: with the environment variable
// GOGGML_LEAKS set (to anything but "" or "0") when the program starts, every
// handle that frees a C object (Context, Buffer, Backend, Scheduler, Gallocr,
// GraphCopy, Plan, Event, HostMemory, cpu.ThreadPool, gguf.File) remembers
// where it was opened, and one that the garbage collector frees (it was
// never closed) is logged with that place, at slog's warning level. GPU memory freed only by the collector is
// invisible to it (the collector sees a few Go bytes and does not hurry),
// so the report is how to find handles a program forgets to close.
var Leaks = newLeakReport(os.Getenv("GOGGML_LEAKS") != "" && os.Getenv("GOGGML_LEAKS") != "0")

type leakReport struct {
	on    atomic.Bool
	quiet atomic.Bool // record, but log nothing (tests count what is left)
	sites sync.Map    // a handle's key (its *Life, or what its cleanup frees) -> string
}

func newLeakReport(on bool) *leakReport {
	r := &leakReport{}
	r.on.Store(on)
	return r
}

// Enabled reports whether the leak report is on.
func (r *leakReport) Enabled() bool { return r.on.Load() }

// SetEnabled turns the report on or off (tests; programs use GOGGML_LEAKS).
func (r *leakReport) SetEnabled(on bool) { r.on.Store(on) }

// SetQuiet makes the report record handles without logging the collected
// ones (tests that drop handles on purpose, under a leak check); it returns
// the previous setting.
func (r *leakReport) SetQuiet(q bool) bool { return r.quiet.Swap(q) }

// Opened records that a handle of kind was opened by the user's code (the
// first caller outside go-ggml, or a test); key identifies it to Closed
// and Collected (its *Life, or a pointer its cleanup receives).
func (r *leakReport) Opened(kind string, key any) {
	if !r.on.Load() {
		return
	}
	var pcs [12]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	site := "unknown place"
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "github.com/go-ggml/ggml/") || strings.HasSuffix(f.File, "_test.go") {
			site = fmt.Sprintf("%s (%s:%d)", f.Function, f.File, f.Line)
			break
		}
		if !more {
			break
		}
	}
	r.sites.Store(key, kind+" opened by "+site)
}

// Open returns where each handle recorded and neither closed nor collected
// yet was opened (tests check that none is left).
func (r *leakReport) Open() []string {
	var out []string
	r.sites.Range(func(_, v any) bool {
		out = append(out, v.(string))
		return true
	})
	return out
}

// Closed forgets key's handle: it was closed explicitly.
func (r *leakReport) Closed(key any) {
	if r.on.Load() {
		r.sites.Delete(key)
	}
}

// Collected reports key's handle, freed by the garbage collector, if it
// was recorded; it returns the message (for tests).
func (r *leakReport) Collected(key any) string {
	if !r.on.Load() {
		return ""
	}
	v, ok := r.sites.LoadAndDelete(key)
	if !ok {
		return ""
	}
	msg := "go-ggml: a " + v.(string) + " was never closed; the garbage collector freed it"
	if !r.quiet.Load() {
		slog.Warn(msg)
	}
	return msg
}

// CloseCollected is the cleanup of a handle whose C object a Life frees:
// the garbage collector found the handle unreachable, never closed. It
// reports the handle (when the leak report is on) and closes l.
func CloseCollected(l *Life) {
	Leaks.Collected(l)
	l.Close("", false)
}
