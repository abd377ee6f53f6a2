package ggml

/*
#include "goggml.h"
*/
import "C"

import (
	// Links ggml (the provider chosen by build tag).
	_ "github.com/go-ggml/ggml/internal/provider"
)

// MaxDims is the number of dimensions of every ggml tensor (GGML_MAX_DIMS).
const MaxDims = 4

// MaxNameLen is the longest tensor name ggml stores, in bytes
// (GGML_MAX_NAME less the terminating NUL).
const MaxNameLen = 63

// memAlign is GGML_MEM_ALIGN: ggml pads every object in a context to it.
const memAlign = 16

func pad(n, to uint64) uint64 { return (n + to - 1) / to * to }
