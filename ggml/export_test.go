package ggml

// LiveCustomOps counts the custom ops whose handle is not yet deleted, for
// the leak test in package ggml_test.
func LiveCustomOps() int {
	n := 0
	liveHandles.Range(func(any, any) bool { n++; return true })
	return n
}
