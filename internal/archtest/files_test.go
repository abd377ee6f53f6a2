package archtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// largeFiles are the tracked files allowed over maxTracked bytes, each with
// its reason. None today.
var largeFiles = map[string]string{}

// maxTracked is the most bytes a tracked file may have without a reason in
// largeFiles.
const maxTracked = 1 << 20

// TestTrackedFiles: the repository tracks no build output: no executable
// but scripts (a #! line), and no file over 1 MiB without a reason written
// in largeFiles. (Outside a git checkout, as in the module cache, there is
// nothing to check.)
func TestTrackedFiles(t *testing.T) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v)", err)
	}
	n := 0
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		st, err := os.Lstat(filepath.Join(root, name))
		if err != nil || !st.Mode().IsRegular() {
			continue // a link (the provider's), or deleted in the work tree
		}
		n++
		if st.Size() > maxTracked {
			_, ok := largeFiles[name]
			assert.True(t, ok, "%s is %d bytes: a build output? (a file this large needs a reason in largeFiles)", name, st.Size())
		}
		if st.Mode()&0o111 != 0 {
			head := make([]byte, 2)
			f, err := os.Open(filepath.Join(root, name))
			if err == nil {
				f.Read(head)
				f.Close()
			}
			assert.True(t, bytes.Equal(head, []byte("#!")), "%s is executable and no script: a build output?", name)
		}
	}
	assert.Positive(t, n)
}
