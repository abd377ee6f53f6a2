package sched

import "testing"

// SetAvailableMemory makes New see n bytes of memory available until the
// test ends.
func SetAvailableMemory(t *testing.T, n uint64) {
	old := availableMemory
	availableMemory = func() (uint64, bool) { return n, true }
	t.Cleanup(func() { availableMemory = old })
}

// TablesSize is tablesSize.
var TablesSize = tablesSize

// HaveOllamaExtras reports whether the linked ggml has the embedded
// provider's extra calls.
const HaveOllamaExtras = haveOllamaExtras
