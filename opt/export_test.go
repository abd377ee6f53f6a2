package opt

// SetAvailableMemory makes NewDataset and New see n bytes of memory
// available until the test ends.
func SetAvailableMemory(t interface{ Cleanup(func()) }, n uint64) {
	old := availableMemory
	availableMemory = func() (uint64, bool) { return n, true }
	t.Cleanup(func() { availableMemory = old })
}
