package backend

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// HaveMeta is written per build tag; goggml.h decides what the linked ggml
// has.
func TestHaveAgreesWithC(t *testing.T) {
	require.Equal(t, haveMetaC, HaveMeta)
}
