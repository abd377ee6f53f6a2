package provider

import (
	// The include directory as a package, so that go mod vendor copies it:
	// every cgo package of go-ggml reaches its headers by path.
	_ "github.com/go-ggml/ggml/internal/provider/include"
)
