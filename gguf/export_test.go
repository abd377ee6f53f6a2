package gguf

// SetCopyThroughStaging makes Load copy into host buffers through a staging
// chunk, as into a device's, and returns the function that undoes it.
func SetCopyThroughStaging() (undo func()) {
	copyThroughStaging = true
	return func() { copyThroughStaging = false }
}
