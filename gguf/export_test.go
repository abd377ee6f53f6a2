package gguf

import (
	"errors"
	"os"
)

// SetCopyThroughStaging makes Load copy into host buffers through a staging
// chunk, as into a device's, and returns the function that undoes it.
func SetCopyThroughStaging() (undo func()) {
	copyThroughStaging = true
	return func() { copyThroughStaging = false }
}

// TouchTruncated maps the file at path, truncates the file to keep bytes,
// and touches the whole mapping as Load does before ggml reads it.
func TouchTruncated(path string, keep int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	m := mapFile(f, int(st.Size()))
	if m == nil {
		return errors.New("no mapping on this system")
	}
	defer m.release()
	if err := os.Truncate(path, keep); err != nil {
		return err
	}
	return touch(m.data, 0)
}

// LoadChunk is how many bytes one step of Load's copy moves.
const LoadChunk = loadChunk
