package testutil

import (
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-ggml/ggml/internal/life"
)

// RunLeakChecked runs a package's tests (m.Run) with the leak report on
// (GOGGML_LEAKS) and then fails the run when a handle of any kind is
// neither closed nor collected after the garbage collector has had its
// chance (about 10 s): something keeps it alive, and its C object would
// never be freed. extra, if given, are further checks of RunChecked's kind
// (what, live) pairs.
func RunLeakChecked(m interface{ Run() int }, extra ...LiveCheck) int {
	life.Leaks.SetEnabled(true)
	life.Leaks.SetQuiet(true) // tests drop handles on purpose; what is left is counted below
	code := m.Run()
	if code != 0 {
		return code
	}
	checks := append([]LiveCheck{{"handle(s)", func() int { return len(life.Leaks.Open()) }}}, extra...)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && anyLive(checks) {
		Settle(5)
	}
	for _, c := range checks {
		if n := c.Live(); n > 0 {
			os.Stderr.WriteString("FAIL: " + strconv.Itoa(n) + " " + c.What + " still alive after the tests and the garbage collector\n")
			if c.What == "handle(s)" {
				open := life.Leaks.Open()
				sort.Strings(open)
				os.Stderr.WriteString("  " + strings.Join(open, "\n  ") + "\n")
			}
			code = 1
		}
	}
	return code
}

// LiveCheck is a count of live things that must be zero after the tests.
type LiveCheck struct {
	What string
	Live func() int
}

func anyLive(checks []LiveCheck) bool {
	for _, c := range checks {
		if c.Live() > 0 {
			return true
		}
	}
	return false
}
