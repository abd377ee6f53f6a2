package backend

import "testing"

// SetAvailableMemory makes the memory checks see n bytes available until
// the test ends.
func SetAvailableMemory(t *testing.T, n uint64) {
	old := availableMemory
	availableMemory = func() (uint64, bool) { return n, true }
	t.Cleanup(func() { availableMemory = old })
}

// HaveOllamaExtras reports whether the linked ggml has the embedded
// provider's extra calls.
const HaveOllamaExtras = haveOllamaExtras
