package cpu_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func affinity(t *testing.T) unix.CPUSet {
	var s unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &s))
	return s
}
