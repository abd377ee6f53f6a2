package rpc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Have is written per build tag; goggml.h decides what the linked ggml
// has.
func TestHaveAgreesWithC(t *testing.T) {
	require.Equal(t, haveC, Have)
}
